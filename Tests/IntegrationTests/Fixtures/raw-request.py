#!/usr/bin/python3
"""Sends one hand-made request to the control socket, as an old or hostile client would, and
prints the reply.

Usage: raw-request.py SOCKET JSON
"""
import socket
import struct
import sys

path, message = sys.argv[1], sys.argv[2].encode()
connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
connection.connect(path)
connection.sendall(struct.pack(">I", len(message)) + message)
header = connection.recv(4, socket.MSG_WAITALL)
length = struct.unpack(">I", header)[0]
print(connection.recv(length, socket.MSG_WAITALL).decode())
