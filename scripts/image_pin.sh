#!/bin/sh
# scripts/image_pin.sh: pin gpuq's image by digest in deploy/ and the chart
# (`make image-pin`).
#
# The image is built by scripts/image.sh, twice, and pinned only when both
# builds give the same digest (a digest nobody can rebuild is not pinned).
# Its revision (the image's label and /usr/share/doc/gpuq/revision) and its
# time (SOURCE_DATE_EPOCH) are those of the last commit that changed
# anything outside deploy/ and charts/, so committing the pin does not change
# what it pins: `make image-pin` on that commit gives the same digest again.
# The tree outside deploy/ and charts/ must be that commit's (no uncommitted
# change there), and BIN must be built from it (`make` first).
#
# Writes the digest into deploy/40-deployment.yaml (image: gpuq@sha256:...),
# deploy/kustomization.yaml (images: digest) and charts/gpuq/values.yaml
# (image.digest); unit/suite_image_pin.sh checks that the three agree.
#
#   scripts/image_pin.sh [BIN]      BIN: the gpuq binary (default bin/gpuq)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BIN=${1:-bin/gpuq}
die() { echo "image_pin.sh: $*" >&2; exit 1; }

OUTSIDE=". :(exclude)deploy :(exclude)charts"
# shellcheck disable=SC2086 # OUTSIDE is a list of pathspecs
REV=$(git log -1 --format=%H -- $OUTSIDE) || die "not a git checkout"
[ -n "$REV" ] || die "no commit outside deploy/ and charts/"
# shellcheck disable=SC2086
if [ -n "$(git status --porcelain --untracked-files=no -- $OUTSIDE)" ]; then
	die "uncommitted changes outside deploy/ and charts/: commit them first (the pin names a commit)"
fi
SHORT=$(git rev-parse --short=12 "$REV")
EPOCH=$(git log -1 --format=%ct "$REV")

build() { GPUQ_IMAGE_REV=$SHORT SOURCE_DATE_EPOCH=$EPOCH sh scripts/image.sh "$BIN"; }
build >&2 || die "scripts/image.sh failed"
first=$(cat build/image/digest)
build >&2 || die "scripts/image.sh failed the second time"
second=$(cat build/image/digest)
[ "$first" = "$second" ] || die "not reproducible: two builds gave $first and $second; nothing pinned"
case $first in sha256:*) ;; *) die "scripts/image.sh wrote no digest: $first" ;; esac

sed -i "s|^\(          image: \)gpuq[@:][^ ]*\( #.*\)*$|\1gpuq@$first # make image-pin (scripts/image_pin.sh): revision $SHORT|" \
	deploy/40-deployment.yaml
sed -i -E "s%^(    )(newTag|digest): .*$%\1digest: $first # make image-pin; or kustomize edit set image gpuq=REGISTRY/gpuq@DIGEST%" \
	deploy/kustomization.yaml
sed -i "s|^\(  digest: \).*$|\1\"$first\" # make image-pin (scripts/image_pin.sh): revision $SHORT; wins over tag|" \
	charts/gpuq/values.yaml
grep -q "gpuq@$first" deploy/40-deployment.yaml || die "deploy/40-deployment.yaml: no image line rewritten"
grep -q "digest: $first" deploy/kustomization.yaml || die "deploy/kustomization.yaml: no images entry rewritten"
grep -q "digest: \"$first\"" charts/gpuq/values.yaml || die "charts/gpuq/values.yaml: no image.digest rewritten"
echo "image-pin: gpuq@$first (revision $SHORT, built twice to the same digest) in deploy/ and charts/gpuq/values.yaml"
