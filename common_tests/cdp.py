"""A headless Chromium driven over the Chrome DevTools protocol, standard library only.

Just enough of a WebSocket client (RFC 6455: client handshake, masked text frames out,
unmasked frames in) to send DevTools commands and collect the events the browser sends
back, so that a test can see every request, failed load and script error of a page.
"""
import base64
import contextlib
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import threading
import time
import urllib.request


def find_chromium():
    """The system's Chromium executable, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class WebSocket:
    def __init__(self, url, timeout):
        m = re.match(r"ws://([^/:]+):(\d+)(/.*)", url)
        self.sock = socket.create_connection((m.group(1), int(m.group(2))), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {m.group(3)} HTTP/1.1\r\nHost: {m.group(1)}:{m.group(2)}\r\n"
                           "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the browser closed the DevTools connection during the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"DevTools handshake refused: {head[:200]!r}")
        self.buf = head.split(b"\r\n\r\n", 1)[1]

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the browser closed the DevTools connection")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)  # a client masks every frame it sends (RFC 6455, 5.3)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else
                                bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self):
        parts = []
        while True:  # a message may come in fragments; control frames may come between them
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise ConnectionError("the browser closed the DevTools connection")
            if opcode in (0x9, 0xA):  # ping/pong: the browser does not expect an answer from us
                continue
            parts.append(payload)
            if b0 & 0x80:
                return b"".join(parts).decode()

    def close(self):
        self.sock.close()


class Browser:
    """One headless Chromium with one page; ``events`` holds every DevTools event received."""

    def __init__(self, profile_dir, allowed_host="127.0.0.1", timeout=30):
        exe = find_chromium()
        # every host name but the local one fails to resolve: the browser has no network
        # whatever the machine has, and a load from a CDN shows up as a failed request
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start;
        # --disable-dev-shm-usage: containers often have a tiny /dev/shm
        args = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-extensions", "--disable-default-apps", "--window-size=1280,800",
                f"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE {allowed_host}",
                "--remote-debugging-port=0", f"--user-data-dir={profile_dir}", "about:blank"]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.timeout = timeout
        self.events = []
        self._id = 0
        try:
            port = self._devtools_port()
            deadline = time.monotonic() + timeout
            while True:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout) as r:
                    pages = [t for t in json.load(r) if t["type"] == "page"]
                if pages or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            self.ws = WebSocket(pages[0]["webSocketDebuggerUrl"], timeout)
        except BaseException:
            self.quit()
            raise

    def _devtools_port(self):
        deadline = time.monotonic() + self.timeout
        lines = []
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            lines.append(line)
            m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if m:
                # keep reading what it logs, or a full pipe would stall the browser
                threading.Thread(target=self.proc.stderr.read, daemon=True).start()
                return int(m.group(1))
        raise RuntimeError("Chromium did not open its DevTools port:\n" + "".join(lines[-20:]))

    def call(self, method, **params):
        """Send one command and return its result; events arriving meanwhile are kept."""
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"DevTools {method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def evaluate(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_for(self, expression, timeout=None):
        """Poll ``expression`` until it is truthy; return its last value."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            value = self.evaluate(expression)
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.1)

    def screenshot(self, path, clip=None):
        """Save the page as a PNG: the window, or the rectangle ``clip`` (``x``, ``y``,
        ``width``, ``height`` in the document's CSS pixels), beyond the window if need be."""
        params = {"format": "png"}
        if clip is not None:
            params.update(clip=dict(clip, scale=1), captureBeyondViewport=True)
        data = self.call("Page.captureScreenshot", **params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def quit(self):
        if getattr(self, "ws", None) is not None:
            self.ws.close()
        self.proc.kill()
        self.proc.wait(timeout=30)


@contextlib.contextmanager
def watching(profile_dir, timeout=30):
    """A Browser recording what pages do (the Page, Network, Runtime and Log events, which
    ``problems`` reads), quit on leaving."""
    b = Browser(profile_dir, timeout=timeout)
    try:
        for domain in ("Page", "Network", "Runtime", "Log"):
            b.call(f"{domain}.enable")
        yield b
    finally:
        b.quit()


def problems(browser, origin):
    """Requests that left the local server, failed loads, HTTP errors and script errors."""
    out, urls = [], {}
    for e in browser.events:
        m, p = e["method"], e["params"]
        if m == "Network.requestWillBeSent":
            url = urls[p["requestId"]] = p["request"]["url"]
            if not url.startswith((origin, "data:", "about:")):
                out.append(f"request to the outside: {url}")
        elif m == "Network.loadingFailed" and not p.get("canceled"):
            out.append(f"failed load ({p.get('type')}): {p.get('errorText')} "
                       f"{urls.get(p.get('requestId'), p.get('requestId'))}")
        elif m == "Network.responseReceived" and p["response"]["status"] >= 400:
            out.append(f"HTTP {p['response']['status']}: {p['response']['url']}")
        elif m == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            out.append(f"script error: {d.get('exception', {}).get('description') or d.get('text')}")
        elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
            out.append(f"console error: {p['entry']['text']} {p['entry'].get('url', '')}")
    return out
