#!/usr/bin/env python3
"""e2e/cdp.py: one action on a headless Chromium through the DevTools
protocol, for e2e/test_ui.sh. The browser runs on (started with
--remote-debugging-port=PORT) and keeps its page between calls, so the page
goes on polling by itself while the test waits on the apiserver.

    cdp.py PORT nav URL          load URL in the first page (a tab)
    cdp.py PORT eval EXPR        print the value of a JavaScript expression
    cdp.py PORT shot FILE        save a PNG screenshot of the page
    cdp.py PORT repl             the same actions, one per line on stdin
                                 ("eval EXPR"), one answer per line on
                                 stdout ("ok VALUE" or "err WHY")

Python's standard library only (a minimal WebSocket client: no extensions,
text frames). Exit status 1 on a protocol error or an exception in EXPR.
"""
import base64
import json
import os
import socket
import struct
import sys
import urllib.request


def page_ws(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=10) as r:
        targets = json.load(r)
    for t in targets:
        if t.get("type") == "page":
            return t["webSocketDebuggerUrl"]
    raise SystemExit("cdp: no page target")


class WS:
    def __init__(self, url):
        rest = url.split("://", 1)[1]
        hostport, path = rest.split("/", 1)
        host, port = hostport.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
                        "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                        "Sec-WebSocket-Version: 13\r\n\r\n" % (path, hostport, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.s.recv(4096)
            if not chunk:
                raise SystemExit("cdp: handshake closed")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise SystemExit("cdp: handshake refused: %r" % head[:200])
        self.buf = head.split(b"\r\n\r\n", 1)[1]
        self.next_id = 0

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise SystemExit("cdp: connection closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        if n < 126:
            head = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 65536:
            head = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        self.s.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            payload = self._read(n)
            op = b0 & 0x0F
            if op in (0x9, 0xA):  # ping, pong: not used by Chromium here
                continue
            if op == 0x8:
                raise SystemExit("cdp: closed by the browser")
            msg += payload
            if b0 & 0x80:
                return msg.decode()

    def call(self, method, **params):
        self.next_id += 1
        my = self.next_id
        self.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            m = json.loads(self.recv())
            if m.get("id") == my:
                if "error" in m:
                    raise SystemExit("cdp: %s: %s" % (method, m["error"]))
                return m.get("result", {})


def act(ws, action, arg):
    """One action; its printable result (one line)."""
    if action == "nav":
        ws.call("Page.navigate", url=arg)
        return ""
    if action == "eval":
        r = ws.call("Runtime.evaluate", expression=arg, returnByValue=True)
        if "exceptionDetails" in r:
            raise ValueError(r["exceptionDetails"].get("text", "exception"))
        v = r.get("result", {}).get("value")
        return "" if v is None else str(v).replace("\n", " ")
    if action == "shot":
        r = ws.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        with open(arg, "wb") as f:
            f.write(base64.b64decode(r["data"]))
        return arg
    raise ValueError("unknown action %s" % action)


def main():
    port, action = int(sys.argv[1]), sys.argv[2]
    ws = WS(page_ws(port))
    if action != "repl":
        try:
            print(act(ws, action, sys.argv[3]))
        except ValueError as e:
            print(e, file=sys.stderr)
            sys.exit(1)
        return
    # repl: "ACTION ARG" per line in, "ok RESULT" or "err WHY" per line out
    # (a long-lived helper: Python's start-up costs seconds on a loaded host)
    for line in sys.stdin:
        a, _, arg = line.rstrip("\n").partition(" ")
        try:
            out = "ok " + act(ws, a, arg)
        except ValueError as e:
            out = "err " + str(e).replace("\n", " ")
        sys.stdout.write(out + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
