#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Workshop labs cut from the kmodlab modules (see labs/README.md).

A lab is labs/<name>/lab.toml (its steps and the selftests that grade
each step) plus markers in the module sources:

	/* LAB <name> <n>: what the student must write, in words
	 * (may go on over several lines) */
	...the solution's code for step n...
	/* LAB <name> <n> end */

or, when the code around must still compile and run without it, with
the stand-in the skeleton gets instead:

	/* LAB <name> <n> end: return -ENOTTY; */

A student tree for step n keeps the code of steps 1..n-1 (their markers
become plain "Step k:" comments) and replaces the code of step n and
later by "TODO" comments carrying the instruction.

  lab.py list                          the labs and their steps
  lab.py gen LAB [--step N] [--dir D] [--force]
                                       write a student tree
  lab.py grade LAB [--dir D]           build it, run the graded tests in
                                       the guest, print the score
  lab.py grade-many LAB --csv F DIR...  many student trees, one guest, a CSV
  lab.py check [--only LAB] [--mistakes-only | --steps-only]
                                       every step of every lab is real and
                                       every catalogued mistake loses its
                                       step (what `make lab-check` runs)
  lab.py guest-run PLAN                (inside the guest) run a plan
"""
import argparse
import csv
import fcntl
import hashlib
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
try:
    import tomllib
except ImportError:  # Python < 3.11 (Ubuntu 22.04): lab.toml's subset
    tomllib = None

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LABS = os.path.join(REPO, "labs")
BEGIN = re.compile(r"^(?P<ind>\s*)/\* LAB (?P<lab>[a-z0-9_]+) (?P<step>\d+): ?(?P<text>.*)$")
END = re.compile(r"^(?P<ind>\s*)/\* LAB (?P<lab>[a-z0-9_]+) (?P<step>\d+) end(?:: (?P<stub>.*?))? \*/\s*$")
# A number a sheet quotes from docs/measured.md (scripts/doc-numbers.py).
NUMBER_QUOTE = re.compile(r"<!--n:[a-z0-9-]+-->(.*?)<!--/n-->")
# Warnings a skeleton may trigger only because code is missing.
SKEL_CFLAGS = ("-Wno-unused-function -Wno-unused-variable -Wno-unused-label "
               "-Wno-unused-but-set-variable -Wno-unused-const-variable")


class LabError(Exception):
    pass


def die(msg):
    print(f"lab: {msg}", file=sys.stderr)
    sys.exit(2)


def load_lab(name):
    path = os.path.join(LABS, name, "lab.toml")
    if not os.path.exists(path):
        known = ", ".join(lab_names()) or "none"
        raise LabError(f"no lab '{name}' (labs: {known})")
    lab = read_toml(path)
    lab["name"] = name
    lab["dir"] = os.path.dirname(path)
    for key in ("title", "modules", "sources", "selftest", "step"):
        if key not in lab:
            raise LabError(f"{path}: '{key}' missing")
    for i, st in enumerate(lab["step"], 1):
        st["n"] = i
        if not st.get("tests"):
            raise LabError(f"{path}: step {i} grades no test")
    return lab


def lab_names():
    if not os.path.isdir(LABS):
        return []
    return sorted((d for d in os.listdir(LABS)
                   if os.path.exists(os.path.join(LABS, d, "lab.toml"))),
                  key=lambda d: (load_order(d), d))


def load_order(d):
    return read_toml(os.path.join(LABS, d, "lab.toml")).get("order", 99)


def read_toml(path):
    """tomllib where Python has it; else the subset lab.toml uses: key =
    "string" | integer | true | false | ["string", ...] (on one or more
    lines), [[step]]."""
    if tomllib:
        with open(path, "rb") as f:
            return tomllib.load(f)
    doc, cur, pending = {}, None, ""
    for ln in open(path):
        ln = pending + ln.split(" #")[0].strip() if not ln.lstrip().startswith("#") else pending
        if ln.count("[") > ln.count("]"):
            pending = ln + " "
            continue
        pending = ""
        if not ln:
            continue
        if ln == "[[step]]":
            cur = {}
            doc.setdefault("step", []).append(cur)
            continue
        key, _, val = (x.strip() for x in ln.partition("="))
        if val.startswith("["):
            v = re.findall(r'"((?:[^"\\]|\\.)*)"', val)
        elif val.startswith('"'):
            v = val[1:-1]
        elif val in ("true", "false"):
            v = val == "true"
        else:
            v = int(val)
        (cur if cur is not None else doc)[key] = v
    return doc


def regions(path, lab):
    """The marked regions of @lab in file @path: [(begin, cend, end, step, text, stub)]
    with line indexes: begin comment from begin to cend, code up to end."""
    with open(path) as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        if not m or m["lab"] != lab:
            e = END.match(lines[i])
            if e and e["lab"] == lab:
                raise LabError(f"{path}:{i + 1}: end marker without a start")
            i += 1
            continue
        begin, step = i, int(m["step"])
        text = [m["text"]]
        while "*/" not in lines[i]:
            i += 1
            if i == len(lines):
                raise LabError(f"{path}:{begin + 1}: unterminated LAB comment")
            text.append(re.sub(r"^\s*\*(?!/)\s?", "", lines[i]))
        cend = i
        text[-1] = re.sub(r"\s*\*/\s*$", "", text[-1])
        j = i + 1
        while j < len(lines):
            e = END.match(lines[j])
            if e and e["lab"] == lab:
                if int(e["step"]) != step:
                    raise LabError(f"{path}:{j + 1}: end of step {e['step']} "
                                   f"inside step {step} (line {begin + 1})")
                break
            if BEGIN.match(lines[j]):
                raise LabError(f"{path}:{j + 1}: LAB markers do not nest")
            j += 1
        else:
            raise LabError(f"{path}:{begin + 1}: step {step} has no end marker")
        if not any(ln.strip() for ln in lines[cend + 1:j]):
            raise LabError(f"{path}:{begin + 1}: step {step}'s marker removes nothing")
        out.append((begin, cend, j, step, " ".join(t.strip() for t in text).strip(),
                    END.match(lines[j])["stub"]))
        i = j + 1
    return lines, out


def cut(path, lab, step):
    """@path's text for a student at @step (steps >= @step removed)."""
    lines, regs = regions(path, lab)
    res, pos = [], 0
    for begin, cend, end, n, text, stub in regs:
        res += lines[pos:begin]
        ind = BEGIN.match(lines[begin])["ind"]
        if n < step:
            res += [re.sub(r"/\* LAB [a-z0-9_]+ (\d+):", r"/* Step \1:", lines[begin])]
            res += lines[begin + 1:end]
        else:
            res += [re.sub(r"/\* LAB [a-z0-9_]+ (\d+):", r"/* TODO \1:", ln)
                    for ln in lines[begin:cend + 1]]
            if stub:
                res.append(ind + stub)
        pos = end + 1
    res += lines[pos:]
    return "\n".join(res)


