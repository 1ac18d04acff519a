#!/bin/sh
# suite_image_pin: deploy/ and the chart name gpuq's image by the same digest
# (`make image-pin`, scripts/image_pin.sh), as name@sha256:<64 hex digits>
# (TAP): deploy/40-deployment.yaml's container image, deploy/
# kustomization.yaml's images entry (kustomize would otherwise replace the
# digest by its tag) and charts/gpuq/values.yaml's image.digest, which the
# chart's gpuq.image renders as repository@digest.
# Args: DIR (default .): the checkout whose deploy/ and charts/ are read.
set -u
. "$(dirname "$0")/tap.sh"
D=${1:-.}
HEX='[0-9a-f]\{64\}'

dep=$(sed -n 's/^          image: \([^ ]*\).*/\1/p' "$D/deploy/40-deployment.yaml")
kus=$(sed -n 's/^    digest: \([^ ]*\).*/\1/p' "$D/deploy/kustomization.yaml")
kus_tag=$(sed -n 's/^    newTag: \([^ ]*\).*/\1/p' "$D/deploy/kustomization.yaml")
repo=$(sed -n '/^image:/,/^[^ ]/s/^  repository: \([^ ]*\).*/\1/p' "$D/charts/gpuq/values.yaml")
val=$(sed -n '/^image:/,/^[^ ]/s/^  digest: "\{0,1\}\([^ "]*\)"\{0,1\}.*/\1/p' "$D/charts/gpuq/values.yaml")

check "deploy/40-deployment.yaml: one image, gpuq@sha256:<64 hex> (got \"$dep\")" \
	sh -c 'printf "%s\n" "$1" | grep -qx "gpuq@sha256:$2"' _ "$dep" "$HEX"
same "deploy/kustomization.yaml: the images entry pins the same digest" "$kus" "${dep#gpuq@}"
same "deploy/kustomization.yaml: no newTag beside it (it would replace the digest)" "$kus_tag" ""
same "charts/gpuq/values.yaml: image.repository is the Deployment's name" "$repo" "${dep%%@*}"
same "charts/gpuq/values.yaml: image.digest is the same digest" "$val" "${dep#gpuq@}"
check "charts/gpuq: gpuq.image renders repository@digest when a digest is set" \
	grep -q '{{ .Values.image.repository }}@{{ .Values.image.digest }}' \
	"$D/charts/gpuq/templates/_helpers.tpl"
rev=$(sed -n 's/.*image-pin.*revision \([0-9a-f]*\).*/\1/p' "$D/deploy/40-deployment.yaml")
last=$(git -C "$D" log -1 --format=%h --abbrev=12 -- . ':(exclude)deploy' ':(exclude)charts' 2>/dev/null)
if [ -n "$rev" ] && [ -n "$last" ] && [ "$rev" != "$last" ]; then
	echo "# the pin is of revision $rev; the last commit outside deploy/ and charts/ is $last: run make image-pin"
fi
tap_end
