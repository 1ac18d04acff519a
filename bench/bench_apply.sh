#!/bin/sh
# bench_apply: instructions per Job watch event through the controller's
# apply path (bench/bench_apply.c), now against before the one-decode model:
#   - the baseline is gpuq at BENCH_APPLY_BASE (default 28ecb97, the last
#     commit that parsed each event with jansson, pruned it, dumped it to
#     text and decoded the text again), built once from `git archive` into
#     $BENCH_BUILD/baseline-<commit> (a few minutes, the first time only);
#   - the events: bench/apply_events.py, BENCH_APPLY_JOBS Jobs (default 300)
#     of bench/fixtures/job_review.json through the six events of a queued
#     Job's life (4.6-5.7 KB each, with managedFields), against
#     bench/fixtures/apply-policy;
#   - ns per event (best of 3 rounds; noisy: a ratio) and, with valgrind,
#     instructions per event (callgrind counting only inside bench_replay:
#     the watch decoder, the watch thread's step and the controller thread's
#     handling; repeatable).
# Target (issue 21): at least 3x fewer instructions per event than the
# baseline. Exit 0 when it measured.
set -u
cd "$(dirname "$0")/.." || exit 1
BENCH_BUILD=${BENCH_BUILD:-build/bench}
BASE_COMMIT=${BENCH_APPLY_BASE:-28ecb97}
N=${BENCH_APPLY_JOBS:-300}
say() { echo "bench_apply: $*"; }
. bench/lib.sh
bench_two_builds bench_apply bench/bench_apply.c "$BASE_COMMIT" || exit 1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpuq-bench-apply.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
python3 bench/apply_events.py bench/fixtures/job_review.json "$N" >"$TMP/events.jsonl" || exit 1
events=$(wc -l <"$TMP/events.jsonl")
say "$events events ($N Jobs x 6), $(wc -c <"$TMP/events.jsonl") bytes"
for v in base new; do
	bin=$BENCH_BUILD/bench_apply
	[ $v = base ] && bin=$BENCH_BUILD/bench_apply_base
	"$bin" "$TMP/events.jsonl" bench/fixtures/apply-policy 3 >"$TMP/t.$v" || exit 1
	eval "ns_$v=\$(awk '\$1 == \"ns_per_event\" { print \$2 }' \"$TMP/t.$v\")"
	eval "mem_$v=\$(awk '\$1 == \"heap_per_job\" { print \$2 }' \"$TMP/t.$v\")"
done
# shellcheck disable=SC2154 # set by the eval above
say "heap held per cached Job (cache, core, maps; mallinfo2): baseline $mem_base bytes, now $mem_new bytes"
# shellcheck disable=SC2154 # set by the eval above
say "ns per event: baseline $ns_base, now $ns_new (x$(awk -v a="$ns_base" -v b="$ns_new" 'BEGIN { printf "%.2f", a / b }'))"
if command -v valgrind >/dev/null 2>&1; then
	for v in base new; do
		bin=$BENCH_BUILD/bench_apply
		[ $v = base ] && bin=$BENCH_BUILD/bench_apply_base
		valgrind --tool=callgrind --toggle-collect=bench_replay \
			--callgrind-out-file="$TMP/cg.$v" "$bin" "$TMP/events.jsonl" \
			bench/fixtures/apply-policy count >/dev/null 2>&1 || exit 1
	done
	ib=$(awk -v n="$events" '/^summary:/ { printf "%d", $2 / n }' "$TMP/cg.base")
	in=$(awk -v n="$events" '/^summary:/ { printf "%d", $2 / n }' "$TMP/cg.new")
	ratio=$(awk -v a="$ib" -v b="$in" 'BEGIN { printf "%.2f", a / b }')
	say "instructions per Job watch event: baseline ($BASE_COMMIT) $ib, now $in (x$ratio fewer)"
	if awk -v r="$ratio" 'BEGIN { exit !(r >= 3) }'; then
		say "PASS instructions per Job watch event x$ratio fewer (target >= 3)"
	else
		say "MISS instructions per Job watch event only x$ratio fewer (target >= 3)"
	fi
fi
exit 0
