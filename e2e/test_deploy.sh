#!/usr/bin/env bash
# deploy/ as it ships, on this run's control plane (deploy/check.sh with
# DEPLOY_CHECK_ENV): every manifest and the kustomization apply, the
# examples load in the CRDs and in gpuq's decoder, bad objects are refused
# with their message, RBAC allows exactly the controller's calls, Pod
# Security restricted holds. check.sh points the webhook configurations at
# deploy/'s Service (no Pod of it serves here) and starts deploy/'s
# Deployment: afterwards the run's own webhook configurations, pointing at
# replica "main", are applied again and what check.sh made is deleted.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=$("$ROOT/deploy/check.sh" --plan)
plan $((N + 1))
NS=e2e-dep
gpu_queue $NS 1

out=$(GPUQ_BIN=$GPUQ DEPLOY_CHECK_ENV=$E2E_RUN/cluster/env "$ROOT/deploy/check.sh" "$E2E_RUN/deploy-check")
rc=$?
printf '%s\n' "$out" | sed -n -e "s/^ok - /ok - $SCENARIO: /p" -e "s/^not ok - /not ok - $SCENARIO: /p" \
	-e 's/^\(# .*\)/\1/p'
echo "# deploy/check.sh: $(printf '%s\n' "$out" | tail -n 1) (exit $rc)" >&2

# this run's webhooks and objects back as the scenarios after this one expect
k apply -f "$E2E_RUN/webhook.yaml" >/dev/null
k delete -f "$ROOT/deploy/40-deployment.yaml" -f "$ROOT/deploy/50-networkpolicy.yaml" \
	--ignore-not-found --wait=false >/dev/null 2>&1
k delete service gpuq-webhook -n gpuq-system --ignore-not-found >/dev/null 2>&1
k -n gpuq-system delete secret gpuq-certs --ignore-not-found >/dev/null 2>&1
k delete -f "$ROOT/examples/policy/" --ignore-not-found --wait=false >/dev/null 2>&1
check "the run's webhooks serve again: gpuq main reviews a GPU Job" queue_known $NS
# check.sh's not-ok lines counted its failures; dying without them is one more
printf '%s\n' "$out" | grep -qE '^[0-9]+ passed, [0-9]+ failed$' || exit 1
