#!/bin/sh
# suite_manifests: deploy/30-webhook.yaml's requests-gpu matchConditions
# (TAP). The mutating and the validating webhooks must see the same objects
# on CREATE, or a Job the validating rules refuse is never suspended by the
# mutating one (a Job whose only GPU was in an init container: /mutate's
# condition left init containers out). So the four expressions are one
# text: each is `[OBJECTS].exists(o, o != null && (BODY))`, OBJECTS
# "object" for mutate-*, "object, oldObject" for validate-*; BODY is the
# same for Pods and Jobs but for the pod spec's path (o.spec,
# o.spec.template.spec). Checked here, and that BODY looks at containers
# and init containers, requests and limits, and DRA resourceClaims; the
# other kinds' expressions test that same BODY on each of their pod specs.
# The Pods' BODY adds one last alternative: a Pod labelled
# kueue.x-k8s.io/pod-group-name, whatever it asks for (every member of a pod
# group is gated and counted, a CPU-only one too).
# e2e/test_tenant.sh sends each shape through the real webhooks.
set -u
. "$(dirname "$0")/tap.sh"
F=${1:-deploy/30-webhook.yaml}
T=$(mktemp -d /tmp/gpuq-suite-manifests.XXXXXX)
trap 'rm -rf "$T"' EXIT

# expr NAME: webhook NAME's requests-gpu expression, on one line
expr_of() {
	awk -v want="$1" '
		/^  - name: / { hook = $3 }
		hook == want && /- name: requests-gpu/ { grab = 1; next }
		grab && /expression: >-/ { take = 1; next }
		take && /^          / { sub(/^ +/, ""); printf "%s ", $0; next }
		take { exit }
	' "$F" | sed 's/ $//'
}

for h in mutate-pods mutate-jobs validate-pods validate-jobs; do
	expr_of "$h.gpuq.dev" >"$T/$h"
	if [ -s "$T/$h" ]; then ok "$h.gpuq.dev has a requests-gpu expression"; else
		not_ok "$h.gpuq.dev has a requests-gpu expression"; fi
done

# body FILE OBJECTS: the expression's BODY, or nothing when it is not
# [OBJECTS].exists(o, o != null && (BODY))
body() {
	sed -n "s/^\[$2\]\.exists(o, o != null \&\& (\(.*\)))\$/\1/p" "$1"
}
body "$T/mutate-pods" object >"$T/mp-all"
body "$T/validate-pods" 'object, oldObject' >"$T/vp-all"
# the Pods' BODY ends with " || (POD GROUP)": every member of a pod group
# (a CPU-only driver too) goes to gpuq; the rest is the GPU test all kinds share
GROUP=" || (has(o.metadata.labels) && 'kueue.x-k8s.io/pod-group-name' in o.metadata.labels)"
for f in mp vp; do
	b=$(cat "$T/$f-all")
	case $b in *"$GROUP") printf '%s' "${b%"$GROUP"}" >"$T/$f" ;; *) : >"$T/$f" ;; esac
	check "$f: the Pods' BODY ends with every pod group's member" test -s "$T/$f"
done
body "$T/mutate-jobs" object >"$T/mj"
body "$T/validate-jobs" 'object, oldObject' >"$T/vj"
for f in mp-all vp-all mj vj; do
	[ -s "$T/$f" ] || not_ok "requests-gpu of $f is [OBJECTS].exists(o, o != null && (BODY))" "$(cat "$T/${f}")"
done
check "Pods: /mutate (object) and /validate (object, oldObject) test one BODY" cmp -s "$T/mp" "$T/vp"
check "Jobs: /mutate (object) and /validate (object, oldObject) test one BODY" cmp -s "$T/mj" "$T/vj"
sed 's/o\.spec\.template\.spec\./o.spec./g' "$T/mj" >"$T/mj-as-pod"
check "Jobs' BODY is the Pods' at the template's pod spec" cmp -s "$T/mp" "$T/mj-as-pod"
for part in 'o.spec.containers.exists(' 'o.spec.initContainers.exists(' 'c.resources.limits.exists(' \
	'c.resources.requests.exists(' 'o.spec.resourceClaims'; do
	cnt=$(grep -o -F "$part" "$T/mp" | wc -l)
	if [ "$cnt" -ge 1 ]; then ok "BODY tests $part ($cnt)"; else not_ok "BODY tests $part"; fi
done
# The other kinds' (JobSets, StatefulSets and Deployments, LeaderWorkerSets,
# RayJobs, RayClusters): [OBJECTS].exists(o, o != null && (LIST).exists(s,
# BODY)), LIST the kind's pod specs, BODY the Pods' at s: one rule for what
# a GPU pod spec is, whatever holds it.
sed 's/o\.spec\./s./g; s/^ //' "$T/mp" >"$T/ms"
for h in mutate-jobsets mutate-sets mutate-leaderworkersets mutate-rayjobs mutate-rayclusters \
	validate-jobsets validate-sets validate-rayjobs validate-rayclusters; do
	case $h in mutate-*) objs=object ;; *) objs='object, oldObject' ;; esac
	expr_of "$h.gpuq.dev" |
		sed -n "s/^\[$objs\]\.exists(o, o != null \&\& ( \(.*\) )\.exists(s, \(.*\)))\$/\2/p" >"$T/k-$h"
	check "$h.gpuq.dev: [$objs].exists(o, o != null && (LIST).exists(s, BODY)), BODY the Pods' at s" \
		cmp -s "$T/ms" "$T/k-$h"
done
# limits and requests, in containers and in init containers alike
check "BODY tests requests and limits of both container lists" \
	sh -c '[ "$(grep -o -F "c.resources.limits.exists(" "$1" | wc -l)" -eq 2 ] &&
		[ "$(grep -o -F "c.resources.requests.exists(" "$1" | wc -l)" -eq 2 ]' _ "$T/mp"
tap_end
