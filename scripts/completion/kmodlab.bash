# SPDX-License-Identifier: GPL-2.0
# bash completion for the kmodlab clients: kml-stats, kml-sensor,
# kml-probe, kml-ring and kml-filter (one function, registered for all
# five). `make install` installs it once per client name under
# share/bash-completion/completions/; to try it from the source tree:
#   . scripts/completion/kmodlab.bash
# It uses bash-completion's _filedir and _command_offset when they are
# there and plain compgen when not, so it also works on its own.

# Where kernel function names come from (text symbols only); a test may
# point this elsewhere.
_kml_kallsyms=/proc/kallsyms

# The options every client takes anywhere up to "--" (userspace/kml_cli.c).
_kml_common_opts='-j --json -h --help -V --version'

# COMPREPLY: the words of $1 that start with the word being completed.
_kml_reply()
{
	local IFS=$' \t\n'

	mapfile -t COMPREPLY < <(compgen -W "$1" -- "$cur")
}

_kml_files()
{
	if declare -F _filedir > /dev/null; then
		_filedir
	else
		compopt -o filenames 2> /dev/null
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
	fi
}

# COMPREPLY: the kernel text symbols starting with the current word, if
# kallsyms can be read. Straight from awk: compgen -W would take seconds
# over the 100 000 names of a distribution kernel.
_kml_kernel_funcs()
{
	COMPREPLY=()
	[[ -r $_kml_kallsyms ]] || return 0
	mapfile -t COMPREPLY < <(awk -v p="$cur" \
		'($2 == "t" || $2 == "T") && index($3, p) == 1 { print $3 }' \
		"$_kml_kallsyms" 2> /dev/null)
}

# The functions kml-probe has attached: `kml-probe list`'s first column,
# without its header line.
_kml_probe_attached()
{
	"$client" list 2> /dev/null | awk 'NR > 1 && NF { print $1 }'
}

# Set names in kml_stats' file: the first field of every line but the
# "# kmodlab-stats N" header (uapi/linux/kml_stats.h).
_kml_stats_sets()
{
	local f=${KMODLAB_PROC_DIR:-/proc/kmodlab}/stats

	[[ -r $f ]] || return 0
	awk '!/^#/ && NF >= 3 { print $1 }' "$f" 2> /dev/null | sort -u
}

# Channel numbers from `kml-sensor info` ("channels    N").
_kml_sensor_channels()
{
	local n

	n=$("$client" info 2> /dev/null | awk '$1 == "channels" { print $2 }')
	[[ $n =~ ^[0-9]+$ ]] && seq 0 $((n - 1))
}

# Splits the words before the cursor: $cmd is the first word that is not
# an option (-1: none yet), $cmd_i its index in COMP_WORDS, $dd_i the
# index of "--" (0: none). $1: the client's options that take a value
# before its command (their value is skipped).
_kml_parse()
{
	local i w skip=0

	cmd='' cmd_i=-1 dd_i=0
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if ((skip)); then
			skip=0
			[[ $w == = ]] && skip=1 # --opt=value: "--opt" "=" "value"
			continue
		fi
		if [[ $w == -- ]]; then
			dd_i=$i
			break
		fi
		if ((cmd_i < 0)); then
			if [[ " $1 " == *" $w "* ]]; then
				skip=1
			elif [[ $w != -* ]]; then
				cmd=$w cmd_i=$i
			fi
		fi
	done
}

# Has one of the words $2... been given after the command (index $1)?
_kml_used()
{
	local from=$1 i w
	shift
	for ((i = from + 1; i < COMP_CWORD; i++)); do
		for w; do
			[[ ${COMP_WORDS[i]} == "$w" ]] && return 0
		done
	done
	return 1
}

_kml_stats_complete()
{
	case $prev in
	-w | --watch | --interval | -c | --count) return ;;
	esac
	_kml_parse '-w --watch --interval -c --count'
	if [[ $cur == -* ]]; then
		_kml_reply "$_kml_common_opts -w --watch --interval -c --count"
		return
	fi
	case $cmd in
	'') _kml_reply "reset help $(_kml_stats_sets)" ;;
	reset) ((COMP_CWORD == cmd_i + 1)) && _kml_reply "$(_kml_stats_sets)" ;;
	help) ((COMP_CWORD == cmd_i + 1)) && _kml_reply reset ;;
	esac
}

# No command yet: complete the commands, or the options every client has.
_kml_complete_first()
{
	[[ -n $cmd ]] && return 1
	if [[ $cur == -* ]]; then
		_kml_reply "$_kml_common_opts"
	else
		_kml_reply "$1"
	fi
}

