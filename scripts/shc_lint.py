#!/usr/bin/env python3
"""scripts/shc_lint.py: refuse `sh -c` / `bash -c` strings that call a shell
function of e2e/lib.sh or e2e/podlib.sh (run by `make lint`).

A `sh -c '...'` runs a new shell: it sees none of the caller's functions, so
`check "refused" sh -c "! k patch ..."` runs `k`, finds no such command, and
the `!` turns that failure into a pass: a check that cannot fail (issue 32:
e2e/test_jobset.sh's "a child Job unsuspended by the tenant is refused").
Call the function directly (`check "..." bash_fn args`), or write a
function in the scenario and pass it to check.

What it reads: every e2e/*.sh and unit/*.sh; each `sh -c` or `bash -c`
followed by a quoted string ('...' or "...", over lines too); in that
string, a word in command position (its start, or after ; & | ! ( { ` $(
then do else if while, a newline) that names a function the two libraries
or the file itself define, and the new shell cannot see: not defined in the
string (`name() {`, or inlined by `$(declare -f name)`), and, for `bash -c`
only, not exported by `export -f name` earlier in the file (sh is dash:
it imports no function).
Prints `FILE:LINE: sh -c calls NAME, a function of e2e/lib.sh: ...` per
finding; exit 1 when there is any.
"""
import glob
import re
import sys

LIBS = ["e2e/lib.sh", "e2e/podlib.sh"]
DEF = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\(\)", re.M)
EXPORT = re.compile(r"^\s*export -f ([A-Za-z0-9_ ]+)", re.M)
SHC = re.compile(r"\b(?:ba)?sh -c ([\"'])")
# a word in command position: after the start or a separator/keyword
CMDPOS = re.compile(
    r"(?:^|[;&|!({`\n]|\$\(|\bthen\b|\bdo\b|\belse\b|\bif\b|\bwhile\b|\buntil\b)"
    r"\s*([A-Za-z_][A-Za-z0-9_]*)(?=\s|$|[;&|)}`])")


def functions():
    names = {}
    for lib in LIBS:
        try:
            text = open(lib, encoding="utf-8").read()
        except OSError:
            continue
        for m in DEF.finditer(text):
            names[m.group(1)] = lib
    return names


def quoted(text, start, q):
    """The string opened by quote q at text[start-1], up to its close."""
    i = start
    while i < len(text):
        c = text[i]
        if q == '"' and c == "\\":
            i += 2
            continue
        if c == q:
            return text[start:i]
        i += 1
    return text[start:]


def main():
    names = functions()
    if not names:
        print("shc_lint: no function found in " + ", ".join(LIBS))
        return 1
    bad = 0
    files = sorted(glob.glob("e2e/*.sh") + glob.glob("unit/*.sh"))
    if len(sys.argv) > 1:
        files = sys.argv[1:]
    for path in files:
        text = open(path, encoding="utf-8").read()
        own = {n: path for n in DEF.findall(text)}
        for m in SHC.finditer(text):
            body = quoted(text, m.end(), m.group(1))
            # what the new shell sees: functions the string defines (itself
            # or by inlining `$(declare -f NAME...)`), and for bash the ones
            # the file exported (`export -f NAME...`) before the string
            seen = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(\)\s*\{", body))
            for d in re.findall(r"declare -f ([A-Za-z0-9_ ]+)", body):
                seen |= set(d.split())
            if m.group(0).startswith("bash"):
                for e in EXPORT.findall(text, 0, m.start()):
                    seen |= set(e.split())
            for w in CMDPOS.finditer(body):
                name = w.group(1)
                sep = body[w.start():w.start(1)].strip()
                if (m.group(1) == '"' and sep == "$(" and
                        (w.start() == 0 or body[w.start() - 1] != "\\")):
                    continue  # "...$(f)...": the caller's shell runs f
                where = names.get(name) or own.get(name)
                if where and name not in seen:
                    line = text.count("\n", 0, m.start()) + 1
                    snippet = " ".join(body.split())[:70]
                    print(f"{path}:{line}: {m.group(0)[:-1].strip()} calls {name}, "
                          f"a function of {where} it cannot see: {snippet}")
                    bad += 1
                    break
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
