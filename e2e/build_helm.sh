#!/usr/bin/env bash
# e2e/build_helm.sh: build the pinned Helm the chart tests run (charts/gpuq:
# e2e/test_helm.sh, e2e/test_install.sh), from its Go module, as e2e/build.sh
# builds the control plane: no prebuilt download.
#
# Usage: e2e/build_helm.sh           build it if missing, else say "up to date"
#        e2e/build_helm.sh --print   print HELM_DIR=... (a shell line) and exit
#
# Layout: $GPUQ_E2E_CACHE (default $HOME/.cache/gpuq-e2e)/helm-$HELM_VERSION/helm,
# built in src/helm-$HELM_VERSION (a wrapper module requiring helm.sh/helm/v3,
# seeded with Helm's own go.sum so every dependency verifies). Stamped as
# Helm's Makefile stamps a release: its version, and the Kubernetes version
# its client-go is (what `helm lint` and `.Capabilities` assume offline).
#
# Cold: 743 s measured on 2 cores shared with other builds (load average
# about 18), most of it compiling the Kubernetes 1.37 client libraries Helm
# uses (the control plane's are 1.36, so e2e/build.sh's build cache does not
# cover them). Once built, "up to date" in a second.
set -eu

HELM_VERSION=${HELM_VERSION:-v3.22.0}
CACHE=${GPUQ_E2E_CACHE:-$HOME/.cache/gpuq-e2e}
HELM_DIR=$CACHE/helm-$HELM_VERSION

if [ "${1:-}" = "--print" ]; then
	echo "HELM_DIR=$HELM_DIR"
	exit 0
fi
if [ -x "$HELM_DIR/helm" ]; then
	echo "build_helm.sh: up to date (helm $HELM_VERSION in $CACHE)"
	exit 0
fi

export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
START=$(date +%s)
step() { echo "build_helm.sh: [$(( $(date +%s) - START ))s] $*"; }
die() { echo "build_helm.sh: FAILED: $*" >&2; exit 1; }
command -v go >/dev/null 2>&1 || die "go is not on PATH (Helm $HELM_VERSION needs Go >= 1.26)"
mkdir -p "$CACHE/src" || die "cannot create cache dir $CACHE"

# One build at a time per cache; a lock of its own, so it never waits on
# e2e/build.sh's.
if command -v flock >/dev/null 2>&1; then
	exec 9>"$CACHE/.build-helm.lock"
	flock 9 || die "cannot lock $CACHE/.build-helm.lock"
	[ ! -x "$HELM_DIR/helm" ] || { echo "build_helm.sh: built meanwhile"; exit 0; }
fi

step "helm $HELM_VERSION: fetching helm.sh/helm/v3 (go $(go env GOVERSION))"
go mod download -json "helm.sh/helm/v3@$HELM_VERSION" >"$CACHE/src/.helm-dl.json" || {
	grep '"Error"' "$CACHE/src/.helm-dl.json" >&2 || true
	die "go mod download helm.sh/helm/v3@$HELM_VERSION"
}
HDIR=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p' "$CACHE/src/.helm-dl.json")
[ -f "$HDIR/go.mod" ] || die "no go.mod in $HDIR"
# client-go v0.X.Y is Kubernetes 1.X (Helm's Makefile derives the same).
CG=$(sed -n 's/^[[:space:]]*k8s.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "$HDIR/go.mod" | head -1)
[ -n "$CG" ] || die "no k8s.io/client-go in $HDIR/go.mod"

W=$CACHE/src/helm-$HELM_VERSION
rm -rf "$W" && mkdir -p "$W"
{
	echo "module gpuq.e2e/helm"
	echo
	echo "go $(go env GOVERSION | sed 's/^go//; s/^\([0-9]*\.[0-9]*\).*/\1/').0"
	echo
	echo "require helm.sh/helm/v3 $HELM_VERSION"
} >"$W/go.mod"
cp "$HDIR/go.sum" "$W/go.sum"

LDF="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
LDF="$LDF -X helm.sh/helm/v3/internal/version.metadata= -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for p in pkg/lint/rules pkg/chartutil; do
	LDF="$LDF -X helm.sh/helm/v3/$p.k8sVersionMajor=1 -X helm.sh/helm/v3/$p.k8sVersionMinor=$CG"
done
mkdir -p "$HELM_DIR"
step "go build helm.sh/helm/v3/cmd/helm (Kubernetes 1.$CG libraries)"
(cd "$W" && go build -trimpath -ldflags "$LDF" -o "$HELM_DIR/helm.tmp" helm.sh/helm/v3/cmd/helm) ||
	die "go build of helm $HELM_VERSION (output above)"
mv -f "$HELM_DIR/helm.tmp" "$HELM_DIR/helm"
"$HELM_DIR/helm" version --short | grep -q "^$HELM_VERSION" ||
	die "helm version does not report $HELM_VERSION"
step "done: $HELM_DIR/helm ($("$HELM_DIR/helm" version --short))"
