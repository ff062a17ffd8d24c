#!/usr/bin/env python3
"""A server that speaks first and keeps speaking: to each connection a dot every 0.3 s (for at
most 30 s), and all the connection sends it written down in LOG (when it ends, or 3 s after the
last it sent). Root's, on port 8081 of both families, in a namespace a router away.

  drip-server.py LOG READY
"""
import socket
import sys
import threading
import time

log, ready = sys.argv[1:3]
listener = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("::", 8081))
listener.listen(64)
open(ready, "w").close()
lock = threading.Lock()


def drip(connection, stop):
    deadline = time.monotonic() + 30
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            connection.send(b".")
        except OSError:
            return
        stop.wait(0.3)


def take(connection):
    stop = threading.Event()
    threading.Thread(target=drip, args=(connection, stop), daemon=True).start()
    data = b""
    connection.settimeout(30)
    try:
        while True:
            chunk = connection.recv(65536)
            if not chunk:
                break
            data += chunk
            connection.settimeout(3)
    except OSError:
        pass
    stop.set()
    with lock, open(log, "ab") as out:
        out.write(data + b"\n")


while True:
    accepted, _ = listener.accept()
    threading.Thread(target=take, args=(accepted,), daemon=True).start()
