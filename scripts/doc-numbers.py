#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""One source for the numbers the documents quote.

docs/measured.md's table "The numbers the documents quote" has one row
per number: | `key` | value | how it was measured |. A document quotes
one as <!--n:key-->value<!--/n-->, which renders as the value alone.
This checks that every quote's value is its row's, that every key
quoted has a row, and that every row is quoted somewhere, so a number
changes in one place and the documents are told. Prints one line per
disagreement and exits 1 if there is any; `make lint` runs it.

  scripts/doc-numbers.py [MEASURED_MD [DOC ...]]
"""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUOTE = re.compile(r"<!--n:([a-z0-9-]+)-->(.*?)<!--/n-->")
ROW = re.compile(r"^\|\s*`([a-z0-9-]+)`\s*\|\s*(.*?)\s*\|\s*(.*?)\s*\|\s*$")
TITLE = "## The numbers the documents quote"


def table(path):
    rows, inside = {}, False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.startswith("## "):
                inside = line.strip() == TITLE
                continue
            m = ROW.match(line) if inside else None
            if m:
                key, value, how = m.groups()
                rows[key] = (value, how, n)
    return rows


def documents():
    out = subprocess.run(["git", "-C", REPO, "ls-files", "*.md"],
                         capture_output=True, text=True, check=True).stdout.split()
    return [os.path.join(REPO, p) for p in out]


def main(argv):
    measured = argv[1] if len(argv) > 1 else os.path.join(REPO, "docs", "measured.md")
    docs = argv[2:] or [d for d in documents()
                        if os.path.realpath(d) != os.path.realpath(measured)]
    rows = table(measured)
    bad = []
    if not rows:
        bad.append(f"{measured}: no table \"{TITLE[3:]}\"")
    quoted = set()
    for doc in docs:
        with open(doc, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                for m in QUOTE.finditer(line):
                    key, value = m.groups()
                    quoted.add(key)
                    if key not in rows:
                        bad.append(f"{doc}:{n}: quotes '{key}', which {measured} has no row for")
                    elif value != rows[key][0]:
                        bad.append(f"{doc}:{n}: '{key}' is \"{value}\" here, "
                                   f"\"{rows[key][0]}\" in {measured}")
    for key, (value, how, n) in sorted(rows.items()):
        if not how:
            bad.append(f"{measured}:{n}: '{key}' says not how it was measured")
        if key not in quoted:
            bad.append(f"{measured}:{n}: '{key}' is quoted by no document")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
