#!/usr/bin/env python3
"""Connect-to-first-byte of many short TLS connections, one after another: connect, send a
captured ClientHello, wait for the server's first byte, reset. Prints percentiles and the rate.

usage: connect-latency.py ADDRESS PORT HELLO-FILE COUNT
"""
import socket
import struct
import sys
import time

address, port, hello_file, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
hello = open(hello_file, "rb").read()
linger = struct.pack("ii", 1, 0)  # close with a reset: no TIME_WAIT pile-up
times = []
failures = 0
start = time.perf_counter()
for _ in range(count):
    t0 = time.perf_counter()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
    try:
        s.connect((address, port))
        s.sendall(hello)
        if s.recv(1):
            times.append(time.perf_counter() - t0)
        else:
            failures += 1
    except OSError:
        failures += 1
    s.close()
elapsed = time.perf_counter() - start
times.sort()
if not times:
    print("no connection answered (%d failures)" % failures)
    sys.exit(1)
pick = lambda q: times[min(len(times) - 1, int(len(times) * q))] * 1e6
print("p50 %.0f µs  p99 %.0f µs  %.0f conn/s  (%d connections, %d failed)" % (pick(0.5), pick(0.99), len(times) / elapsed, len(times), failures))
