#!/bin/sh
# Runs every test of gpuq and prints one closing line: `N passed, N failed`.
# Each test program speaks TAP (cmocka with CMOCKA_MESSAGE_OUTPUT=TAP, the
# corpus replays and the shell suites print `ok`/`not ok` lines). A program
# that dies without reporting a failure counts as one failed test.
# Env: BUILD (build dir), GPUQ_BIN (binary under test).
set -u
BUILD=${BUILD:-build/release}
GPUQ_BIN=${GPUQ_BIN:-$BUILD/gpuq}
export GPUQ_BIN BUILD
export CMOCKA_MESSAGE_OUTPUT=TAP
LOGDIR=$BUILD/test-logs
mkdir -p "$LOGDIR"
passed=0
failed=0

run_one() {
	name=$1
	shift
	log="$LOGDIR/$name.log"
	"$@" >"$log" 2>&1
	rc=$?
	p=$(grep -c '^ok ' "$log")
	f=$(grep -c '^not ok ' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "not ok - $name exited $rc without reporting a failure" >>"$log"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$f" -gt 0 ]; then
		echo "FAIL $name: $p passed, $f failed (log: $log)"
		grep -E '^not ok|ERROR|error:|Assertion|Sanitizer' "$log" | head -20
	else
		echo "ok   $name: $p passed"
	fi
}

# VALGRIND=1 (make valgrind) runs the unit tests and corpus replays under
# memcheck: any error or definite leak fails the program.
VG=""
if [ "${VALGRIND:-}" = 1 ]; then
	VG="valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite"
fi
for t in "$BUILD"/unit/test_*; do
	[ -x "$t" ] && [ -f "$t" ] || continue
	case "$t" in *.d) continue ;; esac
	run_one "$(basename "$t")" $VG "$t"
done
for r in "$BUILD"/fuzz/replay_*; do
	[ -x "$r" ] || continue
	target=${r##*/replay_}
	run_one "replay_$target" $VG "$r" "fuzz/corpus/$target"
done
[ -n "$VG" ] && { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit; }
for s in unit/suite_*.sh; do
	[ -f "$s" ] || continue
	run_one "$(basename "$s" .sh)" sh "$s"
done
# End to end on a real control plane (e2e/run.sh; the first run builds the
# pinned upstream binaries into ~/.cache/gpuq-e2e, 15-20 minutes on 2 cores).
# Run with the release build; GPUQ_E2E=0 skips it, GPUQ_E2E=1 forces it
# (e.g. with an ASan build).
E2E=${GPUQ_E2E:-}
[ -n "$E2E" ] || { [ -z "${SANITIZE:-}" ] && E2E=1 || E2E=0; }
if [ "$E2E" = 1 ]; then
	run_one e2e bash e2e/run.sh
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
