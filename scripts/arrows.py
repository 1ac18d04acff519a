#!/usr/bin/env python3
"""Check gpuq's module arrows against docs/architecture.md (run by `make lint`).

The layer table of docs/architecture.md ("## Layers") is the source: each row
is a layer, bottom up; the modules of a row are the backticked `name/` of its
second cell outside parentheses, where name/name.h exists. From the sources it
checks, and prints one line per breach:

  1. table: every module folder (one with name/name.h) is in exactly one row;
  2. includes: a module's .c and .h files include only headers of modules at
     or below its own layer (no upward include); in a layer whose name says
     "peers" the modules include none of each other; another module's
     internal.h (or *_internal.h) is never included;
  3. Makefile: MODULES lists the modules in layer order (a module after every
     module below it), each table module but cmd once;
  4. call circles: in each module folder, an arrow a.c -> b.c when a.c names
     a function that b.c defines (a non-static definition at the start of a
     line: gpuq's style), then the strongly connected components; one of
     more than 3 files fails (STYLE.md: "a circle of more than three files in
     one folder is a module waiting to be split"). It reads names, not a call
     graph: a function only passed as a pointer counts as a call, and a
     macro's body is not seen;
  5. libraries: each external library's headers are included by its one
     adapter (LIBRARIES below) and no other module;
  6. drivers: the drivers that hold an engine (THROUGH_ENGINE below) reach
     the core and the store only through engine/: none of their files
     includes a header of queue/ or store/, or names one of their
     identifiers (queue_*, store_*, QUEUE_*, STORE_*: functions, types,
     constants; not struct members) outside comments and strings.

Exit 0 when clean, 1 with the breaches listed. KNOWN lists breaches that are
under way elsewhere, each printed as "known:" and not failing; an entry that
no longer breaks fails, so the list cannot go stale.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Breaches known and not yet removed: ("circle", folder). Each is printed as
# "known:"; an entry whose breach is gone fails, so it is dropped with the fix.
KNOWN = set()

# Drivers that reach the core and the store only through engine/ (check 6),
# and the modules they must not reach past it.
THROUGH_ENGINE = ("sim", "controller")
BEHIND_ENGINE = ("queue", "store")


# The one module that may include each external library's headers (jansson,
# the JSON library, is held by several: policy_json.h says where).
LIBRARIES = {
    "curl/": "kube",
    "microhttpd.h": "http",
    "gnutls/": "http",
    "lmdb.h": "store",
    "yaml.h": "manifest",
    "openssl/": "certs",
}


def strip_parens(text):
    out, depth = [], 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def is_module(name):
    return os.path.isfile(os.path.join(ROOT, name, name + ".h"))


def read_layers():
    """[(layer name, [modules])] bottom up, from docs/architecture.md."""
    path = os.path.join(ROOT, "docs", "architecture.md")
    layers, in_section = [], False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                in_section = line.startswith("## Layers")
                continue
            if not in_section or not line.startswith("|"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 2 or cells[0] in ("layer", "") or set(cells[0]) <= set("-: "):
                continue
            mods = [m for m in re.findall(r"`([a-z_]+)/`", strip_parens(cells[1])) if is_module(m)]
            layers.append((cells[0], mods))
    return layers


def strip_c(text):
    """C text without comments and string or character literals."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", text)


DEF_RE = re.compile(r"^(?!static\b|typedef\b|extern\b|struct\b|enum\b|union\b|#)"
                    r"[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\(([^;{}()]|\([^()]*\))*\)\s*\{",
                    re.M)


def files_of(mod, exts):
    d = os.path.join(ROOT, mod)
    return sorted(f for f in os.listdir(d) if f.endswith(exts))


def check_includes(layers, layer_of, problems):
    peers = {name for name, _ in layers if "peers" in name}
    for name, mods in layers:
        for mod in mods:
            for fn in files_of(mod, (".c", ".h")):
                with open(os.path.join(ROOT, mod, fn), encoding="utf-8") as f:
                    text = f.read()
                for other, hdr in re.findall(r'^\s*#\s*include\s+"([a-z_]+)/([\w.]+)"', text, re.M):
                    if other == mod or other not in layer_of:
                        continue
                    where = f"{mod}/{fn} includes {other}/{hdr}"
                    if hdr == "internal.h" or hdr.endswith("_internal.h"):
                        problems.append(f"include: {where}: another module's internals")
                    if layer_of[other] > layer_of[mod]:
                        problems.append(f"include: {where}: upward ({layers[layer_of[mod]][0]} "
                                        f"-> {layers[layer_of[other]][0]})")
                    elif layer_of[other] == layer_of[mod] and name in peers:
                        problems.append(f"include: {where}: peers include none of each other")


def check_libraries(layer_of, problems):
    for mod in sorted(layer_of):
        for fn in files_of(mod, (".c", ".h")):
            with open(os.path.join(ROOT, mod, fn), encoding="utf-8") as f:
                text = f.read()
            for hdr in re.findall(r"^\s*#\s*include\s+<([\w./]+)>", text, re.M):
                for lib, owner in LIBRARIES.items():
                    if hdr.startswith(lib) and mod != owner:
                        problems.append(f"library: {mod}/{fn} includes <{hdr}>, "
                                        f"which only {owner}/ wraps")


