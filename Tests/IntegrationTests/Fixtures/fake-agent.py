"""An agent's control socket that answers one request as it is told, for the PAM hook's tests:
it writes the request's JSON to REQUEST_FILE and replies REPLY as given (UTF-8), framed as the agent frames (a 4-byte big-endian length, then the payload), or, with "--silent",
never replies.

    fake-agent.py SOCKET REQUEST_FILE REPLY|--silent
"""
import os
import socket
import struct
import sys
import time

path, request_file, reply = sys.argv[1], sys.argv[2], sys.argv[3]
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path)
listener.listen(1)
print("listening", flush=True)
connection, _ = listener.accept()
header = b""
while len(header) < 4:
    header += connection.recv(4 - len(header))
length = struct.unpack(">I", header)[0]
payload = b""
while len(payload) < length:
    payload += connection.recv(length - len(payload))
with open(request_file, "wb") as out:
    out.write(payload)
if reply == "--silent":
    time.sleep(30)
else:
    body = reply.encode("utf-8")
    connection.sendall(struct.pack(">I", len(body)) + body)
connection.close()
os.unlink(path)
