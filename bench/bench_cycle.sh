#!/bin/sh
# bench_cycle: the queue core's admission cycle, in process (no I/O):
#   - a cycle in which nothing changed over 100,000 pending workloads (100
#     ClusterQueues in cohorts of 10, all full; half BestEffortFIFO with their
#     work set aside, half StrictFIFO with blocked heads). Target < 5 ms.
#   - the cycle right after one workload finished (its cohort's set-aside
#     work is retried), over 100 CQs and with all of it in one
#     BestEffortFIFO CQ: time, instructions and the records it leaves for
#     the store; reported, no target.
#   - Kueue's large-scale shape, 50,000 workloads in 1,000 ClusterQueues
#     (cohorts of 10, 20 GPUs each), drained in virtual time: total time in
#     queue_cycle_run, cycles, mean cycle.
#   - bytes per queued workload as the core counts them (target < 1 KiB).
#   - with valgrind: instructions per no-change cycle (callgrind, only inside
#     the measured loop); with BENCH_CALLGRIND_DRAIN=1 also the drain's
#     instructions inside queue_cycle_run (takes a few minutes).
# Builds build/bench/bench_cycle from bench/bench_cycle.c and the core's
# sources (queue/ and what it uses: topo/, fairshare/, ledger/, quota/, base/) with
# cc directly. A MISS is a finding: exit 0 when it measured,
# 1 when it could not run. Env: BENCH_BUILD (default build/bench),
# BENCH_PENDING (default 100000).
set -u
cd "$(dirname "$0")/.." || exit 1
BENCH_BUILD=${BENCH_BUILD:-build/bench}
PENDING=${BENCH_PENDING:-100000}
NOCHANGE_MAX_US=5000
BYTES_MAX=1024
BIN=$BENCH_BUILD/bench_cycle

say() { echo "bench_cycle: $*"; }
mkdir -p "$BENCH_BUILD" || exit 1
${CC:-cc} -O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -I. bench/bench_cycle.c \
	queue/*.c topo/*.c fairshare/*.c ledger/*.c quota/*.c base/base.c base/text.c base/sort.c -o "$BIN" -lm || {
	say "build failed"
	exit 1
}
[ "${BENCH_BUILD_ONLY:-0}" != 1 ] || { say "built: $BIN (BENCH_BUILD_ONLY)"; exit 0; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpuq-bench-cycle.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

"$BIN" nochange "$PENDING" >"$TMP/nochange" || exit 1
"$BIN" onefinish "$PENDING" >"$TMP/onefinish" || exit 1
# the same with every pending workload in one BestEffortFIFO ClusterQueue
"$BIN" onefinish "$PENDING" 1 | sed 's/^onefinish/deep/' >"$TMP/deep" || exit 1
"$BIN" drain 50000 1000 >"$TMP/drain" || exit 1
val() { awk -v k="$1" '$1 == k { print $2 }' "$TMP/nochange" "$TMP/onefinish" "$TMP/deep" "$TMP/drain"; }

us=$(val nochange_cycle_us)
bytes=$(val bytes_per_workload)
say "no-change cycle over $PENDING pending workloads: $us us"
say "cycle after one finish (cohort of 10 CQs retried): $(val onefinish_cycle_ms) ms, $(val onefinish_records) records to write"
say "cycle after one finish, all $PENDING in one BestEffortFIFO CQ: $(val deep_cycle_ms) ms, $(val deep_records) records to write"
say "drain 50,000 workloads / 1,000 CQs: $(val drain_cycles) cycles, $(val drain_cycle_ms_total) ms in queue_cycle_run (mean $(val drain_cycle_us_mean) us), virtual makespan $(val drain_virtual_makespan_s) s"
say "memory: $bytes bytes per queued workload (queue_memory_bytes)"
if awk -v u="$us" -v m="$NOCHANGE_MAX_US" 'BEGIN { exit !(u < m) }'; then
	say "PASS no-change cycle < 5 ms"
else
	say "MISS no-change cycle < 5 ms ($us us)"
fi
if [ "$bytes" -lt "$BYTES_MAX" ]; then
	say "PASS < 1 KiB per queued workload"
else
	say "MISS < 1 KiB per queued workload ($bytes)"
fi
instr="- (no valgrind)"
if command -v valgrind >/dev/null 2>&1; then
	valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out" \
		--toggle-collect=bench_nochange_cycles "$BIN" nochange "$PENDING" \
		>"$TMP/cg.stdout" 2>"$TMP/cg.stderr" || exit 1
	ir=$(awk '/Collected :/ { print $NF }' "$TMP/cg.stderr")
	say "callgrind: $((ir / 1000)) instructions per no-change cycle (1,000 cycles: $ir)"
	instr="$((ir / 1000)) instructions (callgrind)"
	valgrind --tool=callgrind --callgrind-out-file="$TMP/cgf.out" \
		--toggle-collect=bench_onefinish_cycle "$BIN" onefinish "$PENDING" 1 \
		>"$TMP/cgf.stdout" 2>"$TMP/cgf.stderr" || exit 1
	deep_ir=$(awk '/Collected :/ { print $NF }' "$TMP/cgf.stderr")
	say "callgrind: $deep_ir instructions in the cycle after one finish, all $PENDING in one CQ"
	if [ "${BENCH_CALLGRIND_DRAIN:-0}" = 1 ]; then
		valgrind --tool=callgrind --callgrind-out-file="$TMP/cgd.out" \
			--toggle-collect=queue_cycle_run "$BIN" drain 50000 1000 \
			>"$TMP/cgd.stdout" 2>"$TMP/cgd.stderr" || exit 1
		ir=$(awk '/Collected :/ { print $NF }' "$TMP/cgd.stderr")
		cycles=$(awk '$1 == "drain_cycles" { print $2 }' "$TMP/cgd.stdout")
		say "callgrind: drain 50,000/1,000: $ir instructions in queue_cycle_run, $((ir / cycles)) per cycle"
	fi
else
	say "callgrind: skipped (no valgrind)"
fi
# the README's rows (bench/run.sh prints them as its table)
echo "README 08 | admission cycle over $PENDING pending workloads, nothing changed | $instr, $us us | < 5 ms |"
echo "README 09 | cycle right after one finish, its cohort's set-aside work retried | 10 CQs: $(val onefinish_cycle_ms) ms, $(val onefinish_records) records; all $PENDING in one CQ: $(val deep_cycle_ms) ms, ${deep_ir:-?} instructions, $(val deep_records) records | - |"
exit 0
