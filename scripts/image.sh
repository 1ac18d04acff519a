#!/bin/sh
# scripts/image.sh: gpuq's OCI image, built here with no container registry
# (`make image`; `make image-check` builds it twice and compares digests).
#
#   scripts/image.sh [BIN]        BIN: the gpuq binary (default bin/gpuq)
#
# The root filesystem holds only gpuq and what it needs at run time, taken
# from this machine's Debian packages: the binary (debug info stripped), the
# shared libraries `ldd` names and the loader, libgcc_s (glibc loads it to
# unwind a cancelled thread), the CA bundle, /etc/passwd and /etc/group
# entries for root and gpuq (65532), an nsswitch.conf, the empty mount
# points of the Deployment's volumes, and under /usr/share/doc/gpuq the
# Debian packages the libraries came from (name and version) with their
# copyright files. No shell, no package manager. `buildah from scratch`
# takes it as one layer; the image runs as 65532:65532, and gpuq writes only
# to its volumes, so the root filesystem can be mounted read-only.
#
# Reproducible: the same commit (with the same Debian packages) gives the
# same image digest. SOURCE_DATE_EPOCH is the commit's time (unless set);
# buildah commit --timestamp sets every file's mtime in the layer and the
# image's created time to it; files are added in sorted order with fixed
# modes and owner 0:0; the binary is built path-independent
# (-ffile-prefix-map in the Makefile). A tree with uncommitted changes is
# said so: its image is the tree's, not the commit's.
#
# Output: build/image/gpuq.oci.tar, an OCI archive holding gpuq:<tag> (tag:
# the commit's short hash, "-dirty" when the tree has changes);
# build/image/digest (the manifest's sha256, what a registry shows), tag,
# and binary.sha256 (the gpuq it holds). Take it to a registry with
#   skopeo copy oci-archive:build/image/gpuq.oci.tar docker://REGISTRY/gpuq:TAG
# or `podman load -i build/image/gpuq.oci.tar` then `podman push`.
#
# Needs buildah and skopeo (scripts/setup.sh installs them). Buildah's store
# is build/image/storage (vfs driver), private to this checkout: the
# machine's own container store is not touched.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BIN=${1:-bin/gpuq}
OUT=build/image
STAGE=$OUT/rootfs
die() { echo "image.sh: $*" >&2; exit 1; }

for t in buildah skopeo ldd strip sha256sum; do
	command -v "$t" >/dev/null 2>&1 || die "$t is not installed (run scripts/setup.sh)"
done
[ -x "$BIN" ] || die "no $BIN: run make first"

# The commit: from git, or GPUQ_IMAGE_REV and SOURCE_DATE_EPOCH for a tree
# that is not a checkout (a copy of one).
if [ -n "${GPUQ_IMAGE_REV:-}" ]; then
	REV=$GPUQ_IMAGE_REV
	[ -n "${SOURCE_DATE_EPOCH:-}" ] || die "GPUQ_IMAGE_REV needs SOURCE_DATE_EPOCH"
else
	REV=$(git rev-parse --short=12 HEAD 2>/dev/null) || die "not a git checkout (or set GPUQ_IMAGE_REV and SOURCE_DATE_EPOCH)"
fi
TAG=$REV
if [ -z "${GPUQ_IMAGE_REV:-}" ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	TAG=$REV-dirty
	echo "image.sh: the tree has uncommitted changes: this image is the tree's, not commit $REV's" >&2
fi
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct HEAD)}
export SOURCE_DATE_EPOCH
CREATED=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)

# --- the root filesystem ------------------------------------------------------
rm -rf "$STAGE"
mkdir -p "$STAGE/usr/local/bin" "$STAGE/usr/lib/x86_64-linux-gnu" "$STAGE/usr/lib64" \
	"$STAGE/etc/ssl/certs" "$STAGE/etc/gpuq/certs" "$STAGE/var/lib/gpuq" "$STAGE/tmp" \
	"$STAGE/usr/share/doc/gpuq"
ln -s usr/lib "$STAGE/lib"
ln -s usr/lib64 "$STAGE/lib64"

strip --strip-debug -o "$STAGE/usr/local/bin/gpuq" "$BIN"

# The libraries by the names the loader looks for (their sonames), each a
# plain copy of the file behind the name; the loader where PT_INTERP says.
LIBDIR=/usr/lib/x86_64-linux-gnu
libs=$(ldd "$BIN" | sed -n 's/^[[:space:]]*\([^ ]*\) => \(\/[^ ]*\) .*/\1 \2/p')
[ -n "$libs" ] || die "ldd $BIN named no libraries"
interp=$(ldd "$BIN" | sed -n 's/^[[:space:]]*\(\/[^ ]*ld-linux[^ ]*\) .*/\1/p')
[ -n "$interp" ] || die "ldd $BIN named no loader"
echo "$libs" | while read -r name path; do
	cp -L "$path" "$STAGE$LIBDIR/$name"
