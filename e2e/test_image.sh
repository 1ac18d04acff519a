#!/usr/bin/env bash
# gpuq's image (scripts/image.sh, `make image`) built twice to the same
# digest, then run as deploy/40-deployment.yaml runs it (e2e/podlib.sh:
# podman plays the kubelet): two replicas from the image with the
# Deployment's args, user, read-only root, volumes and a Pod's in-cluster
# view of this control plane. One leads; the first makes the certificate
# Secret and writes the caBundle; GPU Jobs queue and are released; the
# leader stopped (SIGTERM, as a rollout does) exits 0 and the other takes
# over and releases the next Job. Replica "main" is stopped for the while
# (it would hold the Lease) and started again at the end, the webhooks
# pointed back at it.
. "$(dirname "$0")/lib.sh"
plan 20
. "$(dirname "$0")/podlib.sh"
NS=e2e-img
trap pods_down EXIT

# --- the image ------------------------------------------------------------------
out1=$(image_build) || { notok "scripts/image.sh failed: $out1"; exit 0; }
d1=$(cat "$IMAGE_DIR/digest")
out2=$(image_build) || { notok "scripts/image.sh failed the second time: $out2"; exit 0; }
d2=$(cat "$IMAGE_DIR/digest")
echo "# first build:  $out1" >&2
echo "# second build: $out2" >&2
check "built twice, the same digest ($d1, $d2)" test -n "$d1" -a "$d1" = "$d2"
cfg=$(skopeo inspect --config "oci-archive:$IMAGE_DIR/gpuq.oci.tar")
check "its config runs gpuq as 65532:65532" \
	python3 -c 'import json,sys; c=json.loads(sys.argv[1])["config"]; sys.exit(not (c["User"]=="65532:65532" and c["Entrypoint"]==["/usr/local/bin/gpuq"]))' "$cfg"
# the one layer's files: gpuq, its libraries, no shell
files=$(python3 - "$IMAGE_DIR/gpuq.oci.tar" <<'PY'
import json, sys, tarfile, io
t = tarfile.open(sys.argv[1])
blob = lambda d: t.extractfile("blobs/" + d.replace(":", "/")).read()
idx = json.loads(t.extractfile("index.json").read())
man = json.loads(blob(idx["manifests"][0]["digest"]))
for l in man["layers"]:
    for m in tarfile.open(fileobj=io.BytesIO(blob(l["digest"]))).getmembers():
        print(m.name.lstrip("./"))
PY
)
echo "$files" >"$E2E_RUN/image-files.txt"
check "the layer holds gpuq and libc, and no shell ($(echo "$files" | wc -l) entries)" \
	sh -c 'grep -qx usr/local/bin/gpuq "$1" && grep -qx usr/lib/x86_64-linux-gnu/libc.so.6 "$1" && ! grep -qE "^(usr/)?bin/(ba)?sh$" "$1"' _ "$E2E_RUN/image-files.txt"

# --- two replicas as the Deployment runs them --------------------------------
REF=$(image_load gpuq:latest) || { notok "podman load of the image"; exit 0; }
check "podman loads the OCI archive ($REF) under the Deployment's name gpuq:latest" \
	podman_ image exists gpuq:latest
deployment_json "$(dirname "$0")/../deploy/40-deployment.yaml" "$E2E_RUN/deployment.json"
# deploy/ pins the image of its revision by digest (make image-pin); this
# one is the tree's, loaded as gpuq:latest: the Pods run that one.
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
d["spec"]["template"]["spec"]["containers"][0]["image"] = "gpuq:latest"
json.dump(d, open(sys.argv[1], "w"))' "$E2E_RUN/deployment.json"

# replica main gives the Lease up; the webhooks go to replica a, caBundle
# blank (as docs/deploy.md applies them): the image's replicas write it
pid=$(cat "$E2E_RUN/gpuq-main.pid")
kill -TERM "$pid"
poll "gpuq main stopped" sh -c "! kill -0 $pid 2>/dev/null || [ \"\$(cut -d' ' -f3 /proc/$pid/stat)\" = Z ]"
k -n gpuq-system delete secret gpuq-certs --ignore-not-found >/dev/null
PA=$(free_port) PB=$(free_port)
webhooks_to() {
	sed -e "s|https://127.0.0.1:$GPUQ_PORT/|https://127.0.0.1:$1/|" -e "s|caBundle: .*|caBundle: \"$2\"|" \
		"$E2E_RUN/webhook.yaml" | k apply -f - >/dev/null
}
webhooks_to "$PA" ""
bundle() { k get "$1" gpuq -o 'jsonpath={.webhooks[0].clientConfig.caBundle}'; }

