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


def tree_of(name, step=1):
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
