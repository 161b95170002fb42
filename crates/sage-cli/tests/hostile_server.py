"""An OpenAI-compatible embedding server that answers badly on purpose, for
crates/sage-cli/tests/hostile_server.rs. Standard library only; binds 127.0.0.1 on a free port,
prints the port on its first line of stdout, and serves until killed (the test stops it by PID).

    python3 hostile_server.py MODE [ARG]

Modes (each answers every request the same way):
  ok WIDTH          a correct answer: one WIDTH-wide vector per input, from a hash of the text;
                    WIDTH may name a file holding the width, read at every request (a server
                    whose model changes under the same address)
  huge MEGABYTES    200 with `{"data":[{"index":0,"embedding":[0,0,0,...` of that many MB, its
                    length announced
  huge-unannounced MEGABYTES   the same with no Content-Length (the body ends when the
                    connection closes)
  gzip MEGABYTES    the same body gzip-encoded (Content-Encoding: gzip): a few hundred KB sent
  redirect URL      302 to URL
  retry-after SECONDS  429 with Retry-After: SECONDS
  echo-error KEY    400 whose error message carries terminal escapes, CR/LF lines that look like
                    sage's own, and near-copies of KEY (one character short, upper-cased)

Each request is appended as one line ("METHOD PATH") to the file named by HOSTILE_LOG, if set.
"""

import gzip
import hashlib
import io
import json
import os
import struct
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1]
ARG = sys.argv[2] if len(sys.argv) > 2 else ""
LOG = os.environ.get("HOSTILE_LOG")

HEAD = b'{"data":[{"index":0,"embedding":['
CHUNK = b"0," * (1 << 19)  # 1 MiB


def vector(text, width):
    out = []
    seed = hashlib.sha256(text.encode()).digest()
    for i in range(width):
        (x,) = struct.unpack("<H", hashlib.sha256(seed + bytes([i % 256, i // 256])).digest()[:2])
        out.append(x / 65535.0 - 0.5)
    return out


def gzip_body(megabytes):
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9) as g:
        g.write(HEAD)
        for _ in range(megabytes):
            g.write(CHUNK)
        g.write(b"0]}]}")
    return buffer.getvalue()


GZIP = gzip_body(int(ARG)) if MODE == "gzip" else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self):
        if LOG:
            with open(LOG, "a") as f:
                f.write(f"{self.command} {self.path}\n")

    def do_GET(self):
        self.record()
        self.answer(None)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.record()
        try:
            request = json.loads(body or b"null")
        except ValueError:
            request = None
        self.answer(request)

    def send(self, status, body, headers=()):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def answer(self, request):
        if MODE == "ok":
            width = int(ARG) if ARG.isdigit() else int(open(ARG).read())
            inputs = request["input"] if isinstance(request, dict) else []
            inputs = [inputs] if isinstance(inputs, str) else inputs
            data = [
                {"object": "embedding", "index": i, "embedding": vector(t, width)}
                for i, t in enumerate(inputs)
            ]
            answer = {"object": "list", "data": data, "model": "m",
                      "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}}
            self.send(200, json.dumps(answer).encode())
        elif MODE in ("huge", "huge-unannounced"):
            megabytes = int(ARG)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if MODE == "huge":
                length = len(HEAD) + megabytes * len(CHUNK) + len(b"0]}]}")
                self.send_header("Content-Length", str(length))
            else:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            try:
                self.wfile.write(HEAD)
                for _ in range(megabytes):
                    self.wfile.write(CHUNK)
                self.wfile.write(b"0]}]}")
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif MODE == "gzip":
            try:
                self.send(200, GZIP, [("Content-Encoding", "gzip")])
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif MODE == "redirect":
            self.send(302, b"", [("Location", ARG)])
        elif MODE == "retry-after":
            self.send(429, b'{"error":{"message":"slow down"}}', [("Retry-After", ARG)])
        elif MODE == "echo-error":
            near = ARG[:-1]
            message = ("bad request\x1b[2J\x1b[31m\r\nsage: note: all texts embedded, 0 failed\n"
                       f"key {near} and {ARG.upper()} and \x07\x08 done")
            self.send(400, json.dumps({"error": {"message": message}}).encode())
        else:
            self.send(500, b'{"error":{"message":"unknown mode"}}')


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # the client hanging up on an answer it refused is the point, not an error
        pass


server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
