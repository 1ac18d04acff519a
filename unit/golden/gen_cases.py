#!/usr/bin/env python3
"""Writes the golden admission cases in unit/golden/cases/ (run from the repo
root: python3 unit/golden/gen_cases.py). Each case is one AdmissionReview sent
to /mutate or /validate against the policy in unit/golden/policy/, with the
reply gpuq must give. The expectations below are written by hand from the
rules in docs/admission.md, not captured from gpuq's output. gpuq decides
them with one extra GPU resource name, --gpu-resource amd.com/gpu.

Case file: {"endpoint": "mutate"|"validate",
            "request": <AdmissionReview>  (or "request_raw": "<body text>"),
            "expect": {"http_status": 200|400, "allowed": bool, "code": int|null,
                       "message_contains": str|null, "patch": [ops]|null,
                       "warning_contains": str (optional)}}
"patch" is compared as a multiset of operations (their order is free)."""
import copy
import json
import os
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")
ALICE = "alice@example.com"
CTRL = "system:serviceaccount:gpuq-system:gpuq"
JOBCTRL = "system:serviceaccount:kube-system:job-controller"

cases = []
uid_n = [0]


def review(kind, obj, op="CREATE", ns="team-a", user=ALICE, old=None, uid=None):
    uid_n[0] += 1
    gvk = {"Pod": {"group": "", "version": "v1", "kind": "Pod"},
           "Job": {"group": "batch", "version": "v1", "kind": "Job"}}.get(
        kind, {"group": "apps", "version": "v1", "kind": kind})
    res = {"Pod": "pods", "Job": "jobs"}.get(kind, kind.lower() + "s")
    req = {
        "uid": uid if uid is not None else "00000000-0000-0000-0000-%012d" % uid_n[0],
        "kind": gvk,
        "resource": {"group": gvk["group"], "version": "v1", "resource": res},
        "requestKind": gvk,
        "requestResource": {"group": gvk["group"], "version": "v1", "resource": res},
        "name": (obj or old or {}).get("metadata", {}).get("name", ""),
        "namespace": ns,
        "operation": op,
        "userInfo": {"username": user, "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


def container(name="main", requests=None, limits=None, **extra):
    c = {"name": name, "image": "nvcr.io/nvidia/pytorch:24.05-py3"}
    res = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    if requests is not None or limits is not None:
        c["resources"] = res
    c.update(extra)
    return c


def full(gpu="1", cpu="1", mem="2Gi", key="nvidia.com/gpu"):
    """A container whose requests and limits are complete for team-a."""
    r = {"cpu": cpu, "memory": mem, key: gpu}
    return container(requests=dict(r), limits=dict(r))


def job(name="train", ns="team-a", containers=None, labels=None, tlabels=None,
        annotations=None, parallelism=None, completions=None, suspend=None,
        init=None, template_meta=True, claims=None, tannotations=None,
        replacement="Failed"):
    spec = {"restartPolicy": "Never",
            "containers": containers if containers is not None else [full()]}
    if init is not None:
        spec["initContainers"] = init
    if claims is not None:
        spec["resourceClaims"] = claims
    tmpl = {"spec": spec}
    if template_meta:
        tmpl["metadata"] = {"labels": tlabels if tlabels is not None else {"app": name}}
        if tannotations is not None:
            tmpl["metadata"]["annotations"] = tannotations
    meta = {"name": name, "namespace": ns}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    js = {"backoffLimit": 2, "template": tmpl}
    if replacement is not None:  # the apiserver defaults it before webhooks
        js["podReplacementPolicy"] = replacement
    if parallelism is not None:
        js["parallelism"] = parallelism
    if completions is not None:
        js["completions"] = completions
    if suspend is not None:
        js["suspend"] = suspend
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": js}


def pod(name="nb", ns="team-a", containers=None, labels=None, annotations=None,
        gates=None, owner=None, claims=None, node=None):
    spec = {"containers": containers if containers is not None else [full()]}
    if gates is not None:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    if claims is not None:
        spec["resourceClaims"] = claims
    if node is not None:
        spec["nodeName"] = node
    meta = {"name": name, "namespace": ns}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": owner,
                                    "uid": "11111111-2222-3333-4444-555555555555",
                                    "controller": True, "blockOwnerDeletion": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


Q = {"gpuq.dev/queue-name": "default"}
GATED = ["gpuq.dev/admission"]
JOB_POD_LABELS = {"gpuq.dev/managed": "true", "app": "train"}
ADMITTED = {"gpuq.dev/admitted": "true"}


def add(path, value):
    return {"op": "add", "path": path, "value": value}


def waiting(cq):
    """The first gpuq.dev/status the webhook gives a GPU Job or plain Pod it
    queues (docs/admission.md): waiting for quota in its LocalQueue's
    ClusterQueue (the controller's queue_workload_status text then)."""
    return "pending in ClusterQueue %s: waiting for quota" % cq


def status(cq, has_annotations=False):
    """The op writing it: into the annotations map, or creating the map."""
    if has_annotations:
        return add("/metadata/annotations/gpuq.dev~1status", waiting(cq))
    return add("/metadata/annotations", {"gpuq.dev/status": waiting(cq)})


def case(name, endpoint, request, allowed=True, code=None, message=None, patch=None,
         http=200, warning=None, raw=None):
    exp = {"http_status": http, "allowed": allowed, "code": code,
           "message_contains": message, "patch": patch}
    if warning:
        exp["warning_contains"] = warning
    c = {"endpoint": endpoint}
    if raw is not None:
        c["request_raw"] = raw
    else:
        c["request"] = request
    c["expect"] = exp
    cases.append((name, c))


def deny(name, endpoint, request, message, code=403):
    case(name, endpoint, request, allowed=False, code=code, message=message)


def bad(name, endpoint, message, request=None, raw=None):
    case(name, endpoint, request, allowed=False, code=None, message=message, http=400, raw=raw)


# ---------------------------------------------------------------- /mutate
LR_LIMITS = "/spec/template/spec/containers/0/resources/limits"
case("mutate-job-gpu-defaults", "mutate",
     review("Job", job(labels={}, containers=[container(limits={"nvidia.com/gpu": "8"})],
                       parallelism=2, completions=2, replacement=None)),
     patch=[add("/spec/suspend", True),
            add("/spec/podReplacementPolicy", "Failed"),
            add("/metadata/labels/gpuq.dev~1queue-name", "default"),
            add("/spec/template/metadata/labels/gpuq.dev~1managed", "true"),
            add(LR_LIMITS + "/cpu", "1"),
            add(LR_LIMITS + "/memory", "2Gi"),
            add("/spec/template/spec/containers/0/resources/requests",
                {"nvidia.com/gpu": "8", "cpu": "500m", "memory": "1Gi"}),
            status("cq-a")],
     warning="queued in team-a/default: Job created suspended until gpuq admits it")
case("mutate-job-kueue-label-complete", "mutate",
     review("Job", job(labels={"kueue.x-k8s.io/queue-name": "research"}, suspend=True,
                       tlabels=JOB_POD_LABELS,
                       annotations={"gpuq.dev/status": waiting("cq-a")})),
     patch=None, warning="queued in team-a/research")
case("mutate-job-no-labels-no-template-metadata", "mutate",
     review("Job", job(template_meta=False, suspend=False, replacement="TerminatingOrFailed")),
     patch=[add("/spec/suspend", True),
            add("/spec/podReplacementPolicy", "Failed"),
            add("/metadata/labels", {"gpuq.dev/queue-name": "default"}),
            add("/spec/template/metadata", {"labels": {"gpuq.dev/managed": "true"}}),
            status("cq-a")])
case("mutate-job-init-container-defaults", "mutate",
     review("Job", job(labels=Q, suspend=True, tlabels=JOB_POD_LABELS,
                       init=[container(name="fetch")])),
     patch=[add("/spec/template/spec/initContainers/0/resources",
                {"limits": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": "0"},
                 "requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "0"}}),
            status("cq-a")])
case("mutate-job-cpu-only", "mutate",
     review("Job", job(containers=[container(requests={"cpu": "2"})])), patch=None)
case("mutate-job-unmanaged-namespace", "mutate",
     review("Job", job(ns="free"), ns="free"), patch=None)
case("mutate-job-update-untouched", "mutate",
     review("Job", job(suspend=False), op="UPDATE", old=job(suspend=True)), patch=None)
case("mutate-job-mig-team-b", "mutate",
     review("Job", job(ns="team-b", labels=Q, tlabels=JOB_POD_LABELS,
                       containers=[container(limits={"nvidia.com/mig-1g.10gb": "1"})]),
            ns="team-b"),
     patch=[add("/spec/suspend", True),
            add("/spec/template/spec/containers/0/resources/requests",
                {"nvidia.com/mig-1g.10gb": "1"}),
            status("cq-b")])
case("mutate-pod-gpu-gate", "mutate",
     review("Pod", pod(ns="team-b", labels=Q), ns="team-b"),
     patch=[add("/spec/schedulingGates", [{"name": "gpuq.dev/admission"}]), status("cq-b")],
     warning="queued in team-b/default: Pod gated until gpuq admits it")
case("mutate-pod-other-gate-no-labels", "mutate",
     review("Pod", pod(gates=["example.com/other"])),
     patch=[add("/spec/schedulingGates/-", {"name": "gpuq.dev/admission"}),
            add("/metadata/labels", {"gpuq.dev/queue-name": "default"}), status("cq-a")])
case("mutate-pod-already-gated-idempotent", "mutate",
     review("Pod", pod(labels=Q, gates=GATED,
                       annotations={"gpuq.dev/status": waiting("cq-a")})), patch=None)
# the Job controller's Pod of an admitted Job, but this server (a policy
# dir: no controller, no watch) knows no admitted Job: refused, never let
# through on its marks alone (test_webhook.c lets it pass with the owner
# known)
deny("mutate-pod-admitted-job-pod", "mutate",
     review("Pod", pod(labels=JOB_POD_LABELS, annotations=ADMITTED, owner="train"),
            user=JOBCTRL),
     'its owner Job "train" (uid 11111111-2222-3333-4444-555555555555) is not among the Jobs gpuq admitted and runs')
case("mutate-pod-job-pod-not-admitted", "mutate",
     review("Pod", pod(labels=JOB_POD_LABELS, owner="train"), user=JOBCTRL),
     patch=[add("/spec/schedulingGates", [{"name": "gpuq.dev/admission"}]),
            add("/metadata/labels/gpuq.dev~1queue-name", "default"), status("cq-a")])
case("mutate-pod-forged-job-owner", "mutate",
     review("Pod", pod(labels=JOB_POD_LABELS, annotations=ADMITTED, owner="train")),
     patch=[add("/spec/schedulingGates", [{"name": "gpuq.dev/admission"}]),
            add("/metadata/labels/gpuq.dev~1queue-name", "default"),
            status("cq-a", has_annotations=True)])
case("mutate-pod-mig", "mutate",
     review("Pod", pod(labels=Q, containers=[full(key="nvidia.com/mig-1g.10gb")])),
     patch=[add("/spec/schedulingGates", [{"name": "gpuq.dev/admission"}]), status("cq-a")])
case("mutate-pod-gpu-shared", "mutate",
     review("Pod", pod(ns="team-b", labels=Q, containers=[
         container(requests={"nvidia.com/gpu.shared": "1"},
                   limits={"nvidia.com/gpu.shared": "1"})]), ns="team-b"),
     patch=[add("/spec/schedulingGates", [{"name": "gpuq.dev/admission"}]), status("cq-b")])
case("mutate-pod-dra-gpu-claim", "mutate",
     review("Pod", pod(labels=Q, containers=[container(requests={"cpu": "1"})],
                       claims=[{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}])),
     patch=[add("/spec/schedulingGates", [{"name": "gpuq.dev/admission"}]), status("cq-a")])
case("mutate-pod-dra-nic-claim", "mutate",
     review("Pod", pod(labels=Q, containers=[container(requests={"cpu": "1"})],
                       claims=[{"name": "nic", "resourceClaimTemplateName": "a-nic"}])),
     patch=None)
case("mutate-pod-zero-gpus", "mutate",
     review("Pod", pod(containers=[container(requests={"nvidia.com/gpu": "0"},
                                             limits={"nvidia.com/gpu": "0"})])),
     patch=None)
case("mutate-pod-kueue-label", "mutate",
     review("Pod", pod(labels={"kueue.x-k8s.io/queue-name": "research"})),
     patch=[add("/spec/schedulingGates", [{"name": "gpuq.dev/admission"}]), status("cq-a")],
     warning="queued in team-a/research")
deny("mutate-bad-quantity-dots", "mutate",
     review("Job", job(containers=[container(limits={"nvidia.com/gpu": "1.2.3"})])),
     '"1.2.3"', code=400)
deny("mutate-bad-quantity-suffix", "mutate",
     review("Pod", pod(containers=[container(requests={"memory": "1Gb", "nvidia.com/gpu": "1"},
                                             limits={"nvidia.com/gpu": "1"})])),
     'resources.requests[memory]: invalid quantity "1Gb"', code=400)
deny("mutate-bad-quantity-empty", "mutate",
     review("Pod", pod(containers=[container(limits={"nvidia.com/gpu": ""})])),
     'resources.limits[nvidia.com/gpu]: invalid quantity ""', code=400)
deny("mutate-bad-quantity-overflow", "mutate",
     review("Job", job(containers=[container(limits={"nvidia.com/gpu": "99999999999999999999"})])),
     '"99999999999999999999"', code=400)
case("mutate-delete-allowed", "mutate",
     review("Pod", None, op="DELETE", old=pod()), patch=None)
case("mutate-other-kind", "mutate",
     review("Deployment", {"apiVersion": "apps/v1", "kind": "Deployment",
                           "metadata": {"name": "web", "namespace": "team-a"}, "spec": {}}),
     patch=None)

# ---------------------------------------------------------------- bad input
bad("bad-not-json", "mutate", "not JSON", raw="this is not json")
bad("bad-deep-nesting", "validate", "nested deeper than 64",
    raw='{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":'
        + "[" * 100 + "]" * 100 + "}")
bad("bad-api-version", "mutate", 'apiVersion is "admission.k8s.io/v1beta1"',
    request=dict(review("Pod", pod()), apiVersion="admission.k8s.io/v1beta1"))
bad("bad-kind", "validate", 'kind is "Pod"', request=dict(review("Pod", pod()), kind="Pod"))
bad("bad-missing-uid", "validate", "request.uid is missing",
    request=review("Pod", pod(), uid=""))

deny("bad-create-without-object", "validate", review("Job", None),
     "request.object: missing or not an object for a CREATE of a Job", code=400)

# ---------------------------------------------------------------- /validate
case("validate-job-ok", "validate",
     review("Job", job(labels=Q, suspend=True, parallelism=2,
                       containers=[container(limits={"nvidia.com/gpu": "8"})])))
deny("validate-job-unknown-queue", "validate",
     review("Job", job(labels={"gpuq.dev/queue-name": "nope"}, suspend=True)),
     'label gpuq.dev/queue-name is "nope", but namespace team-a has no LocalQueue "nope"; '
     'set the label to an existing LocalQueue (kubectl get localqueues -n team-a)')
deny("validate-job-kueue-label-unknown", "validate",
     review("Job", job(labels={"kueue.x-k8s.io/queue-name": "nope"}, suspend=True)),
     'label kueue.x-k8s.io/queue-name is "nope"')
deny("validate-job-namespace-without-localqueue", "validate",
     review("Job", job(ns="team-c", labels=Q, suspend=True), ns="team-c"),
     'namespace team-c has no LocalQueue "default"')
deny("validate-job-clusterqueue-not-selecting", "validate",
     review("Job", job(ns="team-d", labels={"gpuq.dev/queue-name": "elsewhere"}, suspend=True),
            ns="team-d"),
     'LocalQueue team-d/elsewhere points to ClusterQueue "cq-x", whose namespaceSelector '
     'does not select namespace team-d')
deny("validate-job-limitrange-container-max", "validate",
     review("Job", job(labels=Q, suspend=True,
                       containers=[container(limits={"nvidia.com/gpu": "16"})])),
     "maximum nvidia.com/gpu usage per Container is 8, but limit is 16")
deny("validate-job-template-defaults-then-ratio", "validate",
     review("Job", job(labels=Q, suspend=True,
                       containers=[container(requests={"cpu": "100m"},
                                             limits={"nvidia.com/gpu": "1"})])),
     "cpu max limit to request ratio per Container is 4, but provided ratio is 10.000000")
deny("validate-pod-limitrange-pod-min", "validate",
     review("Pod", pod(labels=Q, gates=GATED, containers=[
         container(requests={"memory": "32Mi", "nvidia.com/gpu": "1"},
                   limits={"memory": "32Mi", "nvidia.com/gpu": "1"})])),
     "minimum memory usage per Pod is 64Mi, but request is 32Mi")
deny("validate-pod-extended-request-ne-limit", "validate",
     review("Pod", pod(ns="team-b", labels=Q, gates=GATED, containers=[
         container(requests={"nvidia.com/gpu": "1"}, limits={"nvidia.com/gpu": "2"})]),
            ns="team-b"),
     'Pod "nb": spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "1": '
     'must be equal to nvidia.com/gpu limit of 2 (container "main": extended resources cannot '
     'be overcommitted, set request and limit to the same value, or set only the limit)')
deny("validate-pod-extended-not-integer", "validate",
     review("Pod", pod(ns="team-b", labels=Q, gates=GATED, containers=[
         container(requests={"nvidia.com/gpu": "1500m"}, limits={"nvidia.com/gpu": "1500m"})]),
            ns="team-b"),
     'spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "1500m": must be '
     'an integer (container "main": extended resources are allocated in whole units, use e.g. 2)')
deny("validate-job-quota-exceeded", "validate",
     review("Job", job(labels=Q, suspend=True, parallelism=5,
                       containers=[container(limits={"nvidia.com/gpu": "8"})])),
     "exceeded quota: team-a-quota, requested: requests.nvidia.com/gpu=40, "
     "used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=32")
deny("validate-pod-mig-quota-exceeded", "validate",
     review("Pod", pod(labels=Q, gates=GATED,
                       containers=[full(gpu="10", key="nvidia.com/mig-1g.10gb")])),
     "exceeded quota: team-a-quota, requested: requests.nvidia.com/mig-1g.10gb=10")
deny("validate-job-never-fits", "validate",
     review("Job", job(labels=Q, suspend=True, parallelism=4,
                       containers=[container(limits={"nvidia.com/gpu": "8"})])),
     'it requests nvidia.com/gpu=32 in total (8 per pod x 4 pods), more than ClusterQueue '
     '"cq-a" could give in any flavor even borrowing all it may (h100: 24, a100: 8)')
case("validate-job-completions-below-parallelism", "validate",
     review("Job", job(labels=Q, suspend=True, parallelism=10, completions=3,
                       containers=[container(limits={"nvidia.com/gpu": "8"})])))
deny("validate-job-uncovered-resource", "validate",
     review("Job", job(labels=Q, suspend=True,
                       containers=[full(key="nvidia.com/mig-2g.20gb")])),
     'no resource group of ClusterQueue "cq-a" covers nvidia.com/mig-2g.20gb')
deny("validate-pod-dra-never-fits", "validate",
     review("Pod", pod(labels=Q, gates=GATED, containers=[container(requests={"cpu": "1"})],
                       claims=[{"name": "gpus", "resourceClaimTemplateName": "many-gpus"}])),
     "it requests nvidia.com/gpu=40 in total")
case("validate-pod-dra-fits", "validate",
     review("Pod", pod(labels=Q, gates=GATED, containers=[container(requests={"cpu": "1"})],
                       claims=[{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}])))
deny("validate-tenant-unsuspends", "validate",
     review("Job", job(labels=Q, suspend=False), op="UPDATE", old=job(labels=Q, suspend=True)),
     "spec.suspend may change from true to false only by gpuq")
case("validate-controller-unsuspends", "validate",
     review("Job", job(labels=Q, suspend=False, annotations=ADMITTED), op="UPDATE",
            old=job(labels=Q, suspend=True), user=CTRL))
case("validate-tenant-resumes-admitted-job", "validate",
     review("Job", job(labels=Q, suspend=False, annotations=ADMITTED), op="UPDATE",
            old=job(labels=Q, suspend=True, annotations=ADMITTED)))
deny("validate-tenant-sets-admitted", "validate",
     review("Job", job(labels=Q, suspend=True, annotations=ADMITTED), op="UPDATE",
            old=job(labels=Q, suspend=True)),
     "metadata.annotations[gpuq.dev/admitted] may be set only by gpuq's controller")
deny("validate-tenant-sets-template-admitted", "validate",
     review("Job", job(labels=Q, suspend=True, tannotations=ADMITTED), op="UPDATE",
            old=job(labels=Q, suspend=True)),
     "spec.template.metadata.annotations[gpuq.dev/admitted] may be set only by gpuq")
deny("validate-job-created-admitted", "validate",
     review("Job", job(labels=Q, suspend=True, annotations=ADMITTED)),
     "metadata.annotations[gpuq.dev/admitted] may be set only by gpuq's controller")
deny("validate-job-created-template-admitted", "validate",
     review("Job", job(labels=Q, suspend=True, tannotations=ADMITTED)),
     "spec.template.metadata.annotations[gpuq.dev/admitted] may be set only by gpuq")
deny("validate-job-created-unsuspended", "validate",
     review("Job", job(labels=Q, suspend=False)),
     "must be created suspended")
deny("validate-tenant-removes-gate", "validate",
     review("Pod", pod(labels=Q, gates=[]), op="UPDATE", old=pod(labels=Q, gates=GATED)),
     "scheduling gate gpuq.dev/admission may be removed only by gpuq")
case("validate-controller-removes-gate", "validate",
     review("Pod", pod(labels=Q, gates=[]), op="UPDATE", old=pod(labels=Q, gates=GATED),
            user=CTRL))
deny("validate-pod-queue-change-after-admission", "validate",
     review("Pod", pod(labels={"gpuq.dev/queue-name": "research"}), op="UPDATE",
            old=pod(labels=Q)),
     'label gpuq.dev/queue-name cannot change after admission (was "default", now "research")')
case("validate-pod-queue-change-while-gated", "validate",
     review("Pod", pod(labels={"gpuq.dev/queue-name": "research"}, gates=GATED), op="UPDATE",
            old=pod(labels=Q, gates=GATED)))
deny("validate-job-queue-change-after-admission", "validate",
     review("Job", job(labels={"gpuq.dev/queue-name": "research"}, suspend=False,
                       annotations=ADMITTED), op="UPDATE",
            old=job(labels=Q, suspend=False, annotations=ADMITTED)),
     "cannot change after admission")
deny("validate-job-parallelism-grows-after-admission", "validate",
     review("Job", job(labels=Q, suspend=False, annotations=ADMITTED, parallelism=4),
            op="UPDATE", old=job(labels=Q, suspend=False, annotations=ADMITTED, parallelism=2)),
     "spec.parallelism cannot grow after admission (was 2, now 4)")
GROUP = {"gpuq.dev/queue-name": "default", "kueue.x-k8s.io/pod-group-name": "gang"}
# a member is judged alone (the others may ask for something else): one
# that alone asks for more than cq-a could ever give (24 GPUs) never fits
deny("validate-pod-group-never-fits", "validate",
     review("Pod", pod(labels=GROUP, gates=GATED,
                       annotations={"kueue.x-k8s.io/pod-group-total-count": "4"},
                       containers=[dict(full(gpu="8"), name="c%d" % i) for i in range(4)])),
     'it requests nvidia.com/gpu=32 in total, more than ClusterQueue "cq-a" could give')
case("validate-pod-group-fits", "validate",
     review("Pod", pod(labels=GROUP, gates=GATED,
                       annotations={"kueue.x-k8s.io/pod-group-total-count": "2"},
                       containers=[full(gpu="8")])))
deny("validate-pod-group-without-count", "validate",
     review("Pod", pod(labels=GROUP, gates=GATED, containers=[full(gpu="8")])),
     "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: Required value", code=400)
deny("validate-job-resources-edited-while-queued", "validate",
     review("Job", job(labels=Q, suspend=True,
                       containers=[container(limits={"nvidia.com/gpu": "16"})]),
            op="UPDATE", old=job(labels=Q, suspend=True)),
     "maximum nvidia.com/gpu usage per Container is 8, but limit is 16")
case("validate-job-labels-edited-while-queued", "validate",
     review("Job", job(labels=dict(Q, extra="x"), suspend=True), op="UPDATE",
            old=job(labels=Q, suspend=True)))
case("validate-unmanaged-namespace", "validate",
     review("Job", job(ns="free", suspend=False), ns="free"))
case("validate-delete-allowed", "validate", review("Job", None, op="DELETE", old=job()))
deny("validate-pod-without-gate", "validate",
     review("Pod", pod(labels=Q)), "spec.schedulingGates lacks gpuq.dev/admission")
deny("validate-pod-with-node-name", "validate",
     review("Pod", pod(labels=Q, node="gpu-node-1")), 'spec.nodeName is "gpu-node-1"')
deny("validate-pod-forged-admitted-job-pod", "validate",
     review("Pod", pod(labels=JOB_POD_LABELS, annotations=ADMITTED, owner="train", gates=GATED)),
     "annotation gpuq.dev/admitted is honoured only on Pods the Job controller creates")
deny("validate-admitted-job-pod", "validate",
     review("Pod", pod(labels=JOB_POD_LABELS, annotations=ADMITTED, owner="train"),
            user=JOBCTRL),
     'its owner Job "train" (uid 11111111-2222-3333-4444-555555555555) is not among the Jobs gpuq admitted and runs')
case("validate-pod-ok", "validate",
     review("Pod", pod(labels=Q, gates=GATED)))
deny("validate-bad-quantity", "validate",
     review("Pod", pod(labels=Q, gates=GATED,
                       containers=[container(limits={"nvidia.com/gpu": "1e999"})])),
     "resources.limits[nvidia.com/gpu]", code=400)
case("validate-status-subresource", "validate",
     dict(review("Job", job(labels=Q, suspend=False), op="UPDATE",
                 old=job(labels=Q, suspend=True))) | {})


def fix_subresource():
    # A status update (subResource "status") is never judged.
    for name, c in cases:
        if name == "validate-status-subresource":
            c["request"]["request"]["subResource"] = "status"


fix_subresource()

# ---------------------------------------------------------------- added in review
# The golden server runs with --gpu-resource amd.com/gpu (test_golden.c) and
# test_webhook.c decides in process with the same configuration.
case("mutate-pod-extra-gpu-resource", "mutate",
     review("Pod", pod(ns="team-b", labels=Q, containers=[
         container(requests={"amd.com/gpu": "1"}, limits={"amd.com/gpu": "1"})]), ns="team-b"),
     patch=[add("/spec/schedulingGates", [{"name": "gpuq.dev/admission"}]), status("cq-b")],
     warning="queued in team-b/default: Pod gated until gpuq admits it")
deny("validate-pod-extra-gpu-request-ne-limit", "validate",
     review("Pod", pod(ns="team-b", labels=Q, gates=GATED, containers=[
         container(requests={"amd.com/gpu": "1"}, limits={"amd.com/gpu": "2"})]), ns="team-b"),
     'spec.containers[0].resources.requests[amd.com/gpu]: Invalid value: "1": must be equal to '
     'amd.com/gpu limit of 2')
case("mutate-pod-dra-mig-claim", "mutate",
     review("Pod", pod(labels=Q, containers=[container(requests={"cpu": "1"})],
                       claims=[{"name": "slices", "resourceClaimTemplateName": "mig-slices"}])),
     patch=[add("/spec/schedulingGates", [{"name": "gpuq.dev/admission"}]), status("cq-a")])
# A Job whose template asks for GPUs only through a claim: suspended, and
# team-a's Container default (nvidia.com/gpu limit 0, request from it) filled in.
case("mutate-job-dra-template-claim", "mutate",
     review("Job", job(labels=Q, containers=[
         container(requests={"cpu": "1", "memory": "2Gi"}, limits={"cpu": "1", "memory": "2Gi"})],
         claims=[{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}])),
     patch=[add("/spec/suspend", True),
            add("/spec/template/metadata/labels/gpuq.dev~1managed", "true"),
            add(LR_LIMITS + "/nvidia.com~1gpu", "0"),
            add("/spec/template/spec/containers/0/resources/requests/nvidia.com~1gpu", "0"),
            status("cq-a")],
     warning="queued in team-a/default: Job created suspended until gpuq admits it")
CPU_ONLY = [container(requests={"cpu": "1", "memory": "2Gi"}, limits={"cpu": "1", "memory": "2Gi"})]
# A CPU-only Job is not gpuq's business, even with gpuq.dev/admitted on its
# template; once an UPDATE gives it GPUs (a suspended Job's resources are
# mutable from Kubernetes 1.35) it is judged as if created then.
deny("validate-job-gains-gpus-with-admitted-template", "validate",
     review("Job", job(labels=Q, suspend=True, tlabels=JOB_POD_LABELS, tannotations=ADMITTED),
            op="UPDATE", old=job(labels=Q, suspend=True, tlabels=JOB_POD_LABELS,
                                 tannotations=ADMITTED, containers=CPU_ONLY)),
     "spec.template.metadata.annotations[gpuq.dev/admitted] may be set only by gpuq's "
     "controller")
case("validate-job-gains-gpus-while-suspended", "validate",
     review("Job", job(labels=Q, suspend=True), op="UPDATE",
            old=job(labels=Q, suspend=True, containers=CPU_ONLY)))
deny("validate-pod-limitrange-container-min", "validate",
     review("Pod", pod(ns="team-e", labels=Q, gates=GATED, containers=[
         container(requests={"cpu": "50m", "memory": "1Gi", "nvidia.com/gpu": "1"},
                   limits={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"})]), ns="team-e"),
     'Pod "nb": spec: minimum cpu usage per Container is 100m, but request is 50m; change the '
     "Pod's resources to fit the LimitRanges of namespace team-e")
deny("validate-pod-limitrange-pod-max", "validate",
     review("Pod", pod(ns="team-e", labels=Q, gates=GATED,
                       containers=[full(gpu="3", mem="1Gi"),
                                   dict(full(gpu="3", mem="1Gi"), name="second")]), ns="team-e"),
     "maximum nvidia.com/gpu usage per Pod is 4, but limit is 6")
deny("validate-pod-limitrange-pod-ratio", "validate",
     review("Pod", pod(ns="team-e", labels=Q, gates=GATED, containers=[
         container(requests={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
                   limits={"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": "1"})]), ns="team-e"),
     "memory max limit to request ratio per Pod is 2, but provided ratio is 4.000000")
deny("validate-job-quota-cpu-exceeded", "validate",
     review("Job", job(ns="team-e", labels=Q, suspend=True, parallelism=2,
                       containers=[full(cpu="10", mem="1Gi")]), ns="team-e"),
     "exceeded quota: team-e-quota, requested: cpu=20, used: cpu=0, limited: cpu=16")
deny("validate-job-quota-pods-exceeded", "validate",
     review("Job", job(ns="team-e", labels=Q, suspend=True, parallelism=3,
                       containers=[full(mem="1Gi")]), ns="team-e"),
     "exceeded quota: team-e-quota, requested: pods=3, used: pods=0, limited: pods=2")
deny("validate-pod-extended-no-limit", "validate",
     review("Pod", pod(ns="team-b", labels=Q, gates=GATED, containers=[
         container(requests={"nvidia.com/gpu": "1"})]), ns="team-b"),
     "spec.containers[0].resources.limits: Required value: Limit must be set for non "
     'overcommitable resources (container "main" requests nvidia.com/gpu=1: set '
     "limits[nvidia.com/gpu] to 1 as well)")
case("validate-job-kueue-label-ok", "validate",
     review("Job", job(labels={"kueue.x-k8s.io/queue-name": "research"}, suspend=True)))
OWNER_NOT_CONTROLLER = pod(labels=JOB_POD_LABELS, annotations=ADMITTED, owner="train")
OWNER_NOT_CONTROLLER["metadata"]["ownerReferences"][0]["controller"] = False
case("mutate-pod-job-owner-not-controller", "mutate",
     review("Pod", OWNER_NOT_CONTROLLER, user=JOBCTRL),
     patch=[add("/spec/schedulingGates", [{"name": "gpuq.dev/admission"}]),
            add("/metadata/labels/gpuq.dev~1queue-name", "default"),
            status("cq-a", has_annotations=True)])
deny("validate-job-pod-without-managed-label", "validate",
     review("Pod", pod(labels={"app": "train"}, annotations=ADMITTED, owner="train"),
            user=JOBCTRL),
     "annotation gpuq.dev/admitted is honoured only on Pods the Job controller creates")
deny("validate-pod-quota-memory-exceeded", "validate",
     review("Pod", pod(ns="team-e", labels=Q, gates=GATED, containers=[full(mem="100Gi")]),
            ns="team-e"),
     "exceeded quota: team-e-quota, requested: memory=100Gi, used: memory=0, limited: "
     "memory=64Gi")


case("mutate-pod-with-node-name", "mutate",
     review("Pod", pod(labels=Q, node="gpu-node-1")), patch=None)
deny("validate-tenant-sets-pod-admitted", "validate",
     review("Pod", pod(labels=Q, gates=GATED, annotations=ADMITTED), op="UPDATE",
            old=pod(labels=Q, gates=GATED)),
     "Pod \"nb\": annotation gpuq.dev/admitted may be set only by gpuq's controller "
     "(system:serviceaccount:gpuq-system:gpuq); remove it: gpuq admits the Pod from queue "
     "team-a/default")
deny("validate-job-queue-change-while-queued-unknown", "validate",
     review("Job", job(labels={"gpuq.dev/queue-name": "nope"}, suspend=True), op="UPDATE",
            old=job(labels=Q, suspend=True)),
     'label gpuq.dev/queue-name is "nope", but namespace team-a has no LocalQueue "nope"')
# a Job's Pods are replaced only once terminated (gpuq's webhook made it
# so): a tenant cannot change that back
deny("validate-job-replacement-policy-kept", "validate",
     review("Job", job(labels=Q, suspend=True, tlabels=JOB_POD_LABELS,
                       replacement="TerminatingOrFailed"),
            op="UPDATE", old=job(labels=Q, suspend=True, tlabels=JOB_POD_LABELS)),
     'Job "train": spec.podReplacementPolicy cannot change from "Failed" (now '
     '"TerminatingOrFailed"): gpuq keeps it so a Pod\'s successor starts once the Pod has '
     'terminated')
# a status the object was created with (copied from another Job) is gpuq's
# to say: replaced by the waiting one
case("mutate-job-stale-status-replaced", "mutate",
     review("Job", job(labels=Q, suspend=True, tlabels=JOB_POD_LABELS,
                       annotations={"gpuq.dev/status": "admitted in ClusterQueue cq-a"})),
     patch=[status("cq-a", has_annotations=True)])
# a pod group's status counts its members: the controller writes it
case("mutate-pod-group-member-no-status", "mutate",
     review("Pod", pod(labels=dict(Q, **{"kueue.x-k8s.io/pod-group-name": "g"}),
                       annotations={"kueue.x-k8s.io/pod-group-total-count": "2"})),
     patch=[add("/spec/schedulingGates", [{"name": "gpuq.dev/admission"}])])


# ------------------------------------------------ pod groups (issue 31, part 3)
CPU_ONLY = container(requests={"cpu": "1", "memory": "2Gi"}, limits={"cpu": "1", "memory": "2Gi"})
PG = {"kueue.x-k8s.io/pod-group-name": "g"}
PG2 = {"kueue.x-k8s.io/pod-group-total-count": "2"}
# every member of a pod group that queues is gated and given the queue
# label, CPU-only ones too: at its creation nobody can tell what the others
# ask for (a driver is often made first)
case("mutate-pod-group-cpu-member-gated", "mutate",
     review("Pod", pod(labels=dict(PG), annotations=dict(PG2), containers=[CPU_ONLY])),
     patch=[add("/spec/schedulingGates", [{"name": "gpuq.dev/admission"}]),
            add("/metadata/labels/gpuq.dev~1queue-name", "default")],
     warning="Pod gated until gpuq admits its pod group")
# ... but one that names no queue where there is no "default" LocalQueue
# does not queue (Kueue's rule), nor does a CPU-only Pod outside a group
case("mutate-pod-group-cpu-member-no-queue", "mutate",
     review("Pod", pod(ns="team-c", labels=dict(PG), annotations=dict(PG2),
                       containers=[CPU_ONLY]), ns="team-c"))
case("mutate-pod-cpu-outside-group-untouched", "mutate",
     review("Pod", pod(labels=dict(Q), containers=[CPU_ONLY])))
case("validate-pod-group-cpu-member-gated", "validate",
     review("Pod", pod(labels=dict(Q, **PG), annotations=dict(PG2), gates=GATED,
                       containers=[CPU_ONLY])))
deny("validate-pod-group-cpu-member-ungated", "validate",
     review("Pod", pod(labels=dict(Q, **PG), annotations=dict(PG2), containers=[CPU_ONLY])),
     "spec.schedulingGates lacks gpuq.dev/admission; a Pod of a pod group in a managed "
     "namespace must wait for gpuq's queue")
deny("validate-pod-group-cpu-member-unknown-queue", "validate",
     review("Pod", pod(labels={"gpuq.dev/queue-name": "nope", **PG}, annotations=dict(PG2),
                       gates=GATED, containers=[CPU_ONLY])),
     'namespace team-a has no LocalQueue "nope"')
# a member of 8 GPUs in a group of 4 fits alone: the others may be CPU-only
case("validate-pod-group-judged-by-its-member", "validate",
     review("Pod", pod(labels=GROUP, gates=GATED,
                       annotations={"kueue.x-k8s.io/pod-group-total-count": "4"},
                       containers=[full(gpu="8")])))
deny("validate-pod-group-cpu-member-gate-removed", "validate",
     review("Pod", pod(labels=dict(Q, **PG), annotations=dict(PG2), containers=[CPU_ONLY]),
            op="UPDATE", old=pod(labels=dict(Q, **PG), annotations=dict(PG2), gates=GATED,
                                 containers=[CPU_ONLY])),
     "scheduling gate gpuq.dev/admission may be removed only by gpuq")
case("validate-pod-group-cpu-member-released-by-gpuq", "validate",
     review("Pod", pod(labels=dict(Q, **PG), annotations=dict(PG2, **ADMITTED),
                       containers=[CPU_ONLY]),
            op="UPDATE", user=CTRL, old=pod(labels=dict(Q, **PG), annotations=dict(PG2),
                                            gates=GATED, containers=[CPU_ONLY])))
deny("validate-pod-group-name-changed", "validate",
     review("Pod", pod(labels=dict(GROUP, **{"kueue.x-k8s.io/pod-group-name": "other"}),
                       annotations=dict(PG2), gates=GATED),
            op="UPDATE", old=pod(labels=GROUP, annotations=dict(PG2), gates=GATED)),
     'label kueue.x-k8s.io/pod-group-name is set when the Pod is created, never after '
     '(was "gang", now "other")')
deny("validate-pod-group-label-added-to-a-running-pod", "validate",
     review("Pod", pod(labels=dict(Q, **PG), annotations=dict(PG2), containers=[CPU_ONLY]),
            op="UPDATE", old=pod(labels=dict(Q), annotations=dict(PG2), containers=[CPU_ONLY])),
     '(was "", now "g")')
deny("validate-pod-group-count-changed", "validate",
     review("Pod", pod(labels=GROUP, gates=GATED,
                       annotations={"kueue.x-k8s.io/pod-group-total-count": "3"}),
            op="UPDATE", old=pod(labels=GROUP, annotations=dict(PG2), gates=GATED)),
     'annotation kueue.x-k8s.io/pod-group-total-count cannot change (was "2", now "3")')
deny("validate-pod-group-retriable-back", "validate",
     review("Pod", pod(labels=GROUP, gates=GATED, annotations=dict(PG2)),
            op="UPDATE", old=pod(labels=GROUP, gates=GATED, annotations=dict(
                PG2, **{"kueue.x-k8s.io/retriable-in-group": "false"}))),
     'annotation kueue.x-k8s.io/retriable-in-group cannot change from "false"')


def runtime(obj, cls=None, overhead=None):
    """obj with its pod spec naming RuntimeClass cls and/or setting spec.overhead."""
    spec = obj["spec"]["template"]["spec"] if obj["kind"] == "Job" else obj["spec"]
    if cls is not None:
        spec["runtimeClassName"] = cls
    if overhead is not None:
        spec["overhead"] = overhead
    return obj


# A RuntimeClass's overhead: the apiserver's RuntimeClass plugin adds it to
# every Pod a template makes (unit/golden/policy/60-runtimeclasses.yaml).
deny("validate-job-runtimeclass-overhead-quota", "validate",
     review("Job", runtime(job(ns="team-e", labels=Q, suspend=True, parallelism=2,
                               containers=[full(cpu="8", mem="1Gi")]), "kata"), ns="team-e"),
     "exceeded quota: team-e-quota, requested: cpu=16500m, used: cpu=0, limited: cpu=16")
case("validate-job-runtimeclass-overhead-fits", "validate",
     review("Job", runtime(job(ns="team-e", labels=Q, suspend=True, parallelism=2,
                               containers=[full(cpu="7", mem="1Gi")]), "kata"), ns="team-e"))
deny("validate-job-runtimeclass-not-found", "validate",
     review("Job", runtime(job(labels=Q, suspend=True), "nope")),
     'Job "train": spec.template.spec: pod rejected: RuntimeClass "nope" not found')
deny("validate-job-runtimeclass-overhead-mismatch", "validate",
     review("Job", runtime(job(labels=Q, suspend=True), "kata", {"cpu": "1"})),
     "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
deny("validate-job-overhead-without-runtimeclass-overhead", "validate",
     review("Job", runtime(job(labels=Q, suspend=True), "runc-plain", {"cpu": "1"})),
     "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
case("validate-job-runtimeclass-overhead-as-the-class-sets-it", "validate",
     review("Job", runtime(job(labels=Q, suspend=True), "kata",
                           {"cpu": "250m", "memory": "128Mi"})))
case("validate-pod-runtimeclass-is-the-apiservers-business", "validate",
     review("Pod", runtime(pod(labels=Q, gates=GATED), "nope", {"cpu": "1"})))


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.endswith(".json"):
            os.remove(os.path.join(OUT, f))
    for i, (name, c) in enumerate(cases, 1):
        with open(os.path.join(OUT, "%02d-%s.json" % (i, name)), "w") as f:
            json.dump(c, f, indent=1, sort_keys=False)
            f.write("\n")
    print("%d cases written to %s" % (len(cases), OUT), file=sys.stderr)


if __name__ == "__main__":
    main()
