#!/usr/bin/python3
"""A child tying up the control socket: opens COUNT connections and sends one byte of a frame on
each every INTERVAL seconds, for at most SECONDS.

Usage: trickle.py SOCKET COUNT INTERVAL SECONDS

Prints 'busy N' (connections the agent turned away with a busy reply), 'open N' (connections it
took), then, as the agent ends them, 'closed AFTER' (seconds since that connection's first byte),
and at the end 'still-open N'. Exit status 0 unless it could not run.
"""
import socket
import struct
import sys
import time

path, count, interval, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
frame = struct.pack(">I", 64) + b"x" * 64
taken = []
busy = 0
for _ in range(count):
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    connection.setblocking(False)
    taken.append([connection, 0, None])
# Turned-away connections get a reply at once and are closed.
time.sleep(0.3)
open_ones = []
for item in taken:
    try:
        data = item[0].recv(4096)
        if b"busy" in data:
            busy += 1
            continue
    except BlockingIOError:
        pass
    open_ones.append(item)
print("busy", busy, flush=True)
print("open", len(open_ones), flush=True)
start = time.monotonic()
while open_ones and time.monotonic() - start < seconds:
    for item in list(open_ones):
        connection, sent, first = item
        try:
            connection.send(frame[sent:sent + 1])
            if first is None:
                item[2] = time.monotonic()
            item[1] = sent + 1
        except (BrokenPipeError, ConnectionResetError):
            print("closed %.1f" % (time.monotonic() - item[2]), flush=True)
            open_ones.remove(item)
            continue
        try:
            if connection.recv(4096) == b"":
                print("closed %.1f" % (time.monotonic() - item[2]), flush=True)
                open_ones.remove(item)
        except BlockingIOError:
            pass
    time.sleep(interval)
print("still-open", len(open_ones), flush=True)
