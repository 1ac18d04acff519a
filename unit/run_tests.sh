#!/usr/bin/env bash
# Runs every test of gpuq and prints one closing line:
# `N passed, N failed, N skipped`.
# Each test program speaks TAP (cmocka with CMOCKA_MESSAGE_OUTPUT=TAP, the
# corpus replays and the shell suites print `ok`/`not ok` lines). A program
# that dies without reporting a failure counts as one failed test; so does
# one that states no plan (`1..N`: cmocka prints it before its first test, a
# suite at its end, e2e/run.sh once per scenario), and one whose results do
# not add up to the plan it printed (it stopped early, or ran checks it did
# not plan): a program that prints nothing and exits 0 is a failure, never a
# quiet pass. A skip is not a pass: a `# SKIP`
# line (`ok` or cmocka's `not ok`) and a program that skips whole
# (`1..0 # SKIP`) are counted as skipped, apart.
# Env: BUILD (build dir), GPUQ_BIN (binary under test).
set -u
BUILD=${BUILD:-build/release}
GPUQ_BIN=${GPUQ_BIN:-$BUILD/gpuq}
export GPUQ_BIN BUILD
export CMOCKA_MESSAGE_OUTPUT=TAP
# its own under valgrind, so make valgrind and make test on the same build
# never mix their logs when run at once
LOGDIR=$BUILD/test-logs
[ "${VALGRIND:-}" != 1 ] || LOGDIR=$BUILD/test-logs-valgrind
mkdir -p "$LOGDIR"
passed=0
failed=0
skipped=0

# Programs run GPUQ_TEST_JOBS at a time (default: the machine's cores): a
# phase's programs are started with start_one, then finish_phase waits for
# them all and tallies each in the order they were started, so the output
# reads the same whatever finished first. Each line ends with the seconds the
# program took (CI time is a budget: the slow ones show). Each program has
# its own log, temporary directory and ports, so they do not meet.
JOBS=${GPUQ_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$JOBS" -ge 1 ] 2>/dev/null || JOBS=1
STARTED=()

# start_one NAME CMD...: run CMD (its output to NAME's log, its exit status
# and seconds to NAME's .rc) in the background once fewer than JOBS run.
start_one() {
	local name=$1
	shift
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n 2>/dev/null || true; done
	rm -f "$LOGDIR/$name.rc"
	(
		s=$(date +%s)
		"$@" >"$LOGDIR/$name.log" 2>&1
		echo "$? $(($(date +%s) - s))" >"$LOGDIR/$name.rc"
	) &
	STARTED+=("$name")
}

# finish_phase: wait for every program started, then tally each.
finish_phase() {
	local name
	wait
	for name in "${STARTED[@]}"; do tally_one "$name"; done
	STARTED=()
}

# tally_one NAME: count a finished program's results and print its line.
tally_one() {
	local name=$1 log rc=1 secs=? p f s whole planned
	log="$LOGDIR/$name.log"
	[ -f "$LOGDIR/$name.rc" ] && read -r rc secs <"$LOGDIR/$name.rc"
	p=$(grep -c '^ok ' "$log")
	f=$(grep -c '^not ok ' "$log")
	s=$(grep -ciE '^(not )?ok .*#[[:space:]]*skip' "$log")
	p=$((p - $(grep -ciE '^ok .*#[[:space:]]*skip' "$log")))
	f=$((f - $(grep -ciE '^not ok .*#[[:space:]]*skip' "$log")))
	whole=$(grep -ciE '^1\.\.0[[:space:]]*#[[:space:]]*skip' "$log")
	planned=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$log" | awk '{ n += $1 } END { print NR ? n : "" }')
	if [ -z "$planned" ]; then
		echo "not ok - $name states no plan (no 1..N line)" >>"$log"
		f=$((f + 1))
	elif [ "$planned" -ne $((p + f + s)) ]; then
		echo "not ok - $name planned $planned tests and reported $((p + f + s))" >>"$log"
		f=$((f + 1))
	fi
	s=$((s + whole))
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then # timeout's: it hung
		echo "not ok - $name hung: killed after ${UNIT_TIMEOUT:-?} s (GPUQ_UNIT_TIMEOUT)" >>"$log"
		f=$((f + 1))
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "not ok - $name exited $rc without reporting a failure" >>"$log"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	if [ "$f" -gt 0 ]; then
		echo "FAIL $name: $p passed, $f failed, $s skipped (log: $log, $secs s)"
		grep -E '^not ok|ERROR|error:|Assertion|Sanitizer' "$log" | head -20
	elif [ "$s" -gt 0 ]; then
		echo "SKIP $name: $p passed, $s skipped (log: $log, $secs s)"
		grep -iE '^(not )?ok .*#[[:space:]]*skip|^1\.\.0' "$log" | head -20
	else
		echo "ok   $name: $p passed ($secs s)"
	fi
}

# SANITIZE=thread (make SANITIZE=thread test): every process started from
# here, gpuq servers of the shell suites and of e2e included, writes its
# ThreadSanitizer reports to $LOGDIR/tsan.<pid> (suppressions: unit/tsan.supp,
# each with its reason); each such file fails the run below, whatever the
# process's exit status.
# Only what starts threads runs under it (the rest is single-threaded: a
# race detector has nothing to find there): the unit tests below, the
# suites that run `gpuq serve`, and e2e when GPUQ_E2E=1 (.ci/run names the
# scenarios).
THREADED_UNITS="test_http test_kube_fence test_kube_watch test_policy"
THREADED_SUITES="suite_serve suite_guard suite_metrics suite_idle suite_report"
TSAN_LOG=""
if [ "${SANITIZE:-}" = thread ]; then
	TSAN_LOG=$(cd "$LOGDIR" && pwd)/tsan
	rm -f "$TSAN_LOG".*
	TSAN_OPTIONS="suppressions=$(pwd)/unit/tsan.supp log_path=$TSAN_LOG ${TSAN_OPTIONS:-}"
	export TSAN_OPTIONS
fi

# VALGRIND=1 (make valgrind) runs the unit tests and corpus replays under
# memcheck: any error or definite leak fails the program.
VG=""
if [ "${VALGRIND:-}" = 1 ]; then
	VG="valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite --child-silent-after-fork=yes"
fi
# A unit program, corpus replay or shell suite that hangs is killed and
# fails (exit 124, named in its FAIL line) rather than hold CI:
# GPUQ_UNIT_TIMEOUT seconds each (default 900; the slowest, under valgrind,
# take well under a minute; the slowest suite, suite_store, about 3 min).
UNIT_TIMEOUT=${GPUQ_UNIT_TIMEOUT:-900}
# threaded NAME LIST: whether NAME runs in this build (under TSan only the
# LIST's)
threaded() { [ -z "$TSAN_LOG" ] || case " $2 " in *" $1 "*) true ;; *) false ;; esac; }
# One program per source, so a binary left in $BUILD by a test since removed
# is not run (nor counted), and a test that was not built fails.
not_built() { echo "not ok - $1 was not built"; return 1; }
for src in unit/test_*.c; do
	t="$BUILD/unit/$(basename "$src" .c)"
	threaded "$(basename "$t")" "$THREADED_UNITS" || continue
	# shellcheck disable=SC2086 # $VG is a command line: split on purpose
	if [ -x "$t" ]; then start_one "$(basename "$t")" timeout "$UNIT_TIMEOUT" $VG "$t"; else start_one "$(basename "$t")" not_built "$t"; fi
