#!/usr/bin/env python3
"""Connect-to-first-byte of many short TLS connections, one after another: connect, send a
captured ClientHello, wait for the server's first byte, reset. Prints percentiles and the rate.

usage: connect-latency.py ADDRESS PORT HELLO-FILE COUNT [UID-A UID-B]

With two uids (run as root), the connections alternate between sockets made as one and as the
other, connection by connection (root sets its file-system uid before each socket: the owner
match and the queue's uid are the socket's): a moment of load on the machine falls on both
alike. Then three lines: A's figures, B's, and the median of B's time minus A's over the pairs.
"""
import ctypes
import socket
import struct
import sys
import time

address, port, hello_file, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
uids = [int(u) for u in sys.argv[5:7]]
hello = open(hello_file, "rb").read()
linger = struct.pack("ii", 1, 0)  # close with a reset: no TIME_WAIT pile-up
libc = ctypes.CDLL(None, use_errno=True)


def connect(uid):
    """One connection's time to the first byte (None: it failed), its socket made as `uid`."""
    if uid is not None:
        libc.setfsuid(uid)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if uid is not None:
        libc.setfsuid(0)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
    t0 = time.perf_counter()
    try:
        s.connect((address, port))
        s.sendall(hello)
        return time.perf_counter() - t0 if s.recv(1) else None
    except OSError:
        return None
    finally:
        s.close()


def report(label, times, failures):
    if not times:
        print("%sno connection answered (%d failures)" % (label, failures))
        return False
    times = sorted(times)
    pick = lambda q: times[min(len(times) - 1, int(len(times) * q))] * 1e6
    # The rate while connecting one after another: connections over the time they took.
    print("%sp50 %.0f µs  p99 %.0f µs  %.0f conn/s  (%d connections, %d failed)"
          % (label, pick(0.5), pick(0.99), len(times) / sum(times), len(times), failures))
    return True


if not uids:
    times = []
    failures = 0
    for _ in range(count):
        t = connect(None)
        if t is None:
            failures += 1
        else:
            times.append(t)
    sys.exit(0 if report("", times, failures) else 1)

times = {uid: [] for uid in uids}
failures = {uid: 0 for uid in uids}
differences = []
for index in range(count):
    # Each goes first in every other pair: neither gains from coming second (a warm server).
    order = uids if index % 2 == 0 else uids[::-1]
    pair = {uid: connect(uid) for uid in order}
    for uid, t in pair.items():
        if t is None:
            failures[uid] += 1
        else:
            times[uid].append(t)
    if None not in pair.values():
        differences.append(pair[uids[1]] - pair[uids[0]])
ok = report("A ", times[uids[0]], failures[uids[0]]) & report("B ", times[uids[1]], failures[uids[1]])
differences.sort()
if differences:
    pick = lambda q: differences[min(len(differences) - 1, int(len(differences) * q))] * 1e6
    print("B-A p50 %+.0f µs  p90 %+.0f µs  (%d pairs)" % (pick(0.5), pick(0.9), len(differences)))
sys.exit(0 if ok else 1)
