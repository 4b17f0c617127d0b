#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host tests of scripts/lab.py's marker parsing and skeleton cutting.
TAP output, like the C host tests; run by `make check`."""
import os
import re
import shutil
import sys
import tempfile
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../scripts"))
import lab  # noqa: E402

SRC = """int a;
static int f(void)
{
	/* LAB x 1: Return the answer.
	 * Any way you like.
	 */
	return 42;
	/* LAB x 1 end: return 0; */
}

static void g(void)
{
	/* LAB x 2: Say hello. */
	pr_info("hello\\n");
	pr_info("again\\n");
	/* LAB x 2 end */
	/* LAB y 1: another lab's step, left alone */
	h();
	/* LAB y 1 end */
}
"""

tests = []


def test(fn):
    tests.append(fn)
    return fn


def write(text):
    fd, path = tempfile.mkstemp(suffix=".c")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def refuses(what, fn, *args, **kw):
    """fn(*args, **kw) must raise LabError saying @what."""
    try:
        fn(*args, **kw)
    except lab.LabError as e:
        assert what in str(e), f"error '{e}' does not say '{what}'"
        return
    raise AssertionError(f"no error saying '{what}'")


def raises(text, what):
    path = write(text)
    try:
        lab.regions(path, "x")
    except lab.LabError as e:
        assert what in str(e), f"error '{e}' does not say '{what}'"
        return
    finally:
        os.unlink(path)
    raise AssertionError(f"no error for: {what}")


@test
def regions_are_found_with_their_text_and_stub():
    path = write(SRC)
    _, regs = lab.regions(path, "x")
    os.unlink(path)
    assert [(r[3], r[4], r[5]) for r in regs] == [
        (1, "Return the answer. Any way you like.", "return 0;"),
        (2, "Say hello.", None)], regs


@test
def step1_removes_everything_and_keeps_other_labs():
    path = write(SRC)
    out = lab.cut(path, "x", 1)
    os.unlink(path)
    assert "return 42;" not in out and 'pr_info("hello' not in out
    assert "\t/* TODO 1: Return the answer.\n\t * Any way you like.\n\t */\n\treturn 0;\n}" in out
    assert "/* TODO 2: Say hello. */\n\t/* LAB y 1:" in out
    assert "h();" in out and "LAB y 1 end" in out
    assert "LAB x" not in out


@test
def step2_keeps_step1_as_plain_comments():
    path = write(SRC)
    out = lab.cut(path, "x", 2)
    os.unlink(path)
    assert "/* Step 1: Return the answer." in out and "return 42;" in out
    assert "return 0;" not in out and "LAB x 1 end" not in out
    assert 'pr_info("hello' not in out and "TODO 2: Say hello." in out


@test
def solution_is_the_source_without_markers():
    path = write(SRC)
    out = lab.cut(path, "x", 3)
    os.unlink(path)
    stripped = [ln for ln in SRC.split("\n") if "LAB x" not in ln]
    assert [ln for ln in out.split("\n") if "Step " not in ln] == stripped


@test
def unterminated_comment():
    raises("/* LAB x 1: no end of comment\n", "unterminated")


@test
def missing_end_marker():
    raises("/* LAB x 1: a */\ncode;\n", "no end marker")


@test
def end_without_start():
    raises("code;\n/* LAB x 1 end */\n", "without a start")


@test
def markers_do_not_nest():
    raises("/* LAB x 1: a */\n/* LAB x 2: b */\nc;\n/* LAB x 2 end */\n/* LAB x 1 end */\n",
           "do not nest")


@test
def mismatched_end():
    raises("/* LAB x 1: a */\nc;\n/* LAB x 2 end */\n", "end of step 2 inside step 1")


@test
def a_marker_that_removes_nothing():
    raises("/* LAB x 1: a */\n\n/* LAB x 1 end */\n", "removes nothing")


@test
def every_lab_in_the_tree_validates():
    names = lab.lab_names()
    assert names, "no labs found"
    for n in names:
        lab.validate(lab.load_lab(n))


@test
def unknown_lab_is_a_clear_error():
    refuses("no lab 'no-such-lab'", lab.load_lab, "no-such-lab")


@test
def gen_refuses_to_overwrite_a_student_tree():
    name = lab.lab_names()[0]
    d = tempfile.mkdtemp(dir=os.path.expanduser("~"))
    try:
        refuses("exists", lab.gen, lab.load_lab(name), 1, d, quiet=True)
    finally:
        os.rmdir(d)


@test
def gen_refuses_a_step_out_of_range():
    lb = lab.load_lab(lab.lab_names()[0])
    refuses("has steps", lab.gen, lb, len(lb["step"]) + 2, "/nonexistent/x", quiet=True)


@test
def grade_refuses_trees_the_guest_cannot_see():
    refuses("hidden from the test guest", lab.guest_visible, "/run/student")


@test
def toml_subset_reader_agrees_with_tomllib():
    import tomllib
    for n in lab.lab_names():
        path = os.path.join(lab.LABS, n, "lab.toml")
        saved, lab.tomllib = lab.tomllib, None
        try:
            mine = lab.read_toml(path)
        finally:
            lab.tomllib = saved
        assert mine == tomllib.load(open(path, "rb")), n


@test
def force_deletes_only_a_student_tree():
    lb = lab.load_lab(lab.lab_names()[0])
    d = tempfile.mkdtemp(dir=os.path.expanduser("~"))
    precious = os.path.join(d, "thesis.tex")
    open(precious, "w").close()
    try:
        refuses("not a student tree", lab.gen, lb, 1, d, force=True, quiet=True)
        assert os.path.exists(precious)
    finally:
        os.unlink(precious)
        os.rmdir(d)


@test
def a_tree_of_another_lab_is_refused():
    names = lab.lab_names()
    d = tempfile.mkdtemp(dir=os.path.expanduser("~"))
    os.rmdir(d)
    try:
        lab.gen(lab.load_lab(names[0]), 1, d, quiet=True)
        refuses(f"a tree of lab '{names[0]}'", lab.check_lab_of, lab.load_lab(names[1]), d)
    finally:
        shutil.rmtree(d)


@test
def hidden_and_odd_tree_paths_are_refused():
    bad_paths = ["/mnt/x", "/run/x", "/home/a b/x"]
    if not os.path.realpath(lab.REPO).startswith("/tmp/"):
        bad_paths.append("/tmp/x")
    for bad in bad_paths:
        refuses("", lab.guest_visible, bad)
    link = os.path.join(os.path.expanduser("~"), ".kmodlab-test-link")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink("/run", link)
    try:
        refuses("hidden from the test guest", lab.guest_visible, os.path.join(link, "tree"))
    finally:
        os.unlink(link)


@test
def students_are_named_by_what_differs_in_their_paths():
    assert lab.student_names(["/srv/class/alice/sensor", "/srv/class/bob/sensor"]) == \
        ["alice", "bob"]
    assert lab.student_names(["/a/x", "/b/y"]) == ["a/x", "b/y"]
    assert lab.student_names(["/srv/one"]) == ["one"]
    # trees and unpacked archives side by side
    assert lab.student_names(["/srv/class/alice/sensor",
                              "/k/build/submissions/sensor/bob/sensor"]) == ["alice", "bob"]
    # two alices: the paths tell them apart
    assert lab.student_names(["/a/alice/sensor", "/b/alice/sensor"]) == ["a", "b"]


def tree_of(name, step=1):
    """A student tree of lab @name at @step, where the guest would see it."""
    d = tempfile.mkdtemp(dir=os.path.expanduser("~"))
    os.rmdir(d)
    lab.gen(lab.load_lab(name), step, d, quiet=True)
    return d


@test
def a_student_tree_holds_no_other_labs_answer():
    for name in lab.lab_names():
        lb = lab.load_lab(name)
        d = tree_of(name)
        try:
            own = {src.split("/")[1] for src in lb["sources"]}
            for root, _, files in os.walk(d):
                for f in files:
                    path = os.path.join(root, f)
                    rel = os.path.relpath(path, d)
                    with open(path, errors="replace") as fh:
                        text = fh.read()
                    # no LAB marker anywhere, of this lab or another
                    assert not re.search(r"/\* LAB [a-z0-9_]+ \d+", text), f"{name}: {rel}"
                    parts = rel.split("/")
                    if parts[0] == "modules" and f.endswith(".c"):
                        assert parts[1] in own or parts[1] == "tests", f"{name}: {rel}"
            # the modules it only uses come built, never as source
            for m in lab.dep_modules(lb):
                assert not [f for f in os.listdir(os.path.join(d, "modules", m))
                            if not f.endswith(".h")], f"{name}: modules/{m}"
        finally:
            shutil.rmtree(d)


@test
def a_sheet_shows_its_quoted_numbers_without_markers():
    # lab filter's sheet quotes a measured grade time (scripts/doc-numbers.py)
    with open(os.path.join(lab.LABS, "filter", "README.md")) as f:
        raw = f.read()
    quoted = lab.NUMBER_QUOTE.findall(raw)
    assert quoted, "the filter sheet quotes no number"
    d = tree_of("filter")
    try:
        with open(os.path.join(d, "LAB.md")) as f:
            sheet = f.read()
        assert "<!--n:" not in sheet and "<!--/n-->" not in sheet
        for value in quoted:
            assert value in sheet, value
    finally:
        shutil.rmtree(d)


@test
def probe_tree_has_no_filter_or_hello_source():
    d = tree_of("probe")
    try:
        assert not os.path.exists(os.path.join(d, "modules/kml_filter"))
        assert not os.path.exists(os.path.join(d, "modules/kml_hello"))
        assert not os.path.exists(os.path.join(d, "modules/kml_stats/kml_stats_main.c"))
        assert os.path.exists(os.path.join(d, "modules/kml_probe/kml_probe_main.c"))
    finally:
        shutil.rmtree(d)


@test
def a_copied_solution_is_flagged():
    lb = lab.load_lab("probe")
    src = lb["sources"][0]
    d = tree_of("probe")
    sol = tree_of("probe", len(lb["step"]) + 1)
    try:
        assert lab.copied_answer(lb, d) == [], "a fresh skeleton is not a copy"
        assert lab.copied_answer(lb, sol), "the generated solution is flagged"
        # the repository's file, markers and all
        shutil.copy(os.path.join(lab.REPO, src), os.path.join(d, src))
        why = lab.copied_answer(lb, d)
        assert why and "LAB markers" in why[0], why
        # the solution re-indented, its comments reworded
        with open(os.path.join(sol, src)) as f:
            text = f.read()
        text = re.sub(r"/\*.*?\*/", "/* mine */", text, flags=re.S).replace("\t", "    ")
        with open(os.path.join(d, src), "w") as f:
            f.write(text)
        why = lab.copied_answer(lb, d)
        assert why and "solution's code" in why[0], why
        # one real change of code is the student's own
        with open(os.path.join(d, src), "w") as f:
            f.write(text.replace("return 0;", "return 0 ;\n\tx++;", 1))
        assert lab.copied_answer(lb, d) == []
    finally:
        shutil.rmtree(d)
        shutil.rmtree(sol)


@test
def only_what_the_student_wrote_is_judged_a_copy():
    """A tree started at step 2 holds step 1's answer as the generator
    wrote it: not a copy. A short answer (lab bpf's percpu_sum(), a few
    lines) is the same as the solution's when written honestly: not
    judged. A longer one copied still is."""
    lb = lab.load_lab("bpf")
    d2 = tree_of("bpf", 2)
    d1 = tree_of("bpf", 1)
    sol = tree_of("bpf", len(lb["step"]) + 1)
    try:
        # step 2's tree: kml_drops.bpf.c and kml-bpf.c are given whole
        lat = "bpf/kml_lat.bpf.c"
        assert lab.copied_answer(lb, d2) == [], lab.copied_answer(lb, d2)
        shutil.copy(os.path.join(sol, lat), os.path.join(d2, lat))
        assert [w for w in lab.copied_answer(lb, d2) if lat in w], "a copied step 2 is flagged"
        # step 1's tree: the short loader answer is not judged, the program is
        for src in ("bpf/kml-bpf.c", "bpf/kml_drops.bpf.c"):
            shutil.copy(os.path.join(sol, src), os.path.join(d1, src))
        why = lab.copied_answer(lb, d1)
        assert not [w for w in why if "kml-bpf.c" in w], why
        assert [w for w in why if "kml_drops.bpf.c" in w], why
    finally:
        for d in (d1, d2, sol):
            shutil.rmtree(d)


@test
def a_sheet_naming_what_the_solution_lacks_is_refused():
    """labs/NAME/README.md against the solution: a renamed function, a
    member expression of our own structs, a graded test or a file of ours
    that do not exist are named with their line; the kernel's API and
    members of the kernel's structs are not ours to check."""
    lb = lab.load_lab("filter")
    d = tempfile.mkdtemp()
    saved = lab.LABS
    try:
        os.makedirs(os.path.join(d, "filter"))
        sheet = open(os.path.join(saved, "filter", "README.md")).read()
        good = ("\nKernel names: `nf_unregister_hook()`, `skb->data`, `struct nf_hook_ops`,"
                " `set->policy`, `filter.counters_are_exact`, `kml_filter_logic.c`.\n"
                "```\nkml_filter_gone() in a code block\n```\n")
        with open(os.path.join(d, "filter", "README.md"), "w") as f:
            f.write(sheet + good)
        lab.LABS = d
        assert lab.sheet_names(lb) == []
        lab.validate(lb)
        bad = ("`kml_filter_hook_v2()` `set->policy_in` `filter.counts_are_exact`"
               " `kml_filter_gone.c` `struct kml_filter_sett`\n")
        with open(os.path.join(d, "filter", "README.md"), "w") as f:
            f.write(sheet + good + bad)
        why = lab.sheet_names(lb)
        n = (sheet + good).count("\n") + 1
        for name in ("kml_filter_hook_v2()", "set->policy_in", "filter.counts_are_exact",
                     "kml_filter_gone.c", "struct kml_filter_sett"):
            assert f"README.md:{n}: `{name}` is not in the solution" in "\n".join(why), why
        assert len(why) == 5, why
        refuses("the sheet names what the solution does not have", lab.validate, lb)
    finally:
        lab.LABS = saved
        shutil.rmtree(d)


