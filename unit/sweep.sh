#!/bin/sh
# unit/sweep.sh [FIRST [LAST]]: the queue core's property traces
# (unit/test_queue_props.c) over seeds FIRST..LAST, default 1..30000 (make
# test runs 1..1000). A failing seed is named and the sweep goes on after
# it. Ends with `N of N pass (seeds A-B, commit C)`; exit 1 when a seed
# failed. Run it by `make sweep` (SWEEP="FIRST LAST" for another range).
set -u
BIN=${BUILD:-build/release}/unit/test_queue_props
first=${1:-1}
last=${2:-30000}
[ -x "$BIN" ] || { echo "sweep: $BIN not built (make sweep builds it)"; exit 1; }
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || commit="$commit+changes"
from=$first
pass=0
failed=""
while [ "$from" -le "$last" ]; do
	out=$(QUEUE_PROPS_SEEDS="$from-$last" "$BIN" 2>&1)
	if printf '%s\n' "$out" | grep -q "^# sweep: seeds $from-$last pass"; then
		pass=$((pass + last - from + 1))
		break
	fi
	bad=$(printf '%s\n' "$out" | sed -n 's/^# sweep: seed \([0-9]*\) failed.*/\1/p' | head -n 1)
	if [ -z "$bad" ]; then
		printf '%s\n' "$out" | tail -n 20
		echo "sweep: seeds $from-$last stopped without naming a seed"
		exit 1
	fi
	printf '%s\n' "$out" | grep -iE 'error|failure|seed [0-9]+ at' | grep -v '^# sweep' |
		head -n 3 | sed "s/^/# seed $bad: /"
	pass=$((pass + bad - from))
	failed="$failed $bad"
	from=$((bad + 1))
done
echo "$pass of $((last - first + 1)) pass (seeds $first-$last, commit $commit)${failed:+; failed:$failed}"
[ -z "$failed" ]