def validate(lab):
    """Markers and manifest agree: every step has code to remove, every
    marker names a step the manifest has, every graded test exists (checked
    when the selftest binary is built)."""
    seen = set()
    for src in lab["sources"]:
        _, regs = regions(os.path.join(REPO, src), lab["name"])
        for r in regs:
            if not 1 <= r[3] <= len(lab["step"]):
                raise LabError(f"{src}:{r[0] + 1}: step {r[3]} is not in lab.toml")
            seen.add(r[3])
    for st in lab["step"]:
        if st["n"] not in seen:
            raise LabError(f"lab {lab['name']}: step {st['n']} removes no code "
                           f"from {', '.join(lab['sources'])}")
    mistakes(lab)		# a malformed catalogue entry raises
    wrong = sheet_names(lab)
    if wrong:
        raise LabError("the sheet names what the solution does not have:\n  " +
                       "\n  ".join(wrong))
    # every graded test exists (when the selftest is built: `-l` lists them)
    binary = os.path.join(REPO, "build", "selftests", lab["selftest"])
    if os.access(binary, os.X_OK):
        have, fixture = set(), None
        listing = subprocess.run([binary, "-l"], capture_output=True, text=True)
        for ln in (listing.stdout + listing.stderr).splitlines():
            if not ln.strip() or ln.startswith(("#", "---")):
                continue
            words = ln.split()
            if not ln[0].isspace():
                fixture = words[0]
            if len(words) >= (2 if not ln[0].isspace() else 1):
                have.add(f"{fixture}.{words[-1]}")
        for st in lab["step"]:
            for t in st["tests"]:
                if t not in have:
                    raise LabError(f"lab {lab['name']}: step {st['n']} grades {t}, "
                                   f"which {lab['selftest']} does not have")


SHEET_SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
SRC_EXT = (".c", ".h", ".ko", ".toml")


def sheet_names(lab):
    """What the lab's sheet (labs/NAME/README.md) names in `backticks` that
    only this repository defines, and the solution no longer has: a kml_
    identifier, a member expression of the lab's own code (fn->set), a
    graded test (fixture.test), a file of ours. A rename in the module
    then breaks make lab-check instead of leaving students hunting for a
    name the sheet made up. Kernel API names are the kernel's to keep
    (skb->data, of a struct sk_buff *skb), and code blocks are
    commands and sketches: neither is checked. Returns
    ["LINE: `NAME` ..."], empty when the sheet and the solution agree."""
    sheet = os.path.join(LABS, lab["name"], "README.md")
    try:
        text = open(sheet).read()
    except OSError:
        return [f"no sheet {sheet}"]
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    own, everything, files = "", "", set()
    dirs = [os.path.join("modules", m) for m in lab["modules"]]
    for root, _, names in os.walk(REPO):
        rel = os.path.relpath(root, REPO)
        if rel.split(os.sep)[0] in ("build", ".git"):
            continue
        for n in names:
            files.add(n)
            if not n.endswith((".c", ".h")):
                continue
            try:
                body = open(os.path.join(root, n), errors="replace").read()
            except OSError:
                continue
            everything += body
            if any(rel == d or rel.startswith(d + os.sep) for d in dirs):
                own += body
    # the members the lab's own structs declare: "u32 policy;" and the like
    fields = set()
    for body in re.findall(r"^(?:struct|union) \w+ \{(.*?)^\};", own, re.S | re.M):
        fields |= set(re.findall(r"(\w+)(?:\[[^]]*\])?(?:\s*:\s*\d+)?;", body))
    test_src = ""
    for n in ("selftests/" + lab["selftest"].removesuffix("_test") + "/" + lab["selftest"] + ".c",):
        try:
            test_src = open(os.path.join(REPO, n)).read()
        except OSError:
            pass
    fixtures = set(re.findall(r"^FIXTURE\((\w+)\)", test_src, re.M)) | {"global"}
    tests = {f"{f}.{t}" for f, t in re.findall(
        r"^TEST_F(?:_TIMEOUT)?\((\w+),\s*(\w+)", test_src, re.M)}
    tests |= {f"global.{t}" for t in re.findall(r"^TEST\((\w+)\)", test_src, re.M)}

    def has(word, body):
        return re.search(r"(?<![\w])" + re.escape(word) + r"(?![\w])", body) is not None

    def ours(path):
        """a->b->c is ours to check: a is declared a struct kml_ (not
        "struct kretprobe_instance *ri"), or if a is not declared in the
        lab's code (r->ctrl->tail written as ctrl->tail), c is a member
        one of our structs declares."""
        types = set(re.findall(r"struct (\w+)\s*\*?\s*" + re.escape(path[0]) + r"\b", own))
        if types:
            return any(t.startswith("kml_") for t in types)
        return path[-1] in fields

    bad = []
    for no, line in enumerate(text.split("\n"), 1):
        for span in SHEET_SPAN.findall(line):
            tok = re.sub(r"^(struct|enum|union) ", "", span.strip())
            tok = tok.removesuffix("()")
            if re.fullmatch(r"kml_\w+\.(c|h|ko)", tok):
                ok = tok in files or tok.removesuffix(".ko") + ".c" in files
            elif re.fullmatch(r"(kml|KML)_\w+", tok):
                # a function, type or constant; or a selftest program
                ok = has(tok, everything) or tok + ".c" in files
            elif re.fullmatch(r"[a-z_]\w*\.\w+", tok) and tok.split(".")[0] in fixtures:
                ok = tok in tests
            elif re.fullmatch(r"[a-z_]\w*(->\w+)+", tok) and ours(tok.split("->")):
                ok = re.search(r"(?<![\w.])" + r"\s*->\s*".join(map(re.escape, tok.split("->"))),
                               own) is not None
            else:
                continue
            if not ok:
                bad.append(f"{os.path.relpath(sheet, REPO)}:{no}: `{span}` is not in the solution")
    return bad


MISTAKE_HDR = re.compile(r"^(Step|Lesson|Profile):\s*(.*?)\s*$")


def mistakes(lab):
    """The lab's catalogue of plausible wrong answers: each
    labs/<lab>/mistakes/<name>.patch is a patch on the solution, headed by
    "Step: N" (the step whose points it must lose), "Lesson: ..." (what
    the student got wrong, in a sentence) and optionally "Profile: debug"
    (only a debug kernel can see it: KASAN, lockdep)."""
    d = os.path.join(lab["dir"], "mistakes")
    out = []
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if not f.endswith(".patch"):
            continue
        path, m = os.path.join(d, f), {"name": f[:-len(".patch")], "profile": "default"}
        m["path"] = path
        with open(path) as fh:
            for ln in fh:
                if ln.startswith("--- "):
                    break
                h = MISTAKE_HDR.match(ln)
                if h:
                    m[h[1].lower()] = h[2]
        where = f"{os.path.relpath(path, REPO)}"
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", m["name"]):
            raise LabError(f"{where}: name it with lower-case words and dashes")
        if not str(m.get("step", "")).isdigit() or not 1 <= int(m["step"]) <= len(lab["step"]):
            raise LabError(f"{where}: needs a 'Step: N' line, N one of the lab's steps")
        if not m.get("lesson"):
            raise LabError(f"{where}: needs a 'Lesson: ...' line saying what is wrong")
        if m["profile"] not in ("default", "debug"):
            raise LabError(f"{where}: Profile is default or debug, not {m['profile']}")
        m["step"] = int(m["step"])
        out.append(m)
    return out


def apply_mistake(m, dest):
    """Applies mistake @m to the solution tree @dest; the error if it does
    not apply (the module changed under the catalogue)."""
    r = subprocess.run(["patch", "-p1", "-s", "-f", "--fuzz=0", "--no-backup-if-mismatch", "-r", "-",
                        "-d", dest, "-i", m["path"]], capture_output=True, text=True)
    return None if r.returncode == 0 else (r.stdout + r.stderr).strip().split("\n")[0]


