#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Reads lcov tracefiles (the .info format) for scripts/coverage.sh.

  lcovtool.py realpath IN OUT          SF: paths resolved (the build compiles
                                       links in a mirror; report the sources)
  lcovtool.py table INFO ROOT LMIN BMIN [--all]
                                       per-module lines, branches, functions
                                       of ROOT/<module>/ files, and one line per
                                       module: COVERAGE-OK or COVERAGE-LOW
  lcovtool.py tests INFO [--lines F]   per-test report: tests that reach no line
                                       that no other test reaches, and lines
                                       reached by exactly one test (all of them
                                       in F)
  lcovtool.py annotate INFO ROOT OUT   for each source under ROOT, OUT/<path>.html:
                                       its lines, each with the tests that ran
                                       it (lcov 1.x's genhtml names tests per
                                       file only)
  lcovtool.py markers ROOT             the LCOV_EXCL markers in ROOT/<module>/
                                       sources, one per line; exits 1 if one is
                                       of a kind we refuse or gives no reason
  lcovtool.py excluded INFO ROOT MAX   INFO captured with the markers ignored:
                                       the branches the markers exclude, per
                                       module and marker; exits 1 above MAX %

Pure logic on text, no lcov needed: tested by selftests/host/test_lcovtool.py.
"""
import html
import os
import sys
from collections import defaultdict


def parse(text):
    """Yields (test, file, kind, key, value) for DA, BRDA and FNDA records.

    kind "line": key = line number, value = hits.
    kind "branch": key = (line, block, branch), value = taken (0 for "-").
    kind "fn": key = function name, value = hits.
    """
    test = file = None
    for raw in text.splitlines():
        tag, _, rest = raw.partition(":")
        if tag == "TN":
            test = rest or None
        elif tag == "SF":
            file = rest
        elif tag == "end_of_record":
            file = None
        elif file is None:
            continue
        elif tag == "DA":
            line, hits = rest.split(",")[:2]
            yield test, file, "line", int(line), int(hits)
        elif tag == "BRDA":
            line, block, branch, taken = rest.split(",")
            yield (test, file, "branch", (int(line), int(block), int(branch)),
                   0 if taken == "-" else int(taken))
        elif tag == "FNDA":
            hits, name = rest.split(",", 1)
            yield test, file, "fn", name, int(hits)


def totals(text):
    """{file: {kind: (found, hit)}} over all tests (a hit in any counts)."""
    hit = defaultdict(lambda: defaultdict(dict))
    for _, f, kind, key, value in parse(text):
        seen = hit[f][kind]
        seen[key] = seen.get(key, 0) or value
    return {f: {k: (len(v), sum(1 for x in v.values() if x)) for k, v in kinds.items()}
            for f, kinds in hit.items()}


def module_of(path, root):
    """The module a source belongs to: ROOT/<module>/..., else None."""
    root = root.rstrip("/") + "/"
    if not path.startswith(root):
        return None
    mod, sep, _ = path[len(root):].partition("/")
    return mod if sep else None


def pct(hit, found):
    """Percent, cut (not rounded) to one decimal: 89.95% is shown as 89.9
    and fails a 90% gate, so the table and the gate always agree."""
    return (1000 * hit // found) / 10 if found else 100.0


def table(text, root, modules, lmin, bmin, require_all):
    """The per-module table and gate lines; returns (lines, ok)."""
    per = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for f, kinds in totals(text).items():
        mod = module_of(f, root)
        if mod is None:
            continue
        for kind, (found, hit) in kinds.items():
            per[mod][kind][0] += found
            per[mod][kind][1] += hit
    out = ["%-12s %16s %18s %14s" % ("MODULE", "LINES", "BRANCHES", "FUNCTIONS")]
    gates, ok = [], True
    for mod in sorted(modules):
        if mod not in per or not per[mod]["line"][0]:
            out.append("%-12s %16s" % (mod, "no data"))
            if require_all:
                gates.append(f"COVERAGE-LOW {mod}: no coverage data (not exercised in the guest)")
                ok = False
            continue
        (lf, lh), (bf, bh), (ff, fh) = (per[mod][k] for k in ("line", "branch", "fn"))
        lp, bp, fp = pct(lh, lf), pct(bh, bf), pct(fh, ff)
        out.append("%-12s %9s %5.1f%% %11s %5.1f%% %7s %5.1f%%" % (
            mod, f"{lh}/{lf}", lp, f"{bh}/{bf}", bp, f"{fh}/{ff}", fp))
        good = lp >= lmin and bp >= bmin
        ok &= good
        if not (lmin or bmin or require_all):
            continue  # a report without gates: the table is all
        gates.append("COVERAGE-%s %s: %.1f%% of lines (%s %g%%), %.1f%% of branches (%s %g%%), "
                     "%.1f%% of functions" % ("OK" if good else "LOW", mod,
                                              lp, ">=" if lp >= lmin else "<", lmin,
                                              bp, ">=" if bp >= bmin else "<", bmin, fp))
    return out + gates, ok


def by_test(text):
    """{(file, line): set of tests that ran it} for lines run by some test."""
    ran = defaultdict(set)
    for test, f, kind, key, value in parse(text):
        if kind == "line" and value:
            ran[(f, key)].add(test or "")
    return ran


def test_report(text):
    """(tests reaching nothing unique, {test: [unique lines]}, all tests)."""
    ran = by_test(text)
    tests = sorted({t for t, _, _, _, _ in parse(text)} - {None})
    unique = defaultdict(list)
    for (f, line), who in sorted(ran.items()):
        if len(who) == 1:
            unique[next(iter(who))].append((f, line))
    redundant = [t for t in tests if not unique.get(t)]
    return redundant, dict(unique), tests


def annotate(text, root, out):
    """Writes OUT/<source relative to ROOT>.html and OUT/index.html."""
    ran = by_test(text)
    root = root.rstrip("/") + "/"
    files = sorted({f for f, _ in ran if f.startswith(root)})
    index = []
    for f in files:
        rel = f[len(root):]
        try:
            with open(f, errors="replace") as src:
                source = src.read().splitlines()
        except OSError:
            continue
        rows = []
        for n, code in enumerate(source, 1):
            who = sorted(ran.get((f, n), ()))
            tests = (f"<details><summary>{len(who)} tests</summary>{'<br>'.join(map(html.escape, who))}"
                     f"</details>" if len(who) > 1 else html.escape(who[0]) if who else "")
            rows.append(f"<tr{' class=hit' if who else ''}><td>{n}</td><td><pre>{html.escape(code)}"
                        f"</pre></td><td>{tests}</td></tr>")
        page = os.path.join(out, rel + ".html")
        os.makedirs(os.path.dirname(page), exist_ok=True)
        with open(page, "w") as p:
            p.write(f"<!doctype html><meta charset=utf-8><title>{html.escape(rel)}: tests per line"
                    f"</title><style>pre{{margin:0}} tr.hit{{background:#cfc}} td{{vertical-align:top;"
                    f"padding:0 .5em}}</style><h1>{html.escape(rel)}</h1><p>Each line run by some "
                    f"test names them (click a count to see them all).</p><table>{''.join(rows)}"
                    f"</table>\n")
        index.append(f'<li><a href="{html.escape(rel)}.html">{html.escape(rel)}</a></li>')
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "index.html"), "w") as p:
        p.write("<!doctype html><meta charset=utf-8><title>tests per line</title>"
                f"<h1>Which tests ran each line</h1><ul>{''.join(index)}</ul>\n")
    return len(index)


MARKER = "LCOV_EXCL_BR_LINE"


def markers(root):
    """[(module, path, line, kind, reason)] for each LCOV_EXCL* in ROOT/<module>/.

    Only LCOV_EXCL_BR_LINE is accepted: it hides a line's branches and
    nothing else, and its reason follows it ("LCOV_EXCL_BR_LINE: why").
    The line and block forms would hide lines too, or whole functions.
    """
    found = []
    root = root.rstrip("/")
    for mod in sorted(os.listdir(root)):
        top = os.path.join(root, mod)
        if not (mod.startswith("kml_") and os.path.isdir(top)):
            continue
        for dirpath, _, names in sorted(os.walk(top)):
            for name in sorted(names):
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, errors="replace") as src:
                    for n, code in enumerate(src, 1):
                        at = code.find("LCOV_EXCL")
                        if at < 0:
                            continue
                        word = code[at:].split()[0].rstrip(":*/")
                        reason = code[at + len(word):].lstrip(":").strip()
                        reason = reason.removesuffix("*/").strip()
                        found.append((mod, path, n, word, reason))
    return found


def marker_problems(found):
    """The markers we refuse, as messages."""
    bad = []
    for _, path, n, word, reason in found:
        if word != MARKER:
            bad.append(f"{path}:{n}: {word}: only {MARKER} is allowed (it hides branches, "
                       f"never lines)")
        elif not reason:
            bad.append(f"{path}:{n}: {MARKER} without a reason ({MARKER}: why)")
    return bad


def excluded(text, root, found, limit):
    """Per module, the branches on marked lines of INFO (captured with the
    markers ignored) against all its branches; returns (lines, ok)."""
    marked = {(os.path.realpath(p), n): (mod, reason) for mod, p, n, _, reason in found}
    all_br = defaultdict(set)
    hidden = defaultdict(lambda: defaultdict(set))
    for _, f, kind, key, _ in parse(text):
        if kind != "branch":
            continue
        mod = module_of(f, root)
        if mod is None or not mod.startswith("kml_"):
            continue  # shared headers count in no module's gate
        all_br[mod].add((f, key))
        if (f, key[0]) in marked:
            hidden[mod][(f, key[0])].add(key)
    out, ok = [], True
    for mod in sorted(set(all_br) | {m for m, *_ in found}):
        n = sum(len(v) for v in hidden[mod].values())
        total = len(all_br[mod])
        # cut upwards, the other way from pct(): 5.01% is shown as 5.1
        share = -(-1000 * n // total) / 10 if total else 0.0
        good = 100 * n <= limit * total
        ok &= good
        out.append(f"EXCLUDED-{'OK' if good else 'HIGH'} {mod}: {n} of {total} branches "
                   f"({share:.1f}%, at most {limit:g}%) at {len(hidden[mod])} markers")
        for (f, line), keys in sorted(hidden[mod].items()):
            out.append(f"  {f}:{line}: {len(keys)} branches: {marked[(f, line)][1]}")
    return out, ok


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    cmd, args = argv[1], argv[2:]
    if cmd == "realpath" and len(args) == 2:
        with open(args[0]) as src, open(args[1], "w") as dst:
            for ln in src:
                if ln.startswith("SF:"):
                    ln = "SF:" + os.path.realpath(ln[3:].rstrip("\n")) + "\n"
                dst.write(ln)
        return 0
    if cmd == "table" and len(args) in (4, 5):
        info, root, lmin, bmin = args[:4]
        with open(info) as f:
            text = f.read()
        mods = [d for d in sorted(os.listdir(root))
                if os.path.isdir(os.path.join(root, d)) and d.startswith("kml_")]
        lines, ok = table(text, os.path.realpath(root), mods, float(lmin), float(bmin),
                          args[4:] == ["--all"])
        print("\n".join(lines))
        return 0 if ok else 1
    if cmd == "tests" and len(args) in (1, 3) and (len(args) == 1 or args[1] == "--lines"):
        with open(args[0]) as f:
            text = f.read()
        redundant, unique, tests = test_report(text)
        n_unique = sum(len(v) for v in unique.values())
        print(f"per-test coverage: {len(tests)} tests; {n_unique} lines are reached by "
              f"exactly one test; {len(redundant)} tests reach no line that another "
              f"test does not")
        for t in redundant:
            print(f"  no unique line: {t}")
        top = sorted(unique.items(), key=lambda kv: -len(kv[1]))[:10]
        for t, where in top:
            print(f"  {len(where):4d} lines only by {t}")
        if len(args) == 3:
            with open(args[2], "w") as out:
                for t, where in sorted(unique.items()):
                    for f, line in where:
                        out.write(f"{f}:{line}: only {t}\n")
        return 0
    if cmd == "annotate" and len(args) == 3:
        with open(args[0]) as f:
            text = f.read()
        n = annotate(text, os.path.realpath(args[1]), args[2])
        print(f"tests per line: {os.path.join(args[2], 'index.html')} ({n} sources)")
        return 0
    if cmd == "markers" and len(args) == 1:
        found = markers(args[0])
        for _, path, n, word, reason in found:
            print(f"{path}:{n}: {word}: {reason}")
        bad = marker_problems(found)
        for b in bad:
            print("coverage: refused marker " + b, file=sys.stderr)
        return 1 if bad else 0
    if cmd == "excluded" and len(args) == 3:
        with open(args[0]) as f:
            text = f.read()
        root = os.path.realpath(args[1])
        lines, ok = excluded(text, root, markers(root), float(args[2]))
        print("\n".join(lines))
        return 0 if ok else 1
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
