"""Tiny TCP/UDP server and client the service proxy tests run inside network namespaces.

    python netprobe.py serve NAME PORT            answers every TCP connection and UDP datagram with NAME
    python netprobe.py connect tcp|udp IP PORT N  N fresh connections; prints a JSON list of answers,
                                                  "refused", "unreachable" or "timeout" for each
    python netprobe.py hold IP PORT               one TCP connection kept open: prints each answer to
                                                  a line written on stdin (for the restart test)
"""

from __future__ import annotations

import json
import socket
import sys
import threading


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

    threading.Thread(target=udp_loop, daemon=True).start()
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


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "serve":
        serve(sys.argv[2], int(sys.argv[3]))
    elif cmd == "connect":
        connect(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif cmd == "hold":
        hold(sys.argv[2], int(sys.argv[3]))
