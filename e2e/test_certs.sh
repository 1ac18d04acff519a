#!/usr/bin/env bash
# Certificate rotation with no failed admission: while the apiserver keeps
# sending gpuq GPU Job reviews, the serving certificate in --cert-dir is
# replaced (`gpuq certs` keeps the CA, so the caBundle stays valid); gpuq
# serves the new one without a restart and not one review fails.
. "$(dirname "$0")/lib.sh"
plan 5
NS=e2e-c

gpu_queue $NS 1
served() { # the serving certificate's fingerprint gpuq presents
	openssl s_client -connect "127.0.0.1:$GPUQ_PORT" </dev/null 2>/dev/null |
		openssl x509 -noout -fingerprint -sha256 2>/dev/null
}
file_fp() { openssl x509 -in "$E2E_RUN/certs/tls.crt" -noout -fingerprint -sha256; }
review() { dry_job $NS >/dev/null; } # one GPU Job through both webhooks
old=$(served)
check "gpuq serves the certificate in its cert dir" [ "$old" = "$(file_fp)" ]

fails=0 n=0
for _ in 1 2 3 4 5; do review || fails=$((fails + 1)); n=$((n + 1)); done
"$GPUQ" certs --out "$E2E_RUN/certs" --ip 127.0.0.1 >/dev/null
new=$(file_fp)
check "gpuq certs issued a new serving certificate" [ "$new" != "$old" ]
# reviews go on until gpuq presents the new certificate (it polls the files)
deadline=$(( $(date +%s) + WAIT ))
while [ "$(served)" != "$new" ] && [ "$(date +%s)" -lt "$deadline" ]; do
	review || fails=$((fails + 1)); n=$((n + 1))
done
check "gpuq serves the new certificate without a restart" [ "$(served)" = "$new" ]
for _ in 1 2 3 4 5; do review || fails=$((fails + 1)); n=$((n + 1)); done
check "no review failed across the rotation ($fails of $n)" [ "$fails" -eq 0 ]
check "the same process still serves (no restart)" kill -0 "$(cat "$E2E_RUN/gpuq-main.pid")"
