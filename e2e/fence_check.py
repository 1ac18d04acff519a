#!/usr/bin/env python3
"""e2e/fence_check.py: the evidence of e2e/test_fence.sh, from the apiserver's
own objects and the fault proxy's log.

  fence_check.py sample OUT NS LEASE_NS/LEASE_NAME
      Every ~0.3 s until SIGTERM, one JSON line: the wall-clock time of the
      sample, the Lease (holder, renewTime in ms, leaseDurationSeconds,
      leaseTransitions) and the GPUs (nvidia.com/gpu) that NS's unfinished
      Pods hold (phase neither Succeeded nor Failed: a Pod holds its GPUs
      until it is done or gone). Reads the apiserver as the admin ($APISERVER,
      $CA_CERT, $ADMIN_CERT, $ADMIN_KEY: e2e/cluster.sh's env).

  fence_check.py check SAMPLES PROXY_LOG IDENTITY QUOTA
      Prints the figures and exits 1 when a rule is broken:
      - writes after expiry: a write (POST PUT PATCH DELETE; the Lease's own
        and the reviews that only ask, ASKS, excepted) of the replica behind the proxy (IDENTITY) that the proxy
        forwarded outside every interval [renewTime, renewTime + duration)
        of a Lease record naming IDENTITY as holder. No other replica may
        take the Lease before a record's renewTime + duration (it must see
        the record unchanged that long, and renewTime is written before the
        renewal is sent), so a write past it may land after a successor
        acted;
        Writes the proxy held on after gpuq gave up on them and forwarded
        later (its forward_abandoned mode: "abandoned") are not counted
        there but judged by the next rule;
      - abandoned writes stored: such a write (POST PUT PATCH: a DELETE
        names no term and is only counted) forwarded after another replica
        took the Lease that the apiserver stored (answered 2xx). It refuses
        them with 403 (deploy/'s ValidatingAdmissionPolicy gpuq-fence,
        which compares the write's term with the Lease's), or with 409/422
        when the write's own precondition (a JSON patch's resourceVersion
        test) failed first because the new leader changed the object;
      - over-quota samples: samples whose GPUs exceed QUOTA.
      Also prints how often another replica took the Lease from IDENTITY, the
      writes forwarded, those held and dropped because gpuq had given up on
      them (its timeout: the lease left), and the smallest margin between a
      forwarded write and the end of its interval.

  fence_check.py freeport      a free TCP port on 127.0.0.1
"""
import json
import os
import signal
import socket
import ssl
import sys
import time
import urllib.request
from datetime import datetime

WRITES = ("POST", "PUT", "PATCH", "DELETE")
# POSTs that only ask the apiserver and store nothing: who am I
# (SelfSubjectReview, made once at start, leader or not), token and access
# reviews (the web view's). Not writes that act.
ASKS = ("/apis/authentication.k8s.io/", "/apis/authorization.k8s.io/")


def asks(path):
    return path.startswith(ASKS)


def parse_time(s):
    """RFC 3339 (MicroTime) to ms since the epoch; None for None."""
    if not s:
        return None
    s = s.replace("Z", "+00:00")
    if "." in s:
        head, rest = s.split(".", 1)
        frac = "".join(ch for ch in rest if ch.isdigit())
        tz = rest[len(frac):]
        s = head + "." + (frac + "000000")[:6] + tz
    return int(datetime.fromisoformat(s).timestamp() * 1000)


def client():
    ctx = ssl.create_default_context(cafile=os.environ["CA_CERT"])
    ctx.load_cert_chain(os.environ["ADMIN_CERT"], os.environ["ADMIN_KEY"])
    base = os.environ["APISERVER"]

    def get(path):
        with urllib.request.urlopen(base + path, context=ctx, timeout=10) as r:
            return json.load(r)
    return get


def gpus_of(pod):
    n = 0
    for c in pod.get("spec", {}).get("containers", []):
        res = c.get("resources", {})
        v = res.get("requests", {}).get("nvidia.com/gpu") or res.get("limits", {}).get(
            "nvidia.com/gpu")
        n += int(v) if v else 0
    return n


def sample(out, ns, lease):
    lns, lname = lease.split("/", 1)
    get = client()
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    with open(out, "a", buffering=1) as f:
        while not stop:
            rec = {"t": int(time.time() * 1000)}
            try:
                spec = get("/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s" %
                           (lns, lname)).get("spec", {})
                rec["lease"] = {"holder": spec.get("holderIdentity") or "",
                                "renew": parse_time(spec.get("renewTime")),
                                "dur": spec.get("leaseDurationSeconds"),
                                "transitions": spec.get("leaseTransitions")}
            except Exception as e:  # a sample missed is logged, not fatal
                rec["lease_error"] = str(e)
            try:
                pods = get("/api/v1/namespaces/%s/pods" % ns).get("items", [])
                live = [p for p in pods
                        if p.get("status", {}).get("phase") not in ("Succeeded", "Failed")]
                rec["gpus"] = sum(gpus_of(p) for p in live)
                rec["pods"] = len(live)
            except Exception as e:
                rec["pods_error"] = str(e)
            f.write(json.dumps(rec) + "\n")
            time.sleep(0.3)


