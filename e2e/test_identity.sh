#!/usr/bin/env bash
# Who gpuq is, run out of cluster (gpuq serve --kubeconfig F):
#  - without --controller-user it learns its own username from the apiserver
#    (SelfSubjectReview), so its webhook lets its own release patches
#    through under any identity: here a second ServiceAccount, gpuq-alt,
#    with gpuq's roles (the default, gpuq-system:gpuq, made its own webhook
#    refuse them and no Job was ever released);
#  - a --lease-namespace that does not exist is refused at start, naming it
#    (gpuq used to start, warn, never lead and answer ready).
. "$(dirname "$0")/lib.sh"
plan 5
NS=e2e-id
ALT=gpuq-alt

gpu_queue $NS 2
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ServiceAccount
metadata: {name: $ALT, namespace: gpuq-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $ALT}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gpuq}
subjects: [{kind: ServiceAccount, name: $ALT, namespace: gpuq-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: $ALT-leader-election, namespace: gpuq-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: gpuq-leader-election}
subjects: [{kind: ServiceAccount, name: $ALT, namespace: gpuq-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: $ALT-usage-checkpoint, namespace: gpuq-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: gpuq-usage-checkpoint}
subjects: [{kind: ServiceAccount, name: $ALT, namespace: gpuq-system}]
YAML
poll "ServiceAccount gpuq-system/$ALT" k -n gpuq-system get serviceaccount $ALT
ALT_KUBECONFIG=$E2E_RUN/gpuq-alt.kubeconfig
token=$(k -n gpuq-system create token $ALT --duration=1h)
sed "s|token: \".*\"|token: \"$token\"|" "$GPUQ_KUBECONFIG" >"$ALT_KUBECONFIG"
chmod 600 "$ALT_KUBECONFIG"

GPUQ_KUBECONFIG=$ALT_KUBECONFIG restart_main
check "gpuq learned its own user from the apiserver: system:serviceaccount:gpuq-system:$ALT" \
	grep -q "own user, as the apiserver says (SelfSubjectReview): system:serviceaccount:gpuq-system:$ALT\$" \
	"$E2E_RUN/gpuq-main.log"
export -f k job_field job_running
gpu_job $NS under-alt 1 "" 2s
check "under $ALT, with no --controller-user, its own webhook lets its release through" \
	poll "under-alt released" bash -c "job_running $NS under-alt"
check "... and the Job completes" poll "under-alt complete" \
	sh -c "$(declare -f k job_field job_complete); job_complete $NS under-alt"

# a Lease namespace that does not exist: refused at start (timeout: the old
# gpuq kept running, never leading)
out=$(timeout 30 "$GPUQ" serve --listen "127.0.0.1:$((GPUQ_PORT + 3))" \
	--cert-dir "${GPUQ_CERT_DIR:-$E2E_RUN/certs}" --state-dir "$E2E_RUN/state-no-lease-ns" \
	--kubeconfig "$GPUQ_KUBECONFIG" --lease-namespace e2e-no-such-ns --identity no-lease-ns 2>&1)
rc=$?
echo "# $SCENARIO: $out" | tail -n 1 >&2
check "a --lease-namespace that does not exist is refused at start (exit $rc: 1)" [ "$rc" = 1 ]
check "... naming it" sh -c "printf '%s' \"\$1\" | grep -q 'lease-namespace e2e-no-such-ns: create it (gpuq does not) or name another: namespace \"e2e-no-such-ns\" does not exist'" _ "$out"

restart_main # gpuq's own ServiceAccount again, for the scenarios after this one
