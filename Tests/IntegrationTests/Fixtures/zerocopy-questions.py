# A child's questions sent with MSG_ZEROCOPY from a page another process of hers rewrites at once
# (the name flips between NAME and ALTERNATE, of the same length), each from a new socket:
#   zerocopy-questions.py SERVER NAME ALTERNATE COUNT
# Every tenth, a plain question for NAME first, waited for (its entry on the fast path kept in
# force). Prints how many sends the kernel refused and how many answers came back.
import mmap, os, select, socket, struct, sys

server, name, alternate, count = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode(), int(sys.argv[4])
assert len(name) == len(alternate)
family = socket.AF_INET6 if ":" in server else socket.AF_INET


def wire(text):
    return b"".join(bytes([len(label)]) + label for label in text.split(b".")) + b"\x00"


def question(text, ident):
    return struct.pack(">HHHHHH", ident, 0x0100, 1, 0, 0, 0) + wire(text) + struct.pack(">HH", 1, 1)


def plain():
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.connect((server, 53))
    s.send(question(name, 0x1111))
    ready, _, _ = select.select([s], [], [], 1)
    answered = bool(ready) and len(s.recv(4096)) > 0
    s.close()
    return answered


page = mmap.mmap(-1, 4096, mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
sent = question(name, 0x4242)
page[0 : len(sent)] = sent
one, other = wire(name), wire(alternate)
child = os.fork()
if child == 0:
    while True:
        page[12 : 12 + len(one)] = other
        page[12 : 12 + len(one)] = one
refused = answered = 0
sockets = []
for i in range(count):
    if i % 10 == 0:
        plain()
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, 60, 1)  # SO_ZEROCOPY
    s.connect((server, 53))
    try:
        s.sendmsg([memoryview(page)[: len(sent)]], [], 0x4000000)  # MSG_ZEROCOPY
    except OSError:
        refused += 1
    sockets.append(s)
os.kill(child, 9)
for s in sockets:
    ready, _, _ = select.select([s], [], [], 0.05)
    if ready:
        try:
            s.recv(4096, socket.MSG_DONTWAIT)
            answered += 1
        except OSError:
            pass
    s.close()
print("refused %d answered %d" % (refused, answered))
