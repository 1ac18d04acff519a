#!/usr/bin/env bash
# e2e/sharded.sh: every e2e scenario, split over two control planes that run
# at the same time (each an e2e/run.sh of its own: its own cluster, ports,
# gpuq replicas and run directory). The scenarios mostly wait on their
# control plane, so two at once take little more than the longer half on
# 2 cores. Prints both runs' lines, shard by shard, then one closing
# `N passed, N failed, N skipped`; exit 1 when either failed.
#
# GPUQ_E2E_SHARDS=1 runs them all in one e2e/run.sh, as before; =plan only
# prints how it splits them (on stderr, as a run does).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)

if [ "${GPUQ_E2E_SHARDS:-2}" = 1 ]; then
	exec bash "$HERE/run.sh"
fi

# Each scenario goes to the shard with less work so far, longest first, by
# the seconds it took in a run of both shards at once on this 2-core machine
# (a scenario not listed counts 60 s); run.sh's first four stay first in
# shard 1. Within a shard, scenarios run in name order after those.
WEIGHTS="install:177 helm:149 econ:129 metrics:81 ui:77 chargeback:74 deploy:71 fence:66
image:55 tenant:55 gang:49 failover:48 keys:47 preemption:46 cohort:33 plugin:33
apiserver:32 cohort_tree:32 podgroup:30 queueing:28 visibility:26 history:23 report_live:23
restart:21 badpolicy:30 fairshare:20 idle:15 certsecret:14 identity:14 certs:8 lifecycle:110
ray:211 trainer:149 jobset:100 lws:100 sets:62 exempt:25 maxexec:70"
weight() {
	local w
	for w in $WEIGHTS; do [ "${w%%:*}" = "$1" ] && { echo "${w#*:}"; return; }; done
	echo 60
}
FIRST4="queueing preemption restart failover"
first=()
second=()
load1=0
load2=0
for n in $FIRST4; do
	first+=("test_$n.sh")
	load1=$((load1 + $(weight "$n")))
done
rest=$(for t in "$HERE"/test_*.sh; do
	n=$(basename "$t" .sh)
	n=${n#test_}
	case " $FIRST4 " in *" $n "*) continue ;; esac
	echo "$(weight "$n") $n"
done | sort -k1,1nr -k2)
one=""
two=""
while read -r w n; do
	[ -n "$n" ] || continue
	if [ "$load1" -le "$load2" ]; then
		one="$one $n"
		load1=$((load1 + w))
	else
		two="$two $n"
		load2=$((load2 + w))
	fi
done <<<"$rest"
for n in $(printf '%s\n' $one | sort); do first+=("test_$n.sh"); done
for n in $(printf '%s\n' $two | sort); do second+=("test_$n.sh"); done
echo "# e2e shards: 1 (about ${load1} s): ${first[*]}" >&2
echo "# e2e shards: 2 (about ${load2} s): ${second[*]}" >&2
[ "${GPUQ_E2E_SHARDS:-2}" != plan ] || exit 0

OUT=$(mktemp -d "${TMPDIR:-/tmp}/gpuq-e2e-shards.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
# the control plane's first build is flock-protected (build.sh): one shard
# builds, the other waits for it
bash "$HERE/run.sh" "${first[@]}" >"$OUT/1.out" 2>"$OUT/1.err" &
p1=$!
bash "$HERE/run.sh" "${second[@]}" >"$OUT/2.out" 2>"$OUT/2.err" &
p2=$!
rc=0
wait "$p1" || rc=1
wait "$p2" || rc=1

passed=0 failed=0 skipped=0
for i in 1 2; do
	echo "# shard $i"
	grep -vE '^[0-9]+ passed, [0-9]+ failed' "$OUT/$i.out"
	sed 's/^/# /' "$OUT/$i.err" >&2
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$OUT/$i.out" | tail -n 1)
	if [ -z "$line" ]; then
		echo "not ok - shard $i: e2e/run.sh ended without its closing count"
		failed=$((failed + 1))
		continue
	fi
	set -- $line
	passed=$((passed + $1))
	failed=$((failed + $3))
	skipped=$((skipped + $5))
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ]