done
for src in fuzz/fuzz_*.c; do
	[ -z "$TSAN_LOG" ] || continue
	target=$(basename "$src" .c)
	target=${target#fuzz_}
	r="$BUILD/fuzz/replay_$target"
	# shellcheck disable=SC2086 # $VG is a command line: split on purpose
	if [ -x "$r" ]; then start_one "replay_$target" timeout "$UNIT_TIMEOUT" $VG "$r" "fuzz/corpus/$target"; else start_one "replay_$target" not_built "$r"; fi
done
finish_phase
[ -n "$VG" ] && { echo "$passed passed, $failed failed, $skipped skipped"; [ "$failed" -eq 0 ]; exit; }
for s in unit/suite_*.sh; do
	[ -f "$s" ] || continue
	threaded "$(basename "$s" .sh)" "$THREADED_SUITES" || continue
	start_one "$(basename "$s" .sh)" timeout -k 10 "$UNIT_TIMEOUT" sh "$s"
done
finish_phase
# End to end on a real control plane (e2e/run.sh; the first run builds the
# pinned upstream binaries into $GPUQ_E2E_CACHE, default ~/.cache/gpuq-e2e,
# 15-20 minutes on 2 cores).
# Run with the release build; GPUQ_E2E=0 skips it, GPUQ_E2E=1 forces it
# (e.g. with a sanitizer build); GPUQ_E2E_SCENARIOS names a subset
# ("test_failover.sh test_fence.sh"; default all). Either way they are
# split over three control planes running at once (e2e/sharded.sh,
# GPUQ_E2E_SHARDS=1 for one).
E2E=${GPUQ_E2E:-}
[ -n "$E2E" ] || { [ -z "${SANITIZE:-}" ] && E2E=1 || E2E=0; }
if [ "$E2E" = 1 ]; then
	# shellcheck disable=SC2086 # a list of scenario names (none: all)
	start_one e2e bash e2e/sharded.sh ${GPUQ_E2E_SCENARIOS:-}
	finish_phase
elif [ -n "${GPUQ_E2E:-}" ]; then # turned off by hand: counted as skipped
	echo "SKIP e2e: GPUQ_E2E=$GPUQ_E2E"
	skipped=$((skipped + 1))
fi
if [ -n "$TSAN_LOG" ]; then
	for r in "$TSAN_LOG".*; do
		[ -f "$r" ] || continue
		failed=$((failed + 1))
		echo "FAIL ThreadSanitizer: $(grep -c '^WARNING: ThreadSanitizer' "$r") reports in $r"
		grep -E -A12 '^WARNING: ThreadSanitizer' "$r" | head -30
	done
	[ -n "$(ls "$TSAN_LOG".* 2>/dev/null)" ] || echo "ok   ThreadSanitizer: no report from any process"
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