pod_start "$E2E_RUN/deployment.json" gpuq-img-a gpuq-system "$PA" || notok "replica a started"
pod_start "$E2E_RUN/deployment.json" gpuq-img-b gpuq-system "$PB" || notok "replica b started"
check "replica a is ready (/readyz) with a read-only root, as 65532" poll "replica a ready" pod_ready gpuq-img-a
check "replica b is ready" poll "replica b ready" pod_ready gpuq-img-b
check "the containers run as the Deployment says: user 65532:65532, read-only root" \
	sh -c '[ "$1" = "65532:65532 true" ]' _ "$(podman_ inspect -f '{{.Config.User}} {{.HostConfig.ReadonlyRootfs}}' gpuq-img-a)"
ro=$(podman_ exec gpuq-img-a /usr/local/bin/gpuq certs --out /usr/local/x --ip 127.0.0.1 2>&1)
check "inside, the root filesystem refuses a write ($ro)" sh -c 'printf %s "$1" | grep -q "Read-only file system"' _ "$ro"
check "one replica leads (the Lease names a Pod)" \
	poll "a leader" sh -c "$(declare -f k lease_holder); lease_holder | grep -qE '^gpuq-img-(a|b)\$'"
LEADER=$(lease_holder)
echo "# leader: $LEADER" >&2
check "the first replica made the certificate Secret" \
	sh -c "[ \"\$($(declare -f k); k -n gpuq-system get secret gpuq-certs -o 'go-template={{range \$k, \$v := .data}}{{\$k}} {{end}}')\" = 'ca.crt ca.key tls.crt tls.key ' ]"
ca=$(k -n gpuq-system get secret gpuq-certs -o 'jsonpath={.data.ca\.crt}')
check "and wrote its CA into the webhooks' caBundle" \
	poll "caBundle written" sh -c "[ \"\$($(declare -f k bundle); bundle validatingwebhookconfiguration)\" = '$ca' ] && [ \"\$($(declare -f k bundle); bundle mutatingwebhookconfiguration)\" = '$ca' ]"

gpu_queue $NS 8
gpu_job $NS j1 8 "" 30s # j2 queues behind it through the check
gpu_job $NS j2 8 "" 3s
check "a Job is released by the leader" poll "j1 released" job_running $NS j1
check "the next one queues behind it" job_suspended $NS j2
check "and is released when the first completes" poll "j2 released" job_running $NS j2
check "the status names the ClusterQueue" job_status_has $NS j2 "admitted in ClusterQueue $NS"

# the leader goes as in a rollout (SIGTERM); the other takes over
OTHER=gpuq-img-a; PO=$PA
[ "$LEADER" = gpuq-img-a ] && { OTHER=gpuq-img-b; PO=$PB; }
webhooks_to "$PO" "$ca"
rc=$(pod_stop "$LEADER")
check "the leader stops on SIGTERM with exit 0 (exit $rc)" [ "$rc" = 0 ]
check "the other replica takes the Lease" poll "takeover" sh -c "[ \"\$($(declare -f k lease_holder); lease_holder)\" = $OTHER ]"
poll "j2 complete" job_complete $NS j2
gpu_job $NS j3 8 "" 3s
check "and releases the next Job" poll "j3 released" job_running $NS j3
rc=$(pod_stop "$OTHER")
check "it stops with exit 0 too (exit $rc)" [ "$rc" = 0 ]
grep -h "ERROR\|abort" "$E2E_RUN"/container-gpuq-img-*.log | head -5 >&2

# back to replica main, its certificates and webhooks
pods_down
k -n gpuq-system delete secret gpuq-certs --ignore-not-found >/dev/null
k apply -f "$E2E_RUN/webhook.yaml" >/dev/null
start_gpuq main || notok "replica main started again"
check "replica main serves the webhooks again" poll "review via main" dry_job $NS