@test
def first_failure_says_why_a_test_failed():
    out = """#  RUN           filter.counters_are_exact ...
# selftests/kml_filter/kml_filter_test.c:812:counters_are_exact:Expected 10 (10) == n (0)
# selftests/kml_filter/kml_filter_test.c:812:counters_are_exact:rule 0 after 10 packets
# selftests/kml_filter/kml_filter_test.c:820:counters_are_exact:Expected 1 (1) == m (0)
# counters_are_exact: Test failed
#          FAIL  filter.counters_are_exact
not ok 1 filter.counters_are_exact
# FAILED: 0 / 1 tests passed.
"""
    assert lab.first_failure(out) == ("kml_filter_test.c:812:counters_are_exact:"
                                      "Expected 10 (10) == n (0) (rule 0 after 10 packets)")
    out = """#  RUN           dev.get_info ...
# dev.get_info: Test terminated by timeout
#          FAIL  dev.get_info
not ok 1 dev.get_info
"""
    assert lab.first_failure(out) == "dev.get_info: Test terminated by timeout"
    out = "# x.c:5:t:Expected 'a' == 'b'.\n# t: Test terminated by assertion\nnot ok 1 f.t\n"
    assert lab.first_failure(out) == "x.c:5:t:Expected 'a' == 'b'."
    out = "#  RUN           f.t ...\n# the device is gone\n#      FAIL  f.t\nnot ok 1 f.t\n"
    assert lab.first_failure(out) == "the device is gone"
    assert lab.first_failure("") == "failed"


