#!/usr/bin/env bash
# e2e/smoke.sh: prove the e2e control plane works end to end, without gpuq.
#
#   1. e2e/build.sh (no-op when the cache is warm)
#   2. e2e/cluster.sh up in a fresh temporary dir
#   3. checks, each printing `ok - ...` or `not ok - ...`:
#      - the apiserver reports the pinned version
#      - a batch/v1 Job asking for nvidia.com/gpu: 1 and tolerating the H100 taint
#        completes (kwok plays its pod: starts at once, runs 2 s) on an h100 node
#      - a Pod asking for nvidia.com/gpu without the toleration stays Unschedulable
#      - nvidia.com/mig-1g.5gb lands on a100-mig-0, nvidia.com/gpu.shared on l4-0
#   4. e2e/cluster.sh down, and the temporary dir is removed (kept, and its path
#      printed, when a check failed; GPUQ_E2E_KEEP=1 keeps it always)
# Ends with `N passed, N failed`; exits 1 if anything failed.
#
# Environment: as build.sh and cluster.sh; GPUQ_E2E_WAIT (seconds per check's
# wait, default 60).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
WAIT=${GPUQ_E2E_WAIT:-60}
PASSED=0 FAILED=0
ok() { echo "ok - $*"; PASSED=$((PASSED + 1)); }
notok() { echo "not ok - $*"; FAILED=$((FAILED + 1)); }
SUMMARISED=0
summary() { echo "$PASSED passed, $FAILED failed"; SUMMARISED=1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# --- build -------------------------------------------------------------------
t=$(now)
if "$HERE/build.sh"; then ok "build ($(since "$t")s)"; else notok "build"; summary; exit 1; fi

# --- cluster -----------------------------------------------------------------
DIR=$(mktemp -d "${TMPDIR:-/tmp}/gpuq-e2e-smoke.XXXXXX")
cleanup() {
	rc=$?
	# A command that failed under set -e still ends with a summary line.
	[ "$SUMMARISED" = 1 ] || { notok "smoke.sh stopped early (exit $rc)"; summary; }
	"$HERE/cluster.sh" down "$DIR" >/dev/null || echo "smoke.sh: cluster.sh down failed" >&2
	if [ "$FAILED" -gt 0 ] || [ "${GPUQ_E2E_KEEP:-}" = 1 ]; then
		echo "smoke.sh: cluster state and logs kept in $DIR"
	else
		rm -rf "$DIR"
	fi
	[ "$FAILED" -eq 0 ] || exit 1
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t=$(now)
if "$HERE/cluster.sh" up "$DIR"; then
	ok "cluster up ($(since "$t")s)"
else
	notok "cluster up"; summary; exit 1
fi
set -a # export every variable DIR/env (written by cluster.sh up) sets
# shellcheck source=/dev/null
. "$DIR/env"
set +a
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }

# poll DESC CMD...: run CMD every 0.2 s until it succeeds or $WAIT s pass.
poll() {
	desc=$1; shift
	deadline=$(( $(date +%s) + WAIT ))
	until "$@" >/dev/null 2>&1; do
		if [ "$(date +%s)" -ge "$deadline" ]; then
			echo "smoke.sh: timed out after ${WAIT}s waiting for $desc" >&2
			return 1
		fi
		sleep 0.2
	done
}

# --- checks --------------------------------------------------------------------
server=$(k version -o json | sed -n 's/.*"gitVersion": "\([^"]*\)".*/\1/p' | tail -n 1)
if [ "$server" = "$K8S_VERSION" ]; then ok "apiserver reports $server"; else
	notok "apiserver reports '$server', want '$K8S_VERSION'"; fi

k create namespace smoke >/dev/null
# Pods are refused until the namespace's default ServiceAccount exists.
poll "ServiceAccount smoke/default" k -n smoke get serviceaccount default ||
	notok "ServiceAccount smoke/default"

t=$(now)
k -n smoke apply -f - >/dev/null <<'EOF'
apiVersion: batch/v1
kind: Job
metadata:
  name: gpu-one
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        # kwok's pod stages wait delay..jitter-delay (defaults 1 s..5 s), and
        # a jitter-delay at or below delay wins: delay 30s alone runs 5 s.
        # So set both, for a pod that starts at once and runs exactly 2 s.
        pod-create.stage.kwok.x-k8s.io/delay: 0s
        pod-create.stage.kwok.x-k8s.io/jitter-delay: 0s
        pod-ready.stage.kwok.x-k8s.io/delay: 0s
        pod-ready.stage.kwok.x-k8s.io/jitter-delay: 0s
        pod-complete.stage.kwok.x-k8s.io/delay: 2s
        pod-complete.stage.kwok.x-k8s.io/jitter-delay: 2s
    spec:
      restartPolicy: Never
      tolerations:
      - key: nvidia.com/gpu
        operator: Exists
        effect: NoSchedule
      containers:
      - name: train
        image: registry.invalid/train:1
        resources:
          limits:
            nvidia.com/gpu: 1
EOF
job_cond() {
	[ "$(k -n smoke get job gpu-one -o jsonpath="{.status.conditions[?(@.type==\"$1\")].status}")" = True ]
}
job_done() { job_cond Complete || job_cond Failed; }
if poll "Job smoke/gpu-one to finish" job_done && job_cond Complete; then
	ok "Job gpu-one Complete ($(since "$t")s after create)"
else
	notok "Job gpu-one Complete: $(k -n smoke get job gpu-one -o jsonpath='{.status}')"
fi
node=$(k -n smoke get pods -l job-name=gpu-one -o jsonpath='{.items[*].spec.nodeName}')
case $node in
h100-[0-9]*) ok "Job gpu-one's pod ran on $node" ;;
*) notok "Job gpu-one's pod ran on '$node', want h100-*" ;;
esac

# A bare Pod asking for resource $2 (quantity 1), with tolerations yaml $3.
pod() {
	k -n smoke apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
spec:
  tolerations: $3
  containers:
  - name: c
    image: registry.invalid/c:1
    resources:
      limits:
        $2: 1
EOF
}
bound_to() { [ "$(k -n smoke get pod "$1" -o jsonpath='{.spec.nodeName}')" = "$2" ]; }
unschedulable() {
	[ "$(k -n smoke get pod "$1" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}')" = Unschedulable ]
}

pod no-toleration nvidia.com/gpu "[]"
if poll "pod no-toleration Unschedulable" unschedulable no-toleration; then
	ok "nvidia.com/gpu without the H100 toleration is Unschedulable"
else
	notok "pod no-toleration: $(k -n smoke get pod no-toleration -o jsonpath='{.spec.nodeName} {.status.conditions}')"
fi
pod mig nvidia.com/mig-1g.5gb "[]"
if poll "pod mig on a100-mig-0" bound_to mig a100-mig-0; then ok "nvidia.com/mig-1g.5gb bound to a100-mig-0"; else
	notok "pod mig: node '$(k -n smoke get pod mig -o jsonpath='{.spec.nodeName}')'"; fi
pod shared nvidia.com/gpu.shared "[]"
if poll "pod shared on l4-0" bound_to shared l4-0; then ok "nvidia.com/gpu.shared bound to l4-0"; else
	notok "pod shared: node '$(k -n smoke get pod shared -o jsonpath='{.spec.nodeName}')'"; fi

# --- teardown (cleanup on EXIT) ---------------------------------------------------
t=$(now)
k delete namespace smoke --wait=false >/dev/null 2>&1 || true
if "$HERE/cluster.sh" down "$DIR" >/dev/null; then ok "cluster down ($(since "$t")s)"; else notok "cluster down"; fi
summary
[ "$FAILED" -eq 0 ]
