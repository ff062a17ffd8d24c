#!/usr/bin/python3
"""A child flooding the DNS queue: sends A queries for random names to SERVER port 53 as fast as
it can for SECONDS, without waiting for answers, and counts the answers that come back.

Usage: dns-flood.py SERVER SECONDS
Prints 'tried N' (queries it tried to send), 'sent N' (those the kernel took: a query the
firewall drops fails with EPERM), and 'answered M'.
"""
import os
import socket
import struct
import sys
import time

server, seconds = sys.argv[1], float(sys.argv[2])
family = socket.AF_INET6 if ":" in server else socket.AF_INET
sock = socket.socket(family, socket.SOCK_DGRAM)
sock.setblocking(False)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
tried = sent = answered = 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    for _ in range(64):
        name = b"".join(bytes([len(p)]) + p for p in [os.urandom(4).hex().encode(), b"allowed", b"test"]) + b"\0"
        query = struct.pack(">HHHHHH", tried & 0xFFFF, 0x0100, 1, 0, 0, 0) + name + struct.pack(">HH", 1, 1)
        tried += 1
        try:
            sock.sendto(query, (server, 53))
            sent += 1
        except (BlockingIOError, OSError):
            pass
    while True:
        try:
            sock.recv(4096)
            answered += 1
        except BlockingIOError:
            break
time.sleep(0.5)
while True:
    try:
        sock.recv(4096)
        answered += 1
    except BlockingIOError:
        break
print("tried", tried)
print("sent", sent)
print("answered", answered)