def kdir():
    return subprocess.check_output([os.path.join(REPO, "scripts/kernel.sh"), "kdir"],
                                   text=True).strip()


def own_modules(lab):
    """The module directories a student tree holds as source: those of the
    files the student edits, and the test-only modules if the lab loads
    them. The lab's other modules (kml_stats, which the others register
    with) are another lab's solution: the tree gets their built .ko and
    exported symbols, never their source."""
    own = {src.split("/")[1] for src in lab["sources"]}
    return [m for m in lab["modules"] if m in own or m == "tests"]


def dep_modules(lab):
    return [m for m in lab["modules"] if m not in own_modules(lab)]


def is_bpf(lab):
    """A lab of BPF programs (bpf/): the student writes no module; the
    modules it uses are all another lab's, loaded from their build."""
    return any(src.startswith("bpf/") for src in lab["sources"])


def tree_env(lab, dest):
    """What a tree's selftests need in their environment besides its
    modules: a BPF lab's loader, the student's own build of it."""
    return {"KMODLAB_BPF": os.path.join(dest, "bpf", "build", "kml-bpf")} if is_bpf(lab) else {}


def deps_kbuild():
    """Where ensure_deps() builds the modules the labs use but do not
    teach: a build directory of their own, which no other build (make
    test's subsets rewrite the main one's Module.symvers) touches."""
    return os.path.join(REPO, "build", "kmod", f"{os.environ.get('KVER', '6.12')}-"
                        f"{os.environ.get('PROFILE', 'default')}-labdeps")


def ensure_deps(labs):
    """Builds the modules @labs use from another lab (kml_stats), once per
    command and one command at a time (make is then a no-op)."""
    deps = sorted({m for lab in labs for m in dep_modules(lab)})
    if not deps:
        return
    kb = deps_kbuild()
    os.makedirs(os.path.dirname(kb), exist_ok=True)
    with open(kb + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        r = subprocess.run(["make", "-s", "-C", REPO, "modules", f"KBUILDDIR={kb}",
                            f"KMODLAB_MODULES={' '.join(deps)}", "KMODLAB_NO_TESTS=1"],
                           stdout=subprocess.DEVNULL)
    if r.returncode:
        raise LabError(f"the repository's {', '.join(deps)} does not build "
                       f"(make modules): the labs load it")


def gen(lab, step, dest, force=False, quiet=False):
    nsteps = len(lab["step"])
    if not 1 <= step <= nsteps + 1:
        raise LabError(f"lab {lab['name']} has steps 1..{nsteps} "
                       f"(STEP={nsteps + 1} gives the full solution)")
    validate(lab)
    guest_visible(dest)
    if os.path.exists(dest):
        if not force:
            raise LabError(f"{dest} exists: it may hold your work. Grade it with "
                           f"`make grade LAB={lab['name']} DIR={dest}`, or remove it "
                           f"(or pass FORCE=1) to start again")
        # FORCE only ever deletes a student tree (or an empty directory)
        if os.listdir(dest) and not os.path.exists(os.path.join(dest, ".kmodlab-lab")):
            raise LabError(f"{dest} is not a student tree (no .kmodlab-lab): not deleting it")
        shutil.rmtree(dest)
    os.makedirs(dest)
    shutil.copy(os.path.join(REPO, "Kbuild"), dest)
    # only this lab's modules as source: no other lab's answer in the tree
    junk = shutil.ignore_patterns("*.o", "*.ko", "*.cmd", "*.mod*", "*.gcno", "*.gcda", ".*")
    shutil.copytree(os.path.join(REPO, "uapi"), os.path.join(dest, "uapi"), ignore=junk)
    for top in ["include"] + own_modules(lab):
        shutil.copytree(os.path.join(REPO, "modules", top), os.path.join(dest, "modules", top),
                        ignore=junk)
    if is_bpf(lab):
        # the programs, their loader and their Makefile; its sources are
        # cut below like a module's
        shutil.copytree(os.path.join(REPO, "bpf"), os.path.join(dest, "bpf"),
                        ignore=shutil.ignore_patterns("build", ".*"))
    for m in dep_modules(lab):
        # their headers (interfaces, no lab's answer): the lab's code uses them
        d = os.path.join(dest, "modules", m)
        os.makedirs(d)
        for h in sorted(os.listdir(os.path.join(REPO, "modules", m))):
            if h.endswith(".h"):
                shutil.copy(os.path.join(REPO, "modules", m, h), d)
    for src in lab["sources"]:
        with open(os.path.join(dest, src), "w") as f:
            f.write(cut(os.path.join(REPO, src), lab["name"], step))
    sheet = os.path.join(lab["dir"], "README.md")
    if os.path.exists(sheet):
        # the numbers it quotes from docs/measured.md, without their
        # markers (scripts/doc-numbers.py): the student reads it raw
        with open(sheet) as f, open(os.path.join(dest, "LAB.md"), "w") as g:
            g.write(NUMBER_QUOTE.sub(r"\1", f.read()))
    what = ("your BPF programs and their loader (bpf/build)" if is_bpf(lab)
            else "your module(s)")
    clean = ("rm -rf $(CURDIR)/bpf/build" if is_bpf(lab) else
             "$(MAKE) -C $$($(REPO)/scripts/kernel.sh kdir) M=$(CURDIR) clean")
    with open(os.path.join(dest, "Makefile"), "w") as f:
        f.write(f"""# Student tree of kmodlab lab '{lab['name']}' (generated at step {step}).
# `make` builds {what};
# `make grade` builds, boots the test guest and runs the graded
# selftests; `make vm` is a guest shell.
REPO := {REPO}
LAB  := {lab['name']}
all:
\t$(MAKE) -C $(REPO) lab-build LAB=$(LAB) DIR=$(CURDIR)
grade:
\t$(MAKE) -C $(REPO) grade LAB=$(LAB) DIR=$(CURDIR)
submit:
\t$(MAKE) -C $(REPO) submit LAB=$(LAB) DIR=$(CURDIR) $(if $(NAME),NAME=$(NAME))
vm: all
\t$(MAKE) -C $(REPO) vm KMODLAB_KO_DIR=$(CURDIR)
clean:
\t{clean}
.PHONY: all grade submit vm clean
""")
    with open(os.path.join(dest, ".kmodlab-lab"), "w") as f:
        json.dump({"lab": lab["name"], "step": step, "repo": REPO}, f)
    if not quiet:
        todo = [s for s in lab["step"] if s["n"] >= step]
        print(f"lab {lab['name']}: student tree in {dest}")
        if todo:
            print(f"  your steps: " + "; ".join(f"{s['n']}. {s['title']}" for s in todo))
            print(f"  read {dest}/LAB.md, find the TODOs with "
                  f"`grep -rn 'TODO {step}:' {dest}/{'bpf' if is_bpf(lab) else 'modules'}`,")
            print(f"  then: make grade LAB={lab['name']} DIR={dest}")


def run_make(cmd, log, jobs):
    """Runs the make command @cmd, @jobs at a time (all cores unless the
    caller's MAKEFLAGS say), its output to @log if given: True if it
    succeeded."""
    if jobs or "-j" not in os.environ.get("MAKEFLAGS", ""):
        cmd.insert(1, f"-j{jobs or os.cpu_count() or 1}")
    if log:
        with open(log, "w") as f:
            r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    else:
        r = subprocess.run(cmd)
    return r.returncode == 0


def build_bpf(lab, dest, log, jobs):
    """A BPF lab's tree: the repository's build of the modules it uses
    (every .ko of their directories: kml_probe's holds the timed target
    too), then its programs and loader by bpf/Makefile, against the
    default profile's kernel (the one with BTF)."""
    kb = deps_kbuild()
    try:
        for m in dep_modules(lab):
            d = os.path.join(dest, "modules", m)
            os.makedirs(d, exist_ok=True)
            for f in os.listdir(os.path.join(kb, "modules", m)):
                if f.endswith(".ko"):
                    shutil.copy(os.path.join(kb, "modules", m, f), d)
    except OSError as e:
        raise LabError(f"the repository's build of {', '.join(dep_modules(lab))} is missing "
                       f"({e}): make lab-build builds it")
    kd = subprocess.check_output([os.path.join(REPO, "scripts/kernel.sh"), "kdir"], text=True,
                                 env=dict(os.environ, PROFILE="default")).strip()
    cmd = ["make", "-C", os.path.join(dest, "bpf"), f"KDIR={kd}",
           f"O={os.path.join(dest, 'bpf', 'build')}", f"KML_SKEL_CFLAGS={SKEL_CFLAGS}"]
    return run_make(cmd, log, jobs)


def build(lab, dest, log=None, jobs=None):
    """Builds the lab's own modules in @dest (a student tree), beside the
    repository's build of the others (ensure_deps()): True if it built."""
    if is_bpf(lab):
        return build_bpf(lab, dest, log, jobs)
    mods = " ".join(own_modules(lab))
    cmd = ["make", "-C", kdir(), f"M={dest}", "W=1", "GCOV_PROFILE=n",
           f"KMODLAB_MODULES={mods}", "KMODLAB_NO_TESTS=1",
           f"KCFLAGS={SKEL_CFLAGS}", "modules"]
    deps = dep_modules(lab)
    if deps:
        # their exports only (modpost refuses a symbol exported twice) and
        # their .ko where the tree's loader looks
        kb = deps_kbuild()
        try:
            with open(os.path.join(kb, "Module.symvers")) as f:
                mine = [ln for ln in f if ln.split("\t")[2].split("/")[-2] in deps]
            for m in deps:
                d = os.path.join(dest, "modules", m)
                os.makedirs(d, exist_ok=True)
                shutil.copy(os.path.join(kb, "modules", m, f"{m}.ko"), d)
        except (OSError, IndexError) as e:
            raise LabError(f"the repository's build of {', '.join(deps)} is missing "
                           f"({e}): make lab-build builds it")
        with open(os.path.join(dest, "deps.symvers"), "w") as f:
            f.writelines(mine)
        cmd.insert(-1, f"KBUILD_EXTRA_SYMBOLS={os.path.join(dest, 'deps.symvers')}")
    return run_make(cmd, log, jobs)


def ko_files(lab, dest):
    """The lab's .ko files in load order (the order of 'modules'). The
    test-only modules ("tests") are built for the selftests, which load
    them themselves, and never loaded here: one of them WARNs on purpose."""
    out = []
    for m in lab["modules"]:
        if m == "tests":
            continue
        d = os.path.join(dest, "modules", m)
        out += sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".ko"))
    return out


