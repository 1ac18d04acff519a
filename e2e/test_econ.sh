#!/usr/bin/env bash
# GPU economics on a real control plane (issue 24, docs/economics.md):
#  - a LocalQueue's budget with action Hold: over it, a BudgetExceeded Event
#    on the LocalQueue, its status, `gpuq status` and gpuq_budget_state say
#    so, a new Job waits though quota is free ("held: ..."), and runs once
#    the limit is raised (to one it is past warnAt of: a BudgetWarning Event);
#  - idle reclaim: gpuq serve --dcgm-url against an endpoint this scenario
#    serves itself (as test_idle.sh does); a Job whose GPUs stay at 0 % is
#    reported (IdleGPU Event) and, once another Job waits for its flavor,
#    preempted with reason IdleReclaim so the waiting Job runs; but a DCGM
#    outage after a low reading preempts nobody (only fresh readings carry
#    an idle spell, issue 32), and the same Job is reclaimed once readings
#    come back low for idleReclaim.for;
#  - minimum runtime: a PriorityClass annotated gpuq.dev/min-runtime; a
#    high-priority Job waits for the low one's minimum runtime, its
#    explanation says whose and how long, then preempts it;
#  - predicted start: a pending Job's explanation in `gpuq status` says when
#    it is expected to start (the running Job declares gpuq.dev/expected-runtime),
#    plain (the tenant's kubeconfig: gpuq.dev/status) and through the
#    visibility API.
. "$(dirname "$0")/lib.sh"
plan 25
WWW=$E2E_RUN/econ-www
mkdir -p "$WWW"

if ! command -v python3 >/dev/null 2>&1; then
	# (scripts/setup.sh installs it: CI fails on these skips)
	for _ in $(seq 24); do skip "GPU economics" "python3 not installed"; done
	exit 0
fi

# the DCGM endpoint: empty until the idle part names a pod
write_body() {
	{
		echo "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %)."
		echo "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"
		[ -z "${1:-}" ] || printf '%s\n' "$@"
	} >"$WWW/metrics.tmp"
	mv "$WWW/metrics.tmp" "$WWW/metrics"
}
write_body
python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$WWW" >"$E2E_RUN/econ-http.log" 2>&1 &
HPID=$!
trap 'kill $HPID 2>/dev/null' EXIT
poll "the scenario's endpoint" grep -q 'port [0-9]' "$E2E_RUN/econ-http.log"
URL="http://127.0.0.1:$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$E2E_RUN/econ-http.log" | head -1)/metrics"
restart_main --dcgm-url "$URL" --dcgm-interval 200ms

scrape() { curl -fsk --max-time 10 "https://127.0.0.1:$GPUQ_PORT/metrics"; }
status_of() { "$GPUQ" status --kubeconfig "$KUBECONFIG" "$@" 2>&1; }
# obj_event NS KIND NAME REASON: an Event regarding KIND NAME with REASON exists
obj_event() {
	k -n "$1" get events.events.k8s.io -o 'jsonpath={range .items[*]}{.regarding.kind} {.regarding.name} {.reason}{"\n"}{end}' 2>/dev/null |
		grep -q "^$2 $3 $4\$"
}
event_notes() {
	k -n "$1" get events.events.k8s.io -o "jsonpath={range .items[?(@.reason==\"$2\")]}{.regarding.name}: {.note}{\"\\n\"}{end}" 2>/dev/null
}
lq_budget() { k -n "$1" get localqueue "$2" -o "jsonpath={.status.budget.$3}" 2>/dev/null; }

# ---- budgets: Hold ----
NSB=e2e-eb
gpu_queue $NSB 4
lq_with_budget() {
	k apply -f - >/dev/null <<YAML
apiVersion: gpuq.dev/v1beta1
kind: LocalQueue
metadata: {name: default, namespace: $NSB}
spec:
  clusterQueue: $NSB
  budget: {gpuHours: "$1", window: 1d, warnAt: ${2:-50}, action: Hold}
YAML
}
lq_with_budget 0.001 # 3.6 GPU-seconds a day
gpu_job $NSB b-first 1 "" 600s
poll "b-first running" job_running $NSB b-first
check "over its budget: a BudgetExceeded Event on the LocalQueue" \
	poll "BudgetExceeded" obj_event $NSB LocalQueue default BudgetExceeded
echo "# $(event_notes $NSB BudgetExceeded | head -1)" >&2
check "the LocalQueue's status.budget says Over (action Hold)" \
	poll "status.budget.state Over" sh -c "[ \"\$($KUBECTL --kubeconfig $KUBECONFIG -n $NSB get localqueue default -o 'jsonpath={.status.budget.state}/{.status.budget.action}')\" = Over/Hold ]"
