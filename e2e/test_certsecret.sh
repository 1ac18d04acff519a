#!/usr/bin/env bash
# The serving certificate kept in a Secret (--cert-secret) with gpuq's own
# RBAC: a replica started on an empty cert dir creates Secret
# gpuq-system/gpuq-certs (a CA and a serving certificate), writes the files
# it serves and the CA into the caBundle of the webhook configurations "gpuq"
# (--webhook-config), and the apiserver then trusts it: a GPU Job review
# through it succeeds. Restarted, it keeps the Secret as it is; asked for
# other names, it renews the serving certificate from the same CA (the
# caBundle stays valid, reviews go on). The webhooks go back to the first
# replica afterwards.
. "$(dirname "$0")/lib.sh"
plan 23
NS=e2e-cs
gpu_queue $NS 1

P2=$(( GPUQ_PORT + 1 ))
CD=$E2E_RUN/certs-keeper
mkdir -p "$CD"
secret() { k -n gpuq-system get secret gpuq-certs -o "jsonpath=$1" 2>/dev/null; }
bundle() { k get "$1" gpuq -o 'jsonpath={.webhooks[0].clientConfig.caBundle}'; }
fp() { openssl x509 -noout -fingerprint -sha256 -in "$1"; }
review() { dry_job $NS >/dev/null; } # one GPU Job through both webhooks
keeper() {
	GPUQ_PORT=$P2 GPUQ_CERT_DIR=$CD start_gpuq keeper \
		--cert-secret gpuq-system/gpuq-certs --webhook-config gpuq "$@"
}
stop_keeper() {
	local pid
	pid=$(cat "$E2E_RUN/gpuq-keeper.pid")
	kill -TERM "$pid"
	poll "keeper stopped" sh -c "! kill -0 $pid 2>/dev/null || [ \"\$(cut -d' ' -f3 /proc/$pid/stat)\" = Z ]"
}

check "no Secret before" sh -c "! $KUBECTL --kubeconfig $KUBECONFIG -n gpuq-system get secret gpuq-certs >/dev/null 2>&1"
keeper --cert-ip 127.0.0.1
check "a replica on an empty cert dir creates the Secret" \
	sh -c "[ \"\$($(declare -f k secret); secret '{.type}')\" = kubernetes.io/tls ]"
keys=$(k -n gpuq-system get secret gpuq-certs -o 'go-template={{range $k, $v := .data}}{{$k}} {{end}}')
check "with the CA and the serving pair in it ($keys)" [ "$keys" = "ca.crt ca.key tls.crt tls.key " ]
secret '{.data.ca\.crt}' | base64 -d >"$E2E_RUN/secret-ca.crt"
secret '{.data.tls\.crt}' | base64 -d >"$E2E_RUN/secret-tls.crt"
check "it serves the Secret's certificate from its cert dir" [ "$(fp "$CD/tls.crt")" = "$(fp "$E2E_RUN/secret-tls.crt")" ]
check "the CA key stays out of the cert dir" [ ! -e "$CD/ca.key" ]
check "the serving certificate is signed by the Secret's CA" \
	sh -c "openssl verify -CAfile $E2E_RUN/secret-ca.crt $CD/tls.crt >/dev/null"
ca_b64=$(base64 -w0 "$E2E_RUN/secret-ca.crt")
check "the CA is in the mutating webhooks' caBundle" [ "$(bundle mutatingwebhookconfiguration)" = "$ca_b64" ]
check "and in the validating webhooks' caBundle" [ "$(bundle validatingwebhookconfiguration)" = "$ca_b64" ]
# the webhooks to the keeper, keeping the caBundle it wrote
sed -e "s|https://127.0.0.1:$GPUQ_PORT/|https://127.0.0.1:$P2/|" -e "s|caBundle: .*|caBundle: $ca_b64|" \
	"$E2E_RUN/webhook.yaml" | k apply -f - >/dev/null
check "the apiserver trusts it: a GPU Job review through it succeeds" poll "review via keeper" review

