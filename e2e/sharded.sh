#!/usr/bin/env bash
# e2e/sharded.sh: every e2e scenario, split over GPUQ_E2E_SHARDS control
# planes (default 3) that run at the same time (each an e2e/run.sh of its
# own: its own cluster, ports, gpuq replicas and run directory). The
# scenarios mostly wait on their control plane, so three at once take little
# more than the longest third on 2 cores. Prints every run's lines, shard by
# shard, then one closing `N passed, N failed, N skipped`; exit 1 when any
# failed.
#
# GPUQ_E2E_SHARDS=1 runs them all in one e2e/run.sh; =plan only prints how
# it splits them (on stderr, as a run does; GPUQ_E2E_PLAN_SHARDS=N for N).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)

if [ "${GPUQ_E2E_SHARDS:-3}" = 1 ]; then
	exec bash "$HERE/run.sh" "$@"
fi

# Scenarios named as arguments (test_NAME.sh or NAME): only those, split the
# same way (.ci/run's ThreadSanitizer gate); none: every one.
want=""
for a in "$@"; do
	a=$(basename "$a" .sh)
	a=${a#test_}
	[ -f "$HERE/test_$a.sh" ] || { echo "sharded.sh: no scenario e2e/test_$a.sh" >&2; exit 2; }
	want="$want $a"
done
chosen() { [ -z "$want" ] || case " $want " in *" $1 "*) true ;; *) false ;; esac; }

# Each scenario goes to the shard with the least work so far, longest first,
# by the seconds it took in a full run of the shards at once on this 2-core
# machine (three shards and a lint at 08a3f86; lifecycle and ray with the
# rows added since; a scenario not listed counts 60 s); run.sh's first
# four stay first in shard 1. Within a shard, scenarios run in name order
# after those.
WEIGHTS="queueing:44 preemption:123 restart:46 failover:106 apiserver:50 badpolicy:39
certsecret:31 chargeback:75 helm:186 maxexec:102 report_live:30 reserve:175 sets:99
tenant:75 visibility:28 cohort_tree:38 deploy:130 econ:208 exempt:32 gang:50 history:26
idle:12 jobset:264 keys:57 lws:310 metrics:86 overhead:5 trainer:91 certs:12 cohort:46
fairshare:51 fence:67 identity:13 image:75 install:216 lifecycle:300 plugin:32
podgroup:255 ray:240 storm:106 ui:76"
weight() {
	local w
	for w in $WEIGHTS; do [ "${w%%:*}" = "$1" ] && { echo "${w#*:}"; return; }; done
	echo 60
}
SHARDS=${GPUQ_E2E_SHARDS:-3}
[ "$SHARDS" = plan ] && SHARDS=${GPUQ_E2E_PLAN_SHARDS:-3}
FIRST4="queueing preemption restart failover"
declare -a load names
for ((i = 1; i <= SHARDS; i++)); do load[i]=0 names[i]=""; done
for n in $FIRST4; do
	chosen "$n" || continue
	names[1]="${names[1]} $n"
	load[1]=$((load[1] + $(weight "$n")))
done
rest=$(for t in "$HERE"/test_*.sh; do
	n=$(basename "$t" .sh)
	n=${n#test_}
	case " $FIRST4 " in *" $n "*) continue ;; esac
	chosen "$n" || continue
	echo "$(weight "$n") $n"
done | sort -k1,1nr -k2)
while read -r w n; do
	[ -n "$n" ] || continue
	least=1
	for ((i = 2; i <= SHARDS; i++)); do [ "${load[i]}" -lt "${load[least]}" ] && least=$i; done
	names[least]="${names[least]} $n"
	load[least]=$((load[least] + w))
done <<<"$rest"
declare -a scen
for ((i = 1; i <= SHARDS; i++)); do
	# run.sh's first four first (in shard 1), then the rest by name
	first_of=$(for n in ${names[i]}; do case " $FIRST4 " in *" $n "*) echo "test_$n.sh" ;; esac; done)
	rest_of=$(for n in ${names[i]}; do case " $FIRST4 " in *" $n "*) ;; *) echo "test_$n.sh" ;; esac; done | sort)
	scen[i]=$(echo $first_of $rest_of)
	echo "# e2e shards: $i (about ${load[i]} s): ${scen[i]}" >&2
done
[ "${GPUQ_E2E_SHARDS:-3}" != plan ] || exit 0

OUT=$(mktemp -d "${TMPDIR:-/tmp}/gpuq-e2e-shards.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
# the control plane's first build is flock-protected (build.sh): one shard
# builds, the others wait for it
rc=0
declare -a pids
for ((i = 1; i <= SHARDS; i++)); do
	# an empty shard starts nothing (run.sh with no names runs them all)
	[ -n "${scen[i]}" ] || continue
	# shellcheck disable=SC2086 # a list of scenario files
	bash "$HERE/run.sh" ${scen[i]} >"$OUT/$i.out" 2>"$OUT/$i.err" &
	pids[i]=$!
done
for ((i = 1; i <= SHARDS; i++)); do [ -z "${scen[i]}" ] || wait "${pids[i]}" || rc=1; done

passed=0 failed=0 skipped=0
for ((i = 1; i <= SHARDS; i++)); do
	[ -n "${scen[i]}" ] || continue
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
