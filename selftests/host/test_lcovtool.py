#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host tests of scripts/lcovtool.py: reading lcov tracefiles, the
per-module table and its gates, the per-test report. TAP output."""
import contextlib
import os
import sys
import tempfile
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../scripts"))
import lcovtool  # noqa: E402

# Two tests over two modules' files, as lcov -a merges them: one block
# per test (TN) and file (SF). Line 3 of a.c only t1 runs; line 4 both.
INFO = """TN:t1
SF:/r/modules/kml_a/a.c
FN:1,fa
FNDA:1,fa
DA:3,5
DA:4,1
DA:5,0
BRDA:4,0,0,1
BRDA:4,0,1,0
BRDA:5,0,0,-
BRDA:5,0,1,-
end_of_record
SF:/r/modules/kml_b/b.c
DA:1,0
end_of_record
TN:t2
SF:/r/modules/kml_a/a.c
FN:1,fa
FNDA:0,fa
DA:3,0
DA:4,2
DA:5,0
BRDA:4,0,0,0
BRDA:4,0,1,3
BRDA:5,0,0,-
BRDA:5,0,1,-
end_of_record
SF:/r/modules/kml_b/b.c
DA:1,0
end_of_record
TN:t3
SF:/r/modules/kml_a/a.c
DA:4,7
end_of_record
SF:/r/modules/include/h.h
DA:1,1
end_of_record
"""

tests = []


def test(fn):
    tests.append(fn)


@test
def parse_reads_lines_branches_functions():
    recs = list(lcovtool.parse(INFO))
    assert ("t1", "/r/modules/kml_a/a.c", "line", 3, 5) in recs
    assert ("t1", "/r/modules/kml_a/a.c", "branch", (5, 0, 0), 0) in recs, "'-' is not taken"
    assert ("t2", "/r/modules/kml_a/a.c", "fn", "fa", 0) in recs
    assert all(r[1] is not None for r in recs)


@test
def totals_count_a_hit_in_any_test():
    t = lcovtool.totals(INFO)["/r/modules/kml_a/a.c"]
    assert t["line"] == (3, 2), t            # lines 3, 4 run; 5 never
    assert t["branch"] == (4, 2), t          # both arms of line 4, none of 5
    assert t["fn"] == (1, 1), t


@test
def module_of_needs_a_directory_under_root():
    assert lcovtool.module_of("/r/modules/kml_a/a.c", "/r/modules") == "kml_a"
    assert lcovtool.module_of("/r/modules/kml_a/a.c", "/r/modules/") == "kml_a"
    assert lcovtool.module_of("/r/modules/top.c", "/r/modules") is None
    assert lcovtool.module_of("/r/modulesX/kml_a/a.c", "/r/modules") is None


@test
def table_gates_lines_and_branches():
    lines, ok = lcovtool.table(INFO, "/r/modules", ["kml_a"], 60, 50, False)
    assert ok, lines
    # 2 of 3 lines: cut to 66.6%, never rounded up past a gate
    assert any(ln.startswith("COVERAGE-OK kml_a: 66.6% of lines") for ln in lines), lines
    lines, ok = lcovtool.table(INFO, "/r/modules", ["kml_a"], 60, 51, False)
    assert not ok and any(ln.startswith("COVERAGE-LOW kml_a") and "50.0% of branches (< 51%)" in ln
                          for ln in lines), lines
    lines, ok = lcovtool.table(INFO, "/r/modules", ["kml_a"], 67, 0, False)
    assert not ok, "66.6% of lines is below 67%"


@test
def a_gate_is_never_passed_by_rounding():
    # 1799 of 2000 branches is 89.95%: shown as 89.9%, and below 90%
    info = "TN:t\nSF:/r/modules/kml_a/a.c\nDA:1,1\n"
    info += "".join(f"BRDA:1,0,{i},{1 if i < 1799 else 0}\n" for i in range(2000))
    info += "end_of_record\n"
    lines, ok = lcovtool.table(info, "/r/modules", ["kml_a"], 90, 90, False)
    assert not ok and any("89.9% of branches (< 90%)" in ln for ln in lines), lines


@test
def table_module_without_data():
    # kml_b has lines but none run: 0%, not "no data"
    lines, ok = lcovtool.table(INFO, "/r/modules", ["kml_b"], 1, 0, False)
    assert not ok and any("COVERAGE-LOW kml_b: 0.0% of lines" in ln for ln in lines), lines
    # kml_c has no record at all: only --all makes that a failure
    lines, ok = lcovtool.table(INFO, "/r/modules", ["kml_c"], 90, 90, False)
    assert ok and any("no data" in ln for ln in lines), lines
    lines, ok = lcovtool.table(INFO, "/r/modules", ["kml_c"], 90, 90, True)
    assert not ok and any(ln.startswith("COVERAGE-LOW kml_c: no coverage data") for ln in lines)


@test
def table_without_gates_prints_no_verdicts():
    lines, ok = lcovtool.table(INFO, "/r/modules", ["kml_a", "kml_b"], 0, 0, False)
    assert ok and not any(ln.startswith("COVERAGE-") for ln in lines), lines


@test
def per_test_report():
    redundant, unique, tests_ = lcovtool.test_report(INFO)
    assert tests_ == ["t1", "t2", "t3"], tests_
    assert unique == {"t1": [("/r/modules/kml_a/a.c", 3)], "t3": [("/r/modules/include/h.h", 1)]}, unique
    assert redundant == ["t2"], redundant    # line 4 is also t1's and t3's


@test
def realpath_maps_mirror_links():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/src")
        open(f"{d}/src/x.c", "w").close()
        os.symlink(f"{d}/src/x.c", f"{d}/link.c")
        with open(f"{d}/in.info", "w") as f:
            f.write(f"TN:t\nSF:{d}/link.c\nDA:1,1\nend_of_record\n")
        assert lcovtool.main(["lcovtool", "realpath", f"{d}/in.info", f"{d}/out.info"]) == 0
        assert f"SF:{os.path.realpath(d)}/src/x.c\n" in open(f"{d}/out.info").read()


@test
def annotate_names_the_tests_of_each_line():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/modules/kml_a")
        with open(f"{d}/modules/kml_a/a.c", "w") as f:
            f.write("int f(void)\n{\n\treturn 1 < 2;\n\treturn 0;\n}\n")
        text = INFO.replace("/r/", f"{d}/")
        assert lcovtool.annotate(text, f"{d}/modules", f"{d}/out") == 1
        page = open(f"{d}/out/kml_a/a.c.html").read()
        rows = page.split("<tr")
        assert "<td>3</td>" in rows[3] and "return 1 &lt; 2;" in rows[3] and ">t1<" in rows[3], rows[3]
        assert "<summary>3 tests</summary>t1<br>t2<br>t3" in rows[4], rows[4]
        assert "class=hit" not in rows[5], "line 5 ran in no test"
        assert 'href="kml_a/a.c.html"' in open(f"{d}/out/index.html").read()


@test
def malformed_input_is_an_error_not_a_pass():
    try:
        list(lcovtool.parse("TN:t\nSF:/a.c\nDA:x,1\nend_of_record\n"))
    except ValueError:
        return
    raise AssertionError("a malformed DA record was accepted")


def _tree(d, files):
    for rel, text in files.items():
        os.makedirs(os.path.dirname(f"{d}/{rel}"), exist_ok=True)
        with open(f"{d}/{rel}", "w") as f:
            f.write(text)


@test
def markers_need_a_reason_and_hide_only_branches():
    with tempfile.TemporaryDirectory() as d:
        _tree(d, {"modules/kml_a/a.c": "x;\nif (y) /* LCOV_EXCL_BR_LINE: BUILD_BUG_ON arm */\n",
                  "modules/kml_a/b.h": "z; // LCOV_EXCL_BR_LINE\n",
                  "modules/kml_b/c.c": "/* LCOV_EXCL_START */\n",
                  "modules/other/d.c": "/* LCOV_EXCL_BR_LINE: not a module */\n"})
        found = lcovtool.markers(f"{d}/modules")
        assert [(m, os.path.basename(p), n, w, r) for m, p, n, w, r in found] == [
            ("kml_a", "a.c", 2, "LCOV_EXCL_BR_LINE", "BUILD_BUG_ON arm"),
            ("kml_a", "b.h", 1, "LCOV_EXCL_BR_LINE", ""),
            ("kml_b", "c.c", 1, "LCOV_EXCL_START", "")], found
        bad = lcovtool.marker_problems(found)
        assert len(bad) == 2 and "without a reason" in bad[0] and "only LCOV_EXCL_BR_LINE" in bad[1], bad
        with open(os.devnull, "w") as null, \
             contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
            assert lcovtool.main(["lcovtool", "markers", f"{d}/modules"]) == 1


@test
def excluded_branches_are_counted_and_capped():
    with tempfile.TemporaryDirectory() as d:
        d = os.path.realpath(d)
        _tree(d, {"modules/kml_a/a.c": "1\n2\n3\n4 /* LCOV_EXCL_BR_LINE: debug only */\n5\n"})
        text = INFO.replace("/r/", f"{d}/")      # kml_a: 2 branches on line 4, 2 on line 5
        found = lcovtool.markers(f"{d}/modules")
        lines, ok = lcovtool.excluded(text, f"{d}/modules", found, 50)
        assert ok and lines[0] == "EXCLUDED-OK kml_a: 2 of 4 branches (50.0%, at most 50%) at 1 markers", lines
        assert lines[1].endswith("a.c:4: 2 branches: debug only"), lines
        lines, ok = lcovtool.excluded(text, f"{d}/modules", found, 5)
        assert not ok and lines[0].startswith("EXCLUDED-HIGH kml_a: 2 of 4"), lines
        # a marker on a line without branches hides nothing
        _tree(d, {"modules/kml_a/a.c": "1 /* LCOV_EXCL_BR_LINE: nothing here */\n"})
        lines, ok = lcovtool.excluded(text, f"{d}/modules", lcovtool.markers(f"{d}/modules"), 5)
        assert ok and lines[0].startswith("EXCLUDED-OK kml_a: 0 of 4 branches (0.0%"), lines


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