def tests_of(lab, steps):
    return [(st["n"], t) for st in lab["step"] if st["n"] in steps for t in st["tests"]]


def first_splat_tree(console):
    """The tree whose "# lab <tree>: ..." line came last before the
    console's first splat (scripts/splat.ere), or None: what a guest that
    failed failed on, even where the taint flags said nothing (lockdep,
    RCU stalls, kmemleak)."""
    with open(os.path.join(REPO, "scripts", "splat.ere")) as f:
        splat = re.compile(f.read().strip())
    tree = None
    try:
        with open(console, errors="replace") as f:
            for ln in f:
                m = re.match(r"# lab ([a-z0-9_.-]+): ", ln)
                if m:
                    tree = m[1]
                elif re.match(r"\[ *\d+\.\d+\] ", ln) and splat.search(ln):
                    return tree	# a kernel line (the tests print too)
    except OSError:
        pass
    return None


def vm_run(plan, name, single=False, timeout=1500):
    """Runs @plan in guests: a tree that breaks the kernel (oops, WARN,
    hang, module stuck loading) is marked "broke" and the trees after it
    go to a fresh guest. Returns (worst vm-run status, results, the first
    guest's output directory; later guests' are <dir>.2, <dir>.3, ...,
    and for each guest that failed, the tree it failed on: the one its
    first splat came in, else the one it was on, or None)."""
    out0 = os.path.join(REPO, "build", "vm", name)
    os.makedirs(os.path.dirname(out0), exist_ok=True)
    # the guest's environment is not ours: the time-out goes in the plan
    tmo = int(os.environ.get("KMODLAB_LAB_TEST_TIMEOUT", "120"))
    trees, results, worst, n, culprits = list(plan["trees"]), {}, 0, 0, []
    while trees:
        n += 1
        out = out0 if n == 1 else f"{out0}.{n}"
        planf = out + ".plan.json"
        with open(planf, "w") as f:
            json.dump({"trees": trees, "test_timeout": tmo}, f)
        # guest_run() prints a "# lab" line before every command it runs
        # (and init.sh an "init:" one before its kmemleak scan),
        # and waits at most the test time-out for a test, 60 s for the
        # rest: no such line for twice that and a minute is a kernel that
        # locked up (RCU stall reports are not such lines), and vm-run
        # ends the guest then, not at @timeout
        cmd = [os.path.join(REPO, "scripts/vm-run.sh"), "--no-gcov", "--out", out,
               "--timeout", os.environ.get("KMODLAB_VM_TIMEOUT", str(timeout)),
               "--quiet-timeout", str(max(300, 2 * tmo + 60)), "--quiet-match", "^(# lab |init: )"]
        if single:
            cmd.append("--tcg-single")
        cmd += ["--", sys.executable, os.path.abspath(__file__), "guest-run", planf]
        rc = subprocess.run(cmd).returncode
        res = os.path.join(out, "lab-results.json")
        got = json.load(open(res)) if os.path.exists(res) else {}
        if rc:
            worst = worst or rc
            culprit = first_splat_tree(os.path.join(out, "console.log"))
            if culprit is None:
                culprit = next((t for t, r in got.items() if r.get("broke")), None)
            if not any(r.get("broke") for r in got.values()):
                # The guest died, hung, or logged a splat the taint flags
                # did not show: blame the tree it was on, if it was on one.
                cur = next((t for t in trees if t["name"] not in got), None)
                if cur is None and len(trees) == 1:
                    cur = trees[0]
                if cur is not None:
                    r = got.setdefault(cur["name"], {"load": {"ok": False, "msg": "not graded"},
                                                     "tests": {}})
                    r["broke"] = {124: "the guest hung", 125: "the kernel log has a splat"
                                  }.get(rc, "the guest died") + f" (vm-run {rc}, see {out})"
                    culprit = culprit or cur["name"]
            culprits.append(culprit)
        results.update(got)
        left = [t for t in trees if t["name"] not in results]
        if len(left) == len(trees):
            break  # no progress: give up on the rest
        trees = left
    return worst, results or None, out0, culprits