def check_makefile(layers, layer_of, problems):
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        m = re.search(r"^MODULES\s*:=\s*(.*)$", f.read(), re.M)
    listed = m.group(1).split() if m else []
    want = {mod for _, mods in layers for mod in mods if mod != "cmd"}
    for mod in sorted(want - set(listed)):
        problems.append(f"Makefile: MODULES lacks {mod}")
    seen = set()
    for i, mod in enumerate(listed):
        if mod not in layer_of:
            problems.append(f"Makefile: MODULES names {mod}, which the layer table does not")
            continue
        if mod in seen:
            problems.append(f"Makefile: MODULES names {mod} twice")
        seen.add(mod)
        later_lower = [x for x in listed[i + 1:] if x in layer_of and layer_of[x] < layer_of[mod]]
        if later_lower:
            problems.append(f"Makefile: MODULES has {mod} before {', '.join(later_lower)}, "
                            "which sit below it")


def sccs(nodes, edges):
    """Tarjan's strongly connected components."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def circles(mod):
    """The strongly connected components of mod's .c files, biggest first."""
    defs, uses = {}, {}
    for fn in files_of(mod, (".c",)):
        with open(os.path.join(ROOT, mod, fn), encoding="utf-8") as f:
            text = strip_c(f.read())
        for m in DEF_RE.finditer(text):
            defs.setdefault(m.group(1), fn)
        uses[fn] = set(re.findall(r"\b[A-Za-z_]\w*\b", text))
    edges = {fn: {defs[n] for n in names if n in defs and defs[n] != fn}
             for fn, names in uses.items()}
    return sorted(sccs(sorted(uses), edges), key=len, reverse=True)


def check_reach(known, problems):
    """Check 6: each driver of THROUGH_ENGINE names nothing of BEHIND_ENGINE."""
    # a name, not a struct member that happens to start so (o->store_x)
    names = re.compile(r"(?<!\.)(?<!->)\b(?:%s)_\w+"
                       % "|".join(BEHIND_ENGINE + tuple(m.upper() for m in BEHIND_ENGINE)))
    incl = re.compile(r'^\s*#\s*include\s+"(%s)/([\w.]+)"' % "|".join(BEHIND_ENGINE), re.M)
    for mod in THROUGH_ENGINE:
        breaches = []
        for fn in files_of(mod, (".c", ".h")):
            with open(os.path.join(ROOT, mod, fn), encoding="utf-8") as f:
                text = f.read()
            for other, hdr in incl.findall(text):
                breaches.append(f"{mod}/{fn} includes {other}/{hdr}")
            used = sorted(set(names.findall(strip_c(text))))
            if used:
                breaches.append(f"{mod}/{fn} names {', '.join(used[:6])}"
                                f"{f' and {len(used) - 6} more' if len(used) > 6 else ''}")
        if ("reach", mod) in KNOWN:
            if breaches:
                files = len({b.split(" ")[0] for b in breaches})
                known.append(f"reach: {mod}/ reaches {', '.join(m + '/' for m in BEHIND_ENGINE)} "
                             f"past engine/ in {files} files")
            else:
                problems.append(f"reach: {mod}/ reaches past engine/ no more: drop it from KNOWN "
                                f"in {__file__}")
        else:
            problems.extend(f"reach: {b}, past engine/" for b in breaches)


def main():
    problems, known = [], []
    layers = read_layers()
    if not layers:
        print("arrows: no layer table under '## Layers' in docs/architecture.md")
        return 1
    layer_of = {}
    for i, (_, mods) in enumerate(layers):
        for mod in mods:
            if mod in layer_of:
                problems.append(f"table: {mod}/ is in two rows")
            layer_of[mod] = i
    for d in sorted(os.listdir(ROOT)):
        if is_module(d) and d not in layer_of:
            problems.append(f"table: {d}/ is in no row of docs/architecture.md")
    check_includes(layers, layer_of, problems)
    check_makefile(layers, layer_of, problems)
    check_libraries(layer_of, problems)
    check_reach(known, problems)
    for mod in sorted(layer_of):
        comps = circles(mod)
        big = comps[0] if comps else []
        if len(big) > 3:
            line = f"circle: {mod}/: {len(big)} files call each other: {' '.join(big)}"
            (known if ("circle", mod) in KNOWN else problems).append(line)
        elif ("circle", mod) in KNOWN:
            problems.append(f"circle: {mod}/ has none left: drop it from KNOWN in {__file__}")
    for i, (name, mods) in enumerate(layers):
        print(f"arrows: layer {i + 1} {name}: {' '.join(m + '/' for m in mods)}")
    for line in known:
        print(f"arrows: known: {line}")
    for line in problems:
        print(f"arrows: {line}")
    print(f"arrows: {len(problems)} problems, {len(known)} known")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
