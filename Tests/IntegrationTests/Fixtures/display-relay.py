#!/usr/bin/env python3
# A display of a child's own making: a socket of hers that passes every connection on to the real
# display's, byte for byte (X clients connected to it draw on the real display, where the server
# knows only this relay as its client).
# Usage: display-relay.py LISTEN_PATH SERVER_PATH [--refuse-root] [--ghost | --holder]
# SERVER_PATH may be an abstract name (@/tmp/.X11-unix/XN: a server started with -nolisten unix).
# With --refuse-root the relay closes every connection root makes to it at once (the agent's): a
# display the agent cannot read, which her programs still draw on. With --ghost the process that
# made the listener forks the relay and ends (the kernel's word on who serves the socket names a
# process gone); with --holder it stays, having closed its copy (it holds no connection).
import os
import socket
import struct
import sys
import threading

listen_path, server_path = sys.argv[1], sys.argv[2]
refuse_root = "--refuse-root" in sys.argv[3:]
if server_path.startswith("@"):
    server_path = "\0" + server_path[1:]


def pump(source, target):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, target):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


try:
    os.unlink(listen_path)
except FileNotFoundError:
    pass
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(listen_path)
listener.listen(16)
if "--ghost" in sys.argv[3:] or "--holder" in sys.argv[3:]:
    if os.fork() > 0:
        if "--ghost" in sys.argv[3:]:
            os._exit(0)
        listener.close()
        while True:
            threading.Event().wait(3600)
while True:
    client, _ = listener.accept()
    if refuse_root:
        _, uid, _ = struct.unpack("3i", client.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        if uid == 0:
            client.close()
            continue
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.connect(server_path)
    threading.Thread(target=pump, args=(client, server), daemon=True).start()
    threading.Thread(target=pump, args=(server, client), daemon=True).start()