def guest_visible(dest):
    """A student tree must be where the guest sees it: it mounts its own
    /tmp, /var/tmp, /run, /dev and the results share on /mnt
    (scripts/guest/init.sh). Paths with whitespace would not survive the
    kernel command line and the Makefile."""
    if re.search(r"\s", dest):
        raise LabError(f"'{dest}': the tree's path must not contain whitespace")
    real, repo = os.path.realpath(dest), os.path.realpath(REPO)
    for d in ("/tmp", "/var/tmp", "/run", "/dev", "/mnt", "/proc", "/sys"):
        # init.sh leaves /tmp and /var/tmp alone when the repository is there
        if d in ("/tmp", "/var/tmp") and repo.startswith(d + "/"):
            continue
        if real == d or real.startswith(d + "/"):
            raise LabError(f"{dest} is hidden from the test guest (it mounts its own {d}): "
                           f"put the student tree elsewhere, e.g. DIR=$HOME/{os.path.basename(dest)}")


def check_lab_of(lab, dest):
    """Refuses to grade a tree generated for another lab (every tree holds
    every module's full source: it would get full marks untouched)."""
    meta = os.path.join(dest, ".kmodlab-lab")
    if os.path.exists(meta):
        made = json.load(open(meta)).get("lab")
        if made != lab["name"]:
            raise LabError(f"{dest} is a tree of lab '{made}', not '{lab['name']}': "
                           f"make grade LAB={made} DIR={dest}")


