#!/bin/sh
# make bench: run every bench/bench_*.sh in turn, from the repository root,
# and let each print its own figures and PASS/MISS lines. It exits non-zero
# when a bench could not run (it exited non-zero) or when any bench printed a
# MISS: a target missed fails `make bench` (issue 35), after every bench ran
# and the table was printed. It ends
# with the README's benchmark table: every bench prints its rows as
# `README NN | benchmark | figure | target |`, gathered here in NN order
# with the commit they were measured at (README.md quotes them so).
# Env: GPUQ_BIN (binary under test, default bin/gpuq), BENCH_BUILD (where
# bench helpers are built, default build/bench); each bench reads its own
# knobs (see bench/README.md).
set -u
cd "$(dirname "$0")/.." || exit 1
GPUQ_BIN=${GPUQ_BIN:-bin/gpuq}
BENCH_BUILD=${BENCH_BUILD:-build/bench}
export GPUQ_BIN BENCH_BUILD

# The fixed-rate client every bench may use: built once here, with cc
# directly (it is a tool, not part of libgpuq).
mkdir -p "$BENCH_BUILD"
if [ ! -x "$BENCH_BUILD/loadgen" ] || [ bench/loadgen.c -nt "$BENCH_BUILD/loadgen" ]; then
	echo "bench: building $BENCH_BUILD/loadgen"
	${CC:-cc} -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror bench/loadgen.c \
		-o "$BENCH_BUILD/loadgen" -lssl -lcrypto -lpthread || exit 1
fi

LOG=$(mktemp -d /tmp/gpuq-bench-run.XXXXXX) || exit 1
trap 'rm -rf "$LOG"' EXIT
ran=0
failed=0
failed_names=""
for b in bench/bench_*.sh; do
	[ -f "$b" ] || continue
	name=$(basename "$b" .sh)
	echo "=== $name"
	start=$(date +%s)
	# Shown as it runs, kept for the summary; the exit code goes through a
	# file because a pipeline's status is tee's.
	{
		sh "$b"
		echo $? >"$LOG/$name.rc"
	} 2>&1 | tee "$LOG/$name.log"
	rc=$(cat "$LOG/$name.rc" 2>/dev/null || echo 1)
	echo "=== $name: exit $rc after $(($(date +%s) - start)) s"
	echo
	ran=$((ran + 1))
	if [ "$rc" -ne 0 ]; then
		failed=$((failed + 1))
		failed_names="$failed_names $name"
	fi
done
echo "=== targets"
for f in "$LOG"/*.log; do
	[ -f "$f" ] || continue
	grep -hwE 'PASS|MISS' "$f" | grep -v '^README ' | sed "s/^/$(basename "$f" .log): /"
done
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || commit="$commit+changes"
echo
echo "=== README table (make bench at commit $commit, $(date -u +%Y-%m-%d), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo "| benchmark | figure | target | commit |"
echo "|---|---|---|---|"
cat "$LOG"/*.log | sed -n 's/^README \([0-9][0-9]\) \(|.*|\)$/\1 \2/p' | sort -n -k1,1 |
	sed "s/^[0-9]* //; s/\$/ $commit |/"
# A verdict is a line with the word PASS or MISS (benches print them as
# "PASS what", "name: MISS what" or "what (target) MISS"); README rows aside.
verdicts() { cat "$LOG"/*.log 2>/dev/null | grep -v '^README ' | grep -cw "$1"; }
missed=$(verdicts MISS)
passed=$(verdicts PASS)
if [ "$failed" -gt 0 ]; then
	echo "bench: $ran run, $failed could not run:$failed_names; targets: $passed passed, $missed missed"
	exit 1
fi
if [ "$missed" -gt 0 ]; then
	echo "bench: $ran run, all ran; targets: $passed passed, $missed missed (the MISS lines above)"
	exit 1
fi
echo "bench: $ran run, all ran; targets: $passed passed, 0 missed"
