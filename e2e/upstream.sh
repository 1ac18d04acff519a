#!/usr/bin/env bash
# e2e/upstream.sh: the real upstream controllers of the workload kinds gpuq
# admits (JobSet, LeaderWorkerSet, KubeRay, Kubeflow Trainer), built from their
# Go modules into the e2e cache, and started out of cluster against the e2e
# control plane by the scenarios that need them (never by e2e/up.sh: a
# scenario that does not use one does not pay for it).
#
#   e2e/upstream.sh build NAME...     build what is missing (flock-protected,
#                                     like e2e/build.sh); prints each go
#                                     build's wall time
#   e2e/upstream.sh start NAME        (from a scenario, with gpuq.env loaded)
#                                     install NAME's CRDs as they ship in its
#                                     module, give it an identity of its own (a
#                                     ServiceAccount bound to cluster-admin, its
#                                     token in a kubeconfig), start it on
#                                     127.0.0.1 with its webhooks served on a
#                                     free port over a certificate from `gpuq
#                                     certs` and registered by URL, scoped to
#                                     the namespaces labelled
#                                     gpuq.dev/upstream-NAME=true; wait until it
#                                     serves
#   e2e/upstream.sh stop NAME         remove its webhook registrations, stop it
#   e2e/upstream.sh --print           the cache dirs, one shell line each
#
# NAME is jobset, lws, kuberay or trainer. Layout:
#   $GPUQ_E2E_CACHE/<name>-<version>/manager      the controller binary
#   $GPUQ_E2E_CACHE/<name>-<version>/crds/*.yaml  its CRDs, copied from its module
#   $GPUQ_E2E_CACHE/src/<group>-<versions>/       the wrapper module built from
# The controllers built against the same Kubernetes and controller-runtime
# minors share one wrapper module (group "cr024": JobSet, LWS and the Trainer
# on k8s.io v0.36, controller-runtime v0.24; KubeRay v1.5.0 needs
# controller-runtime v0.22 and has its own, group "kuberay"). A group's
# wrapper requires every member at its pinned version (the build checks that
# minimal version selection kept each pin) and is seeded with the members'
# go.sum files (a dependency the checksum database lacks still verifies), so
# its members build against one set of dependency versions: the packages they
# share (client-go, apimachinery, controller-runtime...) compile once, in one
# `go build` of the requested members or from the go build cache when a
# member is built later. Minimal version selection gives each member the
# group's highest version of a shared dependency (JobSet builds with LWS's
# k8s.io v0.36.2, the Trainer with JobSet v0.12.0 as its library). Little is
# shared with e2e/build.sh's kubernetes build: it has k8s.io v0.36.3 and
# older golang.org/x modules, so only leaf modules pinned alike (klog,
# k8s.io/utils, json-iterator...) come from its compile cache. Each
# binary is built to a temporary dir and renamed. GOCACHE and GOMODCACHE are
# go's, from the environment.
#
# Identities (the usernames gpuq's webhook trusts to create a parent's
# children, webhook/ WORKLOAD_*_CONTROLLER_USER): the ServiceAccount each
# project's own install uses.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${GPUQ_E2E_CACHE:-$HOME/.cache/gpuq-e2e}

