#!/usr/bin/env bash
# The queue metrics on /metrics, from the live controller: the leader's
# series follow its queue (admitted and pending by reason, quota used per
# flavor, a tenant's usage, a preemption counted by reason, one wait
# observed per admission, store commits), the scrape passes promtool, every
# metric the dashboard and the alert rules query is in it, and a standby
# replica shows gpuq_controller_leader 0 and no queue series.
. "$(dirname "$0")/lib.sh"
plan 17
NS=e2e-m

k apply -f - >/dev/null <<'YAML'
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: e2e-m-high}
value: 1000
YAML
gpu_queue $NS 2 "{withinClusterQueue: LowerPriority}"

scrape() { curl -fsk --max-time 10 "https://127.0.0.1:${1:-$GPUQ_PORT}/metrics"; }
# value SERIES [PORT]: the value of the sample that is exactly SERIES ("" when none)
value() { scrape "${2:-}" | awk -v s="$1" 'index($0, s " ") == 1 { print $NF }'; }
# is SERIES WANT: the sample equals WANT now
is() { [ "$(value "$1")" = "$2" ]; }
CQ="cluster_queue=\"$NS\""
GPU="$CQ,cohort=\"\",flavor=\"$NS-h100\",resource=\"nvidia.com/gpu\""

# two 1-GPU Jobs fill the quota, a third waits for it
for j in m1 m2 m3; do gpu_job $NS $j 1 "" 20s; done
check "the leader: gpuq_controller_leader 1" poll "leader gauge" \
	sh -c "$(declare -f scrape value is); is gpuq_controller_leader 1"
check "2 workloads admitted in the ClusterQueue" poll "admitted 2" \
	sh -c "$(declare -f scrape value is); is 'gpuq_cluster_queue_admitted_workloads{$CQ}' 2"
check "1 waits for quota (reason Quota)" poll "pending Quota 1" \
	sh -c "$(declare -f scrape value is); is 'gpuq_cluster_queue_pending_workloads{$CQ,reason=\"Quota\"}' 1"
check "the quota: 2 GPUs of 2 nominal used on the flavor" sh -c \
	"$(declare -f scrape value is); is 'gpuq_cluster_queue_resource_usage{$GPU}' 2 && is 'gpuq_cluster_queue_nominal_quota{$GPU}' 2"
check "nothing borrowed without a cohort" sh -c \
	"$(declare -f scrape value is); is 'gpuq_cluster_queue_resource_borrowed{$GPU}' 0"
check "the tenant's usage: 2 GPUs" sh -c "$(declare -f scrape value is); is \
	'gpuq_local_queue_resource_usage{namespace=\"$NS\",local_queue=\"default\",$CQ,flavor=\"$NS-h100\",resource=\"nvidia.com/gpu\"}' 2"

# a 2-GPU Job of higher priority preempts both
gpu_job $NS hi 2 e2e-m-high 2s
check "the preemption is counted by reason" poll "preemptions 2" sh -c "$(declare -f scrape value is); \
	is 'gpuq_cluster_queue_preemptions_total{preempting_cluster_queue=\"$NS\",reason=\"InClusterQueue\"}' 2"
check "the victims' evictions are counted (Preempted)" sh -c \
	"$(declare -f scrape value is); is 'gpuq_cluster_queue_evictions_total{$CQ,reason=\"Preempted\"}' 2"
drain $NS 4
check "every Job completes (4 of 4, saw $DONE)" [ "$DONE" -ge 4 ]
poll "admitted 0" sh -c "$(declare -f scrape value is); is 'gpuq_cluster_queue_admitted_workloads{$CQ}' 0" >/dev/null
adm=$(value "gpuq_cluster_queue_admissions_total{$CQ}")
waits=$(value "gpuq_cluster_queue_admission_wait_seconds_count{$CQ}")
check "admissions: 6 (4 Jobs, 2 of them again after their preemption; saw $adm)" [ "$adm" = 6 ]
check "one wait observed per admission (saw $waits)" [ "$waits" = "$adm" ]
commits=$(value gpuq_store_commit_duration_seconds_count)
check "store commits timed (saw $commits)" [ "${commits:-0}" -gt 0 ]

scrape >"$E2E_RUN/metrics-leader.prom"
if command -v promtool >/dev/null 2>&1; then
	check "the leader's scrape passes promtool check metrics" promtool check metrics <"$E2E_RUN/metrics-leader.prom"
else
	skip "the leader's scrape passes promtool check metrics" "promtool not installed"
fi
# a standby: its webhook metrics, no queue series
# (with --dcgm-url, unreachable: the idle GPU families are rendered, empty,
# so the check below sees every family docs/metrics.md lists)
P2=$(( GPUQ_PORT + 2 ))
GPUQ_PORT=$P2 start_gpuq metrics-standby --dcgm-url http://127.0.0.1:1/metrics
scrape $P2 >"$E2E_RUN/metrics-standby.prom"
check "every metric the dashboard and the alert rules query is in the leader's scrape, and docs/metrics.md lists what the two replicas render (deploy/monitoring/check.sh; log: monitoring-check.log)" \
	sh -c 'sh "$1" "$2" "$3" >"$4" 2>&1' _ "$(dirname "$0")/../deploy/monitoring/check.sh" \
	"$E2E_RUN/metrics-leader.prom" "$E2E_RUN/metrics-standby.prom" "$E2E_RUN/monitoring-check.log"
check "a standby: gpuq_controller_leader 0" sh -c "$(declare -f scrape value); [ \"\$(value gpuq_controller_leader $P2)\" = 0 ]"
check "a standby: no queue series" sh -c "$(declare -f scrape); ! scrape $P2 | grep -q '^gpuq_cluster_queue_\|^gpuq_local_queue_'"
check "a standby: the webhook's own metrics" sh -c "$(declare -f scrape); scrape $P2 | grep -q '^gpuq_policy_generation '"
kill -9 "$(cat "$E2E_RUN/gpuq-metrics-standby.pid")"
