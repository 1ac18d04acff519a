#!/usr/bin/env python3
"""e2e/pod2podman.py: what a kubelet would run for one Pod of a Deployment,
as `podman run` arguments (one per line on stdout), for the e2e scenarios
that run gpuq's image as the Deployment runs it (e2e/podlib.sh).

    pod2podman.py DEPLOYMENT.json POD_NAME NAMESPACE PORT VOLDIR SADIR

From the Deployment's pod template (its first container): the image, the
command and args with $(VAR) expanded from the container's env (the
downward API's metadata.name and metadata.namespace are POD_NAME and
NAMESPACE), the env, the user and group (container securityContext over
the pod's), readOnlyRootFilesystem, allowPrivilegeEscalation: false,
dropped capabilities, and every volume mount: an emptyDir becomes a fresh
directory VOLDIR/<volume> (mode 0777, group fsGroup, as the kubelet makes
it), mounted read-write; the service account's token, ca.crt and namespace
(SADIR) go to /var/run/secrets/kubernetes.io/serviceaccount read-only, as
automountServiceAccountToken does; KUBERNETES_SERVICE_HOST/PORT name the
apiserver (127.0.0.1 and $APISERVER_PORT), as the kubelet's service
environment does.

What a kubelet does and podman cannot do here, each changed in one place:
the pods share the host's network (--network host), so `--listen` gets
127.0.0.1:PORT instead of the pod's own IP and port (and
`--internal-listen` 127.0.0.1:PORT+1); and since the
apiserver reaches a webhook here by URL (no Service routing), a
`--cert-secret` replica also gets `--cert-ip=127.0.0.1` so its serving
certificate names that address. Nothing else is changed or added.
Volumes of other kinds (configMap, secret, ...) are refused by name.
"""
import json
import os
import re
import sys

SA_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


def die(msg):
    sys.stderr.write("pod2podman.py: %s\n" % msg)
    sys.exit(2)


def expand(s, env):
    """Kubernetes' $(VAR) expansion: known names replaced, $$ escapes."""
    def one(m):
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env[name] if name in env else m.group(0)
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", one, s)


def env_of(container, pod_name, namespace):
    env = {}
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = expand(e["value"], env)
            continue
        ref = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        if ref == "metadata.name":
            env[e["name"]] = pod_name
        elif ref == "metadata.namespace":
            env[e["name"]] = namespace
        else:
            die("env %s: only values and the fieldRefs metadata.name and "
                "metadata.namespace are played here" % e["name"])
    return env


def main():
    if len(sys.argv) != 7:
        die("usage: pod2podman.py DEPLOYMENT.json POD_NAME NAMESPACE PORT VOLDIR SADIR")
    path, pod_name, namespace, port, voldir, sadir = sys.argv[1:]
    with open(path) as f:
        obj = json.load(f)
    spec = obj["spec"]["template"]["spec"] if obj.get("kind") == "Deployment" else obj["spec"]
    c = spec["containers"][0]
    psc, csc = spec.get("securityContext", {}), c.get("securityContext", {})
    env = env_of(c, pod_name, namespace)
    out = ["--name", pod_name, "--network", "host", "--pull", "never"]
    uid = csc.get("runAsUser", psc.get("runAsUser"))
    gid = csc.get("runAsGroup", psc.get("runAsGroup"))
    if uid is not None:
        out += ["--user", "%d:%d" % (uid, gid if gid is not None else 0)]
    if psc.get("fsGroup") is not None:
        out += ["--group-add", str(psc["fsGroup"])]
    if csc.get("readOnlyRootFilesystem"):
        out += ["--read-only", "--read-only-tmpfs=false"]
    if csc.get("allowPrivilegeEscalation") is False:
        out += ["--security-opt", "no-new-privileges"]
    for cap in csc.get("capabilities", {}).get("drop", []):
        out += ["--cap-drop", cap.lower()]
    # the kubelet's service environment: where the apiserver is
    env_all = {"KUBERNETES_SERVICE_HOST": "127.0.0.1",
               "KUBERNETES_SERVICE_PORT": os.environ.get("APISERVER_PORT") or die("APISERVER_PORT unset")}
    env_all.update(env)
    for name, value in env_all.items():
        out += ["--env", "%s=%s" % (name, value)]
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        v = vols.get(m["name"])
        if v is None or "emptyDir" not in v:
            die("volume %s: only emptyDir volumes are played here" % m["name"])
        d = os.path.join(voldir, m["name"])
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o777)
        if psc.get("fsGroup") is not None:
            os.chown(d, -1, psc["fsGroup"])
        out += ["--volume", "%s:%s:%s" % (d, m["mountPath"], "ro" if m.get("readOnly") else "rw")]
    if spec.get("automountServiceAccountToken", True):
        out += ["--volume", "%s:%s:ro" % (sadir, SA_PATH)]
    if c.get("command"):
        out += ["--entrypoint", json.dumps([expand(a, env) for a in c["command"]])]
    out.append(c["image"])
    cert_secret = False
    args = [expand(a, env) for a in c.get("args", [])]
    for i, a in enumerate(args):
        if a.startswith("--listen="):
            a = "--listen=127.0.0.1:%s" % port
        elif i > 0 and args[i - 1] == "--listen":
            a = "127.0.0.1:%s" % port
        elif a.startswith("--internal-listen="):
            a = "--internal-listen=127.0.0.1:%d" % (int(port) + 1)
        elif i > 0 and args[i - 1] == "--internal-listen":
            a = "127.0.0.1:%d" % (int(port) + 1)
        cert_secret = cert_secret or a.startswith("--cert-secret")
        out.append(a)
    if cert_secret:
        out.append("--cert-ip=127.0.0.1")
    sys.stdout.write("".join(a + "\n" for a in out))


if __name__ == "__main__":
    main()
