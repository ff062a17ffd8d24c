#!/usr/bin/python3
"""Hostile DNS input, sent by a filtered user to the resolver on port 53 (UDP and TCP).

Usage: hostile-dns.py SERVER SHIELDED_NAME SHIELDED_ADDRESS ROUNDS

Sends random bytes, truncated headers, compression loops, oversized names, and crafted queries
for the shielded name (case games, a second question, EDNS, compression, a query split across TCP
segments). Prints one line per crafted query: 'leak NAME' if an answer carrying the shielded
address came back, and at the end 'sent N' and 'leaks N'. Exit status 0 unless it could not run.
"""
import random
import socket
import struct
import sys
import time

server, shielded, address, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
family = socket.AF_INET6 if ":" in server else socket.AF_INET
address_bytes = socket.inet_aton(address)
rng = random.Random(53)
sent = 0
leaks = 0


def name(text):
    out = b""
    for label in text.split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def header(ident, qd, an=0, ns=0, ar=0, flags=0x0100):
    return struct.pack(">HHHHHH", ident, flags, qd, an, ns, ar)


def question(qname, qtype=1):
    return qname + struct.pack(">HH", qtype, 1)


def udp(payload, wait=0.3):
    global sent
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.settimeout(wait)
        s.sendto(payload, (server, 53))
        sent += 1
        try:
            return s.recv(4096)
        except (socket.timeout, ConnectionRefusedError):
            return None


def leaked(reply):
    return reply is not None and address_bytes in reply


def check(label, reply):
    global leaks
    if leaked(reply):
        leaks += 1
        print("leak", label, flush=True)


# Garbage: random lengths and bytes, truncated headers, lying counts.
for _ in range(rounds):
    udp(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 600))), wait=0.01)
for cut in range(0, 12):
    udp(header(1, 1)[:cut], wait=0.01)
udp(header(2, 65535, 65535, 65535, 65535), wait=0.01)
# A compression loop: the name points at itself, and at a later offset.
udp(header(3, 1) + b"\xc0\x0c" + struct.pack(">HH", 1, 1), wait=0.01)
udp(header(4, 1) + b"\x03abc\xc0\x20" + struct.pack(">HH", 1, 1) + b"\0" * 16, wait=0.01)
# An oversized name (over 255 bytes) and an over-long label.
udp(header(5, 1) + (b"\x3f" + b"a" * 63) * 5 + b"\0" + struct.pack(">HH", 1, 1), wait=0.01)
udp(header(6, 1) + b"\x7fabc" + b"\0" + struct.pack(">HH", 1, 1), wait=0.01)
# Random mutations of a query for the shielded name: whatever comes back must not leak.
base = header(7, 1) + question(name("www." + shielded))
for round_ in range(rounds):
    mutated = bytearray(base)
    for _ in range(rng.randrange(1, 4)):
        mutated[rng.randrange(len(mutated))] = rng.randrange(256)
    check("mutation %d" % round_, udp(bytes(mutated), wait=0.02))

# Crafted queries that a careless filter would pass.
crafted = {
    "plain": header(10, 1) + question(name(shielded)),
    "case": header(11, 1) + question(name("WwW." + shielded.upper())),
    "second question": header(12, 2) + question(name("allowed.test")) + question(name("x." + shielded)),
    "edns": header(13, 1, ar=1) + question(name(shielded)) + b"\0" + struct.pack(">HHIH", 41, 4096, 0, 0),
    "compressed": header(14, 2) + question(name("a." + shielded))
    + b"\x01b\xc0\x0e" + struct.pack(">HH", 1, 1),
    "aaaa": header(15, 1) + question(name(shielded), 28),
    "trailing bytes": header(16, 1) + question(name(shielded)) + b"\0\0\0",
    "odd label bytes": header(17, 1) + question(b"\x04\x00\xff.x" + name(shielded)),
}
for label, payload in crafted.items():
    check(label, udp(payload))


def tcp(chunks):
    """Sends the chunks as separate TCP segments; returns what came back before a close."""
    global sent
    try:
        with socket.create_connection((server, 53), timeout=1) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for chunk in chunks:
                s.sendall(chunk)
                time.sleep(0.02)
            sent += 1
            data = b""
            while True:
                part = s.recv(4096)
                if not part:
                    return data
                data += part
    except OSError:
        return None


query = header(20, 1) + question(name(shielded))
framed = struct.pack(">H", len(query)) + query
check("tcp whole", tcp([framed]))
check("tcp split in two", tcp([framed[:7], framed[7:]]))
check("tcp byte by byte", tcp([framed[i:i + 1] for i in range(len(framed))]))
check("tcp length apart", tcp([framed[:2], framed[2:]]))
allowed = header(21, 1) + question(name("allowed.test"))
check("tcp pipelined", tcp([struct.pack(">H", len(allowed)) + allowed + framed]))

print("sent", sent)
print("leaks", leaks)
