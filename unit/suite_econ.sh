#!/bin/sh
# suite_econ: the simulator scenarios of GPU economics (docs/economics.md),
# each run with --check, and the effect each shows, read from its report:
# a budget held until its window turns (econ-budget), idle GPUs returned to
# waiting work (econ-idle), no preemption before a minimum runtime
# (econ-minruntime), wall-clock limits (econ-maxexec), the bounded wait
# beside the same trace run without it, in one report (starving-gang,
# and starving-gang-cohort: the stream borrowing from another ClusterQueue),
# prediction error figures (gpu-cluster with
# --predict-interval); and the example traces without economics report no
# economics section. Env: GPUQ_BIN. Needs python3.
set -u
GPUQ_BIN=${GPUQ_BIN:-build/release/gpuq}
T=$(mktemp -d /tmp/gpuq-suite-econ.XXXXXX)
. "$(dirname "$0")/tap.sh"
trap 'rm -rf "$T"' EXIT

sim() { # name trace [flags]
	name=$1
	trace=$2
	shift 2
	if "$GPUQ_BIN" simulate "$trace" --check --quiet --out "$T/$name.json" "$@" 2>"$T/$name.err"; then
		ok "simulate $trace --check"
	else
		not_ok "simulate $trace --check" "$(cat "$T/$name.err")"
	fi
}
# py "what" name expression-over-r: ok when the expression holds for the report r
py() {
	what=$1
	out=$(python3 - "$T/$2.json" "$3" <<'PY' 2>&1
import json, sys
r = json.load(open(sys.argv[1]))
wl = r["workloads"]
def tenant(q): return r["waits"]["byTenant"][q]
def first(prefix): return [w for w in wl if w["name"].startswith(prefix)]
ok = eval(sys.argv[2])
print(ok)
sys.exit(0 if ok is True else 1)
PY
)
	if [ $? -eq 0 ]; then ok "$what"; else not_ok "$what" "$out"; fi
}

if ! command -v python3 >/dev/null 2>&1; then
	for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24; do skip "economics scenarios" "python3 not installed"; done
	tap_end
	exit $?
fi

DAY=86400000
sim budget examples/traces/econ-budget.yaml
py "budget: research/train has a Hold budget of 200 GPU-hours a day" budget \
	'r["economics"]["budgets"][0]["action"] == "Hold" and r["economics"]["budgets"][0]["limit"] == 200'
py "budget: held research/train jobs start when the day turns (00:00 UTC)" budget \
	"sum(1 for w in first('research/') if w['admittedMs'] == $DAY and w['arrivalMs'] < $DAY) >= 2"
py "budget: no research/train job starts between its budget running out and the turn" budget \
	"not any(61200000 <= w['admittedMs'] < $DAY for w in first('research/'))"
py "budget: product/batch, without a budget, runs on meanwhile" budget \
	"any(61200000 <= w['admittedMs'] < $DAY for w in first('product/'))"

sim idle examples/traces/econ-idle.yaml
py "idle: reclaim returned GPU-hours to waiting training" idle \
	'r["economics"]["idle"]["reclaims"] >= 1 and r["economics"]["idle"]["returnedHours"] > 0'
py "idle: training in the reclaiming queue waits less than where idle GPUs are only reported" idle \
	'tenant("reclaim/train")["meanMs"] * 10 < tenant("report/train")["meanMs"]'
py "idle: only IdleReclaim preempted (every eviction in this trace is one)" idle \
	'set(r["preemptions"]["byReason"]) == {"IdleReclaim"}'

sim minrt examples/traces/econ-minruntime.yaml
py "min runtime: no victim of the protected ClusterQueue ran less than 30 min" minrt \
	'r["economics"]["minRuntime"]["shortestVictimRunMsByClusterQueue"]["protected"] >= 1800000'
py "min runtime: in the plain one a victim ran less (the minimum runtime made the difference)" minrt \
	'0 <= r["economics"]["minRuntime"]["shortestVictimRunMsByClusterQueue"]["plain"] < 1800000'

sim maxexec examples/traces/econ-maxexec.yaml
py "max execution time: each 2-hour job stopped after 90 min admitted (MaximumExecutionTimeExceeded), nothing else evicted" maxexec \
	'r["preemptions"]["byReason"] == {"MaximumExecutionTimeExceeded": 4} and all(e["ranMs"] == 5400000 for e in r["preemptions"]["events"])'
py "max execution time: the stopped jobs stay out of the queue (deactivated) while every 1-hour job finishes" maxexec \
	'all(w["state"] == "Pending" and "deactivated" in w["why"] for w in first("research/long")) and all(w["state"] == "Finished" for w in first("research/short"))'

sim starve examples/traces/starving-gang.yaml
py "bounded wait: the 16-GPU gang waits at most its 20 s limit plus the 30 s runtime ahead of it" starve \
	'tenant("team-b/gang")["maxMs"] <= 50000'
py "bounded wait: the same report's run without the limit has the gang wait for the stream to stop (ten times longer)" starve \
	'r["withoutStarvationLimit"]["waits"]["byTenant"]["team-b/gang"]["maxMs"] >= 10 * tenant("team-b/gang")["maxMs"]'
py "bounded wait: utilization within 10% of the run without the limit (it even rises: the gang fills the GPUs the stream left)" starve \
	'abs(r["utilization"]["average"] - r["withoutStarvationLimit"]["utilization"]["average"]) <= 0.10'

sim starve_co examples/traces/starving-gang-cohort.yaml
py "bounded wait across a cohort: the gang waits at most its 20 s limit plus the 30 s runtime of what the other ClusterQueue borrows" starve_co \
	'tenant("team-b/gang")["maxMs"] <= 50000'
py "bounded wait across a cohort: without the limit the borrowing stream keeps the gang waiting (ten times longer)" starve_co \
	'r["withoutStarvationLimit"]["waits"]["byTenant"]["team-b/gang"]["maxMs"] >= 10 * tenant("team-b/gang")["maxMs"]'

sim pred examples/traces/gpu-cluster.yaml --predict-interval 5m
py "prediction: first predictions of most workloads, with median and p90 errors" pred \
	'(lambda p: p["predicted"] > 20 and p["started"] > 20 and 0 <= p["medianAbsErrorMs"] <= p["p90AbsErrorMs"])(r["economics"]["prediction"])'

sim plain examples/traces/gpu-cluster.yaml
py "a trace without economics has no economics section" plain '"economics" not in r'
py "nor, without a starvation limit, a second run" plain '"withoutStarvationLimit" not in r'
tap_end
