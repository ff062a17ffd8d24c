#!/usr/bin/env python3
"""A DNS server of the child's (standing for one of hers on the internet) on UDP port 53 of
ADDRESS that answers each question it gets as fast as it can, again and again, for SECONDS.

usage: reply-flood.py ADDRESS SECONDS READY-FILE
"""
import socket
import struct
import sys
import time

address, seconds, ready = sys.argv[1], float(sys.argv[2]), sys.argv[3]
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind((address, 53))
with open(ready, "w") as f:
    f.write("ready")
data, peer = sock.recvfrom(4096)
question_end = 12
while data[question_end]:
    question_end += 1 + data[question_end]
question = data[12 : question_end + 5]
reply = data[:2] + struct.pack("!HHHHH", 0x8180, 1, 1, 0, 0) + question
reply += b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton("10.9.9.9")
sent = 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    for _ in range(1000):
        try:
            sock.sendto(reply, peer)
            sent += 1
        except OSError:
            pass
print(sent)
