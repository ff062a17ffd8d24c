#!/usr/bin/env python3
"""A DNS-over-HTTPS server (RFC 8484, HTTP/1.1, GET ?dns= and POST) that answers every A query
with one address and every other query with no records: the custom DoH provider a child sets in
a browser's profile, which would resolve a shielded name if the browser were let use it. Each
question it answers is logged as a line "NAME TYPE" to the log file.

usage: doh-server.py CERT KEY ADDRESS PORT ANSWER LOG READY-FILE
"""
import base64
import http.server
import os
import socket
import ssl
import struct
import sys
import threading

cert, key, address, port, answer, log, ready = sys.argv[1:8]
lock = threading.Lock()


def respond(query):
    """The reply to a DNS query in wire format, or None when it cannot be read."""
    if len(query) < 12:
        return None
    ident, flags, qdcount = struct.unpack("!HHH", query[:6])
    if qdcount != 1:
        return None
    position, labels = 12, []
    while position < len(query) and query[position] != 0:
        length = query[position]
        labels.append(query[position + 1 : position + 1 + length].decode("ascii", "replace"))
        position += 1 + length
    end = position + 5
    if end > len(query):
        return None
    qtype = struct.unpack("!H", query[position + 1 : position + 3])[0]
    question = query[12:end]
    with lock, open(log, "a") as f:
        f.write("%s %d\n" % (".".join(labels).lower(), qtype))
    records = b""
    if qtype == 1:
        records = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(answer)
    header = struct.pack("!HHHHHH", ident, 0x8180 | (flags & 0x0100), 1, 1 if records else 0, 0, 0)
    return header + question + records


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, query):
        message = respond(query) if query is not None else None
        if message is None:
            self.send_response(400)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/dns-message")
        self.send_header("Content-Length", str(len(message)))
        self.send_header("Cache-Control", "max-age=60")
        self.end_headers()
        self.wfile.write(message)

    def do_GET(self):
        parameter = self.path.partition("dns=")[2].partition("&")[0]
        try:
            query = base64.urlsafe_b64decode(parameter + "=" * (-len(parameter) % 4))
        except Exception:
            query = None
        self.reply(query)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.reply(self.rfile.read(min(length, 65535)))

    def log_message(self, *arguments):
        pass


context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
context.set_alpn_protocols(["http/1.1"])


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def finish_request(self, request, client_address):
        # The handshake in the connection's own thread: one silent client holds up no other.
        request.settimeout(10)
        super().finish_request(context.wrap_socket(request, server_side=True), client_address)


server = Server((address, int(port)), Handler)
with open(ready, "w") as f:
    f.write(str(os.getpid()))
server.serve_forever()