@test
def submit_packs_the_sources_only():
    lb = lab.load_lab("hello")
    d = tree_of("hello")
    out = tempfile.mkdtemp()
    try:
        src = os.path.join(d, lb["sources"][0])
        for junk in (".o", ".ko", ".mod.c"):
            open(src[:-2] + junk, "w").close()
        open(os.path.join(d, "grade-build.log"), "w").close()
        os.symlink("/etc/passwd", os.path.join(d, "link"))
        path = lab.submit(lb, d, "alice", out)
        assert path == os.path.join(out, "alice-hello.tar.gz"), path
        import tarfile
        names = tarfile.open(path).getnames()
        assert all(n == "alice-hello" or n.startswith("alice-hello/") for n in names), names
        assert "alice-hello/.kmodlab-lab" in names, names
        assert "alice-hello/" + lb["sources"][0] in names, names
        assert not [n for n in names if n.endswith((".o", ".ko", ".mod.c", ".log", "/link"))], names
        refuses("a name is letters", lab.submit, lb, d, "../bob", out)
        refuses("not a student tree", lab.submit, lb, out, "alice", out)
        refuses("is a tree of lab 'hello'", lab.submit, lab.load_lab("stats"), d, "alice", out)
    finally:
        shutil.rmtree(d)
        shutil.rmtree(out)


