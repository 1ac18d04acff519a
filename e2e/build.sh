#!/usr/bin/env bash
# e2e/build.sh: build the pinned upstream binaries the end-to-end tests run,
# from Go modules only (no containers, no prebuilt downloads).
#
# Usage: e2e/build.sh            build whatever is missing, else say "up to date"
#        e2e/build.sh --print    print the cache dirs (shell lines) and exit
#
# Layout (outside the repository, keyed by version so versions never mix):
#   $GPUQ_E2E_CACHE (default $HOME/.cache/gpuq-e2e)/
#     k8s-v1.36.3/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl}
#     etcd-v3.6.16/etcd
#     kwok-v0.8.0/kwok
#     kwok-v0.8.0/stage/node/fast/*.yaml     kwok Stages: nodes become Ready
#     kwok-v0.8.0/stage/pod/general/*.yaml   pods created, Ready, completed, deleted
#     src/<name>-<version>/                  the wrapper Go modules built from
#
# Environment: GPUQ_E2E_CACHE, K8S_VERSION, ETCD_VERSION, KWOK_VERSION override
# the defaults below. GOCACHE and GOMODCACHE are go's, from the environment
# (so repeated builds share the module downloads and the compile cache; point
# all three at empty dirs to time a cold build).
#
# Why wrapper modules: k8s.io/kubernetes replaces its 33 staging modules
# (k8s.io/api, client-go, ...) with ./staging paths, which a dependent module
# does not inherit; the wrapper requires k8s.io/kubernetes and replaces each
# staging module with its published v0.X.Y tag, the list read from that
# version's own go.mod. kwok's and etcd's wrappers are seeded with the upstream
# module's go.sum, so a dependency the checksum database lacks still verifies.
#
# A cold build on 2 cores took 13.5 min (kubernetes 10, etcd 1, kwok 2), and
# 20 min with other builds competing; one compile or link peaks at ~2 GB. The
# go build cache makes a rebuild much faster. Each binary is built to a
# temporary name and renamed, so an interrupted build never leaves a
# half-written binary that counts as done.
set -eu

K8S_VERSION=${K8S_VERSION:-v1.36.3}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}     # newest 3.6.x on the module proxy when pinned
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
CACHE=${GPUQ_E2E_CACHE:-$HOME/.cache/gpuq-e2e}

K8S_DIR=$CACHE/k8s-$K8S_VERSION
ETCD_DIR=$CACHE/etcd-$ETCD_VERSION
KWOK_DIR=$CACHE/kwok-$KWOK_VERSION
K8S_BINS="kube-apiserver kube-controller-manager kube-scheduler kubectl"

if [ "${1:-}" = "--print" ]; then
	echo "K8S_DIR=$K8S_DIR"
	echo "ETCD_DIR=$ETCD_DIR"
	echo "KWOK_DIR=$KWOK_DIR"
	exit 0
fi

export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0

START=$(date +%s)
step() { echo "build.sh: [$(( $(date +%s) - START ))s] $*"; }
die() { echo "build.sh: FAILED: $*" >&2; exit 1; }

# --- what is missing -------------------------------------------------------
k8s_done() {
	for b in $K8S_BINS; do [ -x "$K8S_DIR/$b" ] || return 1; done
}
etcd_done() { [ -x "$ETCD_DIR/etcd" ]; }
kwok_done() {
	[ -x "$KWOK_DIR/kwok" ] && [ -f "$KWOK_DIR/stage/node/fast/node-initialize.yaml" ] &&
		[ -f "$KWOK_DIR/stage/pod/general/pod-complete.yaml" ]
}

if k8s_done && etcd_done && kwok_done; then
	echo "build.sh: up to date (k8s $K8S_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION in $CACHE)"
	exit 0
fi

command -v go >/dev/null 2>&1 || die "go is not on PATH (need Go >= 1.26 for k8s $K8S_VERSION)"
mkdir -p "$CACHE/src" || die "cannot create cache dir $CACHE"

# Only one build at a time per cache (two test runs starting together).
if command -v flock >/dev/null 2>&1; then
	exec 9>"$CACHE/.build.lock"
	flock 9 || die "cannot lock $CACHE/.build.lock"
fi

step "go $(go env GOVERSION), cache $CACHE"

# Download module $1@$2 and print one field ($3, e.g. Dir or GoMod) of its json.
mod_field() {
	# -json reports a failure in its "Error" field on stdout: show it.
	if ! go mod download -json "$1@$2" >"$CACHE/src/.dl.json"; then
		grep '"Error"' "$CACHE/src/.dl.json" >&2 || true
		die "go mod download $1@$2; is the version right and the module proxy reachable?"
	fi
	sed -n "s/^[[:space:]]*\"$3\": \"\(.*\)\",*$/\1/p" "$CACHE/src/.dl.json"
}

# Write a wrapper module in dir $1 named $2 requiring $3 at $4; stdin is
# appended to go.mod (extra replace lines).
wrapper() {
	rm -rf "$1" && mkdir -p "$1"
	{
		echo "module $2"
		echo
		echo "go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/').0"
		echo
		echo "require $3 $4"
		cat
	} >"$1/go.mod"
}

# go build $2 (a package path) in wrapper dir $1 into $3, atomically; $4 ldflags.
build_bin() {
	step "go build $2 -> $3"
	(cd "$1" && go build -trimpath -ldflags "$4" -o "$3.tmp" "$2") ||
		die "go build $2 (output above)"
	mv -f "$3.tmp" "$3"
}

