#!/usr/bin/env python3
# A display of a child's own making: a socket of hers that passes every connection on to the real
# display's, byte for byte (X clients connected to it draw on the real display, where the server
# knows only this relay as its client).
# Usage: display-relay.py LISTEN_PATH SERVER_PATH
import os
import socket
import sys
import threading

listen_path, server_path = sys.argv[1], sys.argv[2]


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
while True:
    client, _ = listener.accept()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.connect(server_path)
    threading.Thread(target=pump, args=(client, server), daemon=True).start()
    threading.Thread(target=pump, args=(server, client), daemon=True).start()
