#!/usr/bin/env bash
# e2e/cluster.sh: a real Kubernetes control plane on 127.0.0.1, no containers:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, and kwok
# playing the kubelets of four fake GPU nodes (e2e/nodes.yaml). The binaries
# come from e2e/build.sh's cache (run it first; e2e/smoke.sh does).
#
# Usage:
#   e2e/cluster.sh up DIR       start a cluster whose whole state lives in DIR
#                               (created if missing; must be empty of a running
#                               cluster); returns once the apiserver is ready,
#                               the default ServiceAccount exists and all nodes
#                               are Ready. On failure it stops what it started,
#                               prints the failing component's log tail, exits 1.
#   e2e/cluster.sh down DIR     stop every process DIR/pids names (SIGTERM, then
#                               SIGKILL after 15 s) and wait until they are gone.
#                               Keeps DIR (logs); safe to run twice.
#   e2e/cluster.sh status DIR   one line per component (pid, running|dead) and
#                               the apiserver's /readyz; exit 1 if anything is down.
#   e2e/cluster.sh env DIR      print DIR/env.
#   e2e/cluster.sh restart-apiserver DIR
#                               stop kube-apiserver (SIGTERM, wait until gone)
#                               and start it again on the same port against
#                               the same etcd; returns once /readyz is ok. The
#                               other components and every client reconnect
#                               by themselves (their watches must resume).
#
# DIR layout:
#   env          KEY=value lines, no quoting (DIR must not contain whitespace);
#                load with `set -a; . DIR/env; set +a`. Keys:
#                  E2E_DIR, KUBECONFIG, KUBECTL (the built kubectl), APISERVER
#                  (https://127.0.0.1:PORT), APISERVER_PORT, ETCD_URL, ETCD_PORT,
#                  ETCD_PEER_PORT, CA_CERT, CA_KEY (the cluster CA, also
#                  trusted for client certs: sign a webhook's serving cert with
#                  it if convenient), ADMIN_CERT, ADMIN_KEY, K8S_VERSION
#   kubeconfig   admin (CN=admin, O=system:masters), file paths to pki/
#   pki/         ca.{crt,key}; apiserver.{crt,key} (SAN IP:127.0.0.1, localhost,
#                kubernetes.default...); admin, kube-controller-manager,
#                kube-scheduler client certs; sa.key/sa.pub (ServiceAccount tokens)
#   kubeconfigs/ controller-manager.kubeconfig, scheduler.kubeconfig
#   etcd/        etcd data (--unsafe-no-fsync: test data only)
#   logs/        <component>.log for etcd, kube-apiserver, kube-controller-manager,
#                kube-scheduler, kwok
#   pids/        <component>.pid
#
# Ports: picked at random from 20000-32000 (below Linux's ephemeral range), each
# probed free first; a component that still loses a race for its port ("address
# already in use") is restarted on new ones. So several clusters (or leftovers of
# old ones) coexist.
#
# Cluster shape (see REFERENCE.md section 6): authorization Node,RBAC; admission
# plugins at their defaults except TaintNodesByCondition (no kubelets); webhooks
# (Mutating/ValidatingAdmissionWebhook) are on, and may live at
# https://127.0.0.1:PORT. The controller-manager runs every controller but
# nodeipam and nodelifecycle, with per-controller ServiceAccounts
# (--use-service-account-credentials, as kubeadm does), so a webhook sees a
# Job's Pods created by system:serviceaccount:kube-system:job-controller.
#
# Fake workloads: kwok plays pods bound to the fake nodes (pod/general stages):
# created -> Running+Ready -> (only pods owned by a Job) Succeeded. Each step
# waits between `delay` and `jitter-delay` (defaults 1 s and 5 s); pod
# annotations override both, per stage:
#   pod-{create,ready,complete}.stage.kwok.x-k8s.io/{delay,jitter-delay}: 30s
# A jitter-delay at or below delay is taken as is, so `.../delay: 30s` alone
# gives 5 s (the default jitter): set both for a fixed runtime, and both to 0s
# on create and ready for a pod that starts at once.
#
# Pitfalls: Pods (not Jobs, whose controller retries) are refused in a new
# namespace until its default ServiceAccount exists: poll for it. Where PID 1
# does not reap orphans, stopped components linger as zombies (harmless; `down`
# treats a zombie as gone).
#
# Environment: GPUQ_E2E_CACHE, K8S_VERSION, ETCD_VERSION, KWOK_VERSION (as
# build.sh), GPUQ_E2E_NODES (node manifests, default e2e/nodes.yaml; empty
# string for none), GPUQ_E2E_UP_TIMEOUT (seconds per wait, default 60),
# GPUQ_E2E_KCM_QPS / GPUQ_E2E_KCM_BURST (kube-controller-manager's client
# rate, default 20 / 30 as upstream: the job controller's pace in a drain).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
COMPONENTS="etcd kube-apiserver kube-controller-manager kube-scheduler kwok"
NODES_FILE=${GPUQ_E2E_NODES-$HERE/nodes.yaml}
TIMEOUT=${GPUQ_E2E_UP_TIMEOUT:-60}