# name|module|version|package to build|CRD dir in the module|SA namespace|SA name|group
upstream_row() {
	case $1 in
	jobset) echo "sigs.k8s.io/jobset|${JOBSET_VERSION:-v0.12.0}|sigs.k8s.io/jobset|config/components/crd/bases|jobset-system|jobset-controller-manager|cr024" ;;
	lws) echo "sigs.k8s.io/lws|${LWS_VERSION:-v0.9.0}|sigs.k8s.io/lws/cmd|config/crd/bases|lws-system|lws-controller-manager|cr024" ;;
	kuberay) echo "github.com/ray-project/kuberay/ray-operator|${KUBERAY_VERSION:-v1.5.0}|github.com/ray-project/kuberay/ray-operator|config/crd/bases|ray-system|kuberay-operator|kuberay" ;;
	trainer) echo "github.com/kubeflow/trainer/v2|${TRAINER_VERSION:-v2.2.1}|github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager|manifests/base/crds|kubeflow-system|kubeflow-trainer-controller-manager|cr024" ;;
	*) return 1 ;;
	esac
}
ALL="jobset lws kuberay trainer"
field() { upstream_row "$1" | cut -d'|' -f"$2"; }
dir_of() { echo "$CACHE/$1-$(field "$1" 2)"; }
done_of() { [ -x "$(dir_of "$1")/manager" ] && ls "$(dir_of "$1")"/crds/*.yaml >/dev/null 2>&1; }
die() { echo "upstream.sh: FAILED: $*" >&2; exit 1; }

if [ "${1:-}" = "--print" ]; then
	for n in $ALL; do echo "$(echo "$n" | tr a-z A-Z)_DIR=$(dir_of "$n")"; done
	exit 0
fi

members_of() { for n in $ALL; do [ "$(field "$n" 7)" = "$1" ] && echo "$n"; done; }

# Download NAME's module; print its dir.
mod_dir() {
	local name=$1 js=$CACHE/src/.dl-$1.json
	go mod download -json "$(field "$name" 1)@$(field "$name" 2)" >"$js" ||
		{ grep '"Error"' "$js" >&2 || true; die "go mod download $(field "$name" 1)@$(field "$name" 2)"; }
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p' "$js"
}

# build_group GROUP NAME...: write GROUP's wrapper module (all its members),
# build the NAMEs (the missing ones asked for) in one `go build`, install
# each binary with its CRDs.
build_group() {
	local group=$1 w n mdir bins t0 pkgs="" tag=""
	shift
	t0=$(date +%s)
	for n in $(members_of "$group"); do tag="$tag-$n-$(field "$n" 2)"; done
	w=$CACHE/src/$group$tag
	rm -rf "$w" && mkdir -p "$w"
	{
		echo "module gpuq.e2e/$group"
		echo
		echo "go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/').0"
		echo
		for n in $(members_of "$group"); do echo "require $(field "$n" 1) $(field "$n" 2)"; done
	} >"$w/go.mod"
	: >"$w/go.sum.all"
	for n in $(members_of "$group"); do
		echo "upstream.sh: $n $(field "$n" 2): fetching $(field "$n" 1)"
		mdir=$(mod_dir "$n")
		[ -d "$mdir/$(field "$n" 4)" ] || die "no $(field "$n" 4) in $mdir"
		[ ! -f "$mdir/go.sum" ] || cat "$mdir/go.sum" >>"$w/go.sum.all"
	done
	sort -u "$w/go.sum.all" >"$w/go.sum" && rm -f "$w/go.sum.all"
	for n in $(members_of "$group"); do
		[ "$(cd "$w" && go list -m -f '{{.Version}}' "$(field "$n" 1)")" = "$(field "$n" 2)" ] ||
			die "$n: minimal version selection in $w moved $(field "$n" 1) off $(field "$n" 2)"
	done
	for n in "$@"; do pkgs="$pkgs $(field "$n" 3)"; done
	bins=$w/bin.tmp
	rm -rf "$bins" && mkdir -p "$bins"
	echo "upstream.sh: $group: go build$pkgs"
	# shellcheck disable=SC2086 # pkgs is a list of package paths
	(cd "$w" && nice go build -trimpath -ldflags "-s -w" -o "$bins/" $pkgs) ||
		die "go build$pkgs (output above)"
	for n in "$@"; do
		local dir pkg
		dir=$(dir_of "$n") pkg=$(field "$n" 3) mdir=$(mod_dir "$n")
		rm -rf "$dir/crds" && mkdir -p "$dir/crds"
		for f in "$mdir/$(field "$n" 4)"/*.yaml; do
			case $f in */kustomization.yaml) continue ;; esac
			cp "$f" "$dir/crds/" && chmod u+w "$dir/crds/${f##*/}"
		done
		mv -f "$bins/${pkg##*/}" "$dir/manager"
		echo "upstream.sh: $n $(field "$n" 2): built ($dir)"
	done
	rm -rf "$bins"
	echo "upstream.sh:$(printf ' %s' "$@") (wrapper $group): built in $(($(date +%s) - t0)) s"
}

# ---- start / stop (from a scenario: gpuq.env loaded) ----

kc() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }

# A port nothing listens on, below the ephemeral range.
free_port() {
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 12000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
	done
	return 1
}

# poll_until DESC SECONDS CMD...: CMD every 0.2 s until it succeeds.
poll_until() {
	local desc=$1 deadline=$(($(date +%s) + $2))
	shift 2
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$deadline" ] || { echo "upstream.sh: timed out waiting for $desc" >&2; return 1; }
		sleep 0.2
	done
}

