# SPDX-License-Identifier: GPL-2.0
# scripts/vm-run.sh's filter of known kernel-core warnings (see the comment
# where vm-run.sh calls it). Reads a guest's kernel log, prints it without
# the known reports, and writes those to the file named by -v known=FILE.
#
# The WARNING line changed its layout in 7.0, so both are matched:
#   6.x  "WARNING: CPU: 0 PID: 42 at kernel/trace/trace_events.c:1 f+0x1/0x2"
#   7.x  "WARNING: kernel/trace/trace_events.c:1 at f+0x1/0x2, CPU#0: x/42"
# (selftests/host/test_known_warnings.sh has a report of each.)
function known_warning(line) {
	return line ~ /WARNING: CPU: [0-9]+ PID: [0-9]+ at kernel\/trace\/trace_events\.c:[0-9]+ (event_define_fields|event_file_put)\+/ ||
	       line ~ /WARNING: kernel\/trace\/trace_events\.c:[0-9]+ at (event_define_fields|event_file_put)\+/
}
/kmodlab: allocation-failure injection armed/ { armed = 1 }
armed && !inb && known_warning($0) {
	inb = 1; n = 0; print > known; next
}
inb && (/BUG:|WARNING:|Oops|KASAN|UBSAN|cut here|Kernel panic|general protection/ || ++n > 150) {
	inb = 0
}
inb {
	print > known
	if ($0 ~ /---\[ end trace/) inb = 0
	next
}
{ print }
END { if (inb) print "WARNING: vm-run: a known-warning report has no end marker" }
