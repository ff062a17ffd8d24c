#!/usr/bin/env python3
"""A SOCKS5 proxy of the child's own, for her browser: each connection it makes for the browser
opens with the re-sent opening trick of resend.py. The browser's first bytes (its TLS hello) go
out first as a decoy naming another host of the same length, with TTL (hop limit) 1 so that the
first router drops it, by sendfile from a file she then rewrites with the real bytes; TCP's
retransmission, rebuilt from the rewritten page, carries the real name to the server. Then the
proxy passes bytes both ways. Run as the child.

  socks-resend.py PORT ADDRESS REAL DECOY READY

  PORT     where it listens, on 127.0.0.1
  ADDRESS  where every connection goes, whatever name the browser asks for (its own address book)
  REAL, DECOY  the name in the browser's hello, and the one the decoy names (same length)
  READY    a file made once it listens

Each connection's outcome goes to standard error: "passed" (the browser's bytes went on) or why not.
"""
import os
import select
import socket
import struct
import sys
import tempfile
import threading
import time

port, address, real, decoy, ready = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
if len(real) != len(decoy):
    sys.exit("the decoy and the real name must have the same length")
family = socket.AF_INET6 if ":" in address else socket.AF_INET


def read_exactly(connection, count):
    data = b""
    while len(data) < count:
        chunk = connection.recv(count - len(data))
        if not chunk:
            raise EOFError("the browser went away")
        data += chunk
    return data


def hop_limit(sock, value):
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, value)
    else:
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, value)


def hello(browser):
    """The browser's first TLS record, whole (a hello of several segments is read to its end)."""
    head = read_exactly(browser, 5)
    length = struct.unpack("!H", head[3:5])[0]
    return head + read_exactly(browser, length)


def serve(browser):
    try:
        # SOCKS5: no authentication, then CONNECT to a name or an address.
        version, methods = read_exactly(browser, 2)
        read_exactly(browser, methods)
        browser.sendall(b"\x05\x00")
        _, command, _, kind = read_exactly(browser, 4)
        if kind == 3:
            read_exactly(browser, read_exactly(browser, 1)[0])
        elif kind == 1:
            read_exactly(browser, 4)
        else:
            read_exactly(browser, 16)
        target_port = struct.unpack("!H", read_exactly(browser, 2))[0]
        server = socket.socket(family, socket.SOCK_STREAM)
        server.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        server.settimeout(8)
        server.connect((address, target_port))
        server.settimeout(None)
        browser.sendall(b"\x05\x00\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", port))
        opening = hello(browser)
        if opening.count(real.encode()) == 1:
            first = opening.replace(real.encode(), decoy.encode())
            hop_limit(server, 1)
            with tempfile.TemporaryFile() as page:
                page.write(first)
                page.flush()
                sent = os.sendfile(server.fileno(), page.fileno(), 0, len(first))
                os.pwrite(page.fileno(), opening, 0)
                page.flush()
                hop_limit(server, 64)
                time.sleep(1.5)  # the retransmission goes while the file is open
            if sent != len(first):
                raise OSError("sent %d of %d bytes" % (sent, len(first)))
        else:
            server.sendall(opening)
        print("passed", file=sys.stderr, flush=True)
        pump(browser, server)
    except (OSError, EOFError, ValueError) as error:
        print("not passed: %s" % error, file=sys.stderr, flush=True)
    finally:
        browser.close()


def pump(browser, server):
    ends = {browser: server, server: browser}
    while True:
        readable, _, _ = select.select(list(ends), [], [], 30)
        if not readable:
            return
        for end in readable:
            try:
                data = end.recv(65536)
            except ConnectionResetError:
                # The server's reset goes on to the browser as a reset.
                browser.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                print("reset by the server", file=sys.stderr, flush=True)
                return
            if not data:
                return
            ends[end].sendall(data)


listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(16)
open(ready, "w").close()
while True:
    connection, _ = listener.accept()
    threading.Thread(target=serve, args=(connection,), daemon=True).start()
