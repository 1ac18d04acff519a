#!/usr/bin/env python3
"""bench/bench_cluster.py: gpuq against the control plane's own floor, on a
real control plane, measured by one client over HTTPS (the admin client
certificate; env APISERVER, CA_CERT, ADMIN_CERT, ADMIN_KEY from e2e/up.sh's
gpuq.env). Standard library only.

  bench_cluster.py latency RATE COUNT NS_PREFIX TENANTS [echo]
    Creates COUNT batch/v1 GPU Jobs at RATE per second, round robin over the
    namespaces NS_PREFIX-0..TENANTS-1, while a watch in the same process
    records when each Job is first seen unsuspended (gpuq released it).
    Latency = that moment - the moment its create returned.
    With "echo" the Jobs name no queue (their namespace must be one gpuq does
    not manage) and this process plays the ideal controller: the moment its
    watch sees a Job created it answers with one PATCH (an annotation), and
    latency runs to the moment the watch sees that PATCH. That is gpuq's path
    (watch event in, one PATCH out, through the same webhooks and etcd) with
    zero decision time: the control plane's floor.
    Prints "latency RATE/s: n=N p50=X ms p99=Y ms max=Z ms missing=M".

  bench_cluster.py drain COUNT NS SLOTS [echo]
    Creates COUNT one-GPU Jobs in NS at once (pods created, Ready and
    completed at once by kwok) and waits until all are Complete. gpuq lets
    them through NS's queue (SLOTS GPUs). With "echo" the Jobs are created
    suspended in a namespace gpuq does not manage, and this process plays the
    ideal queue: at most SLOTS unsuspended at a time, the next one unsuspended
    the moment the watch sees one Complete. The control plane's own limit.
    Prints "drain: N Jobs in S s: R Jobs/s; Complete to next release p50=X ms".

  bench_cluster.py fill COUNT NS
    Creates COUNT one-GPU Jobs for NS's queue as fast as 4 connections go
    (they queue: the bench gives NS one GPU). Prints "fill: N Jobs in S s".

  bench_cluster.py stages BEFORE AFTER
    Two scrapes of gpuq's /metrics (files) taken around a run: the p50 and
    p99 of each stage of gpuq_controller_release_stage_seconds and of
    gpuq_controller_loop_tail_seconds over the passes between them,
    interpolated within buckets as PromQL's histogram_quantile does.
    Prints "stages: queued p50=X p99=Y ms; ...".
"""
import http.client
import json
import os
import ssl
import sys
import threading
import time
import urllib.parse

RUN = "r%d" % int(time.time() * 1000 % 1e9)
# kwok plays each pod: created, Ready and completed at once
KWOK_NOW = {"pod-%s.stage.kwok.x-k8s.io/%s" % (s, d): "0s"
            for s in ("create", "ready", "complete") for d in ("delay", "jitter-delay")}


def conn(timeout=120):
    """A connection to the apiserver as its admin (the env read at first use:
    `stages` needs none)."""
    if not hasattr(conn, "ctx"):
        conn.url = urllib.parse.urlparse(os.environ["APISERVER"])
        conn.ctx = ssl.create_default_context(cafile=os.environ["CA_CERT"])
        conn.ctx.load_cert_chain(os.environ["ADMIN_CERT"], os.environ["ADMIN_KEY"])
    return http.client.HTTPSConnection(conn.url.hostname, conn.url.port, context=conn.ctx,
                                       timeout=timeout)


def call(c, method, path, body, ctype="application/json"):
    """One request; a connection the apiserver closed while idle is
    reopened once (http.client reconnects on the next request)."""
    for attempt in (0, 1):
        try:
            c.request(method, path, body=body, headers={"Content-Type": ctype})
            r = c.getresponse()
            r.read()
            return r.status
        except (OSError, http.client.HTTPException):
            c.close()
            if attempt:
                raise


