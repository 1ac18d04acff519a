"""abuse_starve.py MODE PORT SOURCES N SECONDS FLAG: clients that try to starve
gpuq's port on 127.0.0.1:PORT, each connection over TLS (not verified).

MODE trickle: from each address of SOURCES (comma-separated), N connections
  that POST /mutate announcing a body, then send one byte of it every 30 s.
  The bodies announced fill 256 MiB to within 128 bytes (less than any
  review): 85 of 3 MiB, then 512 KiB, 256 KiB, ... 128 bytes, then 3 MiB. Prints "trickle opened O closed C answered A first F last L": how
  many were opened, closed by the server within SECONDS, answered (any
  status line, e.g. a 503) before that, and when the first and last closed
  (seconds after all were open).
MODE idle: from each address of SOURCES, N kept-alive connections that GET
  /healthz once and then again every 30 s. Prints "idle opened O refused R
  closed C": how many answered their first request, how many were refused
  (closed before an answer), how many of the open ones the server closed
  within SECONDS.
MODE stall: from each address of SOURCES, N connections that POST /mutate
  announcing the bodies above (the i-th of each address the i-th size) and
  send all of each but its last byte at once (fast, then stalled); one the
  server closes is opened again a second later, until SECONDS have passed.
  Prints "stall opened O answered A": connections opened in all, and how
  many got an answer (a 503) before they were closed.
FLAG is created once every connection was tried."""
import os
import select
import socket
import ssl
import sys
import time

mode, port = sys.argv[1], int(sys.argv[2])
sources, n, secs, flag = sys.argv[3].split(","), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
GET = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
SIZES = [3 << 20] * 85 + [1 << k for k in range(19, 6, -1)]


def post(i):
    size = SIZES[i] if i < len(SIZES) else 3 << 20
    return (b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n{" % size)


def connect(src):
    raw = socket.create_connection(("127.0.0.1", port), timeout=2, source_address=(src, 0))
    return ctx.wrap_socket(raw, server_hostname="localhost")


def first_answer(s):
    """Read one reply to GET /healthz (its body is "ok\\n")."""
    got = b""
    while b"ok\n" not in got:
        chunk = s.recv(4096)
        if not chunk:
            raise OSError("closed")
        got += chunk


def push(socks, closed, t0):
    """The refresh: a request (idle) or a byte of the body (trickle) on each
    connection still open."""
    for i, s in enumerate(socks):
        if i in closed:
            continue
        try:
            s.setblocking(True)
            s.sendall(GET if mode == "idle" else b" ")
            s.setblocking(False)
        except OSError:
            closed[i] = time.time() - t0


def stall():
    """MODE stall (see the docstring). The connections are opened and their
    bodies sent in parallel (32 threads), so that all are held at once well
    within the server's body deadline."""
    import concurrent.futures
    import threading

    lock = threading.Lock()
    count = {"opened": 0, "answered": 0}
    conns = {}  # (source, i) -> socket

    def start(key):
        size = SIZES[key[1]] if key[1] < len(SIZES) else 3 << 20
        try:
            s = connect(key[0])
            s.settimeout(10)
            s.sendall(post(key[1]) + b" " * (size - 2))
            s.setblocking(False)
        except OSError:
            return
        with lock:
            conns[key] = s
            count["opened"] += 1

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=32)
    keys = [(src, i) for src in sources for i in range(n)]
    t0 = time.time()
    list(pool.map(start, keys))
    print("stall: the first %d bodies sent in %.1f s" % (len(conns), time.time() - t0))
    open(flag, "w").close()
    t0 = last = time.time()
    while time.time() - t0 < secs:
        poller = select.poll()
        by_fd = {}
        with lock:
            for key, s in conns.items():
                poller.register(s.fileno(), select.POLLIN)
                by_fd[s.fileno()] = key
        for fd, _ in poller.poll(200):
            key = by_fd[fd]
            with lock:
                s = conns.pop(key, None)
            if s is None:
                continue
            try:
                data = s.recv(4096)
            except ssl.SSLWantReadError:
                with lock:
                    conns[key] = s
                continue
            except OSError:
                data = b""
            if data.startswith(b"HTTP/"):
                count["answered"] += 1
            s.close()
        if time.time() - last < 1:
            continue
        last = time.time()
        with lock:  # closed ones again, once a second
            gone = [k for k in keys if k not in conns]
        if time.time() - t0 < secs:
            list(pool.map(start, gone))
    print("stall opened %d answered %d" % (count["opened"], count["answered"]))
    sys.stdout.flush()
    os._exit(0)  # the sockets still open are the server's to close


if mode == "stall":
    stall()
socks, refused, tried = [], 0, 0
closed, answered = {}, set()
last_push = time.time()
opening_ends = time.time() + 120  # a starved server refuses by timing out: bounded
for src in sources:
    for _ in range(n):
        if time.time() > opening_ends:
            refused += 1
            continue
        tried += 1
        if time.time() - last_push >= 30:  # opening can take minutes on a busy machine
            last_push = time.time()
            push(socks, {}, last_push)
        try:
            s = connect(src)
            if mode == "idle":
                s.sendall(GET)
                first_answer(s)
            else:
                s.sendall(post(tried - 1))
            s.setblocking(False)
            socks.append(s)
        except OSError:
            refused += 1
open(flag, "w").close()
t0 = time.time()
while time.time() - t0 < secs and len(closed) < len(socks):
    poller = select.poll()  # select() stops at fd 1024
    for i, s in enumerate(socks):
        if i not in closed:
            poller.register(s.fileno(), select.POLLIN)
    by_fd = {s.fileno(): i for i, s in enumerate(socks)}
    for fd, _ in poller.poll(500):
        i = by_fd[fd]
        s = socks[i]
        try:
            data = s.recv(4096)
        except ssl.SSLWantReadError:
            continue
        except OSError:
            data = b""
        if not data:
            closed[i] = time.time() - t0
        elif data.startswith(b"HTTP/") and mode == "trickle":
            answered.add(i)
    if time.time() - last_push >= 30:
        last_push = time.time()
        push(socks, closed, t0)
times = sorted(closed.values()) or [0]
if mode == "idle":
    print("idle opened %d refused %d closed %d" % (len(socks), refused, len(closed)))
else:
    print("trickle opened %d closed %d answered %d first %.1f last %.1f"
          % (len(socks), len(closed), len(answered), times[0], times[-1]))