gpu_job $NSB b-second 1 "" 3s
check "a new Job waits though quota is free, saying it is held by the budget" \
	poll "b-second held" job_status_has $NSB b-second "held: LocalQueue $NSB/default is over its budget"
echo "# b-second: $(job_status $NSB b-second)" >&2
check "it is still suspended" job_suspended $NSB b-second
st=$(status_of -n $NSB)
echo "$st" | sed 's/^/# /' >&2
check "gpuq status lists the budget (used, limit, Over, Hold)" \
	sh -c "printf '%s\n' \"\$1\" | grep -E '^$NSB/default +LocalQueue .* Over +Hold '" _ "$st"
check "a metric says so (gpuq_budget_state 2)" \
	sh -c "curl -fsk --max-time 10 https://127.0.0.1:$GPUQ_PORT/metrics | grep -q '^gpuq_budget_state{scope=\"LocalQueue\",name=\"$NSB/default\"} 2\$'"
# raised to a limit it is within and past warnAt (1 %) of: what it used at
# the last evaluation (at least 0.001) plus 0.02 GPU-hours (72 s of
# b-first's one GPU; budgets are evaluated every 10 s)
used=$(lq_budget $NSB default used)
lq_with_budget "$(awk -v u="$used" 'BEGIN { printf "%.4f", u + 0.02 }')" 1
check "the limit raised, the held Job runs" poll "b-second running" job_running $NSB b-second
check "within it again but past warnAt: a BudgetWarning Event" \
	poll "BudgetWarning" obj_event $NSB LocalQueue default BudgetWarning
echo "# $(event_notes $NSB BudgetWarning | head -1)" >&2
lq_with_budget 1000
k -n $NSB delete job b-first b-second --wait=false >/dev/null 2>&1

# ---- idle reclaim: Preempt ----
NSI=e2e-ei
gpu_queue $NSI 2
k patch clusterqueue $NSI --type merge \
	-p '{"spec":{"idleReclaim":{"utilizationBelow":10,"for":"2s","action":"Preempt"}}}' >/dev/null
poll "idleReclaim kept by the apiserver" sh -c "[ -n \"\$($KUBECTL --kubeconfig $KUBECONFIG get clusterqueue $NSI -o 'jsonpath={.spec.idleReclaim.action}')\" ]"
gpu_job $NSI idle-a 2 "" 600s
poll "idle-a running" job_running $NSI idle-a
pod_name() { k -n $NSI get pods -l job-name=idle-a -o 'jsonpath={.items[0].metadata.name}' 2>/dev/null; }
poll "idle-a's pod" sh -c "[ -n \"\$($KUBECTL --kubeconfig $KUBECONFIG -n $NSI get pods -l job-name=idle-a -o 'jsonpath={.items[0].metadata.name}')\" ]"
POD=$(pod_name)
line() { echo "DCGM_FI_DEV_GPU_UTIL{gpu=\"$1\",UUID=\"GPU-econ-$1\",device=\"nvidia$1\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"h100-0\",container=\"main\",namespace=\"$NSI\",pod=\"$POD\"} $2"; }
write_body "$(line 0 0)" "$(line 1 3)"
check "its GPUs idle for 2 s: an IdleGPU Event on the Job" poll "IdleGPU" job_event $NSI idle-a IdleGPU
echo "# $(event_notes $NSI IdleGPU | head -1)" >&2
check "reported only while no other workload waits: it keeps running" job_running $NSI idle-a
gpu_job $NSI idle-b 2 "" 5s
check "another Job waits for its flavor: the idle Job is preempted" poll "idle-a suspended" job_suspended $NSI idle-a
check "the Preempted Event gives reason IdleReclaim" \
	poll "Preempted (IdleReclaim)" sh -c "$(declare -f k event_notes); event_notes $NSI Preempted | grep -q '^idle-a: .*(IdleReclaim)'"
echo "# $(event_notes $NSI Preempted | head -1)" >&2
check "the waiting Job runs on the returned GPUs" poll "idle-b running" job_running $NSI idle-b
check "gpuq_cluster_queue_evictions_total counts it (reason IdleReclaim)" \
	sh -c "curl -fsk --max-time 10 https://127.0.0.1:$GPUQ_PORT/metrics | grep -q '^gpuq_cluster_queue_evictions_total{cluster_queue=\"$NSI\",reason=\"IdleReclaim\"} [1-9]'"
