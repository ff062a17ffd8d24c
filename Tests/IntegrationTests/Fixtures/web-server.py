#!/usr/bin/env python3
"""The servers a child connects to in the connection-judging tests, in the test's network
namespace: HTTPS on 443 (any name, a self-signed certificate), plain HTTP on 80, a service that
names nothing on 2222 (it speaks first, as SSH does), a UDP echo on 4433, and a sink on 9444
that accepts every connection and holds it, reading nothing. Every server but the sink answers a
line that says which it is, so a client can tell "answered" from "reset"; HTTPS's `/where` adds
the address the client reached.

usage: web-server.py CERT KEY READY-FILE
"""
import asyncio
import os
import resource
import socket
import ssl
import sys
import threading

cert, key, ready = sys.argv[1:4]


def listeners(port, kind=socket.SOCK_STREAM):
    made = []
    for family, address in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        s = socket.socket(family, kind)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind((address, port))
        if kind == socket.SOCK_STREAM:
            s.listen(4096)
        made.append(s)
    return made


def serve(sockets, handle):
    def accept_loop(listener):
        while True:
            connection, _ = listener.accept()
            threading.Thread(target=guarded, args=(handle, connection), daemon=True).start()

    for listener in sockets:
        threading.Thread(target=accept_loop, args=(listener,), daemon=True).start()


def guarded(handle, connection):
    try:
        connection.settimeout(10)
        handle(connection)
    except Exception:
        pass
    finally:
        try:
            connection.close()
        except Exception:
            pass


def read_head(stream):
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        chunk = stream.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


# HTTPS is served by one asyncio loop, not a thread per connection: the flood tests hold 10,000
# connections open, and as many threads would flood every agent's process watcher with events.
https_names = {}


def remember_name(ssl_object, name, context):
    https_names[id(ssl_object)] = name


async def https(reader, writer):
    try:
        ssl_object = writer.get_extra_info("ssl_object")
        name = https_names.pop(id(ssl_object), None) or "-"
        # Keep-alive: one answer per request head, until the client goes.
        while True:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            if not head:
                break
            body = ("https %s\n" % name).encode()
            # /where also says which of the server's addresses the client reached (a safe host's,
            # or the site's own).
            if head.startswith(b"GET /where "):
                body = ("https %s at %s\n" % (name, writer.get_extra_info("sockname")[0])).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            await writer.drain()
    except Exception:
        pass
    finally:
        writer.close()


def serve_https(sockets):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = remember_name
    loop = asyncio.new_event_loop()

    async def start():
        for listener in sockets:
            await asyncio.start_server(https, sock=listener, ssl=context, ssl_handshake_timeout=10, backlog=4096)

    loop.run_until_complete(start())
    threading.Thread(target=loop.run_forever, daemon=True).start()


def http(connection):
    read_head(connection)
    body = b"http\n"
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)


def banner(connection):
    connection.sendall(b"SSH-2.0-screentime-test\r\n")
    line = connection.recv(4096)
    connection.sendall(b"echo " + line)


def hold(sockets):
    """Accepts and keeps every connection, reading nothing: a flood's target that costs this
    process nothing per connection, so the HTTPS loop beside it stays free for the clients the
    test then measures (behind a flood on 443 itself, a whole run's load slowed that loop past
    its 10 s handshake timeout: CI of stop 59, fresh run 121)."""
    held = []

    def accept_loop(listener):
        while True:
            held.append(listener.accept()[0])

    for listener in sockets:
        threading.Thread(target=accept_loop, args=(listener,), daemon=True).start()


def udp_echo(sock):
    while True:
        data, peer = sock.recvfrom(65536)
        sock.sendto(b"echo %d" % len(data), peer)


serve_https(listeners(443))
serve(listeners(80), http)
serve(listeners(2222), banner)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
hold(listeners(9444))
for s in listeners(4433, socket.SOCK_DGRAM):
    threading.Thread(target=udp_echo, args=(s,), daemon=True).start()
with open(ready, "w") as f:
    f.write(str(os.getpid()))
threading.Event().wait()