# --- kubernetes --------------------------------------------------------------
if k8s_done; then
	step "k8s $K8S_VERSION: present"
else
	step "k8s $K8S_VERSION: downloading k8s.io/kubernetes (large zip, first time only)"
	KMOD=$(mod_field k8s.io/kubernetes "$K8S_VERSION" GoMod)
	[ -f "$KMOD" ] || die "no go.mod for k8s.io/kubernetes@$K8S_VERSION"
	# "k8s.io/api => ./staging/src/k8s.io/api" -> staging module k8s.io/api,
	# published as v0.<minor>.<patch> (v1.36.3 -> v0.36.3).
	STAGING_V=v0.${K8S_VERSION#v1.}
	STAGING=$(sed -n 's/^[[:space:]]*\([^[:space:]]*\) => \.\/staging\/.*/\1/p' "$KMOD")
	[ -n "$STAGING" ] || die "found no ./staging replaces in $KMOD"
	step "k8s: $(echo "$STAGING" | wc -l) staging modules -> $STAGING_V"
	W=$CACHE/src/k8s-$K8S_VERSION
	{
		echo
		echo "replace ("
		for m in $STAGING; do echo "	$m => $m $STAGING_V"; done
		echo ")"
	} | wrapper "$W" gpuq.e2e/k8s k8s.io/kubernetes "$K8S_VERSION"
	MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)
	LDF="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
	LDF="$LDF -X k8s.io/component-base/version.gitMajor=1"
	LDF="$LDF -X k8s.io/component-base/version.gitMinor=$MINOR"
	LDF="$LDF -X k8s.io/component-base/version.gitTreeState=clean"
	LDF="$LDF -X k8s.io/component-base/version.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	mkdir -p "$K8S_DIR"
	# One `go build` for all four: the go command schedules the shared
	# packages and the four links together.
	PKGS=""
	for b in $K8S_BINS; do PKGS="$PKGS k8s.io/kubernetes/cmd/$b"; done
	step "go build$PKGS (the long step: 10-15 min cold on 2 cores)"
	rm -rf "$K8S_DIR/.tmp" && mkdir -p "$K8S_DIR/.tmp"
	# shellcheck disable=SC2086 # PKGS is a list of package paths
	(cd "$W" && go build -trimpath -ldflags "$LDF" -o "$K8S_DIR/.tmp/" $PKGS) ||
		die "go build of kubernetes $K8S_VERSION (output above)"
	for b in $K8S_BINS; do mv -f "$K8S_DIR/.tmp/$b" "$K8S_DIR/$b"; done
	rmdir "$K8S_DIR/.tmp"
	"$K8S_DIR/kubectl" version --client 2>/dev/null | grep -q "$K8S_VERSION" ||
		die "kubectl does not report $K8S_VERSION (version stamping failed)"
fi

# --- etcd --------------------------------------------------------------------
if etcd_done; then
	step "etcd $ETCD_VERSION: present"
else
	step "etcd $ETCD_VERSION: fetching go.etcd.io/etcd/server/v3"
	EDIR=$(mod_field go.etcd.io/etcd/server/v3 "$ETCD_VERSION" Dir)
	W=$CACHE/src/etcd-$ETCD_VERSION
	wrapper "$W" gpuq.e2e/etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION" </dev/null
	[ -f "$EDIR/go.sum" ] && cp "$EDIR/go.sum" "$W/go.sum"
	mkdir -p "$ETCD_DIR"
	build_bin "$W" go.etcd.io/etcd/server/v3 "$ETCD_DIR/etcd" "-s -w"
	"$ETCD_DIR/etcd" --version | grep -q "${ETCD_VERSION#v}" ||
		die "etcd --version does not report $ETCD_VERSION"
fi

# --- kwok --------------------------------------------------------------------
if kwok_done; then
	step "kwok $KWOK_VERSION: present"
else
	step "kwok $KWOK_VERSION: fetching sigs.k8s.io/kwok"
	KDIR=$(mod_field sigs.k8s.io/kwok "$KWOK_VERSION" Dir)
	[ -d "$KDIR/kustomize/stage" ] || die "no kustomize/stage in $KDIR"
	W=$CACHE/src/kwok-$KWOK_VERSION
	wrapper "$W" gpuq.e2e/kwok sigs.k8s.io/kwok "$KWOK_VERSION" </dev/null
	[ -f "$KDIR/go.sum" ] && cp "$KDIR/go.sum" "$W/go.sum"
	mkdir -p "$KWOK_DIR"
	build_bin "$W" sigs.k8s.io/kwok/cmd/kwok "$KWOK_DIR/kwok" \
		"-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION"
	# The Stage YAMLs (not the kustomization files) next to the binary.
	for s in node/fast pod/general; do
		rm -rf "$KWOK_DIR/stage/$s" && mkdir -p "$KWOK_DIR/stage/$s"
		for f in "$KDIR/kustomize/stage/$s"/*.yaml; do
			case $f in */kustomization.yaml) continue ;; esac
			cp "$f" "$KWOK_DIR/stage/$s/" && chmod u+w "$KWOK_DIR/stage/$s/${f##*/}"
		done
	done
fi

if ! { k8s_done && etcd_done && kwok_done; }; then die "some binary is still missing after the build"; fi
step "done: $K8S_DIR $ETCD_DIR $KWOK_DIR"