# Where the binaries are: build.sh is the one place that knows the versions.
# It prints K8S_DIR=, ETCD_DIR=, KWOK_DIR= lines.
K8S_DIR='' ETCD_DIR='' KWOK_DIR=''
eval "$("$HERE/build.sh" --print)"
ETCD_BIN=$ETCD_DIR/etcd
KWOK_BIN=$KWOK_DIR/kwok
KUBECTL_BIN=$K8S_DIR/kubectl

START=$(date +%s)
say() { echo "cluster.sh: [$(( $(date +%s) - START ))s] $*"; }
die() { echo "cluster.sh: FAILED: $*" >&2; exit 1; }

# --- processes -----------------------------------------------------------------

# Is pid $1 alive and still the process we started for dir $2? (A pid can be
# reused once ours exits; every component's command line names DIR, so check
# that. A zombie counts as gone.)
ours_alive() {
	[ -r "/proc/$1/cmdline" ] || return 1
	case $(sed 's/^[0-9]* ([^)]*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null) in Z | X | "") return 1 ;; esac
	tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "$2/"
}

# pid of component $1 in dir $2, or empty.
pid_of() { cat "$2/pids/$1.pid" 2>/dev/null || true; }

# Start component $1 with command "$@" (after shift), logging to logs/$1.log.
# $! is the forked shell until it has exec'd the command, and ours_alive knows
# a component by "$D/" in its command line: wait for the exec (or the exit)
# here, or a check made meanwhile takes the component for dead (seen under
# load: "etcd exited during start-up" with an empty log).
start() {
	name=$1; shift
	nohup "$@" </dev/null >"$D/logs/$name.log" 2>&1 &
	pid=$!
	echo "$pid" >"$D/pids/$name.pid"
	deadline=$(( $(date +%s) + TIMEOUT ))
	until ours_alive "$pid" "$D"; do
		case $(sed 's/^[0-9]* ([^)]*) \(.\).*/\1/' "/proc/$pid/stat" 2>/dev/null) in Z | X | "") return 0 ;; esac
		[ "$(date +%s)" -lt "$deadline" ] || die "$name (pid $pid) did not start its command in ${TIMEOUT}s"
		sleep 0.02
	done
}

# Fail with the log tail unless every started component is still running.
check_alive() {
	for c in $COMPONENTS; do
		p=$(pid_of "$c" "$D")
		[ -n "$p" ] || continue
		if ! ours_alive "$p" "$D"; then
			echo "cluster.sh: $c (pid $p) exited; last lines of $D/logs/$c.log:" >&2
			tail -n 25 "$D/logs/$c.log" >&2 || true
			return 1
		fi
	done
}

# wait_until DESC CMD...: run CMD every 0.2 s until it succeeds, at most
# $TIMEOUT s; fail at once if a component died meanwhile.
wait_until() {
	desc=$1; shift
	deadline=$(( $(date +%s) + TIMEOUT ))
	until "$@" >/dev/null 2>&1; do
		check_alive || die "a component exited while waiting for $desc"
		[ "$(date +%s)" -lt "$deadline" ] || die "timed out after ${TIMEOUT}s waiting for $desc"
		sleep 0.2
	done
}

# wait_ready NAME DESC CMD...: like wait_until, but return 1 (not fail) if
# component NAME itself exits meanwhile, so the caller can retry it.
wait_ready() {
	name=$1; desc=$2; shift 2
	deadline=$(( $(date +%s) + TIMEOUT ))
	until "$@" >/dev/null 2>&1; do
		if ! check_alive 2>/dev/null; then
			ours_alive "$(pid_of "$name" "$D")" "$D" || return 1
			check_alive || die "a component exited while waiting for $desc"
		fi
		[ "$(date +%s)" -lt "$deadline" ] || die "timed out after ${TIMEOUT}s waiting for $desc"
		sleep 0.2
	done
}

