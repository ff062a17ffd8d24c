# A TLS server that reads each connection 0.3 s after accepting it, as a busy server or one behind
# a slow link does, and answers "https NAME" for the server name it was sent. Run as root (not
# filtered), in the world's namespace.
#   slow-tls-server.py ADDRESS PORT CERTIFICATE KEY READY
import socket, ssl, sys, threading, time

address, port, certificate, key, ready = sys.argv[1:6]
listener = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind((address, int(port)))
listener.listen(64)
open(ready, "w").close()


def answer(connection):
    time.sleep(0.3)
    names = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    context.sni_callback = lambda _, name, __: names.append(name)
    try:
        with context.wrap_socket(connection, server_side=True) as tls:
            tls.settimeout(5)
            tls.recv(65536)
            body = ("https %s\n" % (names[0] if names else "")).encode()
            tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
    except (ssl.SSLError, OSError):
        pass


while True:
    accepted, _ = listener.accept()
    threading.Thread(target=answer, args=(accepted,), daemon=True).start()
