#!/usr/bin/env bash
# An edit storm (issue 31): two tenants (each a ServiceAccount holding its
# namespace's `edit` role) create, edit, relabel, scale and delete Jobs,
# StatefulSets and Deployments at random for GPUQ_STORM_SECONDS (default 30
# here; `make storm` runs 300) from seed GPUQ_STORM_SEED (default 1, printed:
# bash's $RANDOM draws the same numbers from it; which object each draw
# picks depends on what exists by then), while each namespace's
# GPUs held by bound, unfinished Pods are sampled every half second. Each
# namespace has 8 GPUs in its ClusterQueue (LocalQueue default) and 2 in
# another (LocalQueue alt). Then the storm stops, the sets are deleted, and
# every Job that has pods must finish: nothing is left stuck, no Pod gated.
. "$(dirname "$0")/lib.sh"
plan 7
SECONDS_=${GPUQ_STORM_SECONDS:-30}
SEED=${GPUQ_STORM_SEED:-1}
TENANTS="e2e-sa e2e-sb"
LIVE_MAX=10 # live workloads per tenant, so the drain after the storm is bounded
export -f k job_field tk
export E2E_RUN

cleanup() {
	for ns in $TENANTS; do
		k -n "$ns" delete statefulsets,deployments,jobs --all --wait=false >/dev/null 2>&1 || true
		[ ! -f "$E2E_RUN/sampler-$ns.pid" ] || kill "$(cut -d' ' -f1 "$E2E_RUN/sampler-$ns.pid")" 2>/dev/null || true
	done
}
trap cleanup EXIT

for ns in $TENANTS; do
	gpu_queue "$ns" 8
	k apply -f - >/dev/null <<YAML
apiVersion: gpuq.dev/v1beta1
kind: ClusterQueue
metadata: {name: $ns-alt}
spec:
  namespaceSelector: {matchLabels: {gpuq.dev/tenant: $ns}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: $ns-h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 2}]
YAML
	local_queue "$ns" alt "$ns-alt"
	queue_known "$ns" alt
	tenant "$ns"
	sampler_start "$ns" 10
done

# the objects (all the tenant's, through tk; kwok plays their Pods)
KWOK='annotations: {pod-complete.stage.kwok.x-k8s.io/delay: "RT", pod-complete.stage.kwok.x-k8s.io/jitter-delay: "RT"}'
job() { # NS NAME GPUS PODS RUNTIME QUEUE
	tk "$1" create -f - <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $2, labels: {gpuq.dev/queue-name: $6, e2e-storm: "y"}}
spec:
  parallelism: $4
  completions: $4
  backoffLimit: 0
  template:
    metadata:
      ${KWOK//RT/$5}
    spec:
      restartPolicy: Never
      containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: "$3"}}}]
YAML
}
set_() { # NS KIND NAME GPUS REPLICAS
	local extra=""
	[ "$2" = StatefulSet ] && extra="serviceName: $3"
	tk "$1" create -f - <<YAML
apiVersion: apps/v1
kind: $2
metadata: {name: $3, labels: {gpuq.dev/queue-name: default, e2e-storm: "y"}}
spec:
  replicas: $5
  $extra
  selector: {matchLabels: {app: $3}}
  template:
    metadata: {labels: {app: $3}}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: "$4"}}}]
