#!/usr/bin/python3
"""A child's program posing as sway on a socket of hers: it takes the subscription, answers the
request for the window tree with one legal reply of WIDTH empty nodes, then closes, and writes a
line to LOG for each connection the agent makes. With a fourth argument, "flood", it answers
with a small tree and then sends window events as fast as the socket takes them.

Usage: wide-sway.py SOCKET LOG WIDTH [flood]
"""
import os
import socket
import struct
import sys

path, log, width = sys.argv[1], sys.argv[2], int(sys.argv[3])
flood = sys.argv[4:] == ["flood"]
MAGIC = b"i3-ipc"
tree = b'{"nodes": [' + b",".join([b"{}"] * width) + b"]}"


def message(kind, payload):
    return MAGIC + struct.pack("<II", len(payload), kind) + payload


def read_message(connection):
    header = connection.recv(14, socket.MSG_WAITALL)
    if len(header) < 14:
        return None
    length, kind = struct.unpack("<II", header[6:14])
    if length:
        connection.recv(length, socket.MSG_WAITALL)
    return kind


if os.path.exists(path):
    os.unlink(path)
# Listening before the socket is at its name: the agent, finding the name, never meets a socket
# bound but not yet listening (a refused first connection was the problem it logged, on a loaded
# machine, and the flood's after it was not).
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path + ".new")
server.listen(16)
os.rename(path + ".new", path)
while True:
    connection, _ = server.accept()
    with open(log, "a") as out:
        out.write("connected\n")
    try:
        while True:
            kind = read_message(connection)
            if kind is None:
                break
            if kind == 2:
                connection.sendall(message(2, b'{"success": true}'))
            elif kind == 4 and flood:
                connection.sendall(message(4, b'{"nodes": []}'))
                event = message(0x80000003, b'{"change": "title", "container": {"id": 1, "name": "' + b"x" * 2000 + b'"}}')
                while True:
                    connection.sendall(event * 64)
            elif kind == 4:
                connection.sendall(message(4, tree))
                break
    except OSError:
        pass
    connection.close()
