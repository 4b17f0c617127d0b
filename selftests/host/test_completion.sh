#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host test of the clients' bash completion (scripts/completion/kmodlab.bash):
# sources it, calls its function with COMP_WORDS and COMP_CWORD set as
# bash would, and compares COMPREPLY with what a user should be offered.
# Kernel symbols, `kml-probe list`, `kml-sensor info` and the stats file
# come from fixtures, so no module is needed. TAP output, like the C host
# tests; run by `make check`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck disable=SC1091
. "$repo/scripts/completion/kmodlab.bash"

# Fixtures: kallsyms (text symbols t/T, and others that must not show),
# the stats file, and stand-ins for the clients the completion runs.
cat > "$tmp/kallsyms" << 'EOF'
0000000000000000 T vfs_read
0000000000000000 T vfs_readv
0000000000000000 t vfs_read_helper
0000000000000000 D vfs_rdata
0000000000000000 r vfs_read_table
0000000000000000 T do_sys_openat2
0000000000000000 t kml_probe_target	[kml_probe_target]
EOF
mkdir -p "$tmp/proc" "$tmp/bin" "$tmp/files"
cat > "$tmp/proc/stats" << 'EOF'
# kmodlab-stats 1
kml_stats opens counter 12
kml_stats read_bytes hist 30 61440 11:2 12:28
demo c00000 counter 0
demo values hist 8 28 0:1 1:1 2:2 3:4
kp.vfs_read calls counter 3
EOF
cat > "$tmp/bin/kml-probe" << 'EOF'
#!/bin/bash
[[ $1 == list ]] || exit 2
echo "FUNCTION                              CALLS       AVG ns STATE"
[[ -n ${FAKE_NOTHING_ATTACHED:-} ]] && exit 0
echo "vfs_read                                 10          300 attached"
echo "do_sys_openat2                            3          900 attached"
EOF
cat > "$tmp/bin/kml-sensor" << 'EOF'
#!/bin/bash
[[ $1 == info ]] || exit 2
printf 'device      /dev/kml_sensor (ABI 2)\nchannels    3\n'
EOF
chmod +x "$tmp/bin/kml-probe" "$tmp/bin/kml-sensor"
PATH=$tmp/bin:$PATH
: > "$tmp/files/rec.data"
: > "$tmp/files/rules.txt"
mkdir "$tmp/files/rdir"
export KMODLAB_PROC_DIR=$tmp/proc
_kml_kallsyms=$tmp/kallsyms

n=0 failed=0

# offered WORD...: what completing the last WORD offers, one a line
offered()
{
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="$*"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	_kml_complete "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" \
		"${COMP_WORDS[COMP_CWORD - 1]}"
	printf '%s\n' "${COMPREPLY[@]}"
}

# t NAME 'EXPECTED WORDS' WORD...: completing the last WORD of the line
# offers exactly EXPECTED (in any order).
t()
{
	local name=$1 want got w
	shift
	read -ra w <<< "$1"
	want=$(printf '%s\n' "${w[@]}" | sed '/^$/d' | sort)
	got=$(offered "${@:2}" | sed '/^$/d' | sort)
	n=$((n + 1))
	if [[ $got == "$want" ]]; then
		echo "ok $n $name"
	else
		failed=$((failed + 1))
		echo "not ok $n $name"
		echo "# line:   ${*:2}|"
		echo "# wanted: ${want//$'\n'/ }"
		echo "# got:    ${got//$'\n'/ }"
	fi
}

echo "TAP version 13"
cd "$tmp/files" || exit 1
t probe_commands_re 'record report reset' kml-probe re
t probe_all_commands 'attach detach list hist reset call record report convert help' kml-probe ''
t probe_through_a_path 'record report reset' ./build/bin/kml-probe re
t probe_common_options_before_the_command '--json --help --version' kml-probe --
t probe_attach_text_symbols_only 'vfs_read vfs_readv vfs_read_helper' kml-probe attach vfs_r
t probe_attach_after_json 'do_sys_openat2' kml-probe -j attach do_
t probe_attach_options '--count-only' kml-probe attach vfs_read --c
t probe_attach_option_value_not_completed '' kml-probe attach vfs_read --args ''
t probe_detach_prefers_attached 'vfs_read do_sys_openat2' kml-probe detach ''
t probe_hist_prefers_attached 'vfs_read' kml-probe hist vfs
FAKE_NOTHING_ATTACHED=1 t probe_detach_nothing_attached_uses_kallsyms \
	'vfs_read vfs_readv vfs_read_helper' kml-probe detach vfs_r
t probe_hist_window '-w' kml-probe hist vfs_read -w
t probe_record_funcs 'vfs_read vfs_readv vfs_read_helper' kml-probe record -o x.data vfs_r
t probe_record_options '-- --output --format --args --pages --duration --seconds --json --help --version' \
	kml-probe record --
t probe_record_output_file 'rec.data rdir rules.txt' kml-probe record -o ''
t probe_record_command_after_dashdash 'truncate' kml-probe record vfs_read -- trunc
t probe_report_files 'rec.data rdir rules.txt' kml-probe report ''
t probe_report_options '--force' kml-probe report --f
t probe_record_formats 'kml perf' kml-probe record -F ''
t probe_convert_input_files 'rec.data rdir rules.txt' kml-probe convert ''
t probe_convert_output_file 'rec.data rdir rules.txt' kml-probe convert rec.data -o ''
t probe_convert_options '--force --format' kml-probe convert --f
t probe_help_command 'record report reset' kml-probe help re
t probe_help_commands 'attach detach list hist reset call record report convert' kml-probe help ''
_kml_kallsyms=$tmp/nonexistent
t probe_attach_without_kallsyms '' kml-probe attach vfs_r
_kml_kallsyms=$tmp/kallsyms

