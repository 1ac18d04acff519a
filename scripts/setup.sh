#!/bin/sh
# Installs everything gpuq needs to build, test and benchmark, from Debian's
# packages. Safe to run again: it installs only what is missing. podman,
# buildah, skopeo and runc build and run gpuq's image (`make image`,
# e2e/test_image.sh; runc because crun refuses hybrid cgroups);
# docker-registry is the registry e2e/test_install.sh pushes it to.
set -eu
PKGS="gcc make pkg-config git curl ca-certificates openssl
libmicrohttpd-dev libgnutls28-dev libssl-dev libjansson-dev libcurl4-openssl-dev
liblmdb-dev lmdb-utils libyaml-dev libcmocka-dev
clang libclang-rt-14-dev clang-format clang-tidy cppcheck valgrind
wrk nginx-light prometheus jq time python3 python3-yaml chromium
podman buildah skopeo runc docker-registry"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "setup: all packages present"
	exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "setup: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "setup: done"