rv=$(secret '{.metadata.resourceVersion}')
stop_keeper
keeper --cert-ip 127.0.0.1
check "restarted, it keeps the Secret as it is" [ "$(secret '{.metadata.resourceVersion}')" = "$rv" ]
check "and serves the same certificate" [ "$(fp "$CD/tls.crt")" = "$(fp "$E2E_RUN/secret-tls.crt")" ]

stop_keeper
keeper --cert-ip 127.0.0.1 --cert-dns localhost
check "asked for other names, it renews the serving certificate in the Secret" \
	sh -c "[ \"\$($(declare -f k secret); secret '{.metadata.resourceVersion}')\" != $rv ]"
check "the new one names them" sh -c "openssl x509 -noout -ext subjectAltName -in $CD/tls.crt | grep -q localhost"
check "from the same CA" sh -c "openssl verify -CAfile $E2E_RUN/secret-ca.crt $CD/tls.crt >/dev/null"
check "the caBundle is unchanged" [ "$(bundle validatingwebhookconfiguration)" = "$ca_b64" ]
check "reviews go on through the renewed certificate" poll "review after renewal" review

# a Secret made elsewhere (no ca.key: kustomize's, cert-manager's) is served
# as it is and left alone
"$GPUQ" certs --out "$E2E_RUN/certs-ext" --ip 127.0.0.1 >/dev/null
stop_keeper
k -n gpuq-system delete secret gpuq-certs >/dev/null
k -n gpuq-system create secret generic gpuq-certs --type kubernetes.io/tls \
	--from-file=tls.crt="$E2E_RUN/certs-ext/tls.crt" --from-file=tls.key="$E2E_RUN/certs-ext/tls.key" \
	--from-file=ca.crt="$E2E_RUN/certs-ext/ca.crt" >/dev/null
rv=$(secret '{.metadata.resourceVersion}')
keeper --cert-ip 127.0.0.1
check "a Secret made elsewhere (no ca.key) is served as it is" \
	[ "$(fp "$CD/tls.crt")" = "$(fp "$E2E_RUN/certs-ext/tls.crt")" ]
check "and left alone" [ "$(secret '{.metadata.resourceVersion}')" = "$rv" ]
check "its ca.crt goes into the caBundle" \
	[ "$(bundle validatingwebhookconfiguration)" = "$(base64 -w0 "$E2E_RUN/certs-ext/ca.crt")" ]
check "reviews go on through it" poll "review via the external certificate" review

# a Secret whose CA key does not match its certificate: refused, not replaced
stop_keeper
"$GPUQ" certs --out "$E2E_RUN/certs-other" --ip 127.0.0.1 >/dev/null
k -n gpuq-system delete secret gpuq-certs >/dev/null
k -n gpuq-system create secret generic gpuq-certs --type kubernetes.io/tls \
	--from-file=tls.crt="$E2E_RUN/certs-ext/tls.crt" --from-file=tls.key="$E2E_RUN/certs-ext/tls.key" \
	--from-file=ca.crt="$E2E_RUN/certs-ext/ca.crt" --from-file=ca.key="$E2E_RUN/certs-other/ca.key" >/dev/null
rv=$(secret '{.metadata.resourceVersion}')
out=$("$GPUQ" serve --listen "127.0.0.1:$P2" --cert-dir "$CD" --state-dir "$E2E_RUN/state-keeper" \
	--kubeconfig "$GPUQ_KUBECONFIG" --lease-namespace gpuq-system --identity broken \
	--cert-secret gpuq-system/gpuq-certs 2>&1)
rc=$?
echo "# $out" >&2
check "a Secret with a broken CA stops gpuq at start (exit $rc), naming it" \
	sh -c "[ $rc -eq 1 ] && printf '%s' \"\$1\" | grep -q 'Secret gpuq-system/gpuq-certs holds no usable CA'" _ "$out"
check "and is left as it was" [ "$(secret '{.metadata.resourceVersion}')" = "$rv" ]
k -n gpuq-system delete secret gpuq-certs >/dev/null

# back to the first replica and its own CA
k apply -f "$E2E_RUN/webhook.yaml" >/dev/null
check "the first replica serves the webhooks again" poll "review via main" review