# Stop every component of dir $1 (or the ones named after it), newest
# first; wait for each to exit.
stop_all() {
	dir=$1
	shift
	[ $# -gt 0 ] || set -- kwok kube-scheduler kube-controller-manager kube-apiserver etcd
	for c in "$@"; do
		p=$(pid_of "$c" "$dir")
		[ -n "$p" ] || continue
		if ours_alive "$p" "$dir"; then
			kill -TERM "$p" 2>/dev/null || true
			deadline=$(( $(date +%s) + 15 ))
			while ours_alive "$p" "$dir" && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
			if ours_alive "$p" "$dir"; then
				echo "cluster.sh: $c (pid $p) ignored SIGTERM for 15 s; SIGKILL" >&2
				kill -KILL "$p" 2>/dev/null || true
				while ours_alive "$p" "$dir"; do sleep 0.1; done
			fi
			echo "cluster.sh: stopped $c (pid $p)"
		fi
		rm -f "$dir/pids/$c.pid"
	done
}

# --- ports ---------------------------------------------------------------------

PICKED=""
# free_port VAR: set VAR to a port in 20000-32000 that nothing listens on and
# that this run has not picked yet (not in a subshell: PICKED must persist).
free_port() {
	for _ in $(seq 200); do
		p=$(( 20000 + RANDOM % 12000 ))
		case " $PICKED " in *" $p "*) continue ;; esac
		# bash's /dev/tcp: the connect succeeds iff something listens.
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			PICKED="$PICKED $p"
			printf -v "$1" %s "$p"
			return 0
		fi
	done
	die "no free port found in 20000-32000"
}

# Component $1 exited on try $2: go on (return) if it lost its port to
# another process and tries remain, else fail with its log tail.
retry_port() {
	if [ "$2" -lt 3 ] && grep -q "address already in use" "$D/logs/$1.log"; then
		say "$1 lost its port to another process; trying new ports"
		return 0
	fi
	check_alive || true
	die "$1 exited during start-up"
}

# --- certificates ----------------------------------------------------------------

# leaf NAME SUBJECT EXTENSIONS: an EC P-256 key and a cert signed by the CA.
leaf() {
	printf '%b\n' "$3" >"$D/pki/$1.ext"
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$D/pki/$1.key" -out "$D/pki/$1.csr" -subj "$2" 2>/dev/null
	openssl x509 -req -in "$D/pki/$1.csr" -CA "$D/pki/ca.crt" -CAkey "$D/pki/ca.key" \
		-CAcreateserial -days 30 -sha256 -extfile "$D/pki/$1.ext" \
		-out "$D/pki/$1.crt" 2>/dev/null
	rm -f "$D/pki/$1.csr" "$D/pki/$1.ext"
}

make_pki() {
	mkdir -p "$D/pki"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$D/pki/ca.key" -out "$D/pki/ca.crt" -days 30 -sha256 \
		-subj "/CN=gpuq-e2e-ca" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null ||
		die "openssl: cannot make the CA"
	client="basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth"
	leaf apiserver "/CN=kube-apiserver" \
		"basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" ||
		die "openssl: apiserver cert"
	leaf admin "/O=system:masters/CN=admin" "$client" || die "openssl: admin cert"
	leaf kube-controller-manager "/CN=system:kube-controller-manager" "$client" ||
		die "openssl: controller-manager cert"
	leaf kube-scheduler "/CN=system:kube-scheduler" "$client" || die "openssl: scheduler cert"
	# ServiceAccount token signing key pair.
	openssl genrsa -out "$D/pki/sa.key" 2048 2>/dev/null || die "openssl: service-account key"
	openssl rsa -in "$D/pki/sa.key" -pubout -out "$D/pki/sa.pub" 2>/dev/null ||
		die "openssl: service-account public key"
	rm -f "$D/pki/ca.srl"
}

# kubeconfig FILE USER: a kubeconfig for pki/USER.{crt,key} at the apiserver.
kubeconfig() {
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: gpuq-e2e
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $D/pki/ca.crt
users:
- name: $2
  user:
    client-certificate: $D/pki/$2.crt
    client-key: $D/pki/$2.key
contexts:
- name: gpuq-e2e
  context:
    cluster: gpuq-e2e
    user: $2
current-context: gpuq-e2e
EOF
}

# --- the components ----------------------------------------------------------------

