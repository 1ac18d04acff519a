#!/bin/sh
# suite_topology: topology-aware admission in the simulator (issue 33,
# docs/topology.md), each trace run with --check (which checks, after every
# step, that every pod of an admitted workload is placed once, a REQUIRED
# pod set in one domain of its level, and no node holds more than it has),
# and what each shows, read from its report's "topology" section: the
# example cluster of 2 blocks x 4 racks x 4 nodes x 8 GPUs (rack-required
# gangs in one rack, a 48-GPU preferred gang in the fewest racks, small jobs
# on one node), a rack-sized urgent job preempting in the one rack its
# lower-priority peers free with the fewest victims, a rack reclaimed
# across a cohort from a queue that borrows it, a rack failing under a
# running job (evicted 30 s later, placed again on another), and Kueue's TAS
# performance shape (640 nodes, 15,000 workloads). Env: GPUQ_BIN. Needs
# python3.
set -u
GPUQ_BIN=${GPUQ_BIN:-build/release/gpuq}
T=$(mktemp -d /tmp/gpuq-suite-topology.XXXXXX)
. "$(dirname "$0")/tap.sh"
trap 'rm -rf "$T"' EXIT

sim() { # name trace
	if "$GPUQ_BIN" simulate "$2" --check --quiet --out "$T/$1.json" 2>"$T/$1.err"; then
		ok "simulate $2 --check"
	else
		not_ok "simulate $2 --check" "$(cat "$T/$1.err")"
	fi
}
# py "what" name expression: ok when it holds for the report r (c: a class's
# spans, by level key)
py() {
	out=$(python3 - "$T/$2.json" "$3" <<'PY' 2>&1
import json, sys
r = json.load(open(sys.argv[1]))
def c(name): return r["topology"]["byClass"][name]
def wl(prefix): return [w for w in r["workloads"] if w["name"].startswith(prefix)]
ok = eval(sys.argv[2])
print(ok)
sys.exit(0 if ok is True else 1)
PY
)
	if [ $? -eq 0 ]; then ok "$1"; else not_ok "$1" "$out"; fi
}

if ! command -v python3 >/dev/null 2>&1; then
	not_ok "topology scenarios" "python3 not installed"
	tap_end
	exit $?
fi

RACK=topology.gpuq.dev/rack
BLOCK=topology.gpuq.dev/block
HOST=kubernetes.io/hostname
sim racks examples/traces/topology-racks.yaml
py "racks: all 150 workloads finish" racks 'r["counts"]["finished"] == 150'
py "racks: every rack-16 gang (2 nodes x 8 GPUs, rack required) ran in one rack" racks \
	"c('rack-16')['placed'] == 24 and c('rack-16')['$RACK']['max'] == 1 and c('rack-16')['$HOST']['max'] == 2"
py "racks: every pref-48 gang (48 GPUs, more than a rack's 32) took the fewest racks, two" racks \
	"c('pref-48')['placed'] == 6 and c('pref-48')['$RACK']['max'] == 2 and c('pref-48')['$RACK']['mean'] == 2"
py "racks: every 2-GPU job ran on one node" racks "c('small')['$HOST']['max'] == 1"

sim preempt examples/traces/topology-preempt.yaml
py "preempt: the urgent rack job preempted three jobs, all in rack r2 (r1 would take four)" preempt \
	'r["preemptions"]["total"] == 3 and sorted(e["victim"] for e in r["preemptions"]["events"]) == ["research/low-train-%d" % i for i in (4, 5, 6)]'
py "preempt: it started at once, in one rack" preempt \
	'wl("research/urgent")[0]["waitMs"] == 0 and c("urgent")["topology.gpuq.dev/rack"]["max"] == 1'
py "preempt: the jobs on r1 ran on, and every job finished" preempt \
	'all(w["preemptions"] == 0 for w in wl("research/low-train-")[:4]) and r["counts"]["finished"] == 8'

sim reclaim examples/traces/topology-reclaim.yaml
py "reclaim: training's rack job reclaimed the four batch jobs of one rack (r2), as InCohortReclamation, and no fifth" reclaim \
	'r["preemptions"]["byReason"] == {"InCohortReclamation": 4} and sorted(e["victim"] for e in r["preemptions"]["events"]) == ["batch/batch-jobs-%d" % i for i in (4, 5, 6, 7)]'
py "reclaim: it started at once (its quota lent out and no rack free: one victim set freed both), in one rack" reclaim \
	'wl("research/rack")[0]["waitMs"] == 0 and c("rack")["topology.gpuq.dev/rack"]["max"] == 1 and r["counts"]["finished"] == 9'

sim fail examples/traces/topology-node-failure.yaml
py "node-failure: the rack job was evicted once, NodeFailures, 30 s after its rack went NotReady" fail \
	'r["preemptions"]["byReason"] == {"NodeFailures": 1} and r["preemptions"]["events"][0]["atMs"] == 630000 and r["preemptions"]["events"][0]["victim"] == "research/rack-job"'
py "node-failure: it was placed again in one rack, and both jobs finished; the other never moved" fail \
	'c("rack")["placed"] == 2 and c("rack")["topology.gpuq.dev/rack"]["max"] == 1 and r["counts"]["finished"] == 2 and wl("research/host-job")[0]["preemptions"] == 0'

sim tas examples/traces/kueue-tas.yaml
py "kueue-tas: all 15,000 workloads finish" tas 'r["counts"]["finished"] == 15000'
py "kueue-tas: every rack-required workload ran in one rack" tas \
	"all(c(k + '-required-rack')['cloud.provider.com/topology-rack']['max'] == 1 for k in ('small', 'medium', 'large'))"
py "kueue-tas: every admission was placed (15,000 and the requeued)" tas \
	'r["topology"]["domainsSpanned"]["placed"] >= 15000'
tap_end
