#!/usr/bin/env bash
# kill -9 mid-stream and restart: while gpuq is down GPU work is refused (fail
# closed, failurePolicy Fail), nothing is lost, nothing is released twice, and
# the quota is never exceeded; the state store checks sound afterwards.
. "$(dirname "$0")/lib.sh"
NS=e2e-r
QUOTA=4

k apply -f - >/dev/null <<'YAML'
apiVersion: gpuq.dev/v1beta1
kind: ResourceFlavor
metadata: {name: h100-r}
spec:
  nodeLabels: {nvidia.com/gpu.product: NVIDIA-H100-SXM5-80GB}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
---
apiVersion: gpuq.dev/v1beta1
kind: ClusterQueue
metadata: {name: e2e-r}
spec:
  namespaceSelector: {matchLabels: {gpuq.dev/tenant: e2e-r}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100-r
      resources: [{name: nvidia.com/gpu, nominalQuota: 4}]
YAML
make_ns $NS
k apply -f - >/dev/null <<YAML
apiVersion: gpuq.dev/v1beta1
kind: LocalQueue
metadata: {name: default, namespace: $NS}
spec: {clusterQueue: e2e-r}
YAML
poll "LocalQueue known to gpuq" k -n $NS create --dry-run=server -f - <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: probe, labels: {gpuq.dev/queue-name: default}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}]
YAML

# GPUs held by released, unfinished Jobs of the namespace
held() {
	k -n $NS get jobs -o 'jsonpath={range .items[*]}{.spec.suspend}|{.status.conditions[?(@.type=="Complete")].status}|{.spec.template.spec.containers[0].resources.limits.nvidia\.com/gpu}{"\n"}{end}' |
		awk -F'|' '$1 == "false" && $2 != "True" { n += $3 } END { print n + 0 }'
}

for i in 1 2 3 4 5 6 7 8; do gpu_job $NS j$i 1 "" 3s; done
PID=$(cat "$E2E_RUN/gpuq-main.pid")
poll "a first release" sh -c "[ \$($(declare -f k); k -n $NS get jobs -o 'jsonpath={.items[*].spec.suspend}' | tr ' ' '\n' | grep -c false) -ge 1 ]"
kill -9 "$PID"
check "gpuq killed with -9" sh -c "! kill -0 $PID 2>/dev/null || grep -q zombie /proc/$PID/status 2>/dev/null || [ \"\$(cat /proc/$PID/stat 2>/dev/null | cut -d' ' -f3)\" = Z ]"
out=$(gpu_job $NS while-down 1 2>&1 || true)
check "while gpuq is down a GPU Job is refused (fail closed)" sh -c "printf '%s' \"\$1\" | grep -qi 'webhook'" _ "$out"
for i in 9 10 11 12; do k -n $NS create -f - >/dev/null 2>&1 <<YAML || true
apiVersion: v1
kind: ConfigMap
metadata: {name: filler-$i}
YAML
done
check "CPU-only objects are not blocked while gpuq is down" k -n $NS get configmap filler-9

start_gpuq main
check "gpuq restarts from its store and is ready" curl -fsko /dev/null "https://127.0.0.1:$GPUQ_PORT/readyz"
for i in 9 10 11 12; do gpu_job $NS j$i 1 "" 2s; done
max=0
deadline=$(( $(date +%s) + WAIT * 2 ))
while [ "$(date +%s)" -lt "$deadline" ]; do
	h=$(held); [ "$h" -gt "$max" ] && max=$h
	done_n=$(k -n $NS get jobs -o 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Complete")].status}{"\n"}{end}' | grep -c True)
	[ "$done_n" -ge 12 ] && break
	sleep 0.3
done
check "every Job submitted before and after the kill completes (12 of 12)" [ "$done_n" -ge 12 ]
check "the quota was never exceeded (at most $QUOTA GPUs held, saw $max)" [ "$max" -le "$QUOTA" ]
twice=$(grep -o "released Job $NS/[a-z0-9-]*" "$E2E_RUN/gpuq-main.log" | sort | uniq -d)
check "no Job released twice${twice:+ (twice: $twice)}" [ -z "$twice" ]
