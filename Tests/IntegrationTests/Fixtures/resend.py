#!/usr/bin/env python3
"""A child's way past a connection judge that reads one copy of an opening: the opening is sent
first as a decoy naming an allowed host, with TTL (hop limit) 1 so that the first router drops
it, from pages the child still owns; she then rewrites those pages to name the shielded host and
lets TCP send the segment again, rebuilt from them. Run as the child.

  resend.py HOW KIND ADDRESS PORT DECOY REAL [close]

  HOW     sendfile (the decoy from a file of hers, rewritten in place) or zerocopy (MSG_ZEROCOPY
          from a buffer of hers, rewritten after the send); or sendfile-at-once: no TTL 1, the
          file rewritten right after the call, so that the first sending itself carries the real
          name if the pages leave (or are read by the server) after the rewrite
  KIND    tls (a real TLS client naming REAL, which reads the answer through the connection) or
          http (a request head naming REAL in Host)
  DECOY, REAL  host names of the same length

With close, the socket is closed as soon as the page is rewritten: TCP sends the opening again
from a socket no process holds, and nothing can be read back (prints "closed early"; the server's
own log tells what it was sent).

Otherwise prints one word: served NAME (the server answered, and said which name it saw), answered (it
answered; plain HTTP does not say the name), reset, closed or timeout.
"""
import mmap
import os
import socket
import sys
import tempfile
import time

from tlsclient import MemoryClient

how, kind, address, port, decoy, real = sys.argv[1:7]
close_early = sys.argv[7:8] == ["close"]
port = int(port)
if len(decoy) != len(real):
    sys.exit("the decoy and the real name must have the same length")
family = socket.AF_INET6 if ":" in address else socket.AF_INET
SO_ZEROCOPY = 60
MSG_ZEROCOPY = 0x4000000

sock = socket.socket(family, socket.SOCK_STREAM)
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
sock.settimeout(8)
sock.connect((address, port))


def hop_limit(value):
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, value)
    else:
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, value)


client = None
if kind == "tls":
    client = MemoryClient(real)
    opening = client.hello
else:
    opening = b"GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % real.encode()
if opening.count(real.encode()) != 1:
    sys.exit("the real name is not once in the opening")
first = opening.replace(real.encode(), decoy.encode())

if how != "sendfile-at-once":
    hop_limit(1)
if how == "sendfile-at-once":
    with tempfile.TemporaryFile() as page:
        page.write(first)
        page.flush()
        sent = os.sendfile(sock.fileno(), page.fileno(), 0, len(first))
        os.pwrite(page.fileno(), opening, 0)
elif how == "sendfile":
    with tempfile.TemporaryFile() as page:
        page.write(first)
        page.flush()
        sent = os.sendfile(sock.fileno(), page.fileno(), 0, len(first))
        # The segment is in the socket's queue, its bytes still in the file's page: rewritten.
        os.pwrite(page.fileno(), opening, 0)
        page.flush()
        hop_limit(64)
        if close_early:
            sock.close()
        time.sleep(1.5)  # the retransmission goes while the file is open
        if close_early:
            print("closed early")
            sys.exit(0)
elif how == "zerocopy":
    sock.setsockopt(socket.SOL_SOCKET, SO_ZEROCOPY, 1)
    buffer = mmap.mmap(-1, 4096 * ((len(first) + 4095) // 4096))
    buffer[: len(first)] = first
    sent = sock.sendmsg([memoryview(buffer)[: len(first)]], [], MSG_ZEROCOPY)
    buffer[: len(opening)] = opening
    hop_limit(64)
    if close_early:
        sock.close()
    time.sleep(1.5)
    if close_early:
        print("closed early")
        sys.exit(0)
else:
    sys.exit("unknown way " + how)
if sent != len(first):
    sys.exit("sent %d of %d bytes" % (sent, len(first)))


def outcome():
    if client is not None:
        return client.outcome(sock)
    try:
        data = sock.recv(4096)
        return "answered" if data else "closed"
    except (ConnectionResetError, BrokenPipeError):
        return "reset"
    except socket.timeout:
        return "timeout"
    except OSError as error:
        return "reset" if "reset" in str(error).lower() else "error:%s" % error


print(outcome())