YAML
}
# names NS KIND: the storm's objects of KIND in NS
names() { k -n "$1" get "$2" -l e2e-storm=y -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null; }
pick() { local a=("$@"); [ ${#a[@]} -gt 0 ] && echo "${a[RANDOM % ${#a[@]}]}"; }

RANDOM=$SEED
echo "# $SCENARIO: seed $SEED, $SECONDS_ s" >&2
declare -A tried=() took=()
deadline=$(($(date +%s) + SECONDS_))
n=0
while [ "$(date +%s)" -lt "$deadline" ]; do
	n=$((n + 1))
	ns=$(pick $TENANTS)
	jobs=($(names "$ns" jobs))
	sets=($(names "$ns" statefulsets) $(names "$ns" deployments))
	r=$((RANDOM % 100))
	if [ $r -lt 25 ] && [ ${#jobs[@]} -lt $LIVE_MAX ]; then
		a=create-job
		job "$ns" "j$n" $((1 + RANDOM % 2)) $((1 + RANDOM % 3)) "$((2 + RANDOM % 4))s" \
			"$(pick default default default alt)"
	elif [ $r -lt 40 ] && [ ${#jobs[@]} -gt 0 ]; then
		a=parallelism
		tk "$ns" patch job "$(pick "${jobs[@]}")" --type merge -p "{\"spec\":{\"parallelism\":$((RANDOM % 4))}}"
	elif [ $r -lt 50 ] && [ ${#jobs[@]} -gt 0 ]; then
		a=relabel
		tk "$ns" label job "$(pick "${jobs[@]}")" "gpuq.dev/queue-name=$(pick default alt)" --overwrite
	elif [ $r -lt 58 ] && [ ${#jobs[@]} -gt 0 ]; then
		a=delete-job
		tk "$ns" delete job "$(pick "${jobs[@]}")" --wait=false
	elif [ $r -lt 68 ] && [ ${#sets[@]} -lt 3 ]; then
		a=create-set
		set_ "$ns" "$(pick StatefulSet Deployment)" "s$n" $((1 + RANDOM % 2)) $((RANDOM % 3))
	elif [ $r -lt 82 ] && [ ${#sets[@]} -gt 0 ]; then
		a=scale
		s=$(pick "${sets[@]}")
		kind=statefulset
		k -n "$ns" get statefulset "$s" >/dev/null 2>&1 || kind=deployment
		tk "$ns" scale "$kind" "$s" --replicas=$((RANDOM % 4))
	elif [ $r -lt 90 ] && [ ${#sets[@]} -gt 0 ]; then
		a=reshape
		s=$(pick "${sets[@]}")
		kind=statefulset
		k -n "$ns" get statefulset "$s" >/dev/null 2>&1 || kind=deployment
		tk "$ns" patch "$kind" "$s" --type json -p "[{\"op\":\"replace\",\"path\":\"/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu\",\"value\":\"$((1 + RANDOM % 3))\"}]"
	elif [ ${#sets[@]} -gt 0 ]; then
		a=delete-set
		s=$(pick "${sets[@]}")
		k -n "$ns" get statefulset "$s" >/dev/null 2>&1 && tk "$ns" delete statefulset "$s" --wait=false ||
			tk "$ns" delete deployment "$s" --wait=false
	else
		continue
	fi >/dev/null 2>>"$E2E_RUN/storm.err" && took[$a]=$((${took[$a]:-0} + 1))
	tried[$a]=$((${tried[$a]:-0} + 1))
done
summary=""
for a in "${!tried[@]}"; do summary="$summary $a ${took[$a]:-0}/${tried[$a]}"; done
echo "# $SCENARIO: actions taken/tried:$summary" >&2
edits=$((${took[parallelism]:-0} + ${took[relabel]:-0} + ${took[scale]:-0} + ${took[reshape]:-0}))
check "the storm ran (seed $SEED, $SECONDS_ s, $n actions, $edits edits taken; taken/tried:$summary)" \
	test "${took[create-job]:-0}" -gt 0 -a "$edits" -gt 0
refused=$(grep -c 'denied the request' "$E2E_RUN/storm.err" || true)
check "the webhook refused some edits, each naming why ($refused refusals; e.g. $(grep -m1 -o 'denied the request: .\{0,120\}' "$E2E_RUN/storm.err" || true))" \
	test "$refused" -gt 0

# the storm over: the sets go, and every Job that has pods must finish
for ns in $TENANTS; do k -n "$ns" delete statefulsets,deployments -l e2e-storm=y --wait=false >/dev/null; done
# unfinished NS: the storm's Jobs of NS with pods, not finished, one a line
unfinished() {
	k -n "$1" get jobs -l e2e-storm=y -o 'jsonpath={range .items[*]}{.metadata.name} {.spec.parallelism} {.status.conditions[?(@.status=="True")].type}{"\n"}{end}' |
		awk '$2 > 0 && $0 !~ / (Complete|Failed)( |$)/'
}
gated() { k -n "$1" get pods -o 'jsonpath={range .items[*]}{.metadata.name} {.spec.schedulingGates[*].name}{"\n"}{end}' | grep -c 'gpuq.dev/admission' || true; }
all_done() { for ns in $TENANTS; do [ -z "$(unfinished "$ns")" ] && [ "$(gated "$ns")" = 0 ] || return 1; done; }
WAIT=$((WAIT * 3)) poll "every Job finished, no Pod gated" all_done
for ns in $TENANTS; do
	left=$(unfinished "$ns" | tr '\n' ';')
	check "$ns: nothing stuck: every Job with pods finished, no Pod left gated (${left:-none left})" \
		test -z "$left" -a "$(gated "$ns")" = 0
done
check "gpuq is ready after the storm" curl -fsko /dev/null "https://127.0.0.1:$GPUQ_PORT/readyz"
for ns in $TENANTS; do sampler_stop "$ns"; done