t filter_rule_words_i 'in ipv4 ipv6 icmp icmpv6' kml-filter add drop i
t filter_commands 'list add del flush policy load log help' kml-filter ''
t filter_rule_words_not_repeated 'out fwd ipv4 ipv6 src dst sport dport ct log' kml-filter add drop in tcp ''
t filter_rule_directions_add_up 'out' kml-filter add drop fwd in o
t filter_rule_ct_states 'new established related invalid untracked' kml-filter add accept ct ''
t filter_rule_ct_state_prefix 'established' kml-filter add accept ct es
t filter_rule_ct_more_states 'established,new established,related established,invalid established,untracked' kml-filter add accept ct established,
t filter_rule_ct_once 'out fwd ipv4 ipv6 src dst sport dport log' kml-filter add drop in tcp ct new ''
t filter_rule_value_not_completed '' kml-filter add drop dport ''
t filter_add_at 'accept any' kml-filter add --at 2 a
t filter_add_options '--at --json --help --version' kml-filter add --
t filter_del_rule 'drop dst dport' kml-filter del d
t filter_policy 'accept drop fwd' kml-filter policy ''
t filter_policy_fwd 'accept drop' kml-filter policy fwd ''
t filter_policy_no_third_word '' kml-filter policy fwd drop ''
t filter_load_file_or_stdin 'rec.data rdir rules.txt -' kml-filter load ''
t filter_load_file_prefix 'rules.txt' kml-filter load ru
t filter_list_verbose '-v' kml-filter list -v
t filter_help_commands 'list add del flush policy load log' kml-filter help ''
t filter_no_check_before_the_command '--no-check' kml-filter --n
t filter_options_before_the_command '--no-check --json --help --version' kml-filter --
t filter_command_after_no_check 'del' kml-filter --no-check de

t stats_json '--json' kml-stats --j
t stats_options '--json --help --version --watch --interval --count' kml-stats --
t stats_interval_takes_a_value '' kml-stats --interval ''
t stats_reset_sets 'demo kml_stats kp.vfs_read' kml-stats reset ''
t stats_reset_set_prefix 'kml_stats kp.vfs_read' kml-stats reset k
t stats_reset_after_options 'demo' kml-stats -j -w 1 reset d
t stats_filter_or_reset 'reset' kml-stats r
t stats_watch_value_not_completed '' kml-stats -w ''
t stats_help_command 'reset' kml-stats help ''
KMODLAB_PROC_DIR=$tmp/nonexistent t stats_reset_without_module '' kml-stats reset ''

t sensor_commands_re 'read reset' kml-sensor re
t sensor_alarm 'set off get' kml-sensor alarm ''
t sensor_alarm_channel '0 1 2' kml-sensor alarm set ''
t sensor_read_channels '0 1 2' kml-sensor read ''
t sensor_inject_clear 'clear' kml-sensor inject 1 c
t sensor_wait_timeout '-t' kml-sensor wait -t
t sensor_help_commands 'info read watch alarm wait period inject reset' kml-sensor help ''
t sensor_help_command_prefix 'read reset' kml-sensor help re

t ring_commands 'stat produce consume help' kml-ring ''
t ring_produce_options '--size --seconds' kml-ring produce --s
t ring_consume_options '--seconds' kml-ring consume --s
t ring_option_before_command 'consume' kml-ring --pages 8 c
t ring_no_help_after_an_option 'stat produce consume' kml-ring --pages 8 ''
t ring_help_after_json 'stat produce consume help' kml-ring --json ''
t ring_option_value_not_completed '' kml-ring produce --rate ''
t ring_help_commands 'stat produce consume' kml-ring help ''

# Against each command's own help: every long option `CLIENT help CMD`
# names is offered after `CLIENT CMD --` (the real clients' help, so a new
# option without completion fails here).
for client in kml-stats kml-sensor kml-probe kml-ring kml-filter; do
	bin=$repo/build/bin/$client
	[[ -x $bin ]] || { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n $client is built"; continue; }
	cmds=$("$bin" --help | sed -nE 's/^  ([a-z][a-z-]*)( .*)?$/\1/p' | grep -vx help | sort -u)
	for cmd in $cmds; do
		opts=$("$bin" help "$cmd" | grep -oE -- '--[a-z][a-z-]+' | sort -u)
		# offered right after the command, or after its first operand
		# (a function, a channel: the options of attach come after it)
		got=$( (offered "$client" "$cmd" --; offered "$client" "$cmd" vfs_read --
			offered "$client" "$cmd" 0 --) | sort -u)
		missing=$(comm -23 <(printf '%s\n' "$opts" | grep .) <(printf '%s\n' "$got") | tr '\n' ' ')
		n=$((n + 1))
		if [[ -z $missing ]]; then
			echo "ok $n ${client}_${cmd}_offers_what_its_help_names"
		else
			failed=$((failed + 1))
			echo "not ok $n ${client}_${cmd}_offers_what_its_help_names"
			echo "# help names, completion does not offer: $missing"
		fi
	done
done

echo "1..$n"
((failed == 0))
