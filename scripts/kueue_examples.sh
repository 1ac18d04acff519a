#!/bin/sh
# scripts/kueue_examples.sh DIR: load Kueue's own example setups into gpuq.
#
# DIR is a Kueue checkout's site/static/examples. Every *.yaml, *.yml and
# *.json file of its admin/, admission-fs/, getting-started/ and dra/ folders
# goes alone through gpuq's policy loader (`gpuq policy check
# --skip-workloads`, the decoder and checks `gpuq serve --policy-dir` uses),
# and the script prints one line per file:
#
#   admin/single-clusterqueue-setup.yaml: loaded: 3 policy objects: ...
#   admin/minimal-cq.yaml: refused: ... spec.admissionChecksStrategy: not supported by gpuq
#   admission-fs/lq-a-simple-job.yaml: not a policy object (Job)
#
# A file that holds policy objects and workloads both (a ResourceClaimTemplate
# and the Job that uses it) says "loaded: ...; skipped: Job (not a policy
# object)". Workloads (batch/v1 Jobs, v1 Pods) are what gpuq admits, not
# policy. docs/kueue-examples.md lists the results for Kueue v0.19.0.
#
# Env: GPUQ_BIN, the gpuq binary (default bin/gpuq of this checkout).
# Exit status: 0 when every file was loaded or refused; 1 when gpuq failed
# otherwise on one (a crash, a usage error) or a folder is missing; 2 usage.
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
GPUQ=${GPUQ_BIN:-$HERE/bin/gpuq}
FOLDERS="admin admission-fs getting-started dra"

if [ $# -ne 1 ] || [ ! -d "$1" ]; then
	echo "usage: scripts/kueue_examples.sh DIR   (DIR: Kueue's site/static/examples)" >&2
	exit 2
fi
case $GPUQ in /*) ;; *) GPUQ=$(pwd)/$GPUQ ;; esac
cd "$1" || exit 2
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpuq-kueue-examples.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

# The skipped workloads' kinds of one check's output, as "Job" or "Job, Pod".
skipped_kinds() {
	sed -n 's/^skipped: .*: document [0-9]*: \([A-Za-z]*\) (.*$/\1/p' "$1" |
		sort -u | paste -sd, - | sed 's/,/, /g'
}

# One line for file $1.
report() {
	"$GPUQ" policy check --skip-workloads "$1" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	loaded=$(sed -n 's/^loaded: //p' "$TMP/out")
	kinds=$(skipped_kinds "$TMP/out")
	case $rc in
	0)
		if [ "$loaded" = "0 policy objects" ]; then
			echo "$1: not a policy object (${kinds:-an empty file})"
		else
			echo "$1: loaded: $loaded${kinds:+; skipped: $kinds (not a policy object)}"
		fi ;;
	1)
		msg=$(sed 's/^gpuq policy check: //' "$TMP/err" | head -1)
		echo "$1: refused: ${msg#"$1: "}" ;;
	*)
		echo "$1: gpuq failed (exit $rc): $(head -1 "$TMP/err")"
		return 1 ;;
	esac
}

status=0
for folder in $FOLDERS; do
	if [ ! -d "$folder" ]; then
		echo "$folder/: missing (is DIR Kueue's site/static/examples?)"
		status=1
		continue
	fi
	find "$folder" -maxdepth 1 -type f \( -name '*.yaml' -o -name '*.yml' -o -name '*.json' \) |
		LC_ALL=C sort >"$TMP/files"
	while IFS= read -r f; do
		report "$f" || status=1
	done <"$TMP/files"
done
exit $status
