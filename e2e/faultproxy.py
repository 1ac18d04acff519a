#!/usr/bin/env python3
"""e2e/faultproxy.py: a fault-injecting HTTPS proxy in front of the kube-apiserver.

One gpuq replica of e2e/test_fence.sh talks to the apiserver through it (its
kubeconfig names the proxy; its bearer token passes through). The proxy
terminates TLS with the apiserver's own certificate (IP SAN 127.0.0.1, the
cluster CA), so it sees every request: it logs each one, one JSON line per
request, with wall-clock milliseconds (the host's clock, the one the Lease's
renewTime is written with):

  {"id", "conn", "method", "path", "recv" (the whole request read),
   "fwd" (sent on to the apiserver; null: never), "resp" (the response's
   head passed back to the client; null: never), "status", "fault"}

Faults, set at run time on the control port (plain HTTP, 127.0.0.1 only):

  PUT /mode  {"scope": "writes" | "all",  which requests the faults hit:
                                          writes (POST PUT PATCH DELETE) but
                                          the Lease's, or every request
              "delay_ms": [lo, hi],       hold each request lo..hi ms first
              "stall": true,              hold each request until the mode
                                          changes
              "p429": 0.5,                answer 429 itself (not forwarded)
              "retry_after": 8,           ... with this Retry-After (s)
              "p_drop": 0.1,              close the connection unforwarded
              "p_drop_after": 0.1,        forward, then close before the answer
              "forward_abandoned": true}  a held request whose client has gone
                                          is forwarded anyway when its hold
                                          ends (its answer goes nowhere;
                                          logged "abandoned": true)
  GET /mode, GET /stats                   the mode in force; counters

A request held (delay, stall) whose client has gone meanwhile (its
connection closed: gpuq's timeout ran out) is dropped, not forwarded, as
nginx does by default (proxy_ignore_client_abort off): the proxy models a
path that loses an abandoned request, so what the log says passed is what
the client still stood behind. With forward_abandoned it models the other
kind of path (nginx with proxy_ignore_client_abort on, a queue in front of
the apiserver): the request goes on after its client gave up on it, the
write no client-side fence can stop. Random choices come from one generator
seeded by --seed.

Usage: faultproxy.py --listen PORT --control PORT --upstream HOST:PORT
       --cafile CA --cert CRT --key KEY --log FILE [--seed N]
"""
import argparse
import json
import random
import select
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WRITES = ("POST", "PUT", "PATCH", "DELETE")
HEAD_MAX = 64 << 10  # bytes in a request or response head
POLL_S = 0.05  # how often a held request looks at its client and the mode


def now_ms():
    return int(time.time() * 1000)


class State:
    """The mode in force, the log, the counters, the generator (one lock)."""

    def __init__(self, log_path, seed):
        self.lock = threading.Lock()
        self.mode = {}
        self.gen = 0  # bumped by every mode change (a stall ends on it)
        self.rng = random.Random(seed)
        self.log = open(log_path, "a", buffering=1)
        self.next_id = 0
        self.stats = {}

    def set_mode(self, mode):
        with self.lock:
            self.mode = mode
            self.gen += 1
            self.log.write(json.dumps({"mode": mode, "at": now_ms()}) + "\n")

    def count(self, key):
        with self.lock:
            self.stats[key] = self.stats.get(key, 0) + 1

    def rand(self):
        with self.lock:
            return self.rng.random()

    def uniform(self, lo, hi):
        with self.lock:
            return self.rng.uniform(lo, hi)

    def new_id(self):
        with self.lock:
            self.next_id += 1
            return self.next_id

    def write(self, rec):
        with self.lock:
            self.log.write(json.dumps(rec) + "\n")


