#!/bin/sh
# suite_arrows: scripts/arrows.py (run by `make lint`) checks the intended
# layering (issue 34, item 5). In a scratch copy of the tree (the files git
# knows, the working tree's text), the clean tree reports 0 problems, and
# each wrong include below, added to one file at a time, makes arrows.py
# exit 1 and name it; so do a renamed type of another module and a clock
# read in a pure core. Prints TAP.
#   1. queue/queue.h in store/store.c: the engine row's never-pair
#   2. queue/queue.h in fairshare/fairshare.c: a module cycle
#   3. kube/kube.h in webhook/admit.c: not in webhook/'s row of ## Arrows
#   4. ledger/ledger.h in quota/quantity.c: a module cycle
#   5. controller/controller.h in sim/run.c: the drivers' never-pair
#   6. store/store.h in workload/workload.h: the drivers reach store/
#      through a header that includes a header
#   7. typedef queue_t sim_core_t in sim/sim.h: an alias
#   8. a gpuq_mono_ms() call in queue/budget.c: a clock read in a core
#   9. a queue_tick() call in controller/loop.c: a driver changing the core
#      past the engine (queue.h is the drivers' read API only)
#  10. a store_ type named in sim/run.c: a driver naming store/
#  11. WORKLOAD_KIND_JOB named in controller/loop.c: a kind named outside
#      workload/ (the controller asks the row)
# Needs python3.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
T=$(mktemp -d /tmp/gpuq-suite-arrows.XXXXXX)
. "$HERE/tap.sh"
trap 'rm -rf "$T"' EXIT
trap 'exit 1' INT TERM

# the tree as git lists it (deleted files left out), with its working text
TREE=$T/tree
mkdir "$TREE"
(cd "$ROOT" && git ls-files -z | xargs -0 sh -c 'for f; do [ -f "$f" ] && printf "%s\0" "$f"; done' sh |
	tar --null -T - -cf -) | tar -xf - -C "$TREE" || { echo "Bail out! cannot copy the tree"; exit 1; }

out=$(python3 "$TREE/scripts/arrows.py" 2>&1)
rc=$?
last=$(printf '%s\n' "$out" | tail -1)
case $last in
"arrows: 0 problems, "*) [ "$rc" -eq 0 ] && ok "clean tree: $last" || not_ok "clean tree exits $rc" "$out" ;;
*) not_ok "clean tree: $last" "$(printf '%s\n' "$out" | grep -v '^arrows: layer')" ;;
esac

# probe FILE LINE WANT: LINE added at the top of FILE makes arrows.py fail
# with a line containing WANT; FILE is restored after.
probe() {
	f=$TREE/$1
	cp "$f" "$T/saved"
	{ printf '%s\n' "$2"; cat "$T/saved"; } >"$f"
	out=$(python3 "$TREE/scripts/arrows.py" 2>&1)
	rc=$?
	cp "$T/saved" "$f"
	if [ "$rc" -ne 1 ]; then
		not_ok "$2 in $1: arrows.py exits $rc, want 1" "$(printf '%s\n' "$out" | tail -3)"
	elif printf '%s\n' "$out" | grep -qF -- "$3"; then
		ok "$2 in $1: $(printf '%s\n' "$out" | grep -F -- "$3" | head -1 | cut -c1-150)"
	else
		not_ok "$2 in $1: no line with \"$3\"" "$(printf '%s\n' "$out" | grep -v '^arrows: layer')"
	fi
}

probe store/store.c '#include "queue/queue.h"' \
	'never: store/store.c reaches queue/: the layer table says store/ and queue/ never include each other'
probe fairshare/fairshare.c '#include "queue/queue.h"' 'cycle: fairshare/ queue/ include each other'
probe webhook/admit.c '#include "kube/kube.h"' \
	'allow: webhook/admit.c includes kube/kube.h: webhook/ may include'
probe quota/quantity.c '#include "ledger/ledger.h"' 'cycle: ledger/ quota/ include each other'
probe sim/run.c '#include "controller/controller.h"' \
	'never: sim/run.c reaches controller/: the layer table says sim/ and controller/ never include each other'
probe workload/workload.h '#include "store/store.h"' \
	'reach: sim/trace.c reaches store/ through workload/workload.h, past engine/'
probe sim/sim.h 'typedef queue_t sim_core_t;' \
	"alias: sim/sim.h: sim_core_t <- queue_t: another module's name renamed"
probe queue/budget.c 'static int64_t probe(void) { return gpuq_mono_ms(); }' \
	'clock: queue/budget.c calls gpuq_mono_ms: its layer reads no clock'
probe controller/loop.c 'static int probe(queue_t *q) { return queue_tick(q, 0, NULL); }' \
	'reach: controller/loop.c calls queue_tick, which change a core'
probe sim/run.c 'static store_t *probe_store;' 'reach: sim/run.c names store_t, past engine/'
probe controller/loop.c 'static const int probe_kind = WORKLOAD_KIND_JOB;' \
	'kind: controller/ names a kind of workload 1 times, 0 known'

# the clean tree again: every probe was undone
out=$(python3 "$TREE/scripts/arrows.py" 2>&1)
same "clean tree after the probes" "$(printf '%s\n' "$out" | tail -1 | cut -d, -f1)" "arrows: 0 problems"
tap_end
