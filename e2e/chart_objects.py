#!/usr/bin/env python3
"""e2e/chart_objects.py: are two sets of Kubernetes manifests the same
objects? For e2e/test_helm.sh: `helm template` of charts/gpuq against
deploy/'s files.

    chart_objects.py compare RENDERED.yaml FILE...   exit 0 when equal
    chart_objects.py get RENDERED.yaml KIND NAME PATH  print one field (JSON)

Both sides are parsed (comments and layout do not count) and normalised:
Helm's own labels (app.kubernetes.io/instance, managed-by, version,
helm.sh/chart) are dropped; so is every webhook's caBundle (deploy/ holds a
placeholder that kustomize or gpuq fills, the chart leaves it to gpuq or
cert-manager), and deploy/'s Namespace (Helm installs into a namespace that
exists: docs/install.md). Then each object, by kind, namespace and name,
must be equal; every difference is printed with its path.
"""
import json
import sys

import yaml

HELM_LABELS = ("app.kubernetes.io/instance", "app.kubernetes.io/managed-by",
               "app.kubernetes.io/version", "helm.sh/chart")


def load(paths):
    objs = {}
    for p in paths:
        with open(p) as f:
            for doc in yaml.safe_load_all(f):
                if not doc:
                    continue
                meta = doc.get("metadata", {})
                key = (doc["kind"], meta.get("namespace", ""), meta.get("name", ""))
                if key in objs:
                    sys.exit("%s: %s/%s/%s twice" % (p, *key))
                objs[key] = normalise(doc)
    return objs


def normalise(doc):
    labels = doc.get("metadata", {}).get("labels")
    if labels is not None:
        for k in HELM_LABELS:
            labels.pop(k, None)
    for w in doc.get("webhooks", []):
        w.get("clientConfig", {}).pop("caBundle", None)
    return doc


def diff(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a:
                out.append("%s.%s: only in the chart: %s" % (path, k, json.dumps(b[k])[:200]))
            elif k not in b:
                out.append("%s.%s: only in deploy/: %s" % (path, k, json.dumps(a[k])[:200]))
            else:
                diff(a[k], b[k], "%s.%s" % (path, k), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, "%s[%d]" % (path, i), out)
    elif a != b:
        out.append("%s: deploy/ %s, chart %s" % (path, json.dumps(a)[:300], json.dumps(b)[:300]))


def compare(rendered, files):
    chart = load([rendered])
    want = {k: v for k, v in load(files).items() if k[0] != "Namespace"}
    out = []
    for key in sorted(set(want) | set(chart)):
        name = "/".join(key)
        if key not in chart:
            out.append("%s: in deploy/, not in the chart" % name)
        elif key not in want:
            out.append("%s: in the chart, not in deploy/" % name)
        else:
            diff(want[key], chart[key], name, out)
    for line in out:
        print(line)
    print("%d objects compared, %d differences" % (len(want), len(out)))
    return 1 if out else 0


def get(rendered, kind, name, path):
    for (k, _, n), obj in load([rendered]).items():
        if k == kind and n == name:
            v = obj
            for part in path.split(".") if path else []:
                v = v[int(part)] if isinstance(v, list) else v.get(part)
            print(json.dumps(v))
            return 0
    return 1


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3:]))
    if len(sys.argv) == 6 and sys.argv[1] == "get":
        sys.exit(get(*sys.argv[2:]))
    sys.exit(__doc__)