@test
def grade_all_unpacks_submitted_archives_and_refuses_others():
    import io
    import tarfile
    lb = lab.load_lab("hello")
    d = tree_of("hello")
    tmp = tempfile.mkdtemp()
    into = os.path.join(tmp, "into")
    try:
        path = lab.submit(lb, d, "alice", tmp)
        got = lab.unpack_submissions([path, d], into)
        assert got == [os.path.join(into, "alice", "hello"), d], got
        assert os.path.isfile(os.path.join(got[0], lb["sources"][0]))
        assert lab.student_names(got[:1] + [os.path.join(into, "bob", "hello")]) == ["alice", "bob"]
        # a member that climbs out of the directory, and an archive of no tree
        evil = os.path.join(tmp, "mallory-hello.tar.gz")
        with tarfile.open(evil, "w:gz") as t:
            data = b"owned"
            ti = tarfile.TarInfo("../../escaped")
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
        refuses("not an archive of make submit", lab.unpack_submissions, [evil], into)
        assert not os.path.exists(os.path.join(tmp, "escaped"))
        assert not os.path.exists(os.path.join(os.path.dirname(tmp), "escaped"))
        empty = os.path.join(tmp, "eve-hello.tar.gz")
        with tarfile.open(empty, "w:gz") as t:
            t.add(os.path.join(d, "Makefile"), arcname="eve-hello/Makefile")
        refuses("no student tree inside", lab.unpack_submissions, [empty], into)
        junk = os.path.join(tmp, "junk.tgz")
        open(junk, "w").write("not gzip")
        refuses("not an archive of make submit", lab.unpack_submissions, [junk], into)
    finally:
        shutil.rmtree(d)
        shutil.rmtree(tmp)


