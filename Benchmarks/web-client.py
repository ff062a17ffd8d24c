#!/usr/bin/env python3
"""The dashboard's benchmark client (Benchmarks/web.sh): a phone's requests over one kept-alive
HTTPS connection, trusting the dashboard's certificate alone; and many open event streams.

  web-client.py latency HOST PORT CAFILE COOKIE PATH COUNT     -> p50 p95 max (ms)
  web-client.py streams HOST PORT CAFILE COOKIE COUNT SECONDS  -> opened, and how many saw an
                                                                  ask (the caller makes one)
"""
import http.client
import socket
import ssl
import statistics
import sys
import threading
import time


def context(cafile):
    ctx = ssl.create_default_context(cafile=cafile)
    return ctx


def latency(host, port, cafile, cookie, path, count):
    conn = http.client.HTTPSConnection(host, int(port), context=context(cafile), timeout=10)
    times = []
    for _ in range(int(count)):
        start = time.perf_counter()
        conn.request("GET", path, headers={"Cookie": cookie})
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            print(f"status {response.status} for {path}", file=sys.stderr)
            sys.exit(1)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p95 = times[int(len(times) * 0.95) - 1]
    print(f"{statistics.median(times):.2f} {p95:.2f} {times[-1]:.2f}")


def streams(host, port, cafile, cookie, count, seconds):
    ctx = context(cafile)
    opened = []
    saw = []
    lock = threading.Lock()

    def one():
        try:
            raw = socket.create_connection((host, int(port)), timeout=float(seconds) + 5)
            tls = ctx.wrap_socket(raw, server_hostname=host)
            tls.sendall(f"GET /events HTTP/1.1\r\nHost: {host}:{port}\r\nCookie: {cookie}\r\n"
                        "Accept: text/event-stream\r\n\r\n".encode())
            data = b""
            first = None
            deadline = time.time() + float(seconds)
            while time.time() < deadline:
                chunk = tls.recv(4096)
                if not chunk:
                    break
                data += chunk
                if first is None and b"event: asks\ndata: " in data:
                    first = data.split(b"event: asks\ndata: ", 1)[1].split(b"\n", 1)[0]
                    with lock:
                        opened.append(1)
                    data = b""
                elif first is not None and b"event: asks\ndata: " in data:
                    with lock:
                        saw.append(1)
                    break
            tls.close()
        except OSError as error:
            print(f"stream: {error}", file=sys.stderr)

    threads = [threading.Thread(target=one) for _ in range(int(count))]
    for thread in threads:
        # Opened 20 ms apart: each opening asks the agent once, and the dashboard's account has
        # four of the agent's slots (a burst of a hundred gets "busy" for most).
        thread.start()
        time.sleep(0.02)
    for thread in threads:
        thread.join()
    print(f"{len(opened)} {len(saw)}")


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "latency":
        latency(*sys.argv[2:8])
    else:
        streams(*sys.argv[2:8])