write_body
k -n $NSI delete job idle-a idle-b --wait=false >/dev/null 2>&1

# ---- idle reclaim only on fresh evidence: a DCGM outage after a low reading ----
# for: 8s, longer than a reading stands at --dcgm-interval 200ms (2.4 s)
k patch clusterqueue $NSI --type merge \
	-p '{"spec":{"idleReclaim":{"utilizationBelow":10,"for":"8s","action":"Preempt"}}}' >/dev/null
poll "idleReclaim.for 8s kept" sh -c "[ \"\$($KUBECTL --kubeconfig $KUBECONFIG get clusterqueue $NSI -o 'jsonpath={.spec.idleReclaim.for}')\" = 8s ]"
gpu_job $NSI idle-c 2 "" 600s
poll "idle-c running" job_running $NSI idle-c
poll "idle-c's pod" sh -c "[ -n \"\$($KUBECTL --kubeconfig $KUBECONFIG -n $NSI get pods -l job-name=idle-c -o 'jsonpath={.items[0].metadata.name}')\" ]"
POD=$(k -n $NSI get pods -l job-name=idle-c -o 'jsonpath={.items[0].metadata.name}')
scrapes() { scrape | awk -v r="$1" 'index($0, "gpuq_dcgm_scrapes_total{result=\"" r "\"} ") == 1 { print $NF }'; }
more_scrapes() { [ "$(scrapes "$1")" -gt "$2" ]; }
n0=$(scrapes success)
write_body "$(line 0 0)" "$(line 1 3)"
poll "a scrape reads the low utilization" more_scrapes success $(( n0 + 2 ))
rm -f "$WWW/metrics" # the outage: every scrape answered 404 from here on
f0=$(scrapes failure)
poll "scrapes failing" more_scrapes failure "$f0"
gpu_job $NSI idle-d 2 "" 5s # waits for idle-c's flavor
# never_within SECS CMD...: CMD does not succeed for SECS seconds (checked every 0.2 s)
never_within() {
	local end=$(( $(date +%s) + $1 )); shift
	while [ "$(date +%s)" -lt "$end" ]; do
		! "$@" >/dev/null 2>&1 || return 1
		sleep 0.2
	done
}
check "a DCGM outage after a low reading: the idle Job is not preempted (watched 15 s, for: 8s)" \
	never_within 15 job_suspended $NSI idle-c
not_reported() { ! job_event $NSI idle-c IdleGPU; }
check "... nor reported idle" not_reported
write_body "$(line 0 0)" "$(line 1 3)" # back, and low again
check "DCGM back, low for 8 s: now it is reclaimed for the waiting Job" poll "idle-c suspended" job_suspended $NSI idle-c
write_body
k -n $NSI delete job idle-c idle-d --wait=false >/dev/null 2>&1

# ---- minimum runtime (PriorityClass annotation) ----
NSM=e2e-em
k apply -f - >/dev/null <<'YAML'
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: e2e-em-low
  annotations: {gpuq.dev/min-runtime: 30s}
value: 11
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-em-high}
value: 10001
YAML
gpu_queue $NSM 2 "{withinClusterQueue: LowerPriority}"
gpu_job $NSM low 2 e2e-em-low 600s
poll "low running" job_running $NSM low
gpu_job $NSM high 2 e2e-em-high 5s
check "the high-priority Job waits, its explanation (the visibility API's) naming the low one's minimum runtime" \
	poll "high explained" pending_has $NSM high "waits for $NSM/low's minimum runtime: [0-9]* s left"
echo "# high: $(pending_of $NSM high)" >&2
# gpuq's own Events on low, Admitted then Preempted (eventTime,
# microseconds): seconds from one to the other
evtime() {
	k -n $NSM get events.events.k8s.io -o "jsonpath={range .items[?(@.regarding.name==\"low\")]}{.reason} {.eventTime}{\"\\n\"}{end}" |
		awk -v r="$1" '$1 == r { print $2; exit }'
}
ran_secs() {
	python3 -c 'import sys, datetime as d
f = lambda s: d.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ")
print("%.1f" % (f(sys.argv[2]) - f(sys.argv[1])).total_seconds())' "$(evtime Admitted)" "$(evtime Preempted)" 2>/dev/null || echo 0
}
# running and never preempted meanwhile (a Job preempted and readmitted
# would be running again); on a machine slow enough that the explanation
# came after the 30 s, preempted then, and only then
low_held() {
	if job_running $NSM low && ! job_event $NSM low Preempted; then return 0; fi
	poll "low's Preempted Event" job_event $NSM low Preempted || return 1
	awk -v s="$(ran_secs)" 'BEGIN { exit !(s >= 30) }'
}
check "the low-priority Job is still running then, never preempted before its minimum runtime" low_held
check "once its minimum runtime is over, it is preempted" poll "low suspended" job_suspended $NSM low
# the minimum runtime measured, not sampled once: Admitted then Preempted at
# least 30 s apart (a core that ignored the annotation preempts it within a
# cycle or two)
poll "low's Preempted Event" job_event $NSM low Preempted >/dev/null
ran=$(ran_secs)
check "low ran its whole minimum runtime: admitted to preempted ${ran} s (at least 30 s)" \
	awk -v s="$ran" 'BEGIN { exit !(s >= 30) }'
