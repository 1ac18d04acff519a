#!/usr/bin/env python3
"""Write the Job watch events bench_apply replays: N Jobs (the Job of
bench/fixtures/job_review.json, as the apiserver stores it: defaults, the
selector and template labels the Job controller's validation adds,
managedFields), each through the six events a queued Job's life shows a
watch: created suspended; the Job controller's Suspended condition; gpuq's
status annotation; gpuq's release (unsuspended, admitted, the flavor's
nodeSelector, the original placement kept); the Job controller starting its
pods; all pods Ready. One event per line, as the apiserver streams them.

usage: apply_events.py FIXTURE N > events.jsonl"""
import copy
import json
import sys


def field_entry(manager, time, fields, subresource=None):
    e = {"manager": manager, "operation": "Update", "apiVersion": "batch/v1", "time": time,
         "fieldsType": "FieldsV1", "fieldsV1": fields}
    if subresource:
        e["subresource"] = subresource
    return e


def stored(obj, i):
    """The review's object as the apiserver stores it."""
    o = copy.deepcopy(obj)
    uid = "0f6c1c55-%04x-4a7e-9d2b-%012x" % (i & 0xffff, i)
    m = o["metadata"]
    m["name"] = "train-%05d" % i
    m["namespace"] = "team-a"
    m["uid"] = uid
    m["generation"] = 1
    m["creationTimestamp"] = "2026-11-25T10:%02d:%02dZ" % ((i // 60) % 60, i % 60)
    s = o["spec"]
    s["suspend"] = True
    s["manualSelector"] = False
    s["podReplacementPolicy"] = "TerminatingOrFailed"
    s["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    t = s["template"]
    t["metadata"]["labels"].update({"batch.kubernetes.io/controller-uid": uid,
                                    "batch.kubernetes.io/job-name": m["name"],
                                    "controller-uid": uid, "job-name": m["name"],
                                    "gpuq.dev/managed": "true"})
    ps = t["spec"]
    ps.update({"dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
               "securityContext": {}, "terminationGracePeriodSeconds": 30})
    for c in ps["containers"]:
        c.update({"imagePullPolicy": "IfNotPresent", "terminationMessagePath":
                  "/dev/termination-log", "terminationMessagePolicy": "File"})
    o["status"] = {}
    return o


def main():
    review = json.load(open(sys.argv[1]))
    n = int(sys.argv[2])
    base = review["request"]["object"]
    rv = 1000
    out = sys.stdout
    for i in range(n):
        o = stored(base, i)
        m = o["metadata"]
        t = "2026-11-25T10:00:00Z"

        def emit(kind):
            nonlocal rv
            rv += 1
            m["resourceVersion"] = str(rv)
            out.write(json.dumps({"type": kind, "object": o}, separators=(",", ":")) + "\n")

        emit("ADDED")
        o["status"] = {"conditions": [{"type": "Suspended", "status": "True",
                                       "lastProbeTime": t, "lastTransitionTime": t,
                                       "reason": "JobSuspended", "message": "Job suspended"}]}
        m["managedFields"].append(field_entry("kube-controller-manager", t,
                                              {"f:status": {"f:conditions": {}}}, "status"))
        emit("MODIFIED")
        m["annotations"]["gpuq.dev/status"] = ("position 1 of 1 in team-a/default: needs 32 "
                                               "nvidia.com/gpu on flavor h100, 0 free")
        m["managedFields"].append(field_entry("gpuq", t, {"f:metadata": {
            "f:annotations": {"f:gpuq.dev/status": {}}}}))
        emit("MODIFIED")
        ps = o["spec"]["template"]["spec"]
        m["annotations"].update({
            "gpuq.dev/admitted": "true", "gpuq.dev/flavors": "cpu=h100,memory=h100,"
            "nvidia.com/gpu=h100", "gpuq.dev/original-scheduling": json.dumps(
                {"nodeSelector": ps["nodeSelector"], "tolerations": ps["tolerations"]},
                separators=(",", ":"), sort_keys=True)})
        o["spec"]["suspend"] = False
        o["spec"]["template"]["metadata"]["annotations"] = {"gpuq.dev/admitted": "true"}
        m["generation"] = 2
        emit("MODIFIED")
        o["status"] = {"active": 4, "ready": 0, "startTime": t, "terminating": 0,
                       "uncountedTerminatedPods": {}, "conditions": [
                           {"type": "Suspended", "status": "False", "lastProbeTime": t,
                            "lastTransitionTime": t, "reason": "JobResumed",
                            "message": "Job resumed"}]}
        emit("MODIFIED")
        o["status"]["ready"] = 4
        emit("MODIFIED")


main()
