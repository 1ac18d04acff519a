#!/usr/bin/env bash
# A RuntimeClass's overhead is what its Pods ask too (issue 31): the
# apiserver's RuntimeClass plugin gives each Pod naming runtimeClassName its
# class's overhead.podFixed as spec.overhead, and gpuq counts it in the
# template's request, so a ClusterQueue covering cpu and memory is charged
# the containers' requests plus the overhead, per Pod.
#  - RuntimeClass e2e-ov-kata (250m cpu, 64Mi) is created after gpuq started:
#    its watch (deploy/'s RBAC: list, watch runtimeclasses) brings it in;
#  - a Job of 2 Pods of 1 GPU, 1 cpu and 1Gi naming it: the ClusterQueue's
#    usage is 2500m cpu and 2176Mi (2 x (1 + 250m), 2 x (1Gi + 64Mi)), what
#    the Pods the Job controller made carry in spec.overhead;
#  - a Job naming a RuntimeClass that does not exist is refused at creation
#    in the apiserver's words (its Pods would be).
. "$(dirname "$0")/lib.sh"
plan 5
NS=e2e-ov
export -f k job_field job_running
export NS

h100_flavor e2e-ov-h100
k apply -f - >/dev/null <<YAML
apiVersion: gpuq.dev/v1beta1
kind: ClusterQueue
metadata: {name: $NS}
spec:
  namespaceSelector: {matchLabels: {gpuq.dev/tenant: $NS}}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: e2e-ov-h100
      resources: [{name: cpu, nominalQuota: 16}, {name: memory, nominalQuota: 64Gi}, {name: nvidia.com/gpu, nominalQuota: 8}]
YAML
make_ns $NS
local_queue $NS default $NS

# ov_job NAME CLASS [DRY]: a Job of 2 Pods of 1 GPU, 1 cpu and 1Gi run by
# RuntimeClass CLASS; with DRY, a server-side dry run (prints the answer)
ov_job() {
	k -n $NS create ${3:+--dry-run=server} -f - 2>&1 <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $1, labels: {gpuq.dev/queue-name: default}}
spec:
  parallelism: 2
  completions: 2
  template:
    metadata:
      annotations:
        pod-complete.stage.kwok.x-k8s.io/delay: "600s"
        pod-complete.stage.kwok.x-k8s.io/jitter-delay: "600s"
    spec:
      restartPolicy: Never
      runtimeClassName: $2
      containers:
      - name: m
        image: x
        resources:
          requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "1"}
          limits: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "1"}
YAML
}
export -f ov_job
usage() { k get clusterqueue $NS -o "jsonpath={.status.flavorsUsage[0].resources[?(@.name==\"$1\")].total}" 2>/dev/null; }
export -f usage

k apply -f - >/dev/null <<YAML
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: e2e-ov-kata}
handler: kata
overhead:
  podFixed: {cpu: 250m, memory: 64Mi}
YAML
check "a RuntimeClass created after gpuq started is seen through its watch (a Job naming it passes the webhook)" \
	poll "e2e-ov-kata known to gpuq" bash -c "ov_job probe e2e-ov-kata dry >/dev/null"
out=$(ov_job nope e2e-ov-nope dry || true)
echo "# nope: $out" >&2
check "a Job naming a RuntimeClass that does not exist is refused at creation, in the apiserver's words" \
	sh -c 'printf %s "$1" | grep -q "pod rejected: RuntimeClass \"e2e-ov-nope\" not found"' _ "$out"
out=$(ov_job ov e2e-ov-kata)
echo "# create: $out" >&2
check "the Job naming it is released" poll "ov running" bash -c "job_running $NS ov"
check "its Pods carry the class's overhead (the apiserver's plugin)" poll "ov's Pods' overhead" \
	bash -c "[ \"\$(k -n $NS get pods -l job-name=ov -o 'jsonpath={range .items[*]}{.spec.overhead.cpu}/{.spec.overhead.memory} {end}')\" = '250m/64Mi 250m/64Mi ' ]"
check "the ClusterQueue is charged the overhead per Pod: 2500m cpu, 2176Mi (2 x (1 + 250m), 2 x (1Gi + 64Mi))" \
	poll "e2e-ov usage" bash -c "u=\$(usage cpu)/\$(usage memory); echo \"# usage \$u\" >&2; [ \"\$u\" = 2500m/2176Mi ]"
k -n $NS delete jobs --all --wait=false >/dev/null 2>&1 || true
k delete runtimeclass e2e-ov-kata --wait=false >/dev/null 2>&1 || true