check "and the high-priority Job runs" poll "high running" job_running $NSM high
ev=$(k -n $NSM get events.events.k8s.io -o 'jsonpath={range .items[?(@.reason=="Admitted")]}{.regarding.name} {.eventTime}{"\n"}{end}' 2>/dev/null)
echo "# admitted: $(echo "$ev" | tr '\n' ' ')" >&2
k -n $NSM delete job low high --wait=false >/dev/null 2>&1

# ---- predicted start ----
NSP=e2e-ep
gpu_queue $NSP 1
k apply -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: p-run
  namespace: $NSP
  labels: {gpuq.dev/queue-name: default}
  annotations: {gpuq.dev/expected-runtime: 10m}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        pod-complete.stage.kwok.x-k8s.io/delay: "600s"
        pod-complete.stage.kwok.x-k8s.io/jitter-delay: "600s"
    spec:
      restartPolicy: Never
      containers:
      - {name: main, image: busybox, resources: {limits: {nvidia.com/gpu: "1"}}}
YAML
poll "p-run running" job_running $NSP p-run
tenant $NSP
p_wait_at=$(date +%s)
gpu_job $NSP p-wait 1 "" 3s
# plain gpuq status, as the tenant, reads gpuq.dev/status: it says a start
# predicted within the hour, rounded to 5 minutes (a prediction pass every
# 15 s finds it)
status_plain() { "$GPUQ" status --kubeconfig "$E2E_RUN/tenant-$NSP.kubeconfig" -n $NSP 2>&1; }
plain_predicted() { status_plain | grep -q "p-wait.*expected to start by about 20[0-9][0-9]-[0-9-]* [0-9][0-9]:[0-9][0-9] UTC"; }
check "plain gpuq status (the tenant's kubeconfig, no --gpuq-server) says when p-wait is expected to start" \
	poll "p-wait's expected start in its gpuq.dev/status" plain_predicted
echo "# $(( $(date +%s) - p_wait_at )) s after p-wait was created: $(status_plain | grep p-wait)"
# gpuq status with --gpuq-server asks gpuq's visibility API: the position
# and the prediction to the minute
status_vis() {
	status_of -n $NSP --gpuq-server "https://127.0.0.1:$GPUQ_PORT" \
		--gpuq-ca "${GPUQ_CERT_DIR:-$E2E_RUN/certs}/ca.crt" --token "$(vis_token)"
}
predicted() { status_vis | grep -q "$NSP/p-wait .*; expected to start in about [0-9][0-9]* min ("; }
check "gpuq status says when the pending Job is expected to start" poll "p-wait's prediction" predicted
echo "# $(status_vis | grep p-wait)" >&2
predicted_time() {
	local tok
	tok=$(vis_token) || return 1
	curl -sf --cacert "${GPUQ_CERT_DIR:-$E2E_RUN/certs}/ca.crt" --max-time 20 -H "Authorization: Bearer $tok" \
		"https://127.0.0.1:$GPUQ_PORT/apis/visibility.gpuq.dev/v1beta1/namespaces/$NSP/localqueues/default/pendingworkloads" |
		python3 -c 'import json, sys
from datetime import datetime, timezone
for i in json.load(sys.stdin)["items"]:
    if i["metadata"]["name"] == "p-wait" and "predictedStartTime" in i:
        t = datetime.strptime(i["predictedStartTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
        ahead = (t - datetime.now(timezone.utc)).total_seconds()
        print(i["predictedStartTime"], int(ahead))
        sys.exit(0 if 5 * 60 <= ahead <= 11 * 60 else 1)
sys.exit(1)'
}
check "so does the visibility API's predictedStartTime (5 to 11 min ahead: $(predicted_time))" predicted_time
k -n $NSP delete job p-run p-wait --wait=false >/dev/null 2>&1

kill $HPID 2>/dev/null
restart_main
