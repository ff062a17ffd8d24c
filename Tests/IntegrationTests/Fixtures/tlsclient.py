"""What the connection attacks share: a TLS client driven through memory, so that its hello can
be sent however the attack sends it, and the word each prints for how it ended."""
import socket
import ssl
import struct

_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
_context.check_hostname = False
_context.verify_mode = ssl.CERT_NONE


class MemoryClient:
    """A TLS client naming `host` (offering `alpn` if given), its hello made and not sent:
    `hello` holds its bytes."""

    def __init__(self, host, alpn=None):
        context = _context
        if alpn:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            context.set_alpn_protocols(alpn)
        self.host = host
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_hostname=host)
        try:
            self.tls.do_handshake()
        except ssl.SSLWantReadError:
            pass
        self.hello = self.outgoing.read()

    def outcome(self, sock):
        """Goes on with the handshake over `sock` (its hello sent already), asks for "/", and
        says how it ended: served NAME (the server answered "https NAME"), reset, closed, timeout
        or error:WHY."""
        tls, incoming, outgoing = self.tls, self.incoming, self.outgoing
        try:
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
            tls.write(b"GET / HTTP/1.1\r\nHost: %s\r\n\r\n" % self.host.encode())
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


def unacknowledged(sock):
    """The bytes `sock` sent that its peer has not acknowledged (TCP_INFO's tcpi_unacked: after
    eight one-byte fields, rto, ato, snd_mss, rcv_mss)."""
    return struct.unpack_from("I", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104), 24)[0]