_kml_sensor_complete()
{
	local cmds='info read watch alarm wait period inject reset help'
	local n

	_kml_parse ''
	n=$((COMP_CWORD - cmd_i))
	_kml_complete_first "$cmds" && return
	[[ $cur == -* ]] && [[ $cmd != watch && $cmd != wait ]] &&
		{ _kml_reply "$_kml_common_opts"; return; }
	case $cmd in
	read) ((n == 1)) && _kml_reply "$(_kml_sensor_channels)" ;;
	watch) ((n == 1)) && _kml_reply "-c --count $_kml_common_opts" ;;
	wait) ((n == 1)) && _kml_reply "-t --seconds $_kml_common_opts" ;;
	inject)
		((n == 1)) && _kml_reply "$(_kml_sensor_channels)"
		((n == 2)) && _kml_reply clear
		;;
	alarm)
		if ((n == 1)); then
			_kml_reply 'set off get'
		elif ((n == 2)); then
			_kml_reply "$(_kml_sensor_channels)"
		fi
		;;
	help) ((n == 1)) && _kml_reply "${cmds% help}" ;;
	esac
}

_kml_probe_complete()
{
	local cmds='attach detach list hist reset call record report convert help'
	local n funcs

	_kml_parse ''
	n=$((COMP_CWORD - cmd_i))
	_kml_complete_first "$cmds" && return
	# record ... -- COMMAND...: another program's line
	if ((dd_i)); then
		[[ $cmd == record ]] || return
		if declare -F _command_offset > /dev/null; then
			_command_offset $((dd_i + 1))
		elif ((COMP_CWORD == dd_i + 1)); then
			mapfile -t COMPREPLY < <(compgen -c -- "$cur" | sort -u)
		else
			_kml_files
		fi
		return
	fi
	case $cmd in
	attach)
		case $prev in
		--args | --pid | --tgid | --arg | --maxactive) return ;;
		esac
		if ((n == 1)); then
			_kml_kernel_funcs
		else
			_kml_reply "--args --pid --tgid --arg --maxactive --count-only $_kml_common_opts"
		fi
		;;
	detach | hist)
		if ((n == 1)); then
			[[ $cur == -* ]] && { _kml_reply "$_kml_common_opts"; return; }
			funcs=$(_kml_probe_attached)
			if [[ -n $funcs ]]; then
				_kml_reply "$funcs"
			else
				_kml_kernel_funcs
			fi
		elif [[ $cmd == hist && $n == 2 ]]; then
			_kml_reply "-w --seconds $_kml_common_opts"
		fi
		;;
	record)
		case $prev in
		-o | --output) _kml_files; return ;;
		-F | --format) _kml_reply "kml perf"; return ;;
		-a | --args | -m | --pages | -d | --duration | --seconds) return ;;
		esac
		if [[ $cur == -* ]]; then
			_kml_reply "-o --output -F --format -a --args -m --pages -d --duration --seconds -- $_kml_common_opts"
		else
			_kml_kernel_funcs
		fi
		;;
	report)
		case $prev in
		-i | --input) _kml_files; return ;;
		-t | --top) return ;;
		esac
		if [[ $cur == -* ]]; then
			_kml_reply "--force --top --input $_kml_common_opts"
		else
			_kml_files
		fi
		;;
	convert)
		case $prev in
		-i | --input | -o | --output) _kml_files; return ;;
		-F | --format) _kml_reply "perf"; return ;;
		esac
		if [[ $cur == -* ]]; then
			_kml_reply "-o --output --force -F --format --input $_kml_common_opts"
		else
			_kml_files
		fi
		;;
	list | reset | call)
		[[ $cur == -* ]] && _kml_reply "$_kml_common_opts"
		;;
	help) ((n == 1)) && _kml_reply "${cmds% help}" ;;
	esac
}

