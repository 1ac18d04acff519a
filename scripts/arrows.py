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
     includes a header of queue/ or store/, or names an identifier of
     store/ (store_*, STORE_*: functions, types, constants; not struct
     members) outside comments and strings; of queue/, whose header is the
     core's read API (engine.h includes it), they name the types, values
     and the functions that read a core, never one that changes it (a
     function queue/queue.h declares with a `queue_t *` that is not const:
     READ_API below): the engine is the one writer of its core.

  7. allowed includes: docs/architecture.md's "## Arrows" table lists every
     module with the modules it may include (its .c and .h files, directly);
     an include of any other module fails, as does a row naming a module
     above its own or a peer, or a module in no row;
  8. never: the pairs the layer table says never include each other
     ("`a/`, `b/` and `c/`, which never include each other", "`a/` and
     `b/` never include each other") are checked on every include followed
     through headers (a header that includes a header);
  9. module cycles: the modules' include graph (direct includes) has no
     cycle (strongly connected components of more than one module);
 10. drivers through headers: check 6 followed through headers: a driver's
     file reaches store/ through no header but those of the modules that
     read a core (READ_CORE; engine/engine.h does not include store/);
 12. clocks: a module in a layer whose rules say "no clock" (or "`now` is
     a parameter") names no clock read (gpuq_mono_ms, clock_gettime, time,
     ...) outside comments and strings; base/ is the one exception its row
     states (the log line's wall-clock stamp, and the clock helpers);
 11. aliases: no module renames another module's type (`typedef queue_t
     engine_core_t;`) or constant (`#define ENGINE_X QUEUE_X`): names pass
     through a layer unrenamed (STYLE.md).
 13. kinds: no module but workload/ names a kind of workload
     (WORKLOAD_KIND_JOB, ..., WORKLOAD_KIND_OTHER; WORKLOAD_KIND_COUNT is
     no kind) outside comments and strings: it asks the kind's row
     (STYLE.md: "Code outside workload/ asks the row"). KNOWN_KINDS holds
     the modules still under way.

Exit 0 when clean, 1 with the breaches listed. KNOWN lists breaches that are
under way elsewhere, each printed as "known:" and not failing; an entry that
no longer breaks fails, so the list cannot go stale.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Breaches known and not yet removed: ("circle", folder), ("via", driver,
# header): a driver reaching store/ through that header (check 10). Each is
# printed as "known:"; an entry whose breach is gone fails, so it is
# dropped with the fix. None now.
KNOWN = set()
# Aliases of another module's types and constants known and not yet removed
# (check 11): module -> how many. More fails; fewer fails too, until the
# count here is lowered, so the number cannot go stale.
KNOWN_ALIASES = {
    "webhook": 6,  # WEBHOOK_LABEL_QUEUE and 4 more of workload/'s, JV_DEPTH_MAX
    "policy": 3,  # POLICY_FILE_MAX, _DEPTH_MAX, _DOCS_MAX: manifest/'s caps
    "controller": 1,  # CONTROLLER_ANNOT_STATUS: webhook/'s
    "webui": 1,  # WEBUI_PRICES_MAX: policy/'s POLICY_FLAVORS_MAX
}

# Kinds of workload named outside workload/ (check 13), known and not yet
# removed: module -> how many names (each occurrence). More fails; fewer
# fails too, until the count here is lowered.
KNOWN_KINDS = {
    "webhook": 14,  # admit.c, mutate.c, validate.c: a Pod's and a Job's own rules
    "cmd": 4,  # cmd_status.c's Jobs, serve_opts.c
    "sim": 1,  # trace.c: an arrival given as a Pod
}

# The modules that read a whole core (the drivers pass them engine_core):
# a driver reaches queue/ through their headers by design (check 10).
READ_CORE = ("qmetrics", "webui", "predict")

# Drivers that reach the core and the store only through engine/ (check 6),
# the modules whose headers they include none of, the modules they name
# nothing of and reach through no header (check 10), and the module whose
# header is the core's read API: they name its types, values and reads,
# never a function that changes a core.
THROUGH_ENGINE = ("sim", "controller")
NOT_INCLUDED = ("queue", "store")
BEHIND_ENGINE = ("store",)
READ_API = "queue"


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


def through_headers(mod, known, problems):
    """Check 10: driver mod's files reaching BEHIND_ENGINE through another
    module's header: none but READ_CORE's, and the KNOWN ("via", ...)."""
    breaches, hits = [], {}
    for rel in module_files(mod):
        for other, via in reach(rel):
            if other not in BEHIND_ENGINE or via is None or via.split("/")[0] in READ_CORE:
                continue
            if ("via", mod, via) in KNOWN:
                hits.setdefault(via, set()).add(rel)
            else:
                breaches.append(f"{rel} reaches {other}/ through {via}")
    for entry in sorted(k for k in KNOWN if k[0] == "via" and k[1] == mod):
        if entry[2] in hits:
            known.append(f"reach: {mod}/ reaches {', '.join(m + '/' for m in BEHIND_ENGINE)} "
                         f"through {entry[2]} in {len(hits[entry[2]])} files")
        else:
            problems.append(f"reach: {mod}/ reaches nothing through {entry[2]} now: drop it "
                            f"from KNOWN in {__file__}")
    return sorted(breaches)


def writers_of(api):
    """The functions api/api.h declares with a non-const `api_t *` (or
    `api_t **`: a create): those that change a core."""
    text = strip_c(text_of(f"{api}/{api}.h"))
    out = set()
    for m in re.finditer(r"\b(%s_\w+)\s*\(([^;{}]*?)\)\s*;" % api, text, re.S):
        if re.search(r"(?<!const )\b%s_t\s*\*" % api, m.group(2)):
            out.add(m.group(1))
    return out


def check_reach(known, problems):
    """Check 6: each driver of THROUGH_ENGINE names nothing of BEHIND_ENGINE
    and no writer of READ_API's core."""
    # a name, not a struct member that happens to start so (o->store_x)
    names = re.compile(r"(?<!\.)(?<!->)\b(?:%s)_\w+"
                       % "|".join(BEHIND_ENGINE + tuple(m.upper() for m in BEHIND_ENGINE)))
    writers = writers_of(READ_API)
    calls = re.compile(r"(?<!\.)(?<!->)\b(%s_\w+)\s*\(" % READ_API)
    incl = re.compile(r'^\s*#\s*include\s+"(%s)/([\w.]+)"' % "|".join(NOT_INCLUDED), re.M)
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
            wrote = sorted(set(calls.findall(strip_c(text))) & writers)
            if wrote:
                breaches.append(f"{mod}/{fn} calls {', '.join(wrote)}, which change a core "
                                "(the engine is its one writer)")
        breaches.extend(through_headers(mod, known, problems))
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


INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/([\w.]+)"', re.M)
_TEXT = {}


def text_of(rel):
    """The text of ROOT/rel, read once."""
    if rel not in _TEXT:
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            _TEXT[rel] = f.read()
    return _TEXT[rel]


def includes_of(rel):
    """The tree's headers rel includes ("mod/hdr.h"), in order."""
    return [f"{m}/{h}" for m, h in INCLUDE_RE.findall(text_of(rel))
            if os.path.isfile(os.path.join(ROOT, m, h))]


def reach(rel):
    """{(module, via)} that file rel reaches through its includes, followed
    through headers: via is None while the chain stays in rel's own module
    (its own include), else the first header of another module on the way."""
    mod = rel.split("/")[0]
    out, seen, todo = set(), set(), [(h, None) for h in includes_of(rel)]
    while todo:
        hdr, via = todo.pop()
        if (hdr, via) in seen:
            continue
        seen.add((hdr, via))
        other = hdr.split("/")[0]
        if via is None and other != mod:
            via_next = hdr
        else:
            via_next = via
        if other != mod:
            out.add((other, via))
        todo.extend((h, via_next) for h in includes_of(hdr))
    return out


def section_rows(title):
    """The table rows under the docs' "## <title>" heading, as cell lists."""
    rows, inside = [], False
    for line in text_of(os.path.join("docs", "architecture.md")).splitlines():
        if line.startswith("## "):
            inside = line.startswith("## " + title)
            continue
        if inside and line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 2 and cells[0] not in ("module", "layer", "") and \
                    not set(cells[0]) <= set("-: "):
                rows.append(cells)
    return rows


def read_allowed():
    """{module: {modules it may include}} from the "## Arrows" table."""
    allowed = {}
    for cells in section_rows("Arrows"):
        mods = re.findall(r"`([a-z_]+)/`", cells[0])
        if mods:
            allowed[mods[0]] = set(re.findall(r"`([a-z_]+)/`", cells[1]))
    return allowed


def read_never():
    """{(a, b)}: the pairs the layer table says never include each other."""
    pairs = set()
    names = r"`?[a-z_]+/`?"
    for cells in section_rows("Layers"):
        for m in re.finditer(r"((?:%s(?:,\s*|\s+and\s+))+%s),?\s+(?:which\s+)?never include "
                             r"each other" % (names, names), " ".join(cells[2:])):
            mods = re.findall(r"([a-z_]+)/", m.group(1))
            pairs |= {(a, b) for a in mods for b in mods if a != b}
    return pairs


def module_files(mod):
    return [f"{mod}/{fn}" for fn in files_of(mod, (".c", ".h"))]


def check_allowed(layers, layer_of, allowed, problems):
    """Check 7: every module's direct includes are in its row of ## Arrows."""
    peers = {name for name, _ in layers if "peers" in name}
    for mod in sorted(layer_of):
        if mod not in allowed:
            problems.append(f"allow: {mod}/ has no row in docs/architecture.md's ## Arrows")
    for mod, may in sorted(allowed.items()):
        if mod not in layer_of:
            problems.append(f"allow: ## Arrows lists {mod}/, which no layer row holds")
            continue
        for other in sorted(may):
            if other not in layer_of:
                problems.append(f"allow: {mod}/ may include {other}/, which no layer row holds")
            elif layer_of[other] > layer_of[mod] or (
                    layer_of[other] == layer_of[mod] and layers[layer_of[mod]][0] in peers):
                problems.append(f"allow: {mod}/ may include {other}/, which the layers refuse")
    for mod in sorted(layer_of):
        may = allowed.get(mod, set()) | {"base"}
        for rel in module_files(mod):
            for hdr in includes_of(rel):
                other = hdr.split("/")[0]
                if other != mod and other in layer_of and other not in may:
                    problems.append(f"allow: {rel} includes {hdr}: {mod}/ may include "
                                    f"{', '.join(sorted(m + '/' for m in may))} only "
                                    "(docs/architecture.md, ## Arrows)")


def check_never(layer_of, never, problems):
    """Check 8: no file reaches, even through headers, its never-partner."""
    for mod in sorted(layer_of):
        for rel in module_files(mod):
            for other, via in sorted(reach(rel), key=lambda r: (r[0], r[1] or "")):
                if (mod, other) in never:
                    how = f" through {via}" if via else ""
                    problems.append(f"never: {rel} reaches {other}/{how}: the layer table says "
                                    f"{mod}/ and {other}/ never include each other")


def check_cycles(layer_of, problems):
    """Check 9: no cycle in the modules' include graph."""
    edges, why = {}, {}
    for mod in sorted(layer_of):
        for rel in module_files(mod):
            for hdr in includes_of(rel):
                other = hdr.split("/")[0]
                if other != mod and other in layer_of:
                    edges.setdefault(mod, set()).add(other)
                    why.setdefault((mod, other), rel)
    for comp in sccs(sorted(layer_of), {k: sorted(v) for k, v in edges.items()}):
        if len(comp) > 1:
            arrows = [f"{a}/ -> {b}/ ({why[(a, b)]})" for a in comp for b in comp
                      if (a, b) in why]
            problems.append(f"cycle: {' '.join(m + '/' for m in comp)} include each other: "
                            + ", ".join(arrows))


ALIAS_TYPE = re.compile(r"\btypedef\s+(?:const\s+)?(?:(?:struct|enum|union)\s+)?"
                        r"([a-z][a-z0-9]*)_\w*\s+\**\s*(\w+)\s*;")
ALIAS_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+\(?([A-Z][A-Z0-9]*)_\w+\)?[ \t]*$",
                          re.M)
ALIAS_ENUM = re.compile(r"\b([A-Z][A-Z0-9]*_\w+)\s*=\s*([A-Z][A-Z0-9]*)_\w+\s*[,}]")


def aliases(mod, layer_of):
    """Check 11's findings in mod: ["file: new <- old"]."""
    found = []
    for rel in module_files(mod):
        text = re.sub(r"/\*.*?\*/", " ", text_of(rel), flags=re.S)
        text = re.sub(r"//[^\n]*", " ", text)
        for m in ALIAS_TYPE.finditer(text):
            if m.group(1) != mod and m.group(1) in layer_of and m.group(2).startswith(mod + "_"):
                found.append(f"{rel}: {m.group(2)} <- {m.group(0).split()[-2]}")
        for rx in (ALIAS_DEFINE, ALIAS_ENUM):
            for m in rx.finditer(text):
                other = m.group(2).lower()
                if other != mod and other in layer_of and \
                        m.group(1).startswith(mod.upper() + "_"):
                    found.append(f"{rel}: {m.group(1)} <- {m.group(0).split()[-1].strip('(),}')}")
    return found


def check_aliases(layer_of, known, problems):
    """Check 11: no module renames another's types or constants."""
    for mod in sorted(layer_of):
        found = aliases(mod, layer_of)
        want = KNOWN_ALIASES.get(mod, 0)
        if want and len(found) == want:
            known.append(f"alias: {mod}/ renames {want} of other modules' types and constants")
        elif len(found) > want and not want:
            problems.extend(f"alias: {f}: another module's name renamed" for f in found)
        elif len(found) > want:
            problems.append(f"alias: {mod}/ renames {len(found)} names of other modules, "
                            f"{want} known: {'; '.join(found)}")
        elif want:
            problems.append(f"alias: {mod}/ renames {len(found)} names of other modules now, not "
                            f"{want}: lower KNOWN_ALIASES in {__file__}")


KIND_NAME = re.compile(r"\bWORKLOAD_KIND_(?!COUNT\b)[A-Z_]+\b")


def check_kinds(layer_of, known, problems):
    """Check 13: no module but workload/ names a kind of workload."""
    for mod in sorted(layer_of):
        if mod == "workload":
            continue
        found = []
        for rel in module_files(mod):
            found.extend(f"{rel}: {n}" for n in KIND_NAME.findall(strip_c(text_of(rel))))
        want = KNOWN_KINDS.get(mod, 0)
        if want and len(found) == want:
            known.append(f"kind: {mod}/ names a kind of workload {want} times")
        elif len(found) > want:
            problems.append(f"kind: {mod}/ names a kind of workload {len(found)} times, {want} "
                            f"known (ask its row: workload/workload.h): {'; '.join(found[:8])}")
        elif want:
            problems.append(f"kind: {mod}/ names a kind of workload {len(found)} times now, not "
                            f"{want}: lower KNOWN_KINDS in {__file__}")


CLOCK_READS = re.compile(r"\b(gpuq_mono_ms|gpuq_mono_ns|gpuq_clock_after_ms|clock_gettime|"
                         r"gettimeofday|kube_now_ms|time|timespec_get)\s*\(")
CLOCK_EXEMPT = ("base",)  # its row: "the one exception to the rule"


def check_clocks(layer_of, problems):
    """Check 12: the modules of "no clock" layers read none."""
    for cells in section_rows("Layers"):
        rules = " ".join(cells[2:])
        if "no clock" not in rules and "`now` is a parameter" not in rules:
            continue
        for mod in re.findall(r"`([a-z_]+)/`", strip_parens(cells[1])):
            if mod not in layer_of or mod in CLOCK_EXEMPT:
                continue
            for rel in module_files(mod):
                reads = sorted(set(CLOCK_READS.findall(strip_c(text_of(rel)))))
                if reads:
                    problems.append(f"clock: {rel} calls {', '.join(reads)}: its layer reads "
                                    "no clock (`now` is the caller's)")


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
    check_allowed(layers, layer_of, read_allowed(), problems)
    check_never(layer_of, read_never(), problems)
    check_cycles(layer_of, problems)
    check_aliases(layer_of, known, problems)
    check_clocks(layer_of, problems)
    check_kinds(layer_of, known, problems)
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
