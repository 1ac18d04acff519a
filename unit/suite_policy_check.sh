#!/bin/sh
# suite_policy_check: `gpuq policy check` (flags, exit codes, what it prints
# for a directory, for files, for workloads with and without
# --skip-workloads, for a refused field) and scripts/kueue_examples.sh over a
# tree shaped like Kueue's site/static/examples (gpuq's own small manifests,
# not Kueue's). Prints TAP.
# Env: GPUQ_BIN (binary under test, default build/release/gpuq).
set -u
GPUQ_BIN=${GPUQ_BIN:-build/release/gpuq}
case $GPUQ_BIN in /*) ;; *) GPUQ_BIN=$(pwd)/$GPUQ_BIN ;; esac
T=$(mktemp -d /tmp/gpuq-suite-policy.XXXXXX)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/tap.sh"

# expect WHAT RC OUT ERR -- ARGS...: gpuq ARGS exits RC, its stdout holds the
# line OUT and its stderr the text ERR ("" = not checked).
expect() {
	what=$1 want_rc=$2 want_out=$3 want_err=$4
	shift 5
	"$GPUQ_BIN" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" -ne "$want_rc" ]; then
		not_ok "$what" "exit $rc, want $want_rc; stdout: $(cat "$T/out"); stderr: $(cat "$T/err")"
	elif [ -n "$want_out" ] && ! grep -qxF "$want_out" "$T/out"; then
		not_ok "$what" "stdout lacks the line: $want_out; got: $(cat "$T/out")"
	elif [ -n "$want_err" ] && ! grep -qF "$want_err" "$T/err"; then
		not_ok "$what" "stderr lacks: $want_err; got: $(cat "$T/err")"
	else
		ok "$what"
	fi
}

FLAVOR='apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: f}'
CQ='apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]'
LQ='apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: team, name: lq}
spec: {clusterQueue: q}'
JOB='apiVersion: batch/v1
kind: Job
metadata: {generateName: train-, namespace: team}
spec:
  template:
    spec:
      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]'
printf '%s\n---\n%s\n---\n%s\n---\n%s\n' "$FLAVOR" "$CQ" "$LQ" "$JOB" >"$T/setup.yaml"
printf '%s\n' "$JOB" >"$T/job.yaml"
printf '%s\n  admissionChecks: [prov]\n' "$(printf '%s\n' "$CQ" | sed '/resourceGroups/,$d')" \
	>"$T/checks.yaml"
printf '%s\n---\n%s\n  admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}\n---\n%s\n' \
	"$FLAVOR" "$CQ" "$LQ" >"$T/afs.yaml"

# --- flags and exit codes -----------------------------------------------------
expect "policy check --help: exit 0" 0 "" "" -- policy check --help
if grep -q -- "--skip-workloads" "$T/out" && grep -q "Exit status" "$T/out"; then
	ok "--help names --skip-workloads and the exit status"
else
	not_ok "--help names --skip-workloads and the exit status" "$(cat "$T/out")"
fi
expect "policy --help: exit 0" 0 "" "" -- policy --help
expect "no PATH: usage, exit 2" 2 "" "usage: gpuq policy check" -- policy check
expect "unknown flag: exit 2" 2 "" 'gpuq policy check: unknown flag "--bogus"' -- \
	policy check --bogus "$T/setup.yaml"
expect "unknown subcommand: exit 2" 2 "" 'gpuq policy: unknown subcommand "lint"' -- \
	policy lint "$T/setup.yaml"
expect "a directory among files: exit 2" 2 "" "is a directory: give one directory, or files" -- \
	policy check "$T" "$T/setup.yaml"
expect "a missing file: refused, exit 1" 1 "" "$T/none.yaml: cannot open" -- \
	policy check "$T/none.yaml"

# --- what it loads ------------------------------------------------------------
EX=$(cd "$(dirname "$0")/.." && pwd)/examples/policy
expect "examples/policy as a directory" 0 \
	"loaded: 24 policy objects: Namespace 3, PriorityClass 3, ResourceFlavor 3, Cohort 1, ClusterQueue 2, LocalQueue 4, LimitRange 3, ResourceQuota 3, ResourceClaimTemplate 2" \
	"" -- policy check "$EX"
expect "examples/policy as files: the same" 0 \
	"loaded: 24 policy objects: Namespace 3, PriorityClass 3, ResourceFlavor 3, Cohort 1, ClusterQueue 2, LocalQueue 4, LimitRange 3, ResourceQuota 3, ResourceClaimTemplate 2" \
	"" -- policy check "$EX"/00-namespaces.yaml "$EX"/10-priorityclasses.yaml \
	"$EX"/20-flavors.yaml "$EX"/30-queues.yaml "$EX"/40-limits.yaml "$EX"/50-claims.yaml
expect "files are checked together: a LocalQueue without its ClusterQueue" 1 "" \
	"$EX/30-queues.yaml: document 2: ClusterQueue \"training\": spec.resourceGroups[0].flavors[0].name: ResourceFlavor \"h100-80gb\" not found" \
	-- policy check "$EX"/30-queues.yaml
expect "a Job is refused without --skip-workloads, as --policy-dir refuses it" 1 "" \
	"gpuq policy check: $T/setup.yaml: document 4: kind \"Job\" (apiVersion \"batch/v1\") is not a policy object" \
	-- policy check "$T/setup.yaml"
expect "--skip-workloads: the policy loads" 0 \
	"loaded: 3 policy objects: ResourceFlavor 1, ClusterQueue 1, LocalQueue 1" "" -- \
	policy check --skip-workloads "$T/setup.yaml"
if grep -qxF "skipped: $T/setup.yaml: document 4: Job (batch/v1): not a policy object" "$T/out"; then
	ok "--skip-workloads: the Job is listed with its file and document"
else
	not_ok "--skip-workloads: the Job is listed with its file and document" "$(cat "$T/out")"
fi
expect "a file of Jobs only: 0 policy objects" 0 "loaded: 0 policy objects" "" -- \
	policy check --skip-workloads "$T/job.yaml"
expect "an unsupported field: refused naming file, document, object and field" 1 "" \
	"gpuq policy check: $T/checks.yaml: document 1: ClusterQueue \"q\": spec.admissionChecks: not supported by gpuq" \
	-- policy check "$T/checks.yaml"
# issue 32: every object that fails is reported and left out, the rest loads
printf '%s\n---\n%s\n---\n%s\n---\n%s\n' "$FLAVOR" "$CQ" "$LQ" \
	"$(printf '%s\n' "$LQ" | sed 's/name: lq/name: orphan/; s/clusterQueue: q/clusterQueue: gone/')" \
	>"$T/orphan.yaml"
expect "a LocalQueue naming a deleted ClusterQueue: refused, naming it" 1 \
	"left out: LocalQueue team/orphan (ClusterQueueDoesNotExist)" \
	"gpuq policy check: $T/orphan.yaml: document 4: LocalQueue \"team/orphan\": spec.clusterQueue: ClusterQueue \"gone\" not found" \
	-- policy check "$T/orphan.yaml"
if grep -qxF "loaded: 3 policy objects: ResourceFlavor 1, ClusterQueue 1, LocalQueue 1" "$T/out"; then
	ok "a LocalQueue left out: the rest loads, as the controller would apply it"
else
	not_ok "a LocalQueue left out: the rest loads, as the controller would apply it" "$(cat "$T/out")"
fi
expect "admissionScope UsageBasedAdmissionFairSharing loads" 0 \
	"loaded: 3 policy objects: ResourceFlavor 1, ClusterQueue 1, LocalQueue 1" "" -- \
	policy check "$T/afs.yaml"

# --- scripts/kueue_examples.sh over a tree shaped like Kueue's examples --------
K=$T/examples
mkdir -p "$K/admin" "$K/admission-fs" "$K/getting-started" "$K/dra" "$K/jobs"
cp "$T/setup.yaml" "$K/getting-started/setup.yaml"
cp "$T/job.yaml" "$K/getting-started/job.yaml"
cp "$T/checks.yaml" "$K/admin/checks.yaml"
cp "$T/afs.yaml" "$K/admission-fs/afs.yaml"
printf 'apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {namespace: team, name: gpu}\nspec:\n  spec:\n    devices:\n      requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]\n---\n%s\n' \
	"$JOB" >"$K/dra/claim-job.yaml"
cp "$T/checks.yaml" "$K/jobs/not-read.yaml" # a folder the script does not read
cat >"$T/want" <<EOF
admin/checks.yaml: refused: document 1: ClusterQueue "q": spec.admissionChecks: not supported by gpuq
admission-fs/afs.yaml: loaded: 3 policy objects: ResourceFlavor 1, ClusterQueue 1, LocalQueue 1
getting-started/job.yaml: not a policy object (Job)
getting-started/setup.yaml: loaded: 3 policy objects: ResourceFlavor 1, ClusterQueue 1, LocalQueue 1; skipped: Job (not a policy object)
dra/claim-job.yaml: loaded: 1 policy object: ResourceClaimTemplate 1; skipped: Job (not a policy object)
EOF
SCRIPT=$(cd "$(dirname "$0")/.." && pwd)/scripts/kueue_examples.sh
GPUQ_BIN=$GPUQ_BIN sh "$SCRIPT" "$K" >"$T/got" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && cmp -s "$T/want" "$T/got"; then
	ok "kueue_examples.sh: one line per file of the four folders, exit 0"
else
	not_ok "kueue_examples.sh: one line per file of the four folders, exit 0" \
		"exit $rc; $(diff "$T/want" "$T/got")"
fi
rm -r "$K/dra"
GPUQ_BIN=$GPUQ_BIN sh "$SCRIPT" "$K" >"$T/got" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -qxF "dra/: missing (is DIR Kueue's site/static/examples?)" "$T/got"; then
	ok "kueue_examples.sh: a missing folder is said and exits 1"
else
	not_ok "kueue_examples.sh: a missing folder is said and exits 1" "exit $rc; $(cat "$T/got")"
fi
GPUQ_BIN=$GPUQ_BIN sh "$SCRIPT" >"$T/got" 2>&1
rc=$?
if [ "$rc" -eq 2 ] && grep -q "^usage: scripts/kueue_examples.sh DIR" "$T/got"; then
	ok "kueue_examples.sh without DIR: usage, exit 2"
else
	not_ok "kueue_examples.sh without DIR: usage, exit 2" "exit $rc; $(cat "$T/got")"
fi

echo "$((n - failed)) passed, $failed failed"
tap_end # its plan (1..N): unit/run_tests.sh fails a suite that states none
