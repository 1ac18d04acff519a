#!/usr/bin/env bash
# The kubectl plugin (scripts/kubectl-gpuq) found by the built kubectl on
# the PATH: `kubectl gpuq status | explain | report usage` with kubectl's
# --kubeconfig, --context, -n/--namespace and -A, and KUBECONFIG naming two
# files (kubectl merges them; the plugin hands gpuq kubectl's own view).
. "$(dirname "$0")/lib.sh"
plan 11
A=e2e-pl-a B=e2e-pl-b
BIN=$E2E_RUN/plugin-bin
mkdir -p "$BIN"
install -m 0755 "$(dirname "$0")/../scripts/kubectl-gpuq" "$BIN/kubectl-gpuq"
ln -sf "$KUBECTL" "$BIN/kubectl"
export PATH="$BIN:$PATH" GPUQ # the plugin runs the gpuq under test
# the built kubectl, by its name on the PATH, with no KUBECONFIG and no
# ~/.kube/config: only the flags given say which cluster
kc() { env -u KUBECONFIG HOME="$E2E_RUN/plugin-home" kubectl "$@"; }
mkdir -p "$E2E_RUN/plugin-home"

gpu_queue $A 4
gpu_queue $B 4
gpu_job $A run1 4 "" 40s # wait1 pending and run1 admitted through the checks below
poll "run1 released" job_running $A run1
gpu_job $A wait1 4 "" 3s
gpu_job $B other 1 "" 3s
poll "wait1 has a status" job_status_has $A wait1 "waiting for quota"

plist=$(kc plugin list 2>&1)
check "kubectl plugin list finds kubectl-gpuq on the PATH" sh -c 'printf %s "$1" | grep -q "$2/kubectl-gpuq"' _ "$plist" "$BIN"

# a kubeconfig of two contexts: the current one points nowhere, "admin-a"
# is the admin with namespace A, "admin" the admin without a namespace
KC=$E2E_RUN/plugin.kubeconfig
cp "$KUBECONFIG" "$KC"
user=$("$KUBECTL" --kubeconfig "$KC" config view -o 'jsonpath={.contexts[0].context.user}')
cluster=$("$KUBECTL" --kubeconfig "$KC" config view -o 'jsonpath={.contexts[0].context.cluster}')
"$KUBECTL" --kubeconfig "$KC" config set-cluster nowhere --server=https://127.0.0.1:1 >/dev/null
"$KUBECTL" --kubeconfig "$KC" config set-context broken --cluster=nowhere --user="$user" >/dev/null
"$KUBECTL" --kubeconfig "$KC" config set-context admin --cluster="$cluster" --user="$user" >/dev/null
"$KUBECTL" --kubeconfig "$KC" config set-context admin-a --cluster="$cluster" --user="$user" --namespace="$A" >/dev/null
"$KUBECTL" --kubeconfig "$KC" config use-context broken >/dev/null

st=$(kc gpuq status --kubeconfig "$KC" --context admin -n "$A" 2>&1)
echo "$st" | sed 's/^/# /' >&2
check "status --kubeconfig F --context C -n NS: the ClusterQueues and NS's Jobs" \
	sh -c 'printf %s "$1" | grep -q "^CLUSTERQUEUE" && printf %s "$1" | grep -q "^$2/run1 .*Admitted" && printf %s "$1" | grep -q "^$2/wait1 .*Pending" && ! printf %s "$1" | grep -q "^$3/"' _ "$st" "$A" "$B"
out=$(kc gpuq status --kubeconfig "$KC" -n "$A" 2>&1)
check "--context is what picks the cluster: the current context (nowhere) fails" \
	sh -c '! printf %s "$1" | grep -q "^$2/run1"' _ "$out" "$A"
out=$(kc gpuq status --kubeconfig="$KC" --context=admin-a 2>&1)
check "without -n, the context's namespace (--flag=value forms)" \
	sh -c 'printf %s "$1" | grep -q "^$2/run1" && ! printf %s "$1" | grep -q "^$3/"' _ "$out" "$A" "$B"
out=$(kc gpuq status --kubeconfig "$KC" --context admin --all-namespaces 2>&1)
check "-A: every namespace's Jobs" \
	sh -c 'printf %s "$1" | grep -q "^$2/run1" && printf %s "$1" | grep -q "^$3/other"' _ "$out" "$A" "$B"
out=$(kc gpuq status --kubeconfig "$KC" --context admin --namespace "$B" 2>&1)
check "--namespace NS" sh -c 'printf %s "$1" | grep -q "^$2/other" && ! printf %s "$1" | grep -q "^$3/"' _ "$out" "$B" "$A"

# KUBECONFIG naming two files: the user and cluster in one, the context in
# the other (gpuq alone reads one file; the plugin goes through kubectl)
"$KUBECTL" --kubeconfig "$KC" config view --raw -o json | python3 -c '
import json, sys
c = json.load(sys.stdin)
ctx = {"apiVersion": "v1", "kind": "Config", "contexts": [x for x in c["contexts"] if x["name"] == "admin-a"],
       "current-context": "admin-a", "clusters": [], "users": []}
c["contexts"] = []; c.pop("current-context", None)
json.dump(c, open(sys.argv[1], "w")); json.dump(ctx, open(sys.argv[2], "w"))' "$E2E_RUN/kc-creds.json" "$E2E_RUN/kc-ctx.json"
out=$(HOME="$E2E_RUN/plugin-home" KUBECONFIG="$E2E_RUN/kc-ctx.json:$E2E_RUN/kc-creds.json" kubectl gpuq status 2>&1)
check "KUBECONFIG of two files (context in one, credentials in the other)" \
	sh -c 'printf %s "$1" | grep -q "^$2/wait1"' _ "$out" "$A"

ex=$(kc gpuq explain wait1 --kubeconfig "$KC" --context admin -n "$A" 2>&1)
echo "$ex" | sed 's/^/# /' >&2
check "explain JOB: its state and where it stands" sh -c 'printf %s "$1" | grep -q "^$2/wait1 .*Pending .*waiting for quota"' _ "$ex" "$A"
poll "wait1 released" job_running $A wait1
ex=$(kc gpuq explain run1 --kubeconfig "$KC" --context admin-a 2>&1)
check "explain JOB: gpuq's Events on it (Admitted)" sh -c 'printf %s "$1" | grep -q "Admitted"' _ "$ex"

# report usage through the plugin equals gpuq's own against the same cluster
restart_main --usage-checkpoint-interval 1s
poll "run1 complete" job_complete $A run1
plugin_eq_direct() {
	kc gpuq report usage --kubeconfig "$KC" --context admin -n "$A" --format json >"$E2E_RUN/pl-rep.json" 2>/dev/null &&
		"$GPUQ" report usage --kubeconfig "$KUBECONFIG" -n "$A" --format json >"$E2E_RUN/pl-direct.json" 2>/dev/null &&
		python3 -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["rows"] == b["rows"] and a["rows"], (a, b)
assert all(r["namespace"] == sys.argv[3] for r in a["rows"])' "$E2E_RUN/pl-rep.json" "$E2E_RUN/pl-direct.json" "$A"
}
check "report usage -n NS through the plugin: the rows gpuq reports for that namespace" poll "plugin report" plugin_eq_direct
out=$(kc --kubeconfig "$KC" gpuq status 2>&1)
check "kubectl itself refuses flags before the plugin's name (documented): $(printf %s "$out" | head -1)" \
	sh -c 'printf %s "$1" | grep -q "flags cannot be placed before plugin name"' _ "$out"
restart_main
