#!/usr/bin/env bash
# e2e/upstream.sh: the real upstream controllers of the workload kinds gpuq
# admits (JobSet, LeaderWorkerSet, KubeRay, Kubeflow Trainer), built from their
# Go modules into the e2e cache, and started out of cluster against the e2e
# control plane by the scenarios that need them (never by e2e/up.sh: a
# scenario that does not use one does not pay for it).
#
#   e2e/upstream.sh build NAME...     build what is missing (flock-protected,
#                                     like e2e/build.sh); prints each build's
#                                     wall time
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
#   $GPUQ_E2E_CACHE/src/<name>-<version>/         the wrapper module built from
# A wrapper module requires the upstream module at its version and is seeded
# with the upstream go.sum (a dependency the checksum database lacks still
# verifies). Each binary is built to a temporary name and renamed.
#
# Identities (the usernames gpuq's webhook trusts to create a parent's
# children, webhook/ WORKLOAD_*_CONTROLLER_USER): the ServiceAccount each
# project's own install uses.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${GPUQ_E2E_CACHE:-$HOME/.cache/gpuq-e2e}

# name|module|version|package to build|CRD dir in the module|SA namespace|SA name
upstream_row() {
	case $1 in
	jobset) echo "sigs.k8s.io/jobset|${JOBSET_VERSION:-v0.12.0}|sigs.k8s.io/jobset|config/components/crd/bases|jobset-system|jobset-controller-manager" ;;
	lws) echo "sigs.k8s.io/lws|${LWS_VERSION:-v0.9.0}|sigs.k8s.io/lws/cmd|config/crd/bases|lws-system|lws-controller-manager" ;;
	kuberay) echo "github.com/ray-project/kuberay/ray-operator|${KUBERAY_VERSION:-v1.5.0}|github.com/ray-project/kuberay/ray-operator|config/crd/bases|ray-system|kuberay-operator" ;;
	trainer) echo "github.com/kubeflow/trainer/v2|${TRAINER_VERSION:-v2.2.1}|github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager|manifests/base/crds|kubeflow-system|kubeflow-trainer-controller-manager" ;;
	*) return 1 ;;
	esac
}
field() { upstream_row "$1" | cut -d'|' -f"$2"; }
dir_of() { echo "$CACHE/$1-$(field "$1" 2)"; }
done_of() { [ -x "$(dir_of "$1")/manager" ] && ls "$(dir_of "$1")"/crds/*.yaml >/dev/null 2>&1; }
die() { echo "upstream.sh: FAILED: $*" >&2; exit 1; }

if [ "${1:-}" = "--print" ]; then
	for n in jobset lws kuberay trainer; do echo "$(echo "$n" | tr a-z A-Z)_DIR=$(dir_of "$n")"; done
	exit 0
fi

build_one() {
	local name=$1 mod ver pkg crd dir w mdir t0
	mod=$(field "$name" 1) ver=$(field "$name" 2) pkg=$(field "$name" 3) crd=$(field "$name" 4)
	dir=$(dir_of "$name")
	if done_of "$name"; then
		echo "upstream.sh: $name $ver: present ($dir)"
		return 0
	fi
	t0=$(date +%s)
	echo "upstream.sh: $name $ver: fetching $mod"
	go mod download -json "$mod@$ver" >"$CACHE/src/.dl-$name.json" ||
		{ grep '"Error"' "$CACHE/src/.dl-$name.json" >&2 || true; die "go mod download $mod@$ver"; }
	mdir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p' "$CACHE/src/.dl-$name.json")
	[ -d "$mdir/$crd" ] || die "no $crd in $mdir"
	w=$CACHE/src/$name-$ver
	rm -rf "$w" && mkdir -p "$w"
	{
		echo "module gpuq.e2e/$name"
		echo
		echo "go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/').0"
		echo
		echo "require $mod $ver"
	} >"$w/go.mod"
	[ -f "$mdir/go.sum" ] && cp "$mdir/go.sum" "$w/go.sum"
	mkdir -p "$dir/crds"
	echo "upstream.sh: $name: go build $pkg"
	(cd "$w" && nice go build -trimpath -ldflags "-s -w" -o "$dir/manager.tmp" "$pkg") ||
		die "go build $pkg (output above)"
	for f in "$mdir/$crd"/*.yaml; do
		case $f in */kustomization.yaml) continue ;; esac
		cp "$f" "$dir/crds/" && chmod u+w "$dir/crds/${f##*/}"
	done
	mv -f "$dir/manager.tmp" "$dir/manager"
	echo "upstream.sh: $name $ver: built in $(( $(date +%s) - t0 )) s ($dir)"
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
	for n in "$@"; do build_one "$n"; done
	;;
*)
	echo "usage: e2e/upstream.sh build NAME... | start NAME | stop NAME | --print" >&2
	exit 2
	;;
esac
