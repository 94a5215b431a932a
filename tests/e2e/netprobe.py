"""Tiny TCP/UDP server and client the service proxy tests run inside network namespaces.

    python netprobe.py serve NAME PORT            answers every TCP connection and UDP datagram with NAME
    python netprobe.py connect tcp|udp IP PORT N  N fresh connections; prints a JSON list of answers,
                                                  "refused", "unreachable" or "timeout" for each
    python netprobe.py hold IP PORT               one TCP connection kept open: prints each answer to
                                                  a line written on stdin (for the restart test)
    python netprobe.py rate IP PORT N             N connections one after another; prints the seconds each took
    python netprobe.py push IP PORT MB            sends MB mebibytes to the sink (PORT+1 of `serve`); prints MB/s

`serve` also runs a sink on PORT+1 that reads a connection to its end and answers the byte count.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time


def serve(name: str, port: int) -> None:
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind(("0.0.0.0", port))
    tcp.listen(128)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("0.0.0.0", port))

    def udp_loop() -> None:
        while True:
            _, peer = udp.recvfrom(2048)
            udp.sendto(name.encode(), peer)

    def conn(c: socket.socket, peer: tuple[str, int]) -> None:
        with c:
            f = c.makefile("rwb")
            # first line: our name and who we see (masquerade shows as the node's address)
            f.write(f"{name} {peer[0]}\n".encode())
            f.flush()
            for line in f:  # then echo until the client closes (long-lived connections)
                f.write(f"{name} {line.decode().strip()}\n".encode())
                f.flush()

    sink = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sink.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sink.bind(("0.0.0.0", port + 1))
    sink.listen(16)

    def drain(c: socket.socket) -> None:
        with c:
            n = 0
            while chunk := c.recv(1 << 20):
                n += len(chunk)
            c.sendall(f"{n}\n".encode())

    def sink_loop() -> None:
        while True:
            c, _ = sink.accept()
            threading.Thread(target=drain, args=(c,), daemon=True).start()

    threading.Thread(target=udp_loop, daemon=True).start()
    threading.Thread(target=sink_loop, daemon=True).start()
    print("ready", flush=True)
    while True:
        c, peer = tcp.accept()
        threading.Thread(target=conn, args=(c, peer), daemon=True).start()


def connect(proto: str, ip: str, port: int, n: int) -> None:
    out = []
    for _ in range(n):
        try:
            if proto == "tcp":
                with socket.create_connection((ip, port), timeout=1.0) as s:
                    out.append(s.makefile("rb").readline().decode().strip())
            else:
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                    s.settimeout(1.0)
                    s.connect((ip, port))
                    s.send(b"?")
                    out.append(s.recv(2048).decode())
        except ConnectionRefusedError:
            out.append("refused")
        except OSError as e:
            out.append("timeout" if isinstance(e, socket.timeout) else "unreachable")
    print(json.dumps(out), flush=True)


def hold(ip: str, port: int) -> None:
    with socket.create_connection((ip, port), timeout=5.0) as s:
        f = s.makefile("rwb")
        print(f.readline().decode().strip(), flush=True)
        for line in sys.stdin:
            try:
                f.write(line.encode())
                f.flush()
                print(f.readline().decode().strip() or "closed", flush=True)
            except OSError as e:
                print(f"error {e}", flush=True)


def rate(ip: str, port: int, n: int) -> None:
    took = []
    for _ in range(n):
        t = time.perf_counter()
        with socket.create_connection((ip, port), timeout=2.0) as s:
            s.makefile("rb").readline()
        took.append(time.perf_counter() - t)
    print(json.dumps(took), flush=True)


def push(ip: str, port: int, mb: int) -> None:
    buf = b"x" * (1 << 20)
    t = time.perf_counter()
    with socket.create_connection((ip, port), timeout=10.0) as s:
        for _ in range(mb):
            s.sendall(buf)
        s.shutdown(socket.SHUT_WR)
        got = int(s.makefile("rb").readline())
    assert got == mb << 20, got
    print(json.dumps(mb / (time.perf_counter() - t)), flush=True)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "serve":
        serve(sys.argv[2], int(sys.argv[3]))
    elif cmd == "connect":
        connect(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif cmd == "hold":
        hold(sys.argv[2], int(sys.argv[3]))
    elif cmd == "rate":
        rate(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif cmd == "push":
        push(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
