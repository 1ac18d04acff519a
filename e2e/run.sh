#!/usr/bin/env bash
# e2e/run.sh: gpuq end to end on a real control plane.
#
#   1. e2e/up.sh: the pinned control plane (built once into a cache, by
#      version), deploy/'s namespace, CRDs and RBAC applied as they ship,
#      gpuq running as replica "main" with its ServiceAccount's token only
#      (every scenario proves deploy/'s RBAC is enough), deploy/'s webhook
#      configurations pointed at it
#   2. the scenarios e2e/test_*.sh (or the ones named as arguments), in the
#      order below, each stating its plan first (`plan N` in lib.sh: `1..N`)
#      and printing `ok - ...` / `not ok - ...` / `ok - ... # SKIP why`; a
#      scenario that exits non-zero, states no plan or whose lines do not add
#      up to its plan (it died early) counts one more failure; the run
#      states its own plan (`1..N`, every line it counted) before its count
#   3. teardown; the run's directory (the logs of every component and every
#      gpuq replica) is kept when something failed, or with GPUQ_E2E_KEEP=1
# Ends with `N passed, N failed, N skipped` (a skip is not a pass); exit 1
# when anything failed.
#
# Environment: GPUQ_BIN (default bin/gpuq), GPUQ_E2E_WAIT (seconds a check
# waits for its condition, default 60), GPUQ_E2E_DEPLOY, and build.sh's and
# cluster.sh's.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
PASSED=0 FAILED=0 SKIPPED=0

E2E_RUN=$(mktemp -d "${TMPDIR:-/tmp}/gpuq-e2e.XXXXXX")
# a ThreadSanitizer build of gpuq: its suppressions (no effect on others)
export TSAN_OPTIONS="suppressions=$HERE/../unit/tsan.supp ${TSAN_OPTIONS:-}"
prebuild=""
cleanup() {
	[ -z "$prebuild" ] || kill "$prebuild" 2>/dev/null || true
	"$HERE/up.sh" down "$E2E_RUN" >/dev/null 2>&1 || true
	pkill -9 -f "cert-dir $E2E_RUN/" 2>/dev/null || true
	if [ "$FAILED" -gt 0 ] || [ "${GPUQ_E2E_KEEP:-}" = 1 ]; then
		echo "# e2e: logs kept in $E2E_RUN" >&2
	else
		rm -rf "$E2E_RUN"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if "$HERE/up.sh" "$E2E_RUN" >&2; then
	echo "ok - setup: control plane up, deploy/ applied, gpuq synced and ready"
	PASSED=1
else
	echo "not ok - setup: control plane or gpuq did not come up"
	tail -20 "$E2E_RUN"/gpuq-main.log >&2 2>/dev/null || true
	FAILED=1
	echo "1..1"
	echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
	exit 1
fi

# Scenarios in this order (each leaves gpuq running on $GPUQ_PORT as
# replica "main"); any other e2e/test_*.sh runs after them.
ORDER="queueing preemption restart failover"
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
	for n in $ORDER; do tests+=("$HERE/test_$n.sh"); done
	for t in "$HERE"/test_*.sh; do
		case " $ORDER " in *" $(basename "$t" .sh | sed 's/^test_//') "*) ;; *) tests+=("$t") ;; esac
	done
