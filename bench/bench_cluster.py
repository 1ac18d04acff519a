#!/usr/bin/env python3
"""bench/bench_cluster.py: Job creation to release latency on a real control
plane. Creates batch/v1 GPU Jobs over HTTPS (the admin client certificate) at
a fixed rate, round robin over tenant namespaces, while one watch in the same
process records when each Job is first seen unsuspended (gpuq released it).
Latency = that moment - the moment its create returned. Standard library only.

usage: bench_cluster.py RATE COUNT NS_PREFIX TENANTS   (env: APISERVER, CA_CERT,
ADMIN_CERT, ADMIN_KEY from e2e/up.sh's gpuq.env)
Prints: "latency RATE/s: n=N p50=X ms p99=Y ms max=Z ms missing=M".
"""
import json, os, ssl, sys, threading, time, http.client, urllib.parse

rate, count, prefix, tenants = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
url = urllib.parse.urlparse(os.environ["APISERVER"])
ctx = ssl.create_default_context(cafile=os.environ["CA_CERT"])
ctx.load_cert_chain(os.environ["ADMIN_CERT"], os.environ["ADMIN_KEY"])
created, released = {}, {}
lock = threading.Lock()
run = "r%d" % int(time.time() * 1000 % 1e9)

def conn():
    return http.client.HTTPSConnection(url.hostname, url.port, context=ctx, timeout=60)

def watch(stop):
    c = conn()
    c.request("GET", "/apis/batch/v1/jobs?watch=1&allowWatchBookmarks=false")
    r = c.getresponse()
    buf = b""
    while not stop.is_set():
        chunk = r.fp.readline()
        if not chunk:
            break
        now = time.monotonic()
        try:
            ev = json.loads(chunk)
        except ValueError:
            continue
        o = ev.get("object", {})
        name = o.get("metadata", {}).get("name", "")
        if name.startswith(run) and o.get("spec", {}).get("suspend") is False:
            with lock:
                released.setdefault(name, now)

def job(ns, name):
    return json.dumps({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "labels": {"gpuq.dev/queue-name": "default"}},
        "spec": {"template": {"metadata": {"annotations": {
            "pod-complete.stage.kwok.x-k8s.io/delay": "1s",
            "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "1s"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "x",
                "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}})

stop = threading.Event()
t = threading.Thread(target=watch, args=(stop,), daemon=True)
t.start()
time.sleep(1.0)  # the watch is established before the first create
c = conn()
start = time.monotonic()
for i in range(count):
    due = start + i / rate
    d = due - time.monotonic()
    if d > 0:
        time.sleep(d)
    ns = "%s-%d" % (prefix, i % tenants)
    name = "%s-%d" % (run, i)
    c.request("POST", "/apis/batch/v1/namespaces/%s/jobs" % ns, body=job(ns, name),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    if r.status != 201:
        print("create %s/%s: HTTP %d" % (ns, name, r.status), file=sys.stderr)
        continue
    with lock:
        created[name] = time.monotonic()
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    with lock:
        if all(n in released for n in created):
            break
    time.sleep(0.05)
stop.set()
lat = sorted((released[n] - created[n]) * 1000 for n in created if n in released)
missing = len(created) - len(lat)
def pct(p):
    return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")
print("latency %g/s: n=%d p50=%.1f ms p99=%.1f ms max=%.1f ms missing=%d" %
      (rate, len(lat), pct(0.50), pct(0.99), lat[-1] if lat else float("nan"), missing))