def job(ns, name, queued, suspend=False):
    labels = {"gpuq.dev/queue-name": "default"} if queued else {}
    spec = {"template": {"metadata": {"annotations": KWOK_NOW},
                         "spec": {"restartPolicy": "Never", "containers": [
                             {"name": "m", "image": "x",
                              "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}
    if not queued:  # the placement gpuq's flavor would give: H100 nodes, taint tolerated
        spec["template"]["spec"]["nodeSelector"] = {
            "nvidia.com/gpu.product": "NVIDIA-H100-SXM5-80GB"}
        spec["template"]["spec"]["tolerations"] = [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    if suspend:
        spec["suspend"] = True
    return json.dumps({"apiVersion": "batch/v1", "kind": "Job",
                       "metadata": {"name": name, "namespace": ns, "labels": labels},
                       "spec": spec})


def watch_jobs(path, on_event, stop):
    """Call on_event(now, type, object) for each event of this run's Jobs."""
    c = conn(timeout=None)  # a quiet watch is not a failure
    c.request("GET", path + "?watch=1")
    r = c.getresponse()
    while not stop.is_set():
        line = r.readline()  # de-chunked: one watch event per line
        if not line:
            break
        now = time.monotonic()
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if not isinstance(ev, dict) or not isinstance(ev.get("object"), dict):
            continue
        o = ev["object"]
        if o.get("metadata", {}).get("name", "").startswith(RUN):
            on_event(now, ev.get("type"), o)


def pct(xs, p):
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


def latency(rate, count, prefix, tenants, echo):
    created, released = {}, {}
    lock = threading.Lock()
    pc = conn()

    def on_event(now, typ, o):
        meta = o["metadata"]
        name = meta["name"]
        if echo:
            if "bench/echo" in meta.get("annotations", {}):
                with lock:
                    released.setdefault(name, now)
            elif typ == "ADDED":
                call(pc, "PATCH", "/apis/batch/v1/namespaces/%s/jobs/%s" % (meta["namespace"], name),
                     '{"metadata":{"annotations":{"bench/echo":"1"}}}',
                     "application/merge-patch+json")
        elif o.get("spec", {}).get("suspend") is False:
            with lock:
                released.setdefault(name, now)

    stop = threading.Event()
    threading.Thread(target=watch_jobs, args=("/apis/batch/v1/jobs", on_event, stop),
                     daemon=True).start()
    time.sleep(1.0)  # the watch is established before the first create
    c = conn()
    start = time.monotonic()
    for i in range(count):
        d = start + i / rate - time.monotonic()
        if d > 0:
            time.sleep(d)
        ns, name = "%s-%d" % (prefix, i % tenants), "%s-%d" % (RUN, i)
        st = call(c, "POST", "/apis/batch/v1/namespaces/%s/jobs" % ns, job(ns, name, not echo))
        if st != 201:
            print("create %s/%s: HTTP %d" % (ns, name, st), file=sys.stderr)
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
    print("latency %g/s: n=%d p50=%.1f ms p99=%.1f ms max=%.1f ms missing=%d" %
          (rate, len(lat), pct(lat, 0.50), pct(lat, 0.99), lat[-1] if lat else float("nan"),
           len(created) - len(lat)))


def drain(count, ns, slots, echo):
    lock = threading.Lock()
    done, rel = {}, {}
    waiting = ["%s-%d" % (RUN, i) for i in range(count)]
    running = [0]
    pc = conn()

    def unsuspend(now):  # echo: the ideal queue, under lock
        while running[0] < slots and waiting:
            name = waiting.pop(0)
            running[0] += 1
            rel[name] = now
            call(pc, "PATCH", "/apis/batch/v1/namespaces/%s/jobs/%s" % (ns, name),
                 '{"spec":{"suspend":false}}', "application/merge-patch+json")

    def on_event(now, typ, o):
        name = o["metadata"]["name"]
        conds = o.get("status", {}).get("conditions", [])
        complete = any(cd.get("type") == "Complete" and cd.get("status") == "True" for cd in conds)
        with lock:
            if not echo and o.get("spec", {}).get("suspend") is False:
                rel.setdefault(name, now)
            if complete and name not in done:
                done[name] = now
                if echo:
                    running[0] -= 1
                    unsuspend(now)

    stop = threading.Event()
    threading.Thread(target=watch_jobs, args=("/apis/batch/v1/namespaces/%s/jobs" % ns,
                                              on_event, stop), daemon=True).start()
    time.sleep(1.0)
    c = conn()
    t0 = time.monotonic()
    for i in range(count):
        name = "%s-%d" % (RUN, i)
        st = call(c, "POST", "/apis/batch/v1/namespaces/%s/jobs" % ns, job(ns, name, not echo, echo))
        if st != 201:
            print("create %s/%s: HTTP %d" % (ns, name, st), file=sys.stderr)
    if echo:
        with lock:
            unsuspend(time.monotonic())
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline:
        with lock:
            if len(done) >= count:
                break
        time.sleep(0.05)
    stop.set()
    with lock:
        t1 = max(done.values()) if done else time.monotonic()
        comps = sorted(done.values())
        rels = sorted(rel.values())[slots:]
    gaps = []
    for r in rels:  # each release after the first SLOTS follows a completion
        prev = [x for x in comps if x <= r]
        if prev:
            gaps.append((r - prev[-1]) * 1000)
    gaps.sort()
    print("drain: %d Jobs in %.1f s: %.2f Jobs/s; Complete to next release p50=%.1f ms" %
          (len(done), t1 - t0, len(done) / (t1 - t0), pct(gaps, 0.5)))


def fill(count, ns):
    made = [0]
    lock = threading.Lock()

    def worker(k):
        c = conn()
        for i in range(k, count, 4):
            name = "%s-%d" % (RUN, i)
            st = call(c, "POST", "/apis/batch/v1/namespaces/%s/jobs" % ns, job(ns, name, True))
            if st != 201:
                print("create %s/%s: HTTP %d" % (ns, name, st), file=sys.stderr)
                continue
            with lock:
                made[0] += 1

    t0 = time.monotonic()
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print("fill: %d Jobs in %.1f s" % (made[0], time.monotonic() - t0))


def buckets(path, family):
    """{label set: [(le, cumulative count)]} of a histogram family in a scrape."""
    out = {}
    with open(path) as f:
        for line in f:
            if not line.startswith(family + "_bucket{"):
                continue
            labels, value = line.rsplit(" ", 1)
            inner = labels[len(family) + 8:-1]
            le = inner.rsplit('le="', 1)[1].rstrip('"')
            key = inner.rsplit('le="', 1)[0].rstrip(",")
            out.setdefault(key, []).append((float("inf") if le == "+Inf" else float(le),
                                            float(value)))
    return out


def quantile(q, bs):
    """histogram_quantile(q) over cumulative buckets [(le, count)], in ms."""
    total = bs[-1][1] if bs else 0
    if total <= 0:
        return float("nan")
    rank, lo, below = q * total, 0.0, 0.0
    for le, cum in bs:
        if cum >= rank:
            if le == float("inf"):
                return lo * 1000
            return (lo + (le - lo) * (rank - below) / max(cum - below, 1e-9)) * 1000
        lo, below = le, cum
    return lo * 1000


def stages(before, after):
    parts = []
    for family, names in (("gpuq_controller_release_stage_seconds",
                           ("queued", "handle", "cycle", "commit", "patch", "total")),
                          ("gpuq_controller_loop_tail_seconds", ("tail",))):
        b0, b1 = buckets(before, family), buckets(after, family)
        for name in names:
            key = "" if name == "tail" else 'stage="%s"' % name
            d = [(le, c - dict(b0.get(key, [])).get(le, 0.0)) for le, c in b1.get(key, [])]
            n = int(d[-1][1]) if d else 0
            parts.append("%s p50=%.2f p99=%.2f ms (n=%d)" %
                         (name, quantile(0.5, d), quantile(0.99, d), n))
    print("stages: " + "; ".join(parts))


if __name__ == "__main__":
    a = sys.argv[1:]
    echo = a[-1] == "echo"
    if echo:
        a = a[:-1]
    if a and a[0] == "latency" and len(a) == 5:
        latency(float(a[1]), int(a[2]), a[3], int(a[4]), echo)
    elif a and a[0] == "drain" and len(a) == 4:
        drain(int(a[1]), a[2], int(a[3]), echo)
    elif a and a[0] == "fill" and len(a) == 3 and not echo:
        fill(int(a[1]), a[2])
    elif a and a[0] == "stages" and len(a) == 3 and not echo:
        stages(a[1], a[2])
    else:
        sys.exit(__doc__)