fi
# The upstream controllers a scenario starts (e2e/upstream.sh start) are
# built now, in the background at the lowest CPU priority, while the
# scenarios before the first one that starts them run (they mostly wait on
# the control plane): on a cold cache that build no longer holds the run up
# for its whole length. A scenario's start finds them built, or waits on the
# build's lock and then finds them; a build that failed is tried again by
# the start and fails there. Only when a scenario of this run starts one;
# bounded like a scenario, so a hung build cannot hold the run.
for i in "${!tests[@]}"; do
	case "${tests[i]}" in /*) ;; *) [ -f "${tests[i]}" ] || tests[i]=$HERE/${tests[i]} ;; esac
done
if grep -q 'upstream\.sh' "${tests[@]}" 2>/dev/null; then
	nice -n 19 timeout -k 10 "${GPUQ_E2E_SCENARIO_TIMEOUT:-3600}" "$HERE/upstream.sh" build \
		>"$E2E_RUN/upstream-build.log" 2>&1 &
	prebuild=$!
fi
for t in "${tests[@]}"; do
	name=$(basename "$t" .sh)
	t0=$(date +%s)
	rc=0
	# a scenario that hangs is killed and fails (exit 124), never holds CI;
	# an hour: the first scenario of a kind may build its upstream controller
	# (e2e/upstream.sh start), up to half an hour on a cold 2-core machine
	out=$(set -a; . "$E2E_RUN/gpuq.env"; set +a; SCENARIO=$name \
		timeout -k 10 "${GPUQ_E2E_SCENARIO_TIMEOUT:-3600}" bash "$t" 2>"$E2E_RUN/$name.err") || rc=$?
	printf '%s\n' "$out" | grep -v '^1\.\.[0-9]' || true
	echo "# $name: $(( $(date +%s) - t0 )) s" >&2
	planned=$(printf '%s\n' "$out" | sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' | head -n 1)
	s=$(printf '%s\n' "$out" | grep -c '^ok .*# SKIP' || true)
	p=$(( $(printf '%s\n' "$out" | grep -c '^ok ' || true) - s ))
	f=$(printf '%s\n' "$out" | grep -c '^not ok ' || true)
	ran=$((p + f + s))
	if [ "$rc" -ne 0 ]; then
		echo "not ok - $name: the scenario exited $rc after $ran checks"; f=$((f + 1))
	fi
	if [ -z "$planned" ]; then
		echo "not ok - $name: states no plan (plan N, e2e/lib.sh)"; f=$((f + 1))
	elif [ "$ran" -ne "$planned" ]; then
		echo "not ok - $name: planned $planned checks, ran $ran"; f=$((f + 1))
	fi
	PASSED=$((PASSED + p)); FAILED=$((FAILED + f)); SKIPPED=$((SKIPPED + s))
	[ "$f" -eq 0 ] || grep -v '^Warning: ' "$E2E_RUN/$name.err" | sed 's/^/# /' >&2
done
if [ -n "$prebuild" ]; then
	wait "$prebuild" || true # the scenarios that needed it said how it went
	prebuild=""
	echo "# e2e: upstream build beside the scenarios: $(grep -E 'built in|up to date|present|FAILED' "$E2E_RUN/upstream-build.log" | tr '\n' ' ')" >&2
fi
# every replica still running stops gracefully (SIGTERM: the Lease is given
# up, the server drains); a sanitizer build reports errors and leaks then
SCENARIO=teardown
stopped=1
for f in "$E2E_RUN"/gpuq-*.pid; do
	pid=$(cat "$f")
	kill -0 "$pid" 2>/dev/null || continue
	kill -TERM "$pid"
	deadline=$(( $(date +%s) + 30 ))
	while kill -0 "$pid" 2>/dev/null && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ]; do
		[ "$(date +%s)" -lt "$deadline" ] || { stopped=0; break; }
		sleep 0.2
	done
done
if [ "$stopped" = 1 ]; then echo "ok - teardown: gpuq stops gracefully on SIGTERM"; PASSED=$((PASSED + 1))
else echo "not ok - teardown: gpuq did not stop within 30 s of SIGTERM"; FAILED=$((FAILED + 1)); fi
SAN_RE='ERROR: (Address|Leak)Sanitizer|runtime error:|WARNING: ThreadSanitizer'
if grep -lE "$SAN_RE" "$E2E_RUN"/gpuq-*.log >/dev/null 2>&1; then
	echo "not ok - teardown: a sanitizer reported errors in gpuq (see $E2E_RUN/gpuq-*.log)"
	grep -hE -A12 "$SAN_RE" "$E2E_RUN"/gpuq-*.log | head -40 >&2
	FAILED=$((FAILED + 1))
else
	echo "ok - teardown: no sanitizer report in gpuq's logs"
	PASSED=$((PASSED + 1))
fi
# the run's own plan, stated once every line it counts is out (the
# scenarios' plans were checked above): unit/run_tests.sh fails a run that
# died before it (no plan) or printed lines it did not count
echo "1..$((PASSED + FAILED + SKIPPED))"
echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
[ "$FAILED" -eq 0 ]