start_etcd() {
	free_port ETCD_PORT; free_port ETCD_PEER_PORT
	start etcd "$ETCD_BIN" --name e2e --data-dir "$D/etcd" --unsafe-no-fsync \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-cluster "e2e=http://127.0.0.1:$ETCD_PEER_PORT" \
		--listen-metrics-urls "" --log-level warn
}

etcd_healthy() { curl -sf "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }

start_apiserver() {
	[ -n "${1:-}" ] || free_port API_PORT
	start kube-apiserver "$K8S_DIR/kube-apiserver" \
		--etcd-servers "http://127.0.0.1:$ETCD_PORT" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
		--tls-cert-file "$D/pki/apiserver.crt" --tls-private-key-file "$D/pki/apiserver.key" \
		--client-ca-file "$D/pki/ca.crt" \
		--service-account-issuer https://kubernetes.default.svc.cluster.local \
		--service-account-key-file "$D/pki/sa.pub" \
		--service-account-signing-key-file "$D/pki/sa.key" \
		--service-cluster-ip-range 10.0.0.0/24 \
		--authorization-mode Node,RBAC \
		--endpoint-reconciler-type none \
		--disable-admission-plugins TaintNodesByCondition \
		--allow-privileged=true
}

apiserver_ready() {
	[ "$(curl -sf --cacert "$D/pki/ca.crt" --cert "$D/pki/admin.crt" --key "$D/pki/admin.key" \
		"https://127.0.0.1:$API_PORT/readyz")" = ok ]
}

start_controllers() {
	kubeconfig "$D/kubeconfigs/controller-manager.kubeconfig" kube-controller-manager
	kubeconfig "$D/kubeconfigs/scheduler.kubeconfig" kube-scheduler
	start kube-controller-manager "$K8S_DIR/kube-controller-manager" \
		--kubeconfig "$D/kubeconfigs/controller-manager.kubeconfig" \
		--root-ca-file "$D/pki/ca.crt" \
		--service-account-private-key-file "$D/pki/sa.key" \
		--use-service-account-credentials=true \
		--cluster-signing-cert-file "$D/pki/ca.crt" --cluster-signing-key-file "$D/pki/ca.key" \
		--leader-elect=false --secure-port 0 \
		--kube-api-qps "${GPUQ_E2E_KCM_QPS:-20}" --kube-api-burst "${GPUQ_E2E_KCM_BURST:-30}" \
		--controllers '*,-nodeipam,-nodelifecycle'
	start kube-scheduler "$K8S_DIR/kube-scheduler" \
		--kubeconfig "$D/kubeconfigs/scheduler.kubeconfig" \
		--leader-elect=false --secure-port 0
}

start_kwok() {
	# No --server-address: kwok's own HTTP server (metrics, fake logs/exec)
	# is not needed, and one port less cannot collide.
	set -- --kubeconfig "$D/kubeconfig" --manage-all-nodes=false \
		--manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
		--node-ip 127.0.0.1
	for f in "$KWOK_DIR"/stage/node/fast/*.yaml "$KWOK_DIR"/stage/pod/general/*.yaml; do
		set -- "$@" --config "$f"
	done
	start kwok "$KWOK_BIN" "$@"
}

kubectl_() { "$KUBECTL_BIN" --kubeconfig "$D/kubeconfig" "$@"; }

# All nodes in the manifests are Ready (kwok took them).
nodes_ready() {
	want=$(grep -c '^kind: Node' "$NODES_FILE")
	got=$(kubectl_ get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
		grep -c '^True$')
	[ "$got" -ge "$want" ]
}

write_env() {
	cat >"$D/env.tmp" <<EOF
E2E_DIR=$D
KUBECONFIG=$D/kubeconfig
KUBECTL=$KUBECTL_BIN
K8S_VERSION=$($KUBECTL_BIN version --client 2>/dev/null | sed -n 's/^Client Version: //p')
APISERVER=https://127.0.0.1:$API_PORT
APISERVER_PORT=$API_PORT
ETCD_URL=http://127.0.0.1:$ETCD_PORT
ETCD_PORT=$ETCD_PORT
ETCD_PEER_PORT=$ETCD_PEER_PORT
CA_CERT=$D/pki/ca.crt
CA_KEY=$D/pki/ca.key
ADMIN_CERT=$D/pki/admin.crt
ADMIN_KEY=$D/pki/admin.key
EOF
	mv "$D/env.tmp" "$D/env"
}

cmd_up() {
	for b in "$ETCD_BIN" "$KWOK_BIN" "$KUBECTL_BIN" "$K8S_DIR/kube-apiserver" \
		"$K8S_DIR/kube-controller-manager" "$K8S_DIR/kube-scheduler"; do
		[ -x "$b" ] || die "missing $b: run e2e/build.sh first"
	done
	command -v openssl >/dev/null || die "openssl is not on PATH"
	command -v curl >/dev/null || die "curl is not on PATH"
	for c in $COMPONENTS; do
		p=$(pid_of "$c" "$D")
		[ -z "$p" ] || ! ours_alive "$p" "$D" ||
			die "$D already runs $c (pid $p): run 'e2e/cluster.sh down $D' first"
	done
	rm -rf "$D/pki" "$D/etcd" "$D/logs" "$D/pids" "$D/kubeconfigs" "$D/env" "$D/kubeconfig"
	mkdir -p "$D/logs" "$D/pids" "$D/kubeconfigs"
	# From here on, a failure stops whatever was started.
	trap 'exit 130' INT TERM
	trap 'echo "cluster.sh: up failed; stopping what was started (logs kept in $D/logs)" >&2; stop_all "$D" >&2' EXIT

	make_pki
	say "certificates made"

	# etcd and the apiserver listen on ports picked just before they start:
	# if another process took one in between, start again on new ports.
	for try in 1 2 3; do
		start_etcd
		wait_ready etcd "etcd /health" etcd_healthy && break
		retry_port etcd "$try"
		rm -rf "$D/etcd"
	done
	say "etcd healthy on 127.0.0.1:$ETCD_PORT"

	for try in 1 2 3; do
		start_apiserver
		wait_ready kube-apiserver "kube-apiserver /readyz" apiserver_ready && break
		retry_port kube-apiserver "$try"
	done
	kubeconfig "$D/kubeconfig" admin
	say "kube-apiserver ready at https://127.0.0.1:$API_PORT"

	start_controllers
	start_kwok
	wait_until "the default ServiceAccount" kubectl_ -n default get serviceaccount default
	say "controller-manager up (default ServiceAccount exists)"

	if [ -n "$NODES_FILE" ]; then
		kubectl_ apply -f "$NODES_FILE" >/dev/null || die "kubectl apply -f $NODES_FILE"
		wait_until "nodes Ready (kwok)" nodes_ready
		say "nodes Ready: $(kubectl_ get nodes -o jsonpath='{.items[*].metadata.name}')"
	fi
	write_env
	trap - EXIT INT TERM
	say "up: APISERVER=https://127.0.0.1:$API_PORT KUBECONFIG=$D/kubeconfig"
}

cmd_restart_apiserver() {
	[ -f "$D/env" ] || die "no $D/env: is the cluster up?"
	API_PORT=$(sed -n 's/^APISERVER_PORT=//p' "$D/env")
	ETCD_PORT=$(sed -n 's/^ETCD_PORT=//p' "$D/env")
	stop_all "$D" kube-apiserver
	mv "$D/logs/kube-apiserver.log" "$D/logs/kube-apiserver.before-restart.log"
	start_apiserver same-port
	wait_until "kube-apiserver /readyz after its restart" apiserver_ready
	say "kube-apiserver restarted on 127.0.0.1:$API_PORT"
}

cmd_status() {
	rc=0
	for c in $COMPONENTS; do
		p=$(pid_of "$c" "$D")
		if [ -n "$p" ] && ours_alive "$p" "$D"; then
			echo "$c pid $p running"
		else
			echo "$c pid ${p:-none} dead"; rc=1
		fi
	done
	if [ -f "$D/env" ]; then
		API_PORT=$(sed -n 's/^APISERVER_PORT=//p' "$D/env")
		if apiserver_ready; then echo "readyz ok"; else echo "readyz failed"; rc=1; fi
	else
		echo "no $D/env (not up)"; rc=1
	fi
	return $rc
}

[ $# -eq 2 ] || die "usage: $0 up|down|status|env|restart-apiserver DIR"
case $2 in *[[:space:]]*) die "DIR must not contain whitespace: '$2'" ;; esac
mkdir -p "$2" 2>/dev/null || die "cannot create $2"
D=$(cd "$2" && pwd)

case $1 in
up) cmd_up ;;
down) stop_all "$D" ;;
status) cmd_status ;;
env) cat "$D/env" 2>/dev/null || die "no $D/env: is the cluster up?" ;;
restart-apiserver) cmd_restart_apiserver ;;
*) die "usage: $0 up|down|status|env|restart-apiserver DIR" ;;
esac
