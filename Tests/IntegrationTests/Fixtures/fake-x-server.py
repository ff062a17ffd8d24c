#!/usr/bin/env python3
"""A hostile X server a child can run: it listens on a display socket of its own and answers
the agent's connection with something out of bounds.

    fake-x-server.py DISPLAY-NUMBER MODE

MODE is one of:
  huge-property  a valid setup, then a _NET_SUPPORTED whose value_len claims 4 GB in a 4-byte
                 reply, and a window tree whose count claims 65,535 children in none
  huge-reply     a valid setup, then a reply to the first request claiming 2 GB, streamed
  refuse         a setup refused with a long reason, on every connection
  bad-setup      a setup whose screen claims 255 depths of 65,535 visuals in 40 bytes
  event-flood    a valid setup, then events as fast as the socket takes them, and no replies
  late-focus     a well-behaved server whose window manager makes window 0x200002 (pid 2222)
                 active instead of 0x200001 (pid 1111) while the agent asks where the keyboard
                 is: its PropertyNotify comes just before that reply, and then nothing more
"""
import os
import socket
import struct
import sys
import threading

number, mode = int(sys.argv[1]), sys.argv[2]
path = "/tmp/.X11-unix/X%d" % number


def read_exactly(connection, count):
    data = b""
    while len(data) < count:
        chunk = connection.recv(count - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def pad(data):
    return data + b"\0" * (-len(data) % 4)


def setup(depths_len=1, visuals_len=1, depth_bytes=None):
    vendor = pad(b"fake")
    fixed = struct.pack("<IIIIHHBBBBBBBB4x", 1, 0x200000, 0x1FFFFF, 0, 4, 65535, 1, 1, 0, 0, 32, 32, 8, 255)
    formats = struct.pack("<BBB5x", 24, 32, 32)
    screen = struct.pack("<IIIIIHHHHHHIBBBB", 0x100, 0x20, 0xFFFFFF, 0, 0, 800, 600, 200, 150, 1, 1, 0x21, 0, 0, 24,
                         depths_len)
    if depth_bytes is None:
        depth_bytes = struct.pack("<BxH4x", 24, visuals_len) + struct.pack("<IBBHIII4x", 0x21, 4, 8, 256, 0xFF0000,
                                                                          0xFF00, 0xFF)
    rest = fixed + vendor + formats + screen + depth_bytes
    return struct.pack("<BxHHH", 1, 11, 0, len(rest) // 4) + rest


def reply(sequence, data=0, length=0, body=b""):
    header = struct.pack("<BBHI", 1, data, sequence & 0xFFFF, length)
    return header + (body + b"\0" * 24)[:24] + body[24:]


def serve(connection):
    try:
        head = read_exactly(connection, 12)
        name_length, data_length = struct.unpack("<HH", head[6:10])
        read_exactly(connection, len(pad(b"x" * name_length)) + len(pad(b"x" * data_length)))
        if mode == "refuse":
            reason = b"go away " * 31
            connection.sendall(struct.pack("<BBHHH", 0, len(reason), 11, 0, len(pad(reason)) // 4) + pad(reason))
            return
        if mode == "bad-setup":
            connection.sendall(setup(depths_len=255, depth_bytes=struct.pack("<BxH4x", 24, 65535)))
            connection.recv(4096)
            return
        connection.sendall(setup())
        if mode == "event-flood":
            event = struct.pack("<BxHIIIB15x", 28, 0, 0x100, 1, 0, 0)
            burst = event * 2048
            while True:
                connection.sendall(burst)
        if mode == "late-focus":
            late_focus(connection)
            return
        sequence = 0
        while True:
            request = read_exactly(connection, 4)
            opcode, length = request[0], struct.unpack("<H", request[2:4])[0]
            body = read_exactly(connection, max(0, length * 4 - 4))
            sequence += 1
            if mode == "huge-reply":
                connection.sendall(reply(sequence, length=0x20000000))
                block = b"\0" * 65536
                while True:
                    connection.sendall(block)
            if opcode == 16:  # InternAtom
                connection.sendall(reply(sequence, body=struct.pack("<I", 300 + sequence)))
            elif opcode == 98:  # QueryExtension: none here
                connection.sendall(reply(sequence))
            elif opcode == 20:  # GetProperty: 4 GB claimed, 4 bytes given
                connection.sendall(reply(sequence, data=32, length=1,
                                         body=struct.pack("<III", 4, 0, 0x3FFFFFFF) + b"\0" * 12 + b"\1\1\0\0"))
            elif opcode == 15:  # QueryTree: 65,535 children claimed, none given
                connection.sendall(reply(sequence, body=struct.pack("<IIH", 0x100, 0, 0xFFFF)))
            elif opcode == 43:  # GetInputFocus
                connection.sendall(reply(sequence, body=struct.pack("<I", 0)))
            elif opcode == 3:  # GetWindowAttributes: shorter than it must be
                connection.sendall(reply(sequence, data=0))
    except (EOFError, OSError):
        pass
    finally:
        connection.close()


def late_focus(connection):
    atoms = {}
    active, switched = 0x200001, False
    pids = {0x200001: 1111, 0x200002: 2222}
    root = 0x100
    sequence = 0

    def atom(name):
        return atoms.setdefault(name, 300 + len(atoms))

    while True:
        request = read_exactly(connection, 4)
        opcode, minor, length = request[0], request[1], struct.unpack("<H", request[2:4])[0]
        body = read_exactly(connection, max(0, length * 4 - 4))
        sequence += 1
        if opcode == 16:  # InternAtom
            size = struct.unpack("<H", body[0:2])[0]
            connection.sendall(reply(sequence, body=struct.pack("<I", atom(body[4:4 + size]))))
        elif opcode == 98:  # QueryExtension: X-Resource only, as major opcode 140
            size = struct.unpack("<H", body[0:2])[0]
            present = body[4:4 + size] == b"X-Resource"
            connection.sendall(reply(sequence, body=struct.pack("<BBBB", 1, 140, 0, 0) if present else b""))
        elif opcode == 20:  # GetProperty
            window, name = struct.unpack("<II", body[0:8])
            if window == root and name == atom(b"_NET_SUPPORTED"):
                value, kind = struct.pack("<I", atom(b"_NET_ACTIVE_WINDOW")), 4
            elif window == root and name == atom(b"_NET_ACTIVE_WINDOW"):
                value, kind = struct.pack("<I", active), 33
            else:
                value, kind = b"", 0
            connection.sendall(reply(sequence, data=32 if value else 0, length=len(value) // 4,
                                     body=struct.pack("<III12x", kind, 0, len(value) // 4) + value))
        elif opcode == 3:  # GetWindowAttributes: viewable
            attributes = struct.pack("<IHBBIIBBBBIIIH2x", 0x21, 1, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0)
            connection.sendall(reply(sequence, length=3, body=attributes))
        elif opcode == 140 and minor == 4:  # XResQueryClientIds: the window's client's pid
            window = struct.unpack("<I", body[4:8])[0]
            value = struct.pack("<IIII", window, 2, 4, pids.get(window, 0))
            connection.sendall(reply(sequence, length=4, body=struct.pack("<I20x", 1) + value))
        elif opcode == 43:  # GetInputFocus: the keyboard's window as it was when asked
            focus = active
            if not switched:
                switched = True
                active = 0x200002
                connection.sendall(struct.pack("<BxHIIIB15x", 28, sequence & 0xFFFF, root,
                                               atom(b"_NET_ACTIVE_WINDOW"), 0, 0))
            connection.sendall(reply(sequence, body=struct.pack("<I", focus)))
        elif opcode == 15:  # QueryTree: no children
            connection.sendall(reply(sequence, body=struct.pack("<IIH", root, root, 0)))
        elif opcode == 31:  # GrabKeyboard, for a window never shown: NotViewable (nobody holds it)
            connection.sendall(reply(sequence, data=3))
        elif opcode in (2, 1, 4, 32):  # ChangeWindowAttributes and others with no reply
            pass
        else:
            connection.sendall(reply(sequence))


try:
    os.unlink(path)
except FileNotFoundError:
    pass
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path)
listener.listen(64)
while True:
    client, _ = listener.accept()
    threading.Thread(target=serve, args=(client,), daemon=True).start()
