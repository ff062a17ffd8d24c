#!/usr/bin/env python3
"""Loads pages in a real headless Firefox run as a user, and says what each showed. Run as root
(in the test's network namespace): Firefox is started as USER with HOME and the given profile,
driven over Marionette (its own remote protocol, on a loopback port, no geckodriver), and
stopped at the end. For each URL it prints one JSON line: the URL, the error Firefox reported
for the navigation (an error page, a timeout; null when none), the document's address (an
error page is about:neterror...) and the text of its body.

usage: firefox-load.py USER HOME PROFILE PORT URL...
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time

user, home, profile, port = sys.argv[1:5]
urls = sys.argv[5:]

browser = subprocess.Popen(
    [
        "/usr/bin/setpriv", "--reuid=" + user, "--regid=users", "--init-groups", "--",
        "/usr/bin/env", "HOME=" + home, "PATH=/usr/bin:/bin", "LANG=C.UTF-8",
        "MOZ_CRASHREPORTER_DISABLE=1",
        "/usr/bin/firefox-esr", "--headless", "--no-remote", "--marionette", "--profile", profile,
    ],
    stdin=subprocess.DEVNULL, stdout=open(os.path.join(home, "firefox.log"), "wb"), stderr=subprocess.STDOUT,
    start_new_session=True,
)


class Marionette:
    def __init__(self, port):
        deadline = time.monotonic() + 30
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
                break
            except OSError:
                if time.monotonic() > deadline or browser.poll() is not None:
                    raise
                time.sleep(0.1)
        self.buffer = b""
        self.next_id = 0
        self.receive()  # the greeting

    def receive(self):
        while b":" not in self.buffer:
            self.buffer += self.read()
        length, _, rest = self.buffer.partition(b":")
        while len(rest) < int(length):
            rest += self.read()
        self.buffer = rest[int(length):]
        return json.loads(rest[: int(length)])

    def read(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("Marionette closed the connection")
        return chunk

    def command(self, name, parameters):
        self.next_id += 1
        data = json.dumps([0, self.next_id, name, parameters]).encode()
        self.sock.sendall(b"%d:%s" % (len(data), data))
        while True:
            reply = self.receive()
            if reply[0] == 1 and reply[1] == self.next_id:
                return reply[2], reply[3]


try:
    marionette = Marionette(int(port))
    error, _ = marionette.command(
        "WebDriver:NewSession", {"capabilities": {"alwaysMatch": {"timeouts": {"pageLoad": 20000}}}}
    )
    if error:
        raise RuntimeError("no session: %s" % error)
    for url in urls:
        error, _ = marionette.command("WebDriver:Navigate", {"url": url})
        _, value = marionette.command(
            "WebDriver:ExecuteScript",
            {"script": "return [document.documentURI, document.body ? document.body.innerText : '']", "args": []},
        )
        document, text = (value or {}).get("value") or ["", ""]
        message = "%s: %s" % (error.get("error"), error.get("message")) if error else None
        print(json.dumps({"url": url, "error": message, "document": document, "text": text}), flush=True)
    marionette.command("Marionette:Quit", {"flags": ["eForceQuit"]})
finally:
    try:
        browser.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(browser.pid, signal.SIGKILL)
        browser.wait()