_kml_ring_complete()
{
	local cmds='stat produce consume help'
	local val='--size --rate --count --seconds --cpu --pages --watermark'
	local common='--pages --watermark --print'

	case $prev in
	--size | --rate | --count | --seconds | --cpu | --pages | --watermark) return ;;
	esac
	# kml-ring takes its options before or after the command
	_kml_parse "$val"
	if [[ $cur == -* ]]; then
		case $cmd in
		produce) _kml_reply "--size --rate --count --seconds --cpu $common $_kml_common_opts" ;;
		consume) _kml_reply "--seconds --count $common $_kml_common_opts" ;;
		stat) _kml_reply "$_kml_common_opts" ;;
		*) _kml_reply "$val --print $_kml_common_opts" ;;
		esac
		return
	fi
	case $cmd in
	'')
		# `help` is a command only as the first word (--json aside):
		# kml-ring --pages 4 help is a usage error
		local i first=1
		for ((i = 1; i < COMP_CWORD; i++)); do
			[[ ${COMP_WORDS[i]} == -j || ${COMP_WORDS[i]} == --json ]] || first=0
		done
		if ((first)); then
			_kml_reply "$cmds"
		else
			_kml_reply "${cmds% help}"
		fi ;;
	help) ((COMP_CWORD == cmd_i + 1)) && _kml_reply "${cmds% help}" ;;
	esac
}

# After `ct`, the connection states not yet in the comma-separated list
# being typed, each offered as the whole list so far plus that state.
_kml_filter_ct_states()
{
	local done='' words='' s

	[[ $cur == *,* ]] && done=${cur%,*},
	for s in new established related invalid untracked; do
		[[ ,$done == *,$s,* ]] || words+=" $done$s"
	done
	_kml_reply "$words"
}

# The words of a rule (userspace/kml_filter_parse.h) not given yet: one of
# each group, each direction (they add up) and each of src dst sport dport
# ct log once, rate and burst once each after log (they are its), none
# after a word that takes a value but the states after ct.
_kml_filter_rule()
{
	local words='' group g

	case $prev in
	src | dst | sport | dport | rate | burst) return ;;
	ct) _kml_filter_ct_states; return ;;
	esac
	for group in 'accept drop' in out fwd 'ipv4 ipv6' 'tcp udp icmp icmpv6 any' \
		src dst sport dport ct log; do
		read -ra g <<< "$group"
		_kml_used "$1" "${g[@]}" || words+=" $group"
	done
	if _kml_used "$1" log; then
		_kml_used "$1" rate || words+=' rate'
		_kml_used "$1" burst || words+=' burst'
	fi
	_kml_reply "$words"
}

_kml_filter_complete()
{
	local cmds='list add del flush policy load log help'
	local n

	_kml_parse ''
	n=$((COMP_CWORD - cmd_i))
	# --no-check (for testing) goes before the command
	[[ -z $cmd && $cur == -* ]] && { _kml_reply "--no-check $_kml_common_opts"; return; }
	_kml_complete_first "$cmds" && return
	case $cmd in
	list) ((n == 1)) && _kml_reply "-v $_kml_common_opts" ;;
	add)
		[[ $prev == --at ]] && return
		if ((n == 1)) && [[ $cur == -* ]]; then
			_kml_reply "--at $_kml_common_opts"
		elif [[ ${COMP_WORDS[cmd_i + 1]} == --at ]]; then
			((n > 2)) && _kml_filter_rule $((cmd_i + 2))
		else
			_kml_filter_rule "$cmd_i"
		fi
		;;
	del) _kml_filter_rule "$cmd_i" ;;
	policy)
		if ((n == 1)); then
			_kml_reply 'accept drop fwd'
		elif ((n == 2)) && [[ $prev == fwd ]]; then
			_kml_reply 'accept drop'
		fi
		;;
	load)
		if ((n == 1)); then
			_kml_files
			[[ -z $cur ]] && COMPREPLY+=(-)
		fi
		;;
	flush) [[ $cur == -* ]] && _kml_reply "$_kml_common_opts" ;;
	log)
		case $prev in
		-n | --count | -p | --pages) ;;
		*)
			# each option once
			local opts=''
			_kml_used "$cmd_i" --count -n || opts+=' --count'
			_kml_used "$cmd_i" --pages -p || opts+=' --pages'
			_kml_reply "$opts $_kml_common_opts"
			;;
		esac
		;;
	help) ((n == 1)) && _kml_reply "${cmds% help}" ;;
	esac
}

_kml_complete()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=
	local client=${COMP_WORDS[0]} cmd cmd_i dd_i

	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	COMPREPLY=()
	case ${client##*/} in
	kml-stats) _kml_stats_complete ;;
	kml-sensor) _kml_sensor_complete ;;
	kml-probe) _kml_probe_complete ;;
	kml-ring) _kml_ring_complete ;;
	kml-filter) _kml_filter_complete ;;
	esac
	return 0
}

complete -F _kml_complete kml-stats kml-sensor kml-probe kml-ring kml-filter