# The identity the project's own install gives its controller: a
# ServiceAccount (bound to cluster-admin here: the upstream RBAC is not what
# these tests check) and a kubeconfig with its token.
identity() {
	local name=$1 ns sa run=$E2E_RUN/upstream-$1
	ns=$(field "$name" 5) sa=$(field "$name" 6)
	kc create namespace "$ns" >/dev/null 2>&1 || true
	kc -n "$ns" create serviceaccount "$sa" >/dev/null 2>&1 || true
	kc create clusterrolebinding "gpuq-e2e-$name" --clusterrole cluster-admin \
		--serviceaccount "$ns:$sa" >/dev/null 2>&1 || true
	poll_until "ServiceAccount $ns/$sa" 30 kc -n "$ns" get serviceaccount "$sa"
	umask 077
	cat >"$run/kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "$APISERVER", certificate-authority: "$CA_CERT"}
users:
- name: $sa
  user: {token: "$(kc -n "$ns" create token "$sa" --duration=12h)"}
contexts:
- name: c
  context: {cluster: local, user: $sa}
current-context: c
YAML
	umask 022
}

# JobSet's four webhooks (defaulting and validating JobSets, its Pod
# webhooks for exclusive placement), as its module's config/components/
# webhook/manifests.yaml registers them, by URL, scoped to the namespaces
# labelled gpuq.dev/upstream-jobset=true (a stopped controller must not
# block the other scenarios' Pods).
jobset_webhooks() {
	local url=$1 ca=$2
	local sel="namespaceSelector: {matchLabels: {gpuq.dev/upstream-jobset: \"true\"}}"
	cat <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: e2e-jobset}
webhooks:
- {name: mjobset.kb.io, admissionReviewVersions: [v1], sideEffects: None, failurePolicy: Fail, $sel,
   clientConfig: {url: "$url/mutate-jobset-x-k8s-io-v1alpha2-jobset", caBundle: "$ca"},
   rules: [{apiGroups: [jobset.x-k8s.io], apiVersions: [v1alpha2], operations: [CREATE], resources: [jobsets]}]}
- {name: mpod.kb.io, admissionReviewVersions: [v1], sideEffects: None, failurePolicy: Fail, $sel,
   clientConfig: {url: "$url/mutate--v1-pod", caBundle: "$ca"},
   rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: e2e-jobset}
webhooks:
- {name: vjobset.kb.io, admissionReviewVersions: [v1], sideEffects: None, failurePolicy: Fail, $sel,
   clientConfig: {url: "$url/validate-jobset-x-k8s-io-v1alpha2-jobset", caBundle: "$ca"},
   rules: [{apiGroups: [jobset.x-k8s.io], apiVersions: [v1alpha2], operations: [CREATE, UPDATE], resources: [jobsets]}]}
- {name: vpod.kb.io, admissionReviewVersions: [v1], sideEffects: None, failurePolicy: Fail, $sel,
   clientConfig: {url: "$url/validate--v1-pod", caBundle: "$ca"},
   rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}
YAML
}

start_jobset() {
	local run=$E2E_RUN/upstream-jobset dir port health
	dir=$(dir_of jobset)
	port=$(free_port) health=$(free_port)
	"$GPUQ" certs --out "$run/certs" --ip 127.0.0.1 >/dev/null
	cat >"$run/config.yaml" <<YAML
apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
webhook: {port: $port, host: 127.0.0.1, certDir: "$run/certs"}
health: {healthProbeBindAddress: "127.0.0.1:$health"}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
YAML
	KUBECONFIG=$run/kubeconfig "$dir/manager" --config "$run/config.yaml" \
		--metrics-bind-address 0 >>"$run/log" 2>&1 &
	echo $! >"$run/pid"
	poll_until "JobSet controller ready" 60 curl -fs "http://127.0.0.1:$health/readyz" || {
		tail -20 "$run/log" >&2
		return 1
	}
	poll_until "JobSet webhook server on $port" 60 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
	jobset_webhooks "https://127.0.0.1:$port" "$(base64 -w0 "$run/certs/ca.crt")" |
		kc apply -f - >/dev/null
}

established() {
	[ "$(kc get crd "$1" -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}')" = True ]
}

# LeaderWorkerSet's webhooks (defaulting and validating LWSs, its Pod
# webhook that labels a group's Pods), as config/webhook/manifests.yaml has
# them, by URL, scoped like JobSet's.
lws_webhooks() {
	local url=$1 ca=$2
	local sel="namespaceSelector: {matchLabels: {gpuq.dev/upstream-lws: \"true\"}}"
	cat <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: e2e-lws}
webhooks:
- {name: mleaderworkerset.kb.io, admissionReviewVersions: [v1], sideEffects: None, failurePolicy: Fail, $sel,
   clientConfig: {url: "$url/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset", caBundle: "$ca"},
   rules: [{apiGroups: [leaderworkerset.x-k8s.io], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [leaderworkersets]}]}