done
gcc_s=$(ls /lib/x86_64-linux-gnu/libgcc_s.so.1 2>/dev/null) || die "no libgcc_s.so.1"
cp -L "$gcc_s" "$STAGE$LIBDIR/libgcc_s.so.1"
cp -L "$interp" "$STAGE$LIBDIR/${interp##*/}"
ln -s "../lib/x86_64-linux-gnu/${interp##*/}" "$STAGE/usr/lib64/${interp##*/}"
chmod 0755 "$STAGE$LIBDIR"/*

cp -L /etc/ssl/certs/ca-certificates.crt "$STAGE/etc/ssl/certs/ca-certificates.crt" ||
	die "no /etc/ssl/certs/ca-certificates.crt (package ca-certificates)"
printf '%s\n' 'root:x:0:0:root:/root:/usr/sbin/nologin' \
	'gpuq:x:65532:65532:gpuq:/nonexistent:/usr/sbin/nologin' >"$STAGE/etc/passwd"
printf '%s\n' 'root:x:0:' 'gpuq:x:65532:' >"$STAGE/etc/group"
printf '%s\n' 'passwd: files' 'group: files' 'hosts: files dns' >"$STAGE/etc/nsswitch.conf"

# Provenance and licences: each library's Debian package and version, and
# its copyright file. One dpkg -S for all (it reads the whole database each
# time), asking for each file under /lib and /usr/lib (bookworm's packages
# still list some under /lib, the merged /usr notwithstanding).
{
	echo "$libs" | while read -r _ path; do echo "$path"; done
	echo "$gcc_s"
	readlink -f "$interp"
} | sed 's|^/usr/lib/|/lib/|' | sort -u >"$OUT/libs.txt"
# shellcheck disable=SC2046 # one argument per path, no spaces in them
dpkg -S $(sed 'p; s|^/lib/|/usr/lib/|' "$OUT/libs.txt") 2>/dev/null |
	sed 's|^\([^:]*\)\(:[a-z0-9]*\)*: \(/usr\)*\(.*\)|\4 \1|' | sort -u >"$OUT/owners.txt" || true
while read -r f; do
	grep -q "^$f " "$OUT/owners.txt" || die "no Debian package owns $f"
done <"$OUT/libs.txt"
{ cut -d' ' -f2 "$OUT/owners.txt"; echo ca-certificates; } | sort -u | while read -r pkg; do
	echo "$pkg $(dpkg-query -W -f='${Version}' "$pkg")" >>"$STAGE/usr/share/doc/gpuq/debian-packages"
	if [ -f "/usr/share/doc/$pkg/copyright" ]; then
		mkdir -p "$STAGE/usr/share/doc/$pkg"
		cp -L "/usr/share/doc/$pkg/copyright" "$STAGE/usr/share/doc/$pkg/copyright"
	fi
done
echo "$REV" >"$STAGE/usr/share/doc/gpuq/revision"

# Fixed modes: directories 0755 (the volumes' mount points too: the
# kubelet's fsGroup, or podman's mount, sets theirs), /tmp 1777, files 0644,
# executables 0755.
find "$STAGE" -type d -exec chmod 0755 {} +
chmod 1777 "$STAGE/tmp"
find "$STAGE" -type f -exec chmod 0644 {} +
chmod 0755 "$STAGE/usr/local/bin/gpuq" "$STAGE$LIBDIR"/*
find "$STAGE" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

# --- the image ------------------------------------------------------------------
STORE="--root $ROOT/$OUT/storage --runroot $ROOT/$OUT/run --storage-driver vfs"
# shellcheck disable=SC2086 # STORE is a list of options
B() { buildah $STORE "$@"; }
B rm --all >/dev/null 2>&1 || true
B rmi --all --force >/dev/null 2>&1 || true
ctr=$(B from --pull=never scratch)
trap 'B rm "$ctr" >/dev/null 2>&1 || true' EXIT
# One copy of the whole tree, in sorted order (tar's --sort=name), owner 0:0.
mkdir -p "$OUT/layer"
tar -C "$STAGE" --sort=name --owner=0 --group=0 --numeric-owner \
	--mtime="@$SOURCE_DATE_EPOCH" -cf "$OUT/layer/rootfs.tar" .
B add --chown 0:0 "$ctr" "$OUT/layer/rootfs.tar" / >/dev/null
B config --user 65532:65532 --workingdir / \
	--entrypoint '["/usr/local/bin/gpuq"]' \
	--cmd 'serve --listen=:8443 --cert-dir=/etc/gpuq/certs --state-dir=/var/lib/gpuq' \
	--port 8443/tcp --env PATH=/usr/local/bin \
	--label org.opencontainers.image.title=gpuq \
	--label "org.opencontainers.image.revision=$REV" \
	--label "org.opencontainers.image.created=$CREATED" \
	--label org.opencontainers.image.description="gpuq: GPU quota and queueing admission webhook and controller for Kubernetes" \
	--created-by "scripts/image.sh" "$ctr"
B commit --quiet --format oci --timestamp "$SOURCE_DATE_EPOCH" --rm "$ctr" "gpuq:$TAG" >/dev/null
trap - EXIT
rm -f "$OUT/gpuq.oci.tar"
B push --quiet --format oci "gpuq:$TAG" "oci-archive:$ROOT/$OUT/gpuq.oci.tar:gpuq:$TAG" >/dev/null
digest=sha256:$(skopeo inspect --raw "oci-archive:$OUT/gpuq.oci.tar" | sha256sum | cut -d' ' -f1)
echo "$digest" >"$OUT/digest"
echo "$TAG" >"$OUT/tag"
sha256sum <"$BIN" | cut -d' ' -f1 >"$OUT/binary.sha256" # which gpuq it holds
size=$(du -k "$OUT/gpuq.oci.tar" | cut -f1)
echo "image gpuq:$TAG $digest ($size KiB, $OUT/gpuq.oci.tar)"