def code_only(text):
    """@text without comments and whitespace: what a copy keeps when it is
    re-indented or its comments are edited."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)
    return re.sub(r"\s+", "", text)


# Answers shorter than this (code only, no comments or spaces) are not
# judged: two honest answers of a few lines are often the same code.
COPY_MIN_CODE = 160


def copied_answer(lab, dest):
    """Why a student tree looks like the repository's answer ([] if not):
    a source still holding the LAB markers only the module's own file has,
    or the same code as the solution once comments and spacing are gone.
    Only the files where the tree's student had something to write are
    judged (a tree started at step 2 holds step 1's answer, given), and
    only if that answer is long enough to tell a copy from a coincidence;
    a full solution tree (STEP past the last) is judged whole."""
    try:
        with open(os.path.join(dest, ".kmodlab-lab")) as f:
            start = int(json.load(f).get("step", 1))
    except (OSError, ValueError, TypeError):
        start = 1
    if start > len(lab["step"]):
        start = 1
    why = []
    for src in lab["sources"]:
        lines, regs = regions(os.path.join(REPO, src), lab["name"])
        answer = "".join(code_only("\n".join(lines[cend + 1:end]))
                         for _, cend, end, n, _, _ in regs if n >= start)
        if len(answer) < COPY_MIN_CODE:
            continue
        try:
            with open(os.path.join(dest, src)) as f:
                text = f.read()
        except OSError:
            continue
        if any(BEGIN.match(ln) or END.match(ln) for ln in text.split("\n")):
            why.append(f"{src} holds the solution's LAB markers: copied from the repository?")
        elif code_only(text) == code_only(cut(os.path.join(REPO, src), lab["name"],
                                              len(lab["step"]) + 1)):
            why.append(f"{src} is the solution's code (comments and spacing aside)")
    return why


def grade(lab, dest):
    dest = os.path.abspath(dest)
    guest_visible(dest)
    if not os.path.isdir(dest):
        raise LabError(f"no student tree at {dest}: make lab LAB={lab['name']}")
    check_lab_of(lab, dest)
    ensure_deps([lab])
    copied = copied_answer(lab, dest)
    for w in copied:
        print(f"lab: WARNING: {w}")
    print(f"lab {lab['name']}: building {dest}")
    if not build(lab, dest):
        print(f"Total: [0/{sum(len(s['tests']) for s in lab['step'])}] "
              f"(the module does not build: fix the first error above)")
        return 1
    plan = {"trees": [{"name": "student", "ko_dir": dest, "env": tree_env(lab, dest),
                       "kos": ko_files(lab, dest),
                       "runs": [{"selftest": lab["selftest"],
                                 "tests": [t for _, t in tests_of(lab, range(1, 99))],
                                 "stop_at_fail": False}]}]}
    # one results directory per tree, so two grades at once do not mix;
    # a grading guest that hangs is given up after 10 minutes
    tag = hashlib.sha1(dest.encode()).hexdigest()[:8]
    rc, results, out = vm_run(plan, f"grade-{lab['name']}-{tag}", timeout=600)[:3]
    if results is None:
        print(f"lab: the guest did not finish (vm-run {rc}); see {out}/console.log")
        return 1
    tree = results["student"]
    total = sum(len(s["tests"]) for s in lab["step"])
    score, nxt = 0, None
    if not tree["load"]["ok"]:
        print(f"  loading your module failed: {tree['load']['msg']}")
    if tree.get("broke"):
        print(f"  your module broke the kernel: {tree['broke']}; the tests after that point did"
              f" not run (the kernel log: {out}/dmesg.txt, {out}/console.log)")
    for st in lab["step"]:
        print(f"step {st['n']}: {st['title']}")
        for t in st["tests"]:
            verdict = tree["tests"].get(t, "not run")
            if verdict == "passed":
                score += 1
            elif nxt is None:
                nxt = st
            print(f"  {t} {'.' * max(3, 50 - len(t))} {verdict} [{score}/{total}]")
            if verdict == "failed" and tree.get("why", {}).get(t):
                print(f"      {tree['why'][t]}")
    if rc == 125 and not tree.get("broke"):
        print("  the guest kernel log has a splat: see "
              f"{out}/dmesg.txt (a WARN, BUG or Oops from your code costs the run)")
    print(f"Total: [{score}/{total}]")
    if copied:
        print(f"  flagged for the instructor: {'; '.join(copied)}")
    if nxt:
        print(f"Next: step {nxt['n']}, {nxt['title']} (grep -rn 'TODO {nxt['n']}:' "
              f"{dest}/{'bpf' if is_bpf(lab) else 'modules'}; failing tests' messages are in {out}/console.log)")
    else:
        print("Full marks. Going further: see the end of LAB.md.")
    return 0 if score == total and rc == 0 else 1


def first_failure(output):
    """The line of a failed test's kselftest output that says why: its
    first failed assertion ("kml_filter_test.c:812:counters_are_exact:
    Expected 10 (10) == n (0)", with the TH_LOG of the same line after
    it), else how it ended (a time-out, a signal), else its last comment."""
    lines = [ln[2:].strip() for ln in output.splitlines() if ln.startswith("# ")]
    for i, ln in enumerate(lines):
        m = re.match(r"(\S+?):(\d+):(\w+):Expected ", ln)
        if m:
            why = f"{os.path.basename(m.group(1))}{ln[len(m.group(1)):]}"
            at = f"{m.group(1)}:{m.group(2)}:{m.group(3)}:"
            if i + 1 < len(lines) and lines[i + 1].startswith(at):
                why += " (" + lines[i + 1][len(at):].strip() + ")"
            return why
    for ln in lines:
        if re.search(r"Test terminated|no result within|no such test", ln):
            return ln
    rest = [ln for ln in lines if not re.match(r"(RUN|OK|FAIL|SKIP)\s|(PASSED|FAILED|Totals):", ln)]
    return rest[-1] if rest else "failed"


SUBMIT_SKIP = re.compile(r"(\.(o|ko|cmd|mod|mod\.c|mod\.o|gcno|gcda|order|symvers|log)$"
                         r"|^(\.tmp_.*|Module\.symvers|modules\.order|deps\.symvers)$"
                         # a BPF lab's bpf/build: vmlinux.h, objects, the loader
                         r"|^build$)")


def submit(lab, dest, name, out_dir=None):
    """Packs a student tree for the instructor: NAME-LAB.tar.gz beside it
    (or in @out_dir), the sources only (what make builds, not what it
    built), under one top directory NAME-LAB/. Returns the archive's path."""
    dest = os.path.abspath(dest)
    if not os.path.exists(os.path.join(dest, ".kmodlab-lab")):
        raise LabError(f"{dest} is not a student tree (no .kmodlab-lab): make lab LAB={lab['name']}")
    check_lab_of(lab, dest)
    if not re.fullmatch(r"[A-Za-z0-9][\w.-]*", name):
        raise LabError(f"'{name}': a name is letters, digits, '.', '_' and '-' (NAME=alice)")
    top = f"{name}-{lab['name']}"
    path = os.path.join(out_dir or os.path.dirname(dest), top + ".tar.gz")

    def keep(ti):
        base = os.path.basename(ti.name)
        if ti.issym() or ti.islnk() or SUBMIT_SKIP.search(base):
            return None
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = ""
        return ti
    tmp = path + ".new"
    with tarfile.open(tmp, "w:gz") as t:
        t.add(dest, arcname=top, filter=keep)
    os.rename(tmp, path)
    return path


def unpack_submissions(paths, into):
    """grade-all's arguments as trees: a directory is one, an archive from
    make submit is unpacked under @into (members that would land outside it,
    links and devices refused: tarfile's "data" filter), as @into/NAME/LAB,
    so that the student is named by the archive (alice-filter.tar.gz:
    alice). An archive that is not one is a LabError naming it."""
    trees = []
    for p in paths:
        if not p.endswith((".tar.gz", ".tgz")):
            trees.append(p)
            continue
        stem = re.sub(r"\.(tar\.gz|tgz)$", "", os.path.basename(p))
        tmp = os.path.join(into, ".unpack-" + stem)
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        try:
            with tarfile.open(p) as t:
                t.extractall(tmp, filter="data")
            tops = os.listdir(tmp)
            meta = os.path.join(tmp, tops[0], ".kmodlab-lab") if len(tops) == 1 else ""
            if not os.path.isfile(meta):
                raise LabError("no student tree inside")
            lab_name = json.load(open(meta))["lab"]
        except (OSError, ValueError, KeyError, tarfile.TarError, LabError) as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise LabError(f"{p}: not an archive of make submit ({e})")
        name = stem.removesuffix("-" + lab_name) or stem
        d = os.path.join(into, name, lab_name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(os.path.dirname(d), exist_ok=True)
        os.rename(os.path.join(tmp, tops[0]), d)
        shutil.rmtree(tmp)
        trees.append(d)
    return trees


def student_names(dirs):
    """Names trees by the path components that differ between them:
    /srv/class/alice/sensor and /srv/class/bob/sensor are alice and bob."""
    parts = [d.strip("/").split("/") for d in dirs]
    if len(parts) < 2:
        return [os.path.basename(d) for d in dirs]
    # trees of one name (.../alice/sensor, and a handed-in archive's
    # build/submissions/sensor/bob/sensor): the directory they are in
    if len({p[-1] for p in parts}) == 1 and all(len(p) > 1 for p in parts):
        names = [p[-2] for p in parts]
        if len(set(names)) == len(names):
            return names
    keep = [i for i in range(max(map(len, parts)))
            if len({p[i] if i < len(p) else "" for p in parts}) > 1]
    return ["/".join(p[i] for i in keep if i < len(p)) or os.path.basename(d)
            for p, d in zip(parts, dirs)]


def grade_many(lab, dirs, csv_path):
    """Grades many student trees in as few guests as it can (a tree that
    breaks the kernel ends its guest); writes a CSV of scores. Non-zero if
    some tree could not be graded."""
    dirs = [os.path.abspath(d) for d in
            unpack_submissions(dirs, os.path.join(REPO, "build", "submissions", lab["name"]))]
    ensure_deps([lab])
    trees, rows, total = [], {}, sum(len(s["tests"]) for s in lab["step"])
    for i, (d, who) in enumerate(zip(dirs, student_names(dirs))):
        rows[d] = {"student": who, "built": False, "note": ""}
        try:
            guest_visible(d)
            if not os.path.isdir(d):
                raise LabError("no such directory")
            check_lab_of(lab, d)
        except LabError as e:
            rows[d]["note"] = str(e)
            print(f"{who}: {e}")
            continue
        rows[d]["copied"] = copied_answer(lab, d)
        ok = build(lab, d, log=os.path.join(d, "grade-build.log"))
        rows[d]["built"] = ok
        if not ok:
            rows[d]["note"] = "does not build (see grade-build.log)"
        print(f"{who}: " + ("built" if ok else rows[d]["note"]))
        if ok:
            trees.append({"name": f"t{i}", "ko_dir": d, "kos": ko_files(lab, d),
                          "env": tree_env(lab, d),
                          "runs": [{"selftest": lab["selftest"],
                                    "tests": [t for _, t in tests_of(lab, range(1, 99))],
                                    "stop_at_fail": False}]})
            rows[d]["tag"] = f"t{i}"
    results, missing = {}, 0
    if trees:
        _, results, _ = vm_run({"trees": trees}, f"grade-many-{lab['name']}", timeout=3000)[:3]
        results = results or {}
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["student", "dir", "built", "loads"] + [f"step{s['n']}" for s in lab["step"]]
                   + ["total", "max", "note"]
                   + [f"step{s['n']} first failure" for s in lab["step"]])
        for d, row in rows.items():
            r = results.get(row.get("tag"))
            if row.get("tag") and r is None:
                missing += 1
                row["note"] = "not graded (the grading guest failed)"
            r = r or {"load": {"ok": False}, "tests": {}}
            if r.get("broke"):
                row["note"] = f"broke the kernel: {r['broke']}"
            if row.get("copied"):
                row["note"] = "; ".join(filter(None, [row["note"], "COPIED: "
                                                      + "; ".join(row["copied"])]))
            steps = [sum(r["tests"].get(t) == "passed" for t in s["tests"]) for s in lab["step"]]
            # per step, its first test that did not pass, and why
            whys = []
            for s in lab["step"]:
                t = next((t for t in s["tests"] if r["tests"].get(t) != "passed"), None)
                v = r["tests"].get(t, "not run")
                whys.append("" if t is None else
                            f"{t}: {r.get('why', {}).get(t) or v}")
            w.writerow([row["student"], d, int(row["built"]), int(r["load"]["ok"])] + steps
                       + [sum(steps), total, row["note"]] + whys)
            print(f"{row['student']}: [{sum(steps)}/{total}]"
                  + (f" ({row['note']})" if row["note"] else ""))
    print(f"scores: {csv_path}")
    return 1 if missing else 0


def check(names, kver_tag, mistakes_only=False, steps_only=False):
    """Every skeleton builds, loads, unloads and fails a graded test of its
    step and of each later step; the full solution gets full marks; every
    catalogued mistake (mistakes()) of this kernel's profile loses its
    step's points. One guest for all. Prints PASS:/FAIL: lines for
    check.sh to count. @mistakes_only: the catalogue alone (the debug
    kernel's share); @steps_only: all but the catalogue (make check-all
    runs the two as parts of their own, in two lanes)."""
    base = os.path.join(REPO, "build", "labcheck", kver_tag)
    profile = os.environ.get("PROFILE", "default")
    trees, verdicts, todo, failed = [], [], [], 0
    labs_ok = []
    for name in names:
        try:
            labs_ok.append(load_lab(name))
        except LabError:
            pass		# reported below
    ensure_deps(labs_ok)

    def report(ok, what):
        nonlocal failed
        print(f"{'PASS' if ok else 'FAIL'}: {what}")
        failed += not ok

    for name in names:
        try:
            lab = load_lab(name)
            validate(lab)
        except LabError as e:
            report(False, f"lab {name}: {e}")
            continue
        n = len(lab["step"])
        for step in [] if mistakes_only else range(1, n + 2):
            tag = f"{name}-step{step}" if step <= n else f"{name}-solution"
            dest = os.path.join(base, tag)
            gen(lab, step, dest, force=True, quiet=True)
            todo.append((lab, step, tag, dest, None))
        try:
            catalogue = [m for m in mistakes(lab) if m["profile"] == profile
                         and not steps_only]
        except LabError as e:
            report(False, f"lab {name}: {e}")
            continue
        for m in catalogue:
            tag = f"{name}-mistake-{m['name']}"
            dest = os.path.join(base, tag)
            gen(lab, n + 1, dest, force=True, quiet=True)
            err = apply_mistake(m, dest)
            report(err is None, f"lab {tag}: applies to the solution" + (f" ({err})" if err else ""))
            if err is None:
                todo.append((lab, m["step"], tag, dest, m))
    # one build per core at a time: each is a kbuild run of one or two
    # modules, mostly serial
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        def timed_build(t):
            t0 = time.monotonic()
            ok = build(t[0], t[3], log=t[3] + ".build.log", jobs=1)
            print(f"# lab {t[2]}: built in {time.monotonic() - t0:.0f} s", flush=True)
            return ok
        t0 = time.monotonic()
        built = list(pool.map(timed_build, todo))
        print(f"# {len(todo)} trees built in {time.monotonic() - t0:.0f} s", flush=True)
    for (lab, step, tag, dest, m), ok in zip(todo, built):
        n = len(lab["step"])
        report(ok, f"lab {tag}: builds")
        if not ok:
            subprocess.run(["tail", "-20", dest + ".build.log"])
            continue
        # a mistake is graded on its own step, all of it; a skeleton on
        # its step and each later one, up to the first failure of each
        steps = [step] if m else range(step, n + 1) if step <= n else range(1, n + 1)
        trees.append({"name": tag, "ko_dir": dest, "kos": ko_files(lab, dest),
                      "env": tree_env(lab, dest),
                      "runs": [{"selftest": lab["selftest"],
                                "tests": [t for _, t in tests_of(lab, [s])],
                                "stop_at_fail": step <= n and not m, "step": s}
                               for s in steps]})
        verdicts.append((lab, tag, step, m))
    if not trees:
        return 1 if failed else 0
    part = "-mistakes" if mistakes_only else "-steps" if steps_only else ""
    ret = vm_run({"trees": trees}, f"labcheck-{kver_tag}{part}")
    rc, results, out = ret[:3]
    if results is None:
        report(False, f"labs guest: no result (vm-run {rc}, see {out})")
        return 1
    # a catalogued mistake may break the kernel (that is how it loses its
    # points), and so may the skeleton of a step whose lesson is a broken
    # kernel ("breaks = true": lab debug's oops): the guest must be clean
    # but for those
    wrong = {tag for lab, tag, step, m in verdicts
             if m or (step <= len(lab["step"]) and lab["step"][step - 1].get("breaks"))}
    broke = {t for t, r in results.items() if r.get("broke")}
    # each guest that failed, failed on a tree allowed to break it: a
    # splat of another tree in the same guest (one no taint flag shows)
    # is not hidden behind the breakage that ended that guest
    culprits = ret[3] if len(ret) > 3 else [t for t in broke] or [None]
    report(not broke - wrong and (rc == 0 or (bool(culprits) and set(culprits) <= wrong)),
           f"labs guest: no splat but a catalogued mistake's, powered off (vm-run {rc}, see {out})"
           + (f"; broken by {', '.join(sorted(broke - wrong))}" if broke - wrong else ""))
    for lab, tag, step, m in verdicts:
        r = results.get(tag)
        if r is None:
            report(False, f"lab {tag}: not run in the guest")
            continue
        if m:
            names_ = lab["step"][step - 1]["tests"]
            # failed, not skipped or not run: a test that did not judge
            # the mistake has not caught it
            lost = [t for t in names_ if r["tests"].get(t) == "failed"]
            how = (f"broke the kernel: {r['broke']}" if r.get("broke") else
                   f"{lost[0]} failed" if lost else
                   f"no test of {', '.join(names_)} failed: the lesson is not graded")
            report(bool(lost) or bool(r.get("broke")),
                   f"lab {tag}: loses step {step} ({how}); the mistake: {m['lesson']}")
            continue
        if step <= len(lab["step"]) and lab["step"][step - 1].get("breaks"):
            # grading stops at a broken kernel: this step and every later
            # one score 0, which is the point of the skeleton
            first = lab["step"][step - 1]["tests"][0]
            meant = (r["load"]["ok"] and "oops" in str(r.get("broke", ""))
                     and r["tests"].get(first) == "failed")
            report(meant, f"lab {tag}: loads, then breaks the kernel in step {step}'s tests as the "
                   f"lab means it to" + (f" ({r['broke']})" if r.get("broke") else
                                          ": it did not break") +
                   ("" if meant or not r.get("broke") else
                    f": not the oops of {first} it should be"))
            continue
        report(r["load"]["ok"] and not r.get("broke"),
               f"lab {tag}: loads and unloads ({r['load']['msg']})"
               + (f"; broke the kernel: {r['broke']}" if r.get("broke") else ""))
        n = len(lab["step"])
        if step > n:
            bad = [t for t, v in r["tests"].items() if v != "passed"]
            report(not bad and len(r["tests"]) == sum(len(s["tests"]) for s in lab["step"]),
                   f"lab {tag}: full marks" + (f" (not passed: {', '.join(bad)})" if bad else ""))
            continue
        for s in range(step, n + 1):
            names_ = lab["step"][s - 1]["tests"]
            fails = [t for t in names_ if r["tests"].get(t) == "failed"]
            report(bool(fails), f"lab {tag}: fails a test of step {s}"
                   + (f" ({fails[0]})" if fails else
                      f" (none of {', '.join(names_)} failed: the step is not graded)"))
    return 1 if failed else 0


def unload_all(name):
    """Unloads whatever kmodlab module a test left loaded, users first
    (no exec per module: each costs under TCG)."""
    with open("/proc/modules") as f:
        loaded = {ln.split()[0] for ln in f}
    for m in ("kml_stats_apitest", "kml_ring_apitest", "kml_ring", "kml_probe",
              "kml_probe_target", "kml_sensor", "kml_filter", "kml_hello", "kml_debug",
              "kml_rcu_reader", "kml_stats"):
        if m in loaded:
            print(f"# lab {name}: rmmod {m}", flush=True)
            run_timed(["rmmod", m], 60)


def run_timed(cmd, timeout, **kw):
    """(returncode, output), or (None, output) if @cmd did not end within
    @timeout s: killed, and not waited for (a process stuck in a module's
    init cannot die)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out
    except subprocess.TimeoutExpired:
        p.kill()
        return None, ""


def kernel_state():
    """The taint flags, and kmodlab modules stuck loading or unloading."""
    with open("/proc/sys/kernel/tainted") as f:
        taint = int(f.read())
    with open("/proc/modules") as f:
        stuck = [ln.split()[0] for ln in f if ln.startswith("kml_") and
                 ("Loading" in ln or "Unloading" in ln)]
    return taint, stuck


TAINT_DIE, TAINT_WARN = 1 << 7, 1 << 9


def guest_run(planf):
    """Inside the guest: for each tree, load and unload its modules, then
    run its selftests one test at a time with KMODLAB_KO_DIR pointing at it.
    Results are written after every tree. A tree whose module oopses,
    WARNs, hangs or stays stuck loading is marked "broke" and ends this
    guest: the host grades the remaining trees in a fresh one."""
    plan = json.load(open(planf))
    outdir = os.environ.get("KMODLAB_OUT", "/tmp")
    stdir = os.path.join(REPO, "build", "selftests")
    tmo = plan.get("test_timeout", 120)
    results = {}

    def save():
        with open(os.path.join(outdir, "lab-results.json.new"), "w") as f:
            json.dump(results, f, indent=1)
        os.rename(os.path.join(outdir, "lab-results.json.new"),
                  os.path.join(outdir, "lab-results.json"))

    for tree in plan["trees"]:
        r = {"load": {"ok": True, "msg": "ok"}, "tests": {}, "broke": None}
        results[tree["name"]] = r
        taint0, _ = kernel_state()

        def broken(what):
            taint, stuck = kernel_state()
            why = []
            if what:
                why.append(what)
            if taint & ~taint0 & TAINT_DIE:
                why.append("the kernel oopsed")
            if taint & ~taint0 & TAINT_WARN:
                why.append("the kernel WARNed")
            if stuck:
                why.append(f"{', '.join(stuck)} stuck loading or unloading")
            if why:
                r["broke"] = "; ".join(why)
                print(f"# lab {tree['name']}: {r['broke']}", flush=True)
            return bool(why)

        loaded = []
        for ko in tree["kos"]:
            print(f"# lab {tree['name']}: insmod {os.path.basename(ko)}", flush=True)
            st, out = run_timed(["insmod", ko], 60)
            if st is None:
                r["load"] = {"ok": False, "msg": f"insmod {os.path.basename(ko)}: "
                             "init did not return within 60 s"}
                broken("a module's init does not return")
                break
            if st:
                r["load"] = {"ok": False, "msg": f"insmod {os.path.basename(ko)}: "
                             + (out.strip().splitlines() or ["failed"])[-1]}
                break
            loaded.append(os.path.basename(ko)[:-3])
        for m in reversed(loaded):
            if r["broke"]:
                break
            print(f"# lab {tree['name']}: rmmod {m}", flush=True)
            st, out = run_timed(["rmmod", m], 60)
            if st is None:
                broken(f"rmmod {m} did not return within 60 s")
            elif st and r["load"]["ok"]:
                r["load"] = {"ok": False, "msg": f"rmmod {m}: {out.strip()}"}
        if r["broke"] or broken(None):
            save()
            return 0
        env = dict(os.environ, KMODLAB_KO_DIR=tree["ko_dir"],
                   KMODLAB_BIN=os.path.join(REPO, "build", "bin"), **tree.get("env", {}))
        for run in tree["runs"]:
            for t in run["tests"]:
                print(f"# lab {tree['name']}: {run['selftest']} -r {t}", flush=True)
                t0 = time.monotonic()
                st, outp = run_timed([os.path.join(stdir, run["selftest"]), "-r", t],
                                     tmo, env=env)
                r.setdefault("secs", {})[t] = round(time.monotonic() - t0, 1)
                if st is None:
                    v, outp = "failed", f"# {t}: no result within {tmo} s\n"
                elif re.search(r"^ok \d+ .*# SKIP", outp, re.M):
                    v = "skipped"
                elif re.search(r"^ok \d+ ", outp, re.M) and st == 0:
                    v = "passed"
                else:
                    v = "failed"
                    if not re.search(r"^(not )?ok \d+ ", outp, re.M):
                        outp += f"\n# no such test {t} in {run['selftest']}?\n"
                sys.stdout.write(outp)
                r["tests"][t] = v
                if v == "failed":
                    r.setdefault("why", {})[t] = first_failure(outp)
                if broken(None if st is not None else f"{t} hung"):
                    save()
                    return 0
                unload_all(tree["name"])
                if v == "failed" and run.get("stop_at_fail"):
                    break
        if broken(None):
            save()
            return 0
        save()
    return 0


def main():
    ap = argparse.ArgumentParser(description="kmodlab workshop labs")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list")
    g = sub.add_parser("gen")
    g.add_argument("lab")
    g.add_argument("--step", type=int, default=1)
    g.add_argument("--dir")
    g.add_argument("--force", action="store_true")
    g = sub.add_parser("grade")
    g.add_argument("lab", nargs="?")
    g.add_argument("--dir")
    g = sub.add_parser("build")
    g.add_argument("lab", nargs="?")
    g.add_argument("--dir")
    g = sub.add_parser("grade-many")
    g.add_argument("lab")
    g.add_argument("--csv", required=True)
    g.add_argument("dirs", nargs="+")
    g = sub.add_parser("submit")
    g.add_argument("lab", nargs="?")
    g.add_argument("--dir")
    g.add_argument("--name", default=os.environ.get("USER") or "student")
    g.add_argument("--out-dir")
    g = sub.add_parser("check")
    g.add_argument("--only", action="append")
    half = g.add_mutually_exclusive_group()
    half.add_argument("--mistakes-only", action="store_true")
    half.add_argument("--steps-only", action="store_true")
    g = sub.add_parser("validate")
    g = sub.add_parser("guest-run")
    g.add_argument("plan")
    a = ap.parse_args()
    try:
        if a.cmd == "list":
            for n in lab_names():
                lab = load_lab(n)
                print(f"{n}: {lab['title']}")
                for st in lab["step"]:
                    print(f"  {st['n']}. {st['title']}  ({len(st['tests'])} graded: "
                          f"{', '.join(st['tests'])})")
            return 0
        if a.cmd == "validate":
            for n in lab_names():
                validate(load_lab(n))
                print(f"lab {n}: markers and manifest agree")
            return 0
        if a.cmd == "guest-run":
            return guest_run(a.plan)
        if a.cmd == "check":
            tag = f"{os.environ.get('KVER', '6.12')}-{os.environ.get('PROFILE', 'default')}"
            return check(a.only or lab_names(), tag, a.mistakes_only, a.steps_only)
        if a.cmd == "grade-many":
            return grade_many(load_lab(a.lab), a.dirs, a.csv)
        if a.cmd in ("grade", "build", "submit") and not a.lab:
            meta = os.path.join(a.dir or ".", ".kmodlab-lab")
            if not os.path.exists(meta):
                raise LabError("which lab? LAB=<name> (make lab-list shows them)")
            a.lab = json.load(open(meta))["lab"]
        lab = load_lab(a.lab)
        dest = os.path.abspath(a.dir or os.path.join(REPO, "work", lab["name"]))
        if a.cmd == "gen":
            gen(lab, a.step, dest, a.force)
            return 0
        if a.cmd == "submit":
            path = submit(lab, dest, a.name, a.out_dir)
            print(f"lab {lab['name']}: {path} holds your tree's sources: hand it in")
            return 0
        if a.cmd == "build":
            ensure_deps([lab])
            return 0 if build(lab, dest) else 1
        return grade(lab, dest)
    except LabError as e:
        die(str(e))


if __name__ == "__main__":
    sys.exit(main())