- {name: mpod.kb.io, admissionReviewVersions: [v1], sideEffects: None, failurePolicy: Fail, $sel,
   clientConfig: {url: "$url/mutate--v1-pod", caBundle: "$ca"},
   rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: e2e-lws}
webhooks:
- {name: vleaderworkerset.kb.io, admissionReviewVersions: [v1], sideEffects: None, failurePolicy: Fail, $sel,
   clientConfig: {url: "$url/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset", caBundle: "$ca"},
   rules: [{apiGroups: [leaderworkerset.x-k8s.io], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [leaderworkersets]}]}
- {name: vpod.kb.io, admissionReviewVersions: [v1], sideEffects: None, failurePolicy: Fail, $sel,
   clientConfig: {url: "$url/validate--v1-pod", caBundle: "$ca"},
   rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]}
YAML
}

start_lws() {
	local run=$E2E_RUN/upstream-lws dir port health
	dir=$(dir_of lws)
	port=$(free_port) health=$(free_port)
	"$GPUQ" certs --out "$run/certs" --ip 127.0.0.1 >/dev/null
	cat >"$run/config.yaml" <<YAML
apiVersion: config.lws.x-k8s.io/v1alpha1
kind: Configuration
webhook: {port: $port, host: 127.0.0.1, certDir: "$run/certs"}
health: {healthProbeBindAddress: "127.0.0.1:$health"}
metrics: {bindAddress: "0"}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
YAML
	KUBECONFIG=$run/kubeconfig POD_NAMESPACE=lws-system "$dir/manager" --config "$run/config.yaml" \
		>>"$run/log" 2>&1 &
	echo $! >"$run/pid"
	poll_until "LWS controller ready" 60 curl -fs "http://127.0.0.1:$health/readyz" || {
		tail -20 "$run/log" >&2
		return 1
	}
	poll_until "LWS webhook server on $port" 60 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
	lws_webhooks "https://127.0.0.1:$port" "$(base64 -w0 "$run/certs/ca.crt")" |
		kc apply -f - >/dev/null
}

# KubeRay's operator: its webhooks are off unless ENABLE_WEBHOOKS=true (its
# install's default too), so none is registered.
start_kuberay() {
	local run=$E2E_RUN/upstream-kuberay dir health
	dir=$(dir_of kuberay)
	health=$(free_port)
	KUBECONFIG=$run/kubeconfig "$dir/manager" --metrics-addr 0 \
		--health-probe-bind-address "127.0.0.1:$health" --enable-leader-election=false \
		>>"$run/log" 2>&1 &
	echo $! >"$run/pid"
	poll_until "KubeRay operator ready" 60 curl -fs "http://127.0.0.1:$health/readyz" || {
		tail -20 "$run/log" >&2
		return 1
	}
}

# Kubeflow Trainer's TrainJob webhooks (defaulting and validating), as its
# manifests/base/webhook registers them, by URL, scoped like JobSet's; its
# runtime validators (cluster-scoped objects, which a namespace selector
# cannot scope) are left out: the scenarios write their runtimes as the
# project ships them.
trainer_webhooks() {
	local url=$1 ca=$2
	local sel="namespaceSelector: {matchLabels: {gpuq.dev/upstream-trainer: \"true\"}}"
	cat <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: e2e-trainer}
webhooks:
- {name: defaulter.trainjob.trainer.kubeflow.org, admissionReviewVersions: [v1], sideEffects: None, failurePolicy: Fail, $sel,
   clientConfig: {url: "$url/mutate-trainer-kubeflow-org-v1alpha1-trainjob", caBundle: "$ca"},
   rules: [{apiGroups: [trainer.kubeflow.org], apiVersions: [v1alpha1], operations: [CREATE, UPDATE], resources: [trainjobs]}]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: e2e-trainer}
webhooks:
- {name: validator.trainjob.trainer.kubeflow.org, admissionReviewVersions: [v1], sideEffects: None, failurePolicy: Fail, $sel,
   clientConfig: {url: "$url/validate-trainer-kubeflow-org-v1alpha1-trainjob", caBundle: "$ca"},
   rules: [{apiGroups: [trainer.kubeflow.org], apiVersions: [v1alpha1], operations: [CREATE, UPDATE], resources: [trainjobs]}]}
YAML
}