@test
def grade_all_csv_gives_each_steps_first_failure():
    """grade-many's CSV, with the guest faked: per student and step, the
    first test that did not pass and why; nothing for a step done."""
    import csv as csvmod
    lb = lab.load_lab("hello")
    a, b = tree_of("hello"), tree_of("hello")
    tmp = tempfile.mkdtemp()
    saved = (lab.build, lab.ko_files, lab.ensure_deps, lab.vm_run)
    why = "kml_hello_test.c:300:writable_parameter:Expected 0 (0) == ret (-1), errno 13"
    every = [t for s in lb["step"] for t in s["tests"]]

    def fake_vm_run(plan, name, single=False, timeout=1500):
        res = {}
        for t in plan["trees"]:
            tests = {x: "passed" for x in every}
            r = {"load": {"ok": True, "msg": "ok"}, "tests": tests, "broke": None}
            if t["ko_dir"] == a:
                tests["hello.writable_parameter"] = "failed"
                tests["hello.writable_parameter_validates"] = "skipped"
                r["why"] = {"hello.writable_parameter": why}
            res[t["name"]] = r
        return 0, res, tmp
    try:
        lab.build = lambda lab_, d, log=None, jobs=None: True
        lab.ko_files = lambda lab_, d: []
        lab.ensure_deps = lambda labs: None
        lab.vm_run = fake_vm_run
        out = os.path.join(tmp, "s.csv")
        import contextlib
        import io
        with contextlib.redirect_stdout(io.StringIO()):
            assert lab.grade_many(lb, [a, b], out) == 0
        rows = list(csvmod.reader(open(out)))
        head, ra, rb = rows[0], rows[1], rows[2]
        n = len(lb["step"])
        assert head[-n:] == [f"step{i} first failure" for i in range(1, n + 1)], head
        assert ra[head.index("total")] == str(len(every) - 2), ra
        assert ra[-n:] == [""] * (n - 1) + [f"hello.writable_parameter: {why}"], ra
        assert rb[-n:] == [""] * n and rb[head.index("total")] == str(len(every)), rb
    finally:
        lab.build, lab.ko_files, lab.ensure_deps, lab.vm_run = saved
        shutil.rmtree(a)
        shutil.rmtree(b)
        shutil.rmtree(tmp)


