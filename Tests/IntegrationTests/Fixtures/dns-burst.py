# A child's burst of lookups, all sent before any answer is read: COUNT questions on one UDP
# socket to SERVER:53, alternating hostN.allowed.test and hostN.blocked.test, each with its own id.
# The agent judges them as they wait together in its queue, and gives their verdicts back
# together. Prints how many came back right (allowed: NOERROR with 10.1.1.1; blocked: NXDOMAIN),
# wrong (another answer than its own name's, or another id), or never, one per line.
import socket
import struct
import sys
import time

server, count = sys.argv[1], int(sys.argv[2])


def question(ident, name):
    body = b"".join(bytes([len(label)]) + label.encode() for label in name.split(".")) + b"\0"
    return struct.pack(">HHHHHH", ident, 0x0100, 1, 0, 0, 0) + body + struct.pack(">HH", 1, 1)


names = {}
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
for ident in range(1, count + 1):
    name = f"host{ident}.{'allowed' if ident % 2 else 'blocked'}.test"
    names[ident] = name
    sock.sendto(question(ident, name), (server, 53))

right = wrong = 0
seen = set()
deadline = time.monotonic() + 5
sock.settimeout(0.2)
while len(seen) < count and time.monotonic() < deadline:
    try:
        reply = sock.recv(4096)
    except socket.timeout:
        continue
    ident, flags = struct.unpack(">HH", reply[:4])
    if ident not in names or ident in seen:
        wrong += 1
        continue
    seen.add(ident)
    name = names[ident]
    # The question echoed must be this id's own name.
    echoed = question(ident, name)[12:]
    code = flags & 0xF
    if reply[12 : 12 + len(echoed)] != echoed:
        wrong += 1
    elif name.endswith("allowed.test"):
        right += 1 if code == 0 and bytes([10, 1, 1, 1]) in reply[12 + len(echoed) :] else 0
        wrong += 0 if code == 0 and bytes([10, 1, 1, 1]) in reply[12 + len(echoed) :] else 1
    else:
        right += 1 if code == 3 else 0
        wrong += 0 if code == 3 else 1
print(f"right {right}")
print(f"wrong {wrong}")
print(f"never {count - len(seen)}")