# The Trainer's controller manager: its own certificate management off
# (it would write a Secret and the webhook configurations of its install);
# controller-runtime reads the serving certificate from
# $TMPDIR/k8s-webhook-server/serving-certs. Needs the JobSet CRDs (start
# jobset first).
start_trainer() {
	local run=$E2E_RUN/upstream-trainer dir port health
	dir=$(dir_of trainer)
	port=$(free_port) health=$(free_port)
	mkdir -p "$run/k8s-webhook-server"
	"$GPUQ" certs --out "$run/k8s-webhook-server/serving-certs" --ip 127.0.0.1 >/dev/null
	cat >"$run/config.yaml" <<YAML
apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
webhook: {port: $port, host: 127.0.0.1}
health: {healthProbeBindAddress: "127.0.0.1:$health", readinessEndpointName: readyz, livenessEndpointName: healthz}
metrics: {bindAddress: "0"}
leaderElection: {leaderElect: false}
certManagement: {enable: false}
YAML
	KUBECONFIG=$run/kubeconfig TMPDIR=$run "$dir/manager" --config "$run/config.yaml" \
		>>"$run/log" 2>&1 &
	echo $! >"$run/pid"
	poll_until "Trainer controller ready" 60 curl -fs "http://127.0.0.1:$health/readyz" || {
		tail -20 "$run/log" >&2
		return 1
	}
	poll_until "Trainer webhook server on $port" 60 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
	trainer_webhooks "https://127.0.0.1:$port" \
		"$(base64 -w0 "$run/k8s-webhook-server/serving-certs/ca.crt")" | kc apply -f - >/dev/null
}

start_one() {
	local name=$1 dir run=$E2E_RUN/upstream-$1
	upstream_row "$name" >/dev/null || die "unknown upstream \"$name\""
	: "${E2E_RUN:?start needs the scenario environment (gpuq.env)}"
	done_of "$name" || "$HERE/upstream.sh" build "$name" >&2 || die "build $name"
	dir=$(dir_of "$name")
	mkdir -p "$run"
	# its CRDs as they ship in its module (server-side: some are too big for
	# the last-applied annotation)
	kc apply --server-side --force-conflicts -f "$dir/crds/" >/dev/null || die "CRDs of $name"
	for f in "$dir"/crds/*.yaml; do
		crd=$(sed -n 's/^  name: \([a-z0-9.-]*\)$/\1/p' "$f" | head -1)
		[ -n "$crd" ] && poll_until "CRD $crd established" 60 established "$crd"
	done
	identity "$name"
	"start_$name" || die "start $name (log: $run/log)"
	echo "upstream.sh: $name $(field "$name" 2) running (pid $(cat "$run/pid"), log $run/log)"
}

stop_one() {
	local name=$1 run=$E2E_RUN/upstream-$1 pid
	kc delete mutatingwebhookconfiguration "e2e-$name" --ignore-not-found >/dev/null 2>&1 || true
	kc delete validatingwebhookconfiguration "e2e-$name" --ignore-not-found >/dev/null 2>&1 || true
	[ -f "$run/pid" ] || return 0
	pid=$(cat "$run/pid")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$run/pid"
}

cmd=${1:-}
shift || true
case $cmd in
build)
	[ $# -gt 0 ] || set -- jobset lws kuberay trainer
	for n in "$@"; do upstream_row "$n" >/dev/null || die "unknown upstream \"$n\""; done
	need=0
	for n in "$@"; do done_of "$n" || need=1; done
	if [ $need = 0 ]; then
		for n in "$@"; do echo "upstream.sh: $n: up to date ($(dir_of "$n"))"; done
		exit 0
	fi
	export PATH=$PATH:/usr/local/go/bin GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
	command -v go >/dev/null 2>&1 || die "go is not on PATH"
	mkdir -p "$CACHE/src" || die "cannot create $CACHE"
	if command -v flock >/dev/null 2>&1; then
		exec 8>"$CACHE/.upstream.lock"
		flock 8 || die "cannot lock $CACHE/.upstream.lock"
	fi
	for g in $(for n in "$@"; do field "$n" 7; done | sort -u); do
		want=""
		for n in "$@"; do
			[ "$(field "$n" 7)" = "$g" ] || continue
			if done_of "$n"; then echo "upstream.sh: $n $(field "$n" 2): present ($(dir_of "$n"))"; else want="$want $n"; fi
		done
		# shellcheck disable=SC2086 # want is a list of names
		[ -z "$want" ] || build_group "$g" $want
	done
	;;
start) start_one "${1:?start NAME}" ;;
stop) stop_one "${1:?stop NAME}" ;;
*)
	echo "usage: e2e/upstream.sh build NAME... | start NAME | stop NAME | --print" >&2
	exit 2
	;;
esac