@test
def every_catalogued_mistake_applies_to_its_solution():
    """Each mistake is a patch on the solution as cut today: a module
    change that leaves one stale fails here, before any guest runs."""
    count = 0
    for name in lab.lab_names():
        lb = lab.load_lab(name)
        solution = {src: lab.cut(os.path.join(lab.REPO, src), name, len(lb["step"]) + 1)
                    for src in lb["sources"]}
        for m in lab.mistakes(lb):
            d = tempfile.mkdtemp()
            try:
                for src, text in solution.items():
                    os.makedirs(os.path.join(d, os.path.dirname(src)), exist_ok=True)
                    with open(os.path.join(d, src), "w") as f:
                        f.write(text)
                assert lab.apply_mistake(m, d) is None, f"{name} {m['name']}"
                assert any(open(os.path.join(d, src)).read() != text
                           for src, text in solution.items()), f"{name} {m['name']}: no change"
                count += 1
            finally:
                shutil.rmtree(d)
    assert count >= 20, count


@test
def a_malformed_catalogue_entry_is_refused():
    lb = dict(lab.load_lab("hello"))
    good = open(os.path.join(lb["dir"], "mistakes", "set-without-check.patch")).read()
    body = good[good.index("--- "):]
    d = tempfile.mkdtemp()
    lb["dir"] = d
    os.mkdir(os.path.join(d, "mistakes"))
    try:
        for name, head, what in [
                ("no-step", "Lesson: x\n", "Step: N"),
                ("step-9", "Step: 9\nLesson: x\n", "Step: N"),
                ("no-lesson", "Step: 1\n", "Lesson"),
                ("bad-profile", "Step: 1\nLesson: x\nProfile: kcsan\n", "Profile"),
                ("Bad_Name", "Step: 1\nLesson: x\n", "dashes")]:
            path = os.path.join(d, "mistakes", name + ".patch")
            with open(path, "w") as f:
                f.write(head + "\n" + body)
            refuses(what, lab.mistakes, lb)
            os.unlink(path)
        with open(os.path.join(d, "mistakes", "ok.patch"), "w") as f:
            f.write("Step: 4\nLesson: it takes anything\nProfile: debug\n\n" + body)
        [m] = lab.mistakes(lb)
        assert (m["name"], m["step"], m["profile"]) == ("ok", 4, "debug"), m
    finally:
        shutil.rmtree(d)


