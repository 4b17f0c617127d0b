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
# The kernel log's timestamp of @line, in seconds (-1 without one).
function stamp(line) {
	if (match(line, /^\[ *[0-9]+\.[0-9]+\]/))
		return substr(line, RSTART + 1, RLENGTH - 2) + 0
	return -1
}
BEGIN { if (stop == "") stop = "BUG:|WARNING:|Oops|KASAN|UBSAN|cut here|Kernel panic|general protection" }
/kmodlab: allocation-failure injection armed/ { armed = 1 }
# event_file_put() WARNs only as the aftermath of event_define_fields()'s
# failure, at that module's unload: known only within 10 s of one, so a
# refcount underflow of its own later in the boot stays a splat.
armed && !inb && known_warning($0) {
	t = stamp($0)
	if ($0 ~ /event_define_fields/) {
		defined = 1; tdef = t
	} else if (!defined || (t >= 0 && tdef >= 0 && (t < tdef || t - tdef > 10))) {
		print
		next
	}
	inb = 1; n = 0; print > known; next
}
# a line that fails a run (-v stop: vm-run.sh passes scripts/splat.ere)
# ends the block and stays in the checked log
inb && ($0 ~ stop || ++n > 150) {
	inb = 0
}
inb {
	print > known
	if ($0 ~ /---\[ end trace/) inb = 0
	next
}
{ print }
END { if (inb) print "WARNING: vm-run: a known-warning report has no end marker" }
