#!/bin/sh
# make lint: formatting, static analysis and banned calls over gpuq's C.
set -u
cd "$(dirname "$0")/.."
SRC=$(git ls-files '*.c' '*.h' | grep -v '^fuzz/corpus/')
fail=0
echo "lint: clang-format"
clang-format --dry-run -Werror $SRC 2>&1 | head -40 || true
clang-format --dry-run -Werror $SRC >/dev/null 2>&1 || fail=1
echo "lint: banned calls"
if grep -nE '\b(strcpy|strcat|sprintf|strtok|atoi|gets)\s*\(' $SRC; then
	fail=1
fi
# A kind is one row of workload/kinds.c for the controller too (issue 34):
# it reads the row's answers (hold, quiet, set, watch_path, ...), never a
# kind's name: scripts/arrows.py's check 13 below refuses one.
echo "lint: module arrows (scripts/arrows.py against docs/architecture.md's layers)"
out=$(python3 scripts/arrows.py 2>&1) || { printf '%s\n' "$out" | grep -v '^arrows: layer'; fail=1; }
printf '%s\n' "$out" | tail -1
echo "lint: sh -c strings calling shell functions they cannot see (scripts/shc_lint.py)"
python3 scripts/shc_lint.py || fail=1
# A review is parsed without the members webhook/admit.c's review_unread
# names (jv_doc_parse_skipping): a decoder on the review path that came to
# read one would find it missing. None may name one (outside comments).
echo "lint: no review decoder reads a member a review skips (webhook/admit.c review_unread)"
unread=$(sed -n '/^static const jv_key_t review_unread\[\] = {/,/^};/p' webhook/admit.c |
	grep -o '"[A-Za-z]*"')
[ -n "$unread" ] || { echo "webhook/admit.c: review_unread not found"; fail=1; }
for k in $unread; do
	if git grep -nF "$k" -- 'webhook/*.c' 'webhook/*.h' 'workload/*.c' 'workload/*.h' \
		'quota/*.c' 'quota/*.h' 'jv/*.c' 'jv/*.h' |
		grep -v -e '^webhook/admit.c:[0-9]*:    JV_KEY("' -e '^[^:]*:[0-9]*:[[:space:]]*/*\*'; then
		echo "the lines above name $k, which a review skips: take it off review_unread"
		fail=1
	fi
done
echo "lint: function size (gpuq's own code: over 80 lines named, over 120 refused)"
PROD=$(echo "$SRC" | grep '\.c$' | grep -v '^unit/\|^fuzz/\|^bench/')
awk -v limit=80 -f unit/fsize.awk $PROD | sed 's/$/ lines (over 80)/'
if [ -n "$(awk -v limit=120 -f unit/fsize.awk $PROD)" ]; then
	awk -v limit=120 -f unit/fsize.awk $PROD | sed 's/$/ lines: over 120, split it/'
	fail=1
fi
echo "lint: cppcheck"
cppcheck --quiet --error-exitcode=1 --std=c11 --inline-suppr -I. \
	--enable=warning,portability --suppress=missingIncludeSystem $SRC || fail=1
echo "lint: clang-tidy"
CFLAGS="-std=c11 -D_GNU_SOURCE -I. $(pkg-config --cflags libmicrohttpd gnutls jansson libcurl lmdb yaml-0.1 openssl)"
TIDY_CHECKS='-*,bugprone-*,clang-analyzer-*,-bugprone-easily-swappable-parameters,-bugprone-reserved-identifier,-clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling,-bugprone-assignment-in-if-condition'
export CFLAGS TIDY_CHECKS
# one clang-tidy per file, as many at once as there are CPUs
echo "$SRC" | grep '\.c$' | grep -v '^unit/\|^fuzz/' |
	xargs -P "$(nproc)" -n 1 sh -c 'out=$(clang-tidy --quiet --warnings-as-errors="*" \
		--checks="$TIDY_CHECKS" "$0" -- $CFLAGS 2>&1) ||
		{ echo "$out" | grep -v "warnings generated"; exit 1; }' || fail=1
# make bench is not a CI gate (its figures need a quiet machine), so a bench
# whose driver stopped building went unseen until someone ran it (bench_cycle
# from the topology work to 24ebfee): every bench builds its drivers here and
# stops (BENCH_BUILD_ONLY=1), and one that does not know that mode fails
# rather than running whole.
echo "lint: every bench builds (bench/bench_*.sh with BENCH_BUILD_ONLY=1)"
if make -s bin/gpuq build/release/libgpuq.a >/dev/null 2>&1; then
	BB=$(mktemp -d /tmp/gpuq-lint-bench.XXXXXX)
	for b in bench/bench_*.sh; do
		if ! grep -q -e BENCH_BUILD_ONLY -e bench_two_builds "$b"; then # lib.sh: its own
			echo "$b: has no BENCH_BUILD_ONLY mode (build its drivers and exit 0 in it)"
			fail=1
		elif ! out=$(BENCH_BUILD_ONLY=1 BENCH_BUILD=$BB timeout 600 sh "$b" 2>&1) ||
			! printf '%s\n' "$out" | grep -q 'built: '; then
			printf '%s\n' "$out" | tail -15
			echo "$b: does not build"
			fail=1
		fi
	done
	rm -rf "$BB"
else
	echo "make bin/gpuq build/release/libgpuq.a failed"
	fail=1
fi
echo "lint: monitoring (alert rules, Grafana dashboard, docs/metrics.md)"
out=$(deploy/monitoring/check.sh 2>&1) || { printf '%s\n' "$out" | grep -v '^ok '; fail=1; }
if [ "$fail" -eq 0 ]; then echo "lint: clean"; else echo "lint: FAILED"; fi
exit $fail