@test
def check_grades_each_mistake_on_its_step():
    """lab.py check --mistakes-only, the guest faked: a mistake that fails
    a test of its step, or breaks the kernel, passes; one whose step
    still passes whole is a lesson not graded; a kernel broken by a
    catalogued mistake does not fail the guest's own line."""
    import contextlib
    import io
    lb = lab.load_lab("hello")
    real = lab.mistakes(lb)[0]
    fake = [dict(real, name="caught", step=4), dict(real, name="missed", step=4),
            dict(real, name="crashes", step=4), dict(real, name="other-profile", profile="debug")]
    saved = (lab.build, lab.ko_files, lab.ensure_deps, lab.vm_run, lab.mistakes)
    seen = {}

    def fake_vm_run(plan, name, single=False, timeout=1500):
        res = {}
        for t in plan["trees"]:
            seen[t["name"]] = t["runs"]
            tests = {x: "passed" for r in t["runs"] for x in r["tests"]}
            r = {"load": {"ok": True, "msg": "ok"}, "tests": tests}
            if t["name"].endswith("-caught"):
                tests["hello.writable_parameter_validates"] = "failed"
            if t["name"].endswith("-crashes"):
                r["broke"] = "the kernel log has a splat (vm-run 125)"
            res[t["name"]] = r
        return 125, res, "/nonexistent"
    lab.build = lambda *a, **k: True
    lab.ko_files = lambda *a, **k: []
    lab.ensure_deps = lambda *a, **k: None
    lab.vm_run = fake_vm_run
    lab.mistakes = lambda lb_: fake
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            rc = lab.check(["hello"], "host-test", mistakes_only=True)
    finally:
        lab.build, lab.ko_files, lab.ensure_deps, lab.vm_run, lab.mistakes = saved
    text = out.getvalue()
    assert rc == 1, text
    assert "PASS: lab hello-mistake-caught: loses step 4 " \
           "(hello.writable_parameter_validates failed)" in text, text
    assert "FAIL: lab hello-mistake-missed: loses step 4 (no test of hello.writable_parameter, " \
           "hello.writable_parameter_validates failed: the lesson is not graded)" in text, text
    assert "PASS: lab hello-mistake-crashes: loses step 4 (broke the kernel" in text, text
    assert "PASS: labs guest: no splat but a catalogued mistake's" in text, text
    assert "other-profile" not in text, text
    # graded on its own step alone, every test of it
    assert [(r["step"], r["stop_at_fail"]) for r in seen["hello-mistake-caught"]] == \
        [(4, False)], seen
    assert all("mistake" in t for t in seen), seen


@test
def a_skeleton_meant_to_break_must_break():
    """lab debug's step 1 skeleton oopses on purpose (breaks = true): lab.py
    check passes it only if it does break, lets its splat through the
    guest's own line, and still fails a skeleton of another step that
    breaks."""
    import contextlib
    import io
    lb = lab.load_lab("debug")
    assert lb["step"][0].get("breaks") is True and not lb["step"][1].get("breaks"), lb
    saved = (lab.build, lab.ko_files, lab.ensure_deps, lab.vm_run, lab.gen)

    def run(broken, culprits=None):
        def fake_vm_run(plan, name, single=False, timeout=1500):
            res = {}
            for t in plan["trees"]:
                tests = {x: "passed" for r in t["runs"] for x in r["tests"]}
                for r in t["runs"]:
                    tests[r["tests"][0]] = "failed"
                r = {"load": {"ok": True, "msg": "ok"}, "tests": tests}
                if t["name"] in broken:
                    r["broke"] = "the kernel oopsed"
                res[t["name"]] = r
            return (125 if broken else 0), res, "/nonexistent", \
                (sorted(broken) if culprits is None else culprits)
        lab.build = lambda *a, **k: True
        lab.ko_files = lambda *a, **k: []
        lab.ensure_deps = lambda *a, **k: None
        lab.gen = lambda *a, **k: None
        lab.vm_run = fake_vm_run
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                lab.check(["debug"], "host-test", steps_only=True)
        finally:
            lab.build, lab.ko_files, lab.ensure_deps, lab.vm_run, lab.gen = saved
        return out.getvalue()
    text = run({"debug-step1"})
    assert "PASS: lab debug-step1: loads, then breaks the kernel in step 1's tests" in text, text
    assert "PASS: labs guest: no splat but a catalogued mistake's" in text, text
    text = run(set())
    assert "FAIL: lab debug-step1: loads, then breaks the kernel in step 1's tests " \
           "as the lab means it to: it did not break" in text, text
    text = run({"debug-step1", "debug-step2"})
    assert "FAIL: labs guest: no splat but a catalogued mistake's" in text and \
           "broken by debug-step2" in text, text
    assert "FAIL: lab debug-step2: loads and unloads (ok); broke the kernel" in text, text
    # a splat no taint flag shows (lockdep, a stall), in step 2's tree,
    # in the guest step 1's oops then ended: not hidden behind that oops
    text = run({"debug-step1"}, culprits=["debug-step2"])
    assert "FAIL: labs guest: no splat but a catalogued mistake's" in text, text


