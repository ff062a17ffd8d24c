#!/usr/bin/env python3
"""A resolver of the child's own choosing (standing for a server of hers on the internet), on
UDP port 53 of ADDRESS. It answers A questions to steer the agent's book of learned addresses:

  cover.test            the shielded site's address, SITE, as if an allowed name lived there
  flood*                70 random addresses in 10.200.0.0/16, for a day
  anything else         NXDOMAIN

usage: her-resolver.py ADDRESS SITE READY-FILE
"""
import random
import socket
import struct
import sys

address, site, ready = sys.argv[1:4]
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind((address, 53))
with open(ready, "w") as f:
    f.write("ready")


def question(data):
    labels, at = [], 12
    while data[at]:
        length = data[at]
        labels.append(data[at + 1 : at + 1 + length].decode(errors="replace").lower())
        at += 1 + length
    return ".".join(labels), data[12 : at + 5]


while True:
    data, peer = sock.recvfrom(4096)
    if len(data) < 17:
        continue
    try:
        name, asked = question(data)
    except IndexError:
        continue
    qtype = struct.unpack("!H", asked[-4:-2])[0]
    addresses, ttl = [], 300
    if qtype == 1 and name == "cover.test":
        addresses = [socket.inet_aton(site)]
    elif qtype == 1 and name.startswith("flood"):
        addresses = [bytes([10, 200, random.randrange(256), random.randrange(1, 255)]) for _ in range(70)]
        ttl = 86400
    rcode = 0 if addresses or name.startswith("flood") or name == "cover.test" else 3
    header = data[:2] + struct.pack("!HHHHH", 0x8180 | rcode, 1, len(addresses), 0, 0)
    answers = b"".join(b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, ttl, 4) + a for a in addresses)
    sock.sendto(header + asked + answers, peer)
