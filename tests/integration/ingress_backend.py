"""Backends for tests/integration/test_ingress.py: real HTTP servers, run inside the test's network
namespace (`python ingress_backend.py NAME=ADDR:PORT ...`). Each answers every request with JSON
saying who it is and what it received; `.../big/<n>` answers n bytes, `.../abort` breaks off; a WebSocket upgrade on
`/ws` echoes messages."""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def handler(name: str) -> type[BaseHTTPRequestHandler]:
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _answer(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else b""
            if self.path.endswith("/abort"):  # promises 100000 bytes, sends 10 and hangs up
                self.send_response(200)
                self.send_header("Content-Length", "100000")
                self.end_headers()
                self.wfile.write(b"0123456789")
                self.wfile.flush()
                self.close_connection = True
                return
            if "/big/" in self.path:
                size = int(self.path.rsplit("/", 1)[1])
                self.send_response(200)
                self.send_header("Content-Length", str(size))
                self.end_headers()
                chunk = b"x" * 65536
                while size > 0:
                    self.wfile.write(chunk[:size])
                    size -= len(chunk)
                return
            if self.headers.get("Upgrade", "").lower() == "websocket":
                self._websocket()
                return
            out = json.dumps({"backend": name, "method": self.command, "path": self.path,
                              "headers": {k.lower(): v for k, v in self.headers.items()},
                              "body_len": len(body), "body_sha256": hashlib.sha256(body).hexdigest()}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.send_header("Connection", "keep-alive")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(out)

        def _websocket(self) -> None:
            key = self.headers["Sec-WebSocket-Key"]
            accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", accept.decode())
            self.end_headers()
            self.wfile.flush()
            # one masked text frame in, the same text (prefixed with our name) out, unmasked
            head = self.rfile.read(2)
            length = head[1] & 0x7F
            mask = self.rfile.read(4)
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(length)))
            reply = f"{name}:{data.decode()}".encode()
            self.wfile.write(bytes([0x81, len(reply)]) + reply)
            self.wfile.write(bytes([0x88, 0]))
            self.wfile.flush()
            self.close_connection = True

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _answer

    return H


def main(specs: list[str]) -> None:
    servers = []
    for spec in specs:
        name, _, addr = spec.partition("=")
        host, _, port = addr.rpartition(":")
        srv = ThreadingHTTPServer((host, int(port)), handler(name))
        srv.daemon_threads = True
        servers.append(srv)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()  # until the test closes our stdin


if __name__ == "__main__":
    main(sys.argv[1:])