@test
def the_labs_table_counts_what_the_labs_have():
    """labs/README.md's table gives each lab's steps, graded tests and
    catalogued mistakes: the numbers come from the labs themselves."""
    with open(os.path.join(lab.LABS, "README.md")) as f:
        table = f.read()
    for name in lab.lab_names():
        lb = lab.load_lab(name)
        want = (f"{len(lb['step'])} ({sum(len(s['tests']) for s in lb['step'])} graded tests, "
                f"{len(lab.mistakes(lb))} mistakes)")
        row = re.search(rf"^\| \[{name}\]\(.*$", table, re.M)
        assert row and row.group(0).endswith(f"| {want} |"), (name, want, row and row.group(0))


@test
def a_bpf_lab_tree_holds_its_programs_cut_and_no_module_source():
    """lab bpf: the student edits bpf/, not a module; the tree gets the
    whole bpf/ directory (Makefile, shared header) with its sources cut,
    the modules it uses only as headers, and its selftests the loader the
    student builds (tree_env)."""
    lb = lab.load_lab("bpf")
    assert lab.is_bpf(lb) and not lab.is_bpf(lab.load_lab("probe"))
    assert lab.own_modules(lb) == [], lab.own_modules(lb)
    d = tree_of("bpf")
    try:
        for f in ("Makefile", "kml_bpf.h"):
            assert os.path.exists(os.path.join(d, "bpf", f)), f
        for src in lb["sources"]:
            text = open(os.path.join(d, src)).read()
            assert not any(lab.BEGIN.match(ln) or lab.END.match(ln) for ln in text.split("\n")), src
        assert "TODO 1:" in open(os.path.join(d, "bpf/kml_drops.bpf.c")).read()
        assert "TODO 2:" in open(os.path.join(d, "bpf/kml_lat.bpf.c")).read()
        for m in lb["modules"]:
            have = os.listdir(os.path.join(d, "modules", m))
            assert all(f.endswith(".h") for f in have), (m, have)
        assert lab.tree_env(lb, d) == {"KMODLAB_BPF": os.path.join(d, "bpf/build/kml-bpf")}
        assert lab.tree_env(lab.load_lab("probe"), d) == {}
    finally:
        shutil.rmtree(d)


@test
def submit_leaves_out_a_bpf_trees_build():
    """bpf/build holds vmlinux.h (megabytes), objects and the loader: what
    make builds, not what the student wrote."""
    lb = lab.load_lab("bpf")
    d = tree_of("bpf")
    out = tempfile.mkdtemp()
    try:
        os.makedirs(os.path.join(d, "bpf", "build"))
        open(os.path.join(d, "bpf", "build", "vmlinux.h"), "w").close()
        import tarfile
        names = tarfile.open(lab.submit(lb, d, "alice", out)).getnames()
        assert "alice-bpf/bpf/kml_lat.bpf.c" in names, names
        assert not [n for n in names if "/build" in n], names
    finally:
        shutil.rmtree(d)
        shutil.rmtree(out)


def main():
    print("TAP version 13")
    print(f"1..{len(tests)}")
    failed = 0
    for i, t in enumerate(tests, 1):
        try:
            t()
            print(f"ok {i} {t.__name__}")
        except Exception:
            failed += 1
            print(f"not ok {i} {t.__name__}")
            for ln in traceback.format_exc().splitlines():
                print(f"# {ln}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