class Conn:
    """One client connection and its upstream connection."""

    def __init__(self, st, sock, cid, args, up_ctx):
        self.st, self.sock, self.cid, self.args, self.up_ctx = st, sock, cid, args, up_ctx
        self.buf = b""
        self.up = None
        self.upbuf = b""

    # -- client side --
    def fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("client closed")
        self.buf += data

    def read_head(self):
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > HEAD_MAX:
                raise EOFError("request head too large")
            self.fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        return head

    def read_body(self, n):
        while len(self.buf) < n:
            self.fill()
        body, self.buf = self.buf[:n], self.buf[n:]
        return body

    def client_gone(self):
        """Whether the client closed its connection (it has nothing else to
        send while its request waits: curl does not pipeline)."""
        if self.sock.pending():
            return False
        r, _, _ = select.select([self.sock], [], [], 0)
        if not r:
            return False
        self.sock.setblocking(False)
        try:
            data = self.sock.recv(65536)
        except ssl.SSLWantReadError:
            return False
        except (ssl.SSLError, OSError):
            return True
        finally:
            self.sock.setblocking(True)
        if not data:
            return True
        self.buf += data
        return False

    # -- upstream side --
    def up_connect(self):
        if self.up is None:
            host, port = self.args.upstream.rsplit(":", 1)
            raw = socket.create_connection((host, int(port)), timeout=60)
            self.up = self.up_ctx.wrap_socket(raw, server_hostname=host)
            self.up.settimeout(None)
            self.upbuf = b""

    def up_close(self):
        if self.up is not None:
            try:
                self.up.close()
            except OSError:
                pass
        self.up = None

    def up_fill(self):
        data = self.up.recv(65536)
        if not data:
            raise EOFError("upstream closed")
        self.upbuf += data

    def up_line(self):
        while b"\r\n" not in self.upbuf:
            self.up_fill()
        line, self.upbuf = self.upbuf.split(b"\r\n", 1)
        return line

    def up_exact(self, n):
        while len(self.upbuf) < n:
            self.up_fill()
        data, self.upbuf = self.upbuf[:n], self.upbuf[n:]
        return data

    def relay_response(self, method, rec, deliver):
        """Read the upstream response; pass it to the client when deliver."""
        while b"\r\n\r\n" not in self.upbuf:
            self.up_fill()
        head, self.upbuf = self.upbuf.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(b":")
            hdrs[k.strip().lower()] = v.strip()
        rec["status"] = status
        if deliver:
            self.sock.sendall(head + b"\r\n\r\n")
            rec["resp"] = now_ms()

        def out(b):
            if deliver:
                self.sock.sendall(b)

        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return True
        if hdrs.get(b"transfer-encoding", b"").lower() == b"chunked":
            while True:
                line = self.up_line()
                out(line + b"\r\n")
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    while True:  # trailers, then the empty line
                        t = self.up_line()
                        out(t + b"\r\n")
                        if not t:
                            return True
                out(self.up_exact(size + 2))
        if b"content-length" in hdrs:
            n = int(hdrs[b"content-length"])
            while n > 0:
                if not self.upbuf:
                    self.up_fill()
                k = min(n, len(self.upbuf))
                out(self.upbuf[:k])
                self.upbuf = self.upbuf[k:]
                n -= k
            return True
        # neither: the body runs to the end of the connection
        try:
            while True:
                if self.upbuf:
                    out(self.upbuf)
                    self.upbuf = b""
                self.up_fill()
        except EOFError:
            pass
        self.up_close()
        return False

    # -- the faults --
    def hold(self, until_ms, gen, rec, keep_abandoned=False):
        """Hold until until_ms (None: until the mode changes); False when the
        client left meanwhile (with keep_abandoned: held on, marked)."""
        while True:
            if not rec.get("abandoned") and self.client_gone():
                if not keep_abandoned:
                    rec["fault"] += "; client gone: dropped"
                    return False
                rec["fault"] += "; client gone: held on"
                rec["abandoned"] = True
            if until_ms is not None and now_ms() >= until_ms:
                return True
            if until_ms is None and self.st.gen != gen:
                return True
            time.sleep(POLL_S)

    def answer_429(self, retry_after, rec):
        body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                           "message": "faultproxy: too many requests",
                           "reason": "TooManyRequests", "code": 429}).encode()
        self.sock.sendall(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: %d\r\n"
                          b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                          % (retry_after, len(body)) + body)
        rec["resp"] = now_ms()
        rec["status"] = 429

    def one(self):
        head = self.read_head()
        lines = head.split(b"\r\n")
        method, path, _ = lines[0].decode("latin-1").split(" ", 2)
        hdrs = []
        length = 0
        expect = False
        chunked = False
        for ln in lines[1:]:
            k, _, v = ln.partition(b":")
            key = k.strip().lower()
            if key == b"content-length":
                length = int(v.strip())
            if key == b"transfer-encoding" and b"chunked" in v.lower():
                chunked = True
            if key == b"expect" and b"100-continue" in v.lower():
                expect = True
                continue
            hdrs.append(ln)
        if chunked:
            raise EOFError("chunked request bodies are not supported")
        if expect:
            self.sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = self.read_body(length)
        rec = {"id": self.st.new_id(), "conn": self.cid, "method": method, "path": path,
               "recv": now_ms(), "fwd": None, "resp": None, "status": None, "fault": ""}
        with self.st.lock:
            mode = dict(self.st.mode)
            gen = self.st.gen
        lease = "/leases/" in path
        scope = mode.get("scope", "writes")
        hit = scope == "all" or (method in WRITES and not lease)
        keep = True
        try:
            if hit and mode:
                fwd_gone = bool(mode.get("forward_abandoned"))
                if mode.get("stall"):
                    rec["fault"] = "stall"
                    if not self.hold(None, gen, rec, fwd_gone):
                        return False
                dl = mode.get("delay_ms")
                if dl:
                    d = self.st.uniform(dl[0], dl[1])
                    rec["fault"] += " delay %d" % d
                    if not self.hold(now_ms() + d, gen, rec, fwd_gone):
                        return False
                if rec.get("abandoned"):
                    keep = False  # forwarded; its answer goes nowhere
                if mode.get("p429") and self.st.rand() < mode["p429"]:
                    rec["fault"] += " 429"
                    self.answer_429(int(mode.get("retry_after", 1)), rec)
                    return True
                if mode.get("p_drop") and self.st.rand() < mode["p_drop"]:
                    rec["fault"] += " drop"
                    return False
                if mode.get("p_drop_after") and self.st.rand() < mode["p_drop_after"]:
                    rec["fault"] += " drop-after"
                    keep = False
            try:
                self.up_connect()
                self.up.sendall(b"\r\n".join([lines[0]] + hdrs) + b"\r\n\r\n" + body)
            except (OSError, ssl.SSLError) as e:
                rec["fault"] += " upstream: %s" % e
                return False
            rec["fwd"] = now_ms()
            self.st.count("forwarded")
            alive = self.relay_response(method, rec, keep)
            return keep and alive
        finally:
            self.st.write(rec)

    def serve(self):
        try:
            self.sock.do_handshake()
            while self.one():
                pass
        except (EOFError, OSError, ssl.SSLError, ValueError, IndexError):
            pass
        finally:
            self.up_close()
            try:
                self.sock.close()
            except OSError:
                pass


