#!/bin/sh
# suite_metrics: gpuq's metrics as a real binary renders them (TAP).
# The queue metrics from `gpuq simulate --metrics` on the example trace:
# promtool check metrics, and the counters against the simulator's own
# report (admissions per ClusterQueue, evictions and preemptions by reason,
# cycles). The webhook's from a scrape of `gpuq serve --policy-dir` (which
# runs no controller, so no queue series; its --dcgm-url refuses
# connections, so the idle GPU families are there, without tenants):
# promtool check metrics. Then
# deploy/monitoring/check.sh on both: the rule files (promtool check rules,
# promtool test rules), the dashboard, every metric they query present in
# the rendered text, and docs/metrics.md listing exactly those families.
# Env: GPUQ_BIN (binary under test). Needs promtool, jq, curl and openssl
# (scripts/setup.sh installs them); skipped without them.
set -u
GPUQ_BIN=${GPUQ_BIN:-build/release/gpuq}
case $GPUQ_BIN in /*) ;; *) GPUQ_BIN=$(pwd)/$GPUQ_BIN ;; esac
TRACE=examples/traces/gpu-cluster.yaml
T=$(mktemp -d /tmp/gpuq-suite-metrics.XXXXXX)
PID=
. "$(dirname "$0")/tap.sh"

cleanup() {
	[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM


for tool in promtool jq curl openssl; do
	if ! command -v $tool >/dev/null 2>&1; then
		echo "1..0 # SKIP $tool not installed (scripts/setup.sh)"
		exit 0
	fi
done

# sum NAME FILTER FILE: the sum of NAME's samples whose labels contain
# FILTER (a literal, e.g. reason="Preempted"; "" for all).
sum() {
	awk -v name="$1" -v filter="$2" '
		index($0, name "{") == 1 || index($0, name " ") == 1 {
			if (filter == "" || index($0, filter)) s += $NF
		}
		END { print s + 0 }' "$3"
}

# ---- the queue metrics, from a simulated run ----
Q=$T/queue.prom
R=$T/report.json
if "$GPUQ_BIN" simulate "$TRACE" --metrics "$Q" --out "$R" --quiet 2>"$T/sim.err"; then
	ok "simulate --metrics writes the queue metrics"
else
	not_ok "simulate --metrics writes the queue metrics" "$(cat "$T/sim.err")"
	echo "1..$n"
	exit 1
fi
if out=$(promtool check metrics <"$Q" 2>&1); then ok "queue metrics pass promtool check metrics"; else
	not_ok "queue metrics pass promtool check metrics" "$out"
fi
same "leader gauge 1 in the simulator (the one replica acting)" \
	"$(sum gpuq_controller_leader "" "$Q")" 1
# Admissions per ClusterQueue, from the report: a workload finished or still
# admitted was admitted once more than it was evicted.
for cq in $(jq -r '[.workloads[].clusterQueue] | unique[]' "$R"); do
	want=$(jq --arg cq "$cq" '[.workloads[] | select(.clusterQueue == $cq)
		| if .state == "Finished" or .state == "Admitted" then .preemptions + 1
		  else .preemptions end] | add' "$R")
	same "admissions of ClusterQueue $cq as the report counts them" \
		"$(sum gpuq_cluster_queue_admissions_total "cluster_queue=\"$cq\"" "$Q")" "$want"
	same "ClusterQueue $cq: one wait observed per admission" \
		"$(sum gpuq_cluster_queue_admission_wait_seconds_count "cluster_queue=\"$cq\"" "$Q")" "$want"
done
same "evictions, every reason, as the report's preemptions" \
	"$(sum gpuq_cluster_queue_evictions_total "" "$Q")" "$(jq .preemptions.total "$R")"
for reason in InClusterQueue InCohortReclamation InCohortFairSharing InCohortReclaimWhileBorrowing; do
	same "preemptions $reason as the report counts them" \
		"$(sum gpuq_cluster_queue_preemptions_total "reason=\"$reason\"" "$Q")" \
		"$(jq --arg r "$reason" '.preemptions.byReason[$r] // 0' "$R")"
done
same "admission cycles as the report counts them" \
	"$(sum gpuq_controller_cycle_duration_seconds_count "" "$Q")" "$(jq .counts.cycles "$R")"

# ---- the webhook's, from a scrape of gpuq serve ----
CERTS=$T/certs
"$GPUQ_BIN" certs --out "$CERTS" --dns localhost --ip 127.0.0.1 >/dev/null 2>&1
tries=0
while [ $tries -lt 5 ] && [ -z "$PID" ]; do
	tries=$((tries + 1))
	PORT=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000))
	"$GPUQ_BIN" serve --listen "127.0.0.1:$PORT" --cert-dir "$CERTS" --policy-dir examples/policy \
		--state-dir "$T/state" --threads 2 --dcgm-url http://127.0.0.1:1/metrics \
		>"$T/serve.log" 2>&1 &
	PID=$!
	i=0
	until curl -sf --max-time 2 --cacert "$CERTS/ca.crt" -o /dev/null \
		"https://127.0.0.1:$PORT/readyz" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -ge 100 ] || ! kill -0 "$PID" 2>/dev/null; then
			kill -KILL "$PID" 2>/dev/null
			wait "$PID" 2>/dev/null
			PID=
			break
		fi
		sleep 0.1
	done
done
W=$T/webhook.prom
if [ -n "$PID" ] && curl -sS --max-time 10 --cacert "$CERTS/ca.crt" \
	"https://127.0.0.1:$PORT/metrics" >"$W"; then
	ok "gpuq serve --policy-dir: /metrics scraped"
else
	not_ok "gpuq serve --policy-dir: /metrics scraped" "$(cat "$T/serve.log")"
	echo "1..$n"
	exit 1
fi
kill -TERM "$PID" 2>/dev/null
wait "$PID" 2>/dev/null
PID=
if out=$(promtool check metrics <"$W" 2>&1); then ok "webhook metrics pass promtool check metrics"; else
	not_ok "webhook metrics pass promtool check metrics" "$out"
fi
same "offline serve: no controller, no queue series" "$(grep -c '^gpuq_controller_\|^gpuq_cluster_queue_' "$W")" 0
if out=$(cat "$W" "$Q" | promtool check metrics 2>&1); then
	ok "both together pass promtool check metrics (no family twice)"
else not_ok "both together pass promtool check metrics (no family twice)" "$out"; fi

# ---- the rules, the dashboard and the docs against both ----
out=$(sh deploy/monitoring/check.sh "$W" "$Q" 2>&1)
rc=$?
printf '%s\n' "$out" | grep -E '^(ok|not ok|#) ' | sed 's/^ok - /ok - monitoring: /; s/^not ok - /not ok - monitoring: /'
c_ok=$(printf '%s\n' "$out" | grep -c '^ok ')
c_bad=$(printf '%s\n' "$out" | grep -c '^not ok ')
n=$((n + c_ok + c_bad))
failed=$((failed + c_bad))
[ $rc -eq 0 ] || [ "$c_bad" -gt 0 ] || not_ok "deploy/monitoring/check.sh exited $rc" "$out"

tap_end
