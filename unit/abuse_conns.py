"""abuse_conns.py PORT N SECONDS FLAG: one abusive client (source 127.0.0.2)
opens N TCP connections to gpuq on 127.0.0.1:PORT and never sends a byte;
it creates the file FLAG once all are open.
Prints "connections N closed C early E last S": how many the server closed
within SECONDS, how many of those within 1.5 s (refused at accept: the
per-address limit), and when the last one closed (seconds)."""
import socket
import sys
import time

port, n, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
socks = []
for _ in range(n):
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    socks.append(s)
open(sys.argv[4], "w").close()
t0 = time.time()
closed = {}
while time.time() - t0 < secs and len(closed) < n:
    for i, s in enumerate(socks):
        if i in closed:
            continue
        try:
            if s.recv(100) == b"":
                closed[i] = time.time() - t0
        except BlockingIOError:
            pass
        except OSError:
            closed[i] = time.time() - t0
    time.sleep(0.2)
early = sum(1 for v in closed.values() if v < 1.5)
print("connections %d closed %d early %d last %.1f"
      % (n, len(closed), early, max(closed.values() or [0])))
