#!/usr/bin/env bash
# Pending work on demand (docs/visibility.md) on the real control plane:
# gpuq's visibility API on its own port (an APIService cannot be routed to a
# loopback address here), with real tokens reviewed by the apiserver
# (TokenReview, SubjectAccessReview): the positions and reasons of pending
# Jobs per ClusterQueue and per LocalQueue, in the queue's order; a tenant
# reads its own namespace's LocalQueue and nothing else; a bad limit is a
# 400 naming it; `gpuq status` and `kubectl gpuq status` print the same
# positions. The Jobs' own gpuq.dev/status stays coarse: a waiting Job that
# moves up the queue is not written to (its resourceVersion stays).
. "$(dirname "$0")/lib.sh"
plan 15
NS=e2e-vis
OTHER=e2e-vis-other
BASE="https://127.0.0.1:$GPUQ_PORT"
VIS=/apis/visibility.gpuq.dev/v1beta1
CA="${GPUQ_CERT_DIR:-$E2E_RUN/certs}/ca.crt"

gpu_queue $NS 2
gpu_queue $OTHER 1

# an operator who may get ClusterQueues, a tenant who may list the Jobs
# (and read the LocalQueues) of its namespace only
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ServiceAccount
metadata: {name: vis-operator, namespace: $NS}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: vis-tenant, namespace: $NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-vis-operator}
rules: [{apiGroups: [gpuq.dev], resources: [clusterqueues], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-vis-operator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-vis-operator}
subjects: [{kind: ServiceAccount, name: vis-operator, namespace: $NS}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: e2e-vis-tenant, namespace: $NS}
rules:
- {apiGroups: [batch], resources: [jobs], verbs: [get, list]}
- {apiGroups: [gpuq.dev], resources: [localqueues], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: e2e-vis-tenant, namespace: $NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: e2e-vis-tenant}
subjects: [{kind: ServiceAccount, name: vis-tenant, namespace: $NS}]
YAML
OP=$(k -n $NS create token vis-operator --duration=1h)
TEN=$(k -n $NS create token vis-tenant --duration=1h)

# get PATH [TOKEN]: the body of GET PATH on gpuq's port (the HTTP status
# appended on a last line of its own)
get() {
	curl -s --cacert "$CA" --max-time 20 -w '\n%{http_code}' \
		${2:+-H "Authorization: Bearer $2"} "$BASE$1"
}
code() { get "$@" | tail -n1; }
body() { get "$@" | sed '$d'; }
# names PATH TOKEN: "name:posCQ:posLQ" of each item, space-separated
names() {
	body "$1" "$2" | python3 -c 'import json, sys
o = json.load(sys.stdin)
print(" ".join("%s:%d:%d" % (i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"]) for i in o["items"]))'
}

# two GPUs: run1 and run2 run (600 s: longer than the checks on any
# machine; run1 is deleted when its end is wanted), then w1..w3 wait
gpu_job $NS run1 1 "" 600s
gpu_job $NS run2 1 "" 600s
poll "run1 and run2 released" sh -c "$(declare -f k job_field job_running); job_running $NS run1 && job_running $NS run2"
# w1 runs as long as run1 and run2: once released it holds its GPU through
# the checks, so w2 and w3 only move up (with w1 at 2s, w2 ran and w3 was
# released, its status rewritten, while a loaded CI machine was between the
# last two checks)
for j in w1 w2 w3; do
	rt=2s
	[ $j = w1 ] && rt=600s
	gpu_job $NS $j 1 "" $rt
	# FIFO is by creationTimestamp (whole seconds): one per second
	c=$(date -d "$(job_field $NS $j '{.metadata.creationTimestamp}')" +%s)
	poll "the next second" sh -c "[ \$(date +%s) -gt $c ]"
done
gpu_job $OTHER o1 1 "" 600s
gpu_job $OTHER o2 1 "" 2s

CQP=$VIS/clusterqueues/$NS/pendingworkloads
LQP=$VIS/namespaces/$NS/localqueues/default/pendingworkloads
three_waiting() { [ "$(names $CQP "$OP")" = "w1:0:0 w2:1:1 w3:2:2" ]; }
check "operator: the ClusterQueue's pending Jobs in order, positions from 0 (w1:0:0 w2:1:1 w3:2:2)" \
	poll "three pending in $NS" three_waiting
item1=$(body "$CQP?limit=1&offset=1" "$OP")
check "limit=1&offset=1: one item, w2 at position 1, total 3" python3 -c 'import json, sys
o = json.loads(sys.argv[1])
assert o["kind"] == "PendingWorkloadsSummary" and o["total"] == 3, o
assert [i["metadata"]["name"] for i in o["items"]] == ["w2"], o
i = o["items"][0]
assert i["positionInClusterQueue"] == 1 and i["localQueueName"] == "default", i
assert i["reason"] and i["message"], i' "$item1"
check "the total equals the ClusterQueue's status.pendingWorkloads" \
	[ "$(k get clusterqueue $NS -o 'jsonpath={.status.pendingWorkloads}')" = 3 ]
check "tenant: its LocalQueue's pending Jobs, 200" [ "$(names $LQP "$TEN")" = "w1:0:0 w2:1:1 w3:2:2" ]
check "tenant: the ClusterQueue view is 403" [ "$(code $CQP "$TEN")" = 403 ]
check "tenant: another namespace's LocalQueue is 403" \
	[ "$(code $VIS/namespaces/$OTHER/localqueues/default/pendingworkloads "$TEN")" = 403 ]
check "no token: 401" [ "$(code $LQP)" = 401 ]
bad=$(get "$LQP?limit=ten" "$TEN")
check "limit=ten: 400, a Status naming limit \"ten\"" sh -c 'printf "%s" "$1" | tail -n1 | grep -qx 400 &&
	printf "%s" "$1" | grep -q "\"reason\":\"BadRequest\"" && printf "%s" "$1" | grep -q "limit \\\\\"ten\\\\\""' _ "$bad"
echo "# $(printf '%s' "$bad" | head -n1)" >&2
check "an unknown LocalQueue: 404" [ "$(code $VIS/namespaces/$NS/localqueues/nope/pendingworkloads "$TEN")" = 404 ]

# the coarse status: no position in it
check "w2's gpuq.dev/status is coarse (waiting for quota, no position)" sh -c \
	"$(declare -f k job_field job_status); s=\$(job_status $NS w2); echo \"# w2: \$s\" >&2; case \$s in *'waiting for quota'*) ! printf %s \"\$s\" | grep -q position ;; *) false ;; esac"

# gpuq status and the plugin read the same positions (the tenant's token)
st=$("$GPUQ" status --kubeconfig "$KUBECONFIG" -n $NS --gpuq-server "$BASE" --gpuq-ca "$CA" --token "$TEN" 2>&1)
printf '%s\n' "$st" | sed 's/^/# /' >&2
check "gpuq status --gpuq-server: w3 at CQ position 2, LQ position 2, in $NS/default" \
	sh -c 'printf "%s\n" "$1" | grep -Eq "^$2/default +2 +2  $2/w3 "' _ "$st" "$NS"
BIN=$E2E_RUN/vis-bin
mkdir -p "$BIN"
install -m 0755 "$(dirname "$0")/../scripts/kubectl-gpuq" "$BIN/kubectl-gpuq"
ln -sf "$KUBECTL" "$BIN/kubectl"
pl=$(PATH="$BIN:$PATH" GPUQ=$GPUQ GPUQ_SERVER=$BASE GPUQ_CA=$CA kubectl gpuq status --kubeconfig "$KUBECONFIG" -A --token "$OP" 2>&1)
printf '%s\n' "$pl" | sed 's/^/# /' >&2
check "kubectl gpuq status -A (GPUQ_SERVER): both ClusterQueues' pending Jobs" \
	sh -c 'printf "%s\n" "$1" | grep -Eq "^$2 +0 +0  $2/w1 " && printf "%s\n" "$1" | grep -Eq "^$3 +0 +0  $3/o2 "' _ "$pl" "$NS" "$OTHER"

# run1 finishes: w1 is released, w2 and w3 move up; w3's status is not
# rewritten for its position (its resourceVersion stays), only, when the
# prediction pass ran meanwhile, for a new predicted start ("; expected to
# start by about ...": the first few of a LocalQueue within the hour say it)
rv3=$(job_field $NS w3 '{.metadata.resourceVersion}')
st3=$(job_status $NS w3)
k -n $NS delete job run1 --wait=false >/dev/null
moved() { [ "$(names $CQP "$OP")" = "w2:0:0 w3:1:1" ]; }
check "run1 gone: w1 released, w2 and w3 move up (w2:0:0 w3:1:1)" poll "w2, w3 moved up" moved
check "w1 is released" poll "w1 running" sh -c "$(declare -f k job_field job_running); job_running $NS w1"
not_for_position() {
	now3=$(job_status $NS w3)
	[ "$(job_field $NS w3 '{.metadata.resourceVersion}')" = "$rv3" ] ||
		{ [ "$now3" != "$st3" ] && [ "${now3%%; expected to start*}" = "${st3%%; expected to start*}" ]; }
}
check "w3's gpuq.dev/status was not rewritten as it moved up (resourceVersion $rv3 kept, or only its predicted start new)" \
	not_for_position
echo "# w3 before: $st3; after: $(job_status $NS w3)" >&2
k delete ns $NS $OTHER --wait=false >/dev/null 2>&1 || true