def load(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                out.append(json.loads(line))
    return out


def check(samples_path, proxy_path, identity, quota):
    samples = load(samples_path)
    proxy = [r for r in load(proxy_path) if "id" in r]
    intervals = set()
    lost = 0
    last = None
    for s in samples:
        le = s.get("lease")
        if not le:
            continue
        if le["holder"] and le["renew"] is not None:
            if le["holder"] == identity:
                intervals.add((le["renew"], le["renew"] + 1000 * int(le["dur"] or 15)))
            if last == identity and le["holder"] != identity:
                lost += 1
            last = le["holder"]
    intervals = sorted(intervals)
    lease_samples = sum(1 for s in samples if s.get("lease"))
    pod_samples = [s for s in samples if "gpus" in s]
    over = [s for s in pod_samples if s["gpus"] > quota]
    writes = [r for r in proxy if r["method"] in WRITES and "/leases/" not in r["path"]
              and not asks(r["path"])]
    sent = [r for r in writes if r["fwd"] is not None]
    given_up = [r for r in writes if "client gone" in r.get("fault", "")]
    abandoned = [r for r in sent if r.get("abandoned") and r["method"] != "DELETE"]
    abandoned_del = [r for r in sent if r.get("abandoned") and r["method"] == "DELETE"]
    stored = [r for r in abandoned if r["status"] is not None and 200 <= r["status"] < 300]
    fenced = [r for r in abandoned if r["status"] == 403]
    late = []
    slack_min = None
    for r in sent:
        if r.get("abandoned"):
            continue
        inside = [b for (a, b) in intervals if a <= r["fwd"] < b]
        if not inside:
            late.append(r)
        else:
            sl = max(inside) - r["fwd"]
            slack_min = sl if slack_min is None else min(slack_min, sl)
    print("# samples: %d of the Lease, %d of the pods (GPUs held at most %d, quota %d)" %
          (lease_samples, len(pod_samples), max([s["gpus"] for s in pod_samples] or [0]),
           quota))
    print("# Lease records of %s: %d; taken from it by another replica: %d times" %
          (identity, len(intervals), lost))
    print("# writes of %s: %d forwarded, %d given up by gpuq while held (dropped), "
          "smallest margin to expiry %s ms" %
          (identity, len(sent), len(given_up), slack_min if slack_min is not None else "-"))
    for r in late[:10]:
        ends = [b for (a, b) in intervals if a <= r["fwd"]]
        print("# LATE: %s %s forwarded at %d, %s ms after the lease's end" %
              (r["method"], r["path"], r["fwd"],
               (r["fwd"] - max(ends)) if ends else "?"))
    print("# writes of %s held on after it gave up and forwarded later: %d (%d refused "
          "by the fence with 403, %d stored), and %d DELETEs (not fenced)" %
          (identity, len(abandoned), len(fenced), len(stored), len(abandoned_del)))
    for r in stored[:10]:
        print("# STORED LATE: %s %s forwarded at %d, answered %s" %
              (r["method"], r["path"], r["fwd"], r["status"]))
    for s in over[:10]:
        print("# OVER QUOTA: at %d: %d GPUs held by %d unfinished pods" %
              (s["t"], s["gpus"], s.get("pods", 0)))
    print("writes_after_expiry=%d over_quota_samples=%d lost=%d writes=%d given_up=%d "
          "abandoned=%d abandoned_fenced=%d abandoned_stored=%d lease_samples=%d "
          "pod_samples=%d" %
          (len(late), len(over), lost, len(sent), len(given_up), len(abandoned),
           len(fenced), len(stored), lease_samples, len(pod_samples)))
    return 1 if late or over or stored or not lease_samples or not pod_samples else 0


def freeport():
    """Below Linux's ephemeral range (32768-), as e2e/up.sh picks them: no
    outgoing connection can be holding it."""
    import random
    for _ in range(200):
        p = random.randint(20000, 32000)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            s.close()
        print(p)
        return
    raise SystemExit("no free port")


def main(argv):
    if len(argv) >= 2 and argv[1] == "sample" and len(argv) == 5:
        sample(argv[2], argv[3], argv[4])
        return 0
    if len(argv) >= 2 and argv[1] == "check" and len(argv) == 6:
        return check(argv[2], argv[3], argv[4], int(argv[5]))
    if len(argv) == 2 and argv[1] == "freeport":
        freeport()
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