def control_server(st, port):
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def reply(self, code, obj):
            b = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)

        def do_GET(self):
            with st.lock:
                if self.path == "/mode":
                    return self.reply(200, st.mode)
                if self.path == "/stats":
                    return self.reply(200, st.stats)
            self.reply(404, {})

        def do_PUT(self):
            if self.path != "/mode":
                return self.reply(404, {})
            n = int(self.headers.get("Content-Length", "0"))
            try:
                mode = json.loads(self.rfile.read(n) or b"{}")
            except ValueError as e:
                return self.reply(400, {"error": str(e)})
            st.set_mode(mode)
            self.reply(200, mode)

    srv = ThreadingHTTPServer(("127.0.0.1", port), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--control", type=int, required=True)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--cafile", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    st = State(args.log, args.seed)
    control_server(st, args.control)
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(args.cert, args.key)
    up_ctx = ssl.create_default_context(cafile=args.cafile)
    ls = socket.create_server(("127.0.0.1", args.listen), backlog=128)
    cid = 0
    while True:
        raw, _ = ls.accept()
        cid += 1
        try:  # the handshake happens on the connection's own thread
            sock = sctx.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
        except (ssl.SSLError, OSError):
            raw.close()
            continue
        c = Conn(st, sock, cid, args, up_ctx)
        threading.Thread(target=c.serve, daemon=True).start()


if __name__ == "__main__":
    main()
