#!/usr/bin/env bash
# Pods: a plain GPU Pod is gated at creation and released (gate removed,
# flavor placement added); a pod group (kueue.x-k8s.io/pod-group-name with
# pod-group-total-count) is released only when every member exists, then all
# members at once; a group that does not fit waits whole.
. "$(dirname "$0")/lib.sh"
plan 9
NS=e2e-pg

gpu_queue e2e-pg 8

# gpu_pod NAME GPUS [GROUP TOTAL]
gpu_pod() {
	{
		cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: $NS
  labels:
    gpuq.dev/queue-name: default
YAML
		[ -n "${3:-}" ] && cat <<YAML
    kueue.x-k8s.io/pod-group-name: $3
  annotations:
    kueue.x-k8s.io/pod-group-total-count: "$4"
YAML
		cat <<YAML
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    resources: {limits: {nvidia.com/gpu: "$2"}}
YAML
	} | k apply -f - >/dev/null
}
gates() { k -n $NS get pod "$1" -o 'jsonpath={.spec.schedulingGates[*].name}' 2>/dev/null; }
gated() { [ "$(gates "$1")" = gpuq.dev/admission ]; }
released() { [ -z "$(gates "$1")" ] && [ -n "$(k -n $NS get pod "$1" -o name 2>/dev/null)" ]; }
bound() { [ -n "$(k -n $NS get pod "$1" -o 'jsonpath={.spec.nodeName}' 2>/dev/null)" ]; }
# status POD: gpuq's gpuq.dev/status on it (what gpuq decided, once it has)
status() { k -n $NS get pod "$1" -o 'jsonpath={.metadata.annotations.gpuq\.dev/status}' 2>/dev/null; }
export -f gates gated released bound status k
export NS

gpu_pod solo 2
check "a plain GPU Pod is released (gate removed)" poll "solo released" bash -c "released solo"
check "and scheduled onto an H100 node by its flavor's placement" poll "solo bound" bash -c "bound solo"

gpu_pod g1-0 2 g1 3
gpu_pod g1-1 2 g1 3
# gpuq has acted on both members once each says so; only then is "still
# gated" evidence (right after creation the webhook's gate is always there)
check "gpuq counts the two members present (gpuq.dev/status)" poll "g1 status 2 of 3" \
	bash -c "status g1-0 | grep -q '2 of 3 pods present' && status g1-1 | grep -q '2 of 3 pods present'"
echo "# g1-0: $(status g1-0)" >&2
check "two of three group members stay gated" bash -c "gated g1-0 && gated g1-1"
gpu_pod g1-2 2 g1 3
check "the complete group is released" poll "g1 released" bash -c "released g1-0 && released g1-1 && released g1-2"
check "every member is scheduled" poll "g1 bound" bash -c "bound g1-0 && bound g1-1 && bound g1-2"

# 2 (solo) + 6 (g1) = 8 used: a second group of 2 x 2 waits whole
gpu_pod g2-0 2 g2 2
gpu_pod g2-1 2 g2 2
# complete, so only the quota holds it: gpuq says so, then it is still gated
g2_waits() {
	status g2-0 | grep -q 'waiting for quota' && status g2-1 | grep -q 'waiting for quota' &&
		pending_has $NS g2 '0 free'
}
check "each of its Pods says the group waits (gpuq.dev/status), the visibility API why (0 free)" \
	poll "g2 status" g2_waits
echo "# g2-0: $(status g2-0) | g2: $(pending_of $NS g2)" >&2
check "a group beyond quota stays gated, all of it" bash -c "gated g2-0 && gated g2-1"
k -n $NS delete pod solo g1-0 g1-1 g1-2 --wait=false >/dev/null
check "when the running group goes, the waiting group is released whole" \
	poll "g2 released" bash -c "released g2-0 && released g2-1"
k -n $NS delete pod g2-0 g2-1 --wait=false >/dev/null 2>&1 || true
