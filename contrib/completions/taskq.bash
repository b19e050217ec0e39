# bash completion for taskq(1)                              -*- shell-script -*-
#
# Installed as share/bash-completion/completions/taskq (loaded on demand by
# bash-completion); without bash-completion, source this file from ~/.bashrc.
#
# Completes commands, each command's options (the lists below follow each
# `taskq CMD --help`; tests/integration/test_contrib.sh fails when a --help
# names an option missing here), option values (states, streams, signals,
# agents, files), task ids (from `taskq list --json`, filtered by the states
# the command accepts), and group and batch names (`taskq group list`,
# `taskq batch list`). They are read from the state directory taskq would
# use (--home on the line is honoured); nothing is started
# (TASKQ_AUTOSTART=0). Apart from those reads and file names, completing
# starts no process.

# The commands, as `taskq help` lists them, and their aliases.
_taskq_commands="submit ask wait list ls show result stats session sessions batch group clear
classify log poll cancel remove rm kill write retry pause resume status serve
drain shutdown db help version"

_taskq_submit_opts="--shell --cwd --env --unset --clean-env --name --timeout
--stall-timeout --label --priority --batch --kill-grace --max-output --stdin-file --stdin --pty
--group --retries --retry-lost --backoff --backoff-max --unique --after
--after-any --delay --at --session --on-exit --no-start --json --wait"

# The options of command $1 (and subcommand $2), long and short, in
# _taskq_opts.
_taskq_options() {
	case $1 in
	submit) _taskq_opts="$_taskq_submit_opts --file --resume" ;;
	ask) _taskq_opts="--agent --model --source --session --isolate --no-isolate
		--warm --no-warm --idle-timeout --prompt-file --interactive $_taskq_submit_opts" ;;
	wait) _taskq_opts="-b --batch -t --timeout --json" ;;
	list | ls) _taskq_opts="--state --name --label --batch --group --category
		--limit --offset --json" ;;
	show) _taskq_opts="--json --show-env" ;;
	result) _taskq_opts="--json" ;;
	stats) _taskq_opts="--batch --group --since --json" ;;
	session) _taskq_opts="--json" ;;
	sessions) _taskq_opts="--json --no-wait" ;;
	batch) _taskq_opts="--json" ;;
	group)
		case $2 in
		set) _taskq_opts="-p --parallel" ;;
		*) _taskq_opts="--json" ;;
		esac
		;;
	clear) _taskq_opts="--finished --older-than" ;;
	classify) _taskq_opts="--attempt --explain --config --json" ;;
	log) _taskq_opts="--offset --limit --stream -f --follow --raw --json" ;;
	poll) _taskq_opts="--as --raw --json" ;;
	kill) _taskq_opts="-s --signal --no-wait" ;;
	write) _taskq_opts="-l --line -f --file --eof" ;;
	retry) _taskq_opts="--failed --batch" ;;
	status) _taskq_opts="--json" ;;
	serve) _taskq_opts="-w --workers -f --foreground --grace --lease --retention --log-size --log-files
		--max-warm" ;;
	drain) _taskq_opts="-w --workers --grace --lease --retention --max-warm" ;;
	shutdown) _taskq_opts="--now --grace --no-wait" ;;
	db) _taskq_opts="--json" ;;
	*) _taskq_opts="" ;;
	esac
	_taskq_opts+=" -h --help"
}

# Whether option $2 of command $1 takes a value (the next word).
_taskq_takes_value() {
	case $2 in
	--json | --help | -h | --clean-env | --pty | --retry-lost | --no-start | \
		--isolate | --no-isolate | --warm | --no-warm | --interactive | --show-env | --explain | \
		-f | --follow | --raw | --no-wait | -l | --line | --eof | --failed | \
		--foreground | --now | --finished | --wait | --wait=*)
		# write's -f is --file; serve's and log's -f take no value
		[[ $1 == write && $2 == -f ]] && return 0
		return 1
		;;
	--*=*) return 1 ;; # the value is in the word
	-*) return 0 ;;
	esac
	return 1
}

# Run taskq for completion data: quietly, never starting a supervisor, on
# the --home given on the line. Its output is in _taskq_out.
_taskq_q() {
	_taskq_out=$(TASKQ_AUTOSTART=0 command "${_taskq_exe:-taskq}" \
		${_taskq_home:+--home "$_taskq_home"} "$@" 2>/dev/null)
}

# The first group of regex $1 at each of its matches in $_taskq_out, into
# the array _taskq_vals.
_taskq_json_vals() {
	local text=$_taskq_out
	_taskq_vals=()
	while [[ $text =~ $1 ]]; do
		_taskq_vals+=("${BASH_REMATCH[1]}")
		text=${text#*"${BASH_REMATCH[0]}"}
	done
}

# Task ids in the states $1 (comma-separated; empty: any), newest first.
_taskq_ids() {
	_taskq_q list ${1:+--state "$1"} --limit 200 --json
	_taskq_json_vals '\{"id":([0-9]+)'
}

# Group and batch names: simple JSON strings (a name with a quote or a
# backslash in it is left out).
_taskq_groups() {
	_taskq_q group list --json
	_taskq_json_vals '\{"name":"([^"\\]*)"'
}

_taskq_batches() {
	_taskq_q batch list --json
	_taskq_json_vals '\{"name":"([^"\\]*)"'
}

_taskq_states="queued scheduled blocked running succeeded failed timed_out killed canceled"
_taskq_unfinished="queued,scheduled,blocked,running"
_taskq_finished="succeeded,failed,timed_out,killed,canceled"

# COMPREPLY from the words of $1 (no spaces in them) that start with $2.
_taskq_words() {
	local w IFS=$' \t\n'
	local -a ws
	read -r -d '' -a ws <<<"$1"
	COMPREPLY=()
	for w in "${ws[@]}"; do
		[[ $w == "$2"* ]] && COMPREPLY+=("$w")
	done
}

# COMPREPLY from _taskq_vals (names that may hold spaces) that start with
# $1, quoted for the command line.
_taskq_names() {
	local v q
	COMPREPLY=()
	for v in "${_taskq_vals[@]}"; do
		if [[ -n $v && $v == "$1"* ]]; then
			printf -v q '%q' "$v"
			COMPREPLY+=("$q")
		fi
	done
}

# File names (directories only with $2 = -d).
_taskq_files() {
	if declare -F _filedir >/dev/null; then
		cur=$1 _filedir ${2:+-d}
		return
	fi
	compopt -o filenames 2>/dev/null
	mapfile -t COMPREPLY < <(compgen "${2:--f}" -- "$1")
}

# Complete the value of option $2 of command $1; the value so far is $3.
_taskq_value() {
	local cmd=$1 opt=$2 cur=$3 pre=""
	case $opt in
	--home | --cwd) _taskq_files "$cur" -d ;;
	--stdin-file | --prompt-file | --config) _taskq_files "$cur" ;;
	--file | -f)
		_taskq_files "$cur"
		[[ -z $cur || $cur == - ]] && COMPREPLY+=(-)
		;;
	--state)
		# a comma-separated list: complete its last item
		[[ $cur == *,* ]] && pre=${cur%,*},
		_taskq_words "$_taskq_states" "${cur##*,}"
		COMPREPLY=("${COMPREPLY[@]/#/$pre}")
		compopt -o nospace 2>/dev/null
		;;
	--stream) _taskq_words "stdout stderr" "$cur" ;;
	--stdin) _taskq_words "null pipe" "$cur" ;;
	--category) _taskq_words "rate_limit overload network auth unknown" "$cur" ;;
	--signal | -s)
		_taskq_words "TERM INT HUP KILL QUIT USR1 USR2 ALRM CONT STOP TSTP ABRT" "$cur" ;;
	--agent) _taskq_words "claude gemini codex opencode" "$cur" ;;
	--group)
		_taskq_groups
		_taskq_names "$cur"
		;;
	--batch | -b)
		_taskq_batches
		_taskq_names "$cur"
		;;
	--after | --after-any)
		[[ $cur == *,* ]] && pre=${cur%,*},
		_taskq_ids ""
		_taskq_words "${_taskq_vals[*]}" "${cur##*,}"
		COMPREPLY=("${COMPREPLY[@]/#/$pre}")
		;;
	--unset) _taskq_words "$(compgen -e)" "$cur" ;;
	--env)
		_taskq_words "$(compgen -e)" "$cur"
		COMPREPLY=("${COMPREPLY[@]/%/=}")
		compopt -o nospace 2>/dev/null
		;;
	--source)
		# NAME=PATH: a path after the =
		if [[ $cur == *=* ]]; then
			pre=${cur%%=*}=
			_taskq_files "${cur#*=}"
			COMPREPLY=("${COMPREPLY[@]/#/$pre}")
		fi
		;;
	*) COMPREPLY=() ;; # a free value: a duration, a number, a name
	esac
}

# The states of the task ids command $1 takes as arguments ("": any;
# "none": it takes no ids).
_taskq_id_states() {
	case $1 in
	cancel) _taskq_states_arg="queued,scheduled,blocked" ;;
	kill | wait | write) _taskq_states_arg=$_taskq_unfinished ;;
	retry | clear) _taskq_states_arg=$_taskq_finished ;;
	show | log | poll | result | classify | remove | rm) _taskq_states_arg="" ;;
	*) _taskq_states_arg=none ;;
	esac
}

_taskq() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=""
	local -a words=("${COMP_WORDS[@]}") _taskq_vals=()
	local cword=$COMP_CWORD i w cmd="" cmd_at=0 sub="" _taskq_home="" _taskq_exe=${COMP_WORDS[0]}
	local _taskq_out="" _taskq_opts="" _taskq_states_arg=""
	COMPREPLY=()
	((cword > 0)) && prev=${words[cword - 1]}
	# the program as typed, when it is a path (./build/src/cli/taskq)
	[[ $_taskq_exe == */* ]] || _taskq_exe=taskq
	_taskq_exe=${_taskq_exe/#\~/$HOME}

	# "--opt=value": bash splits the word at '='
	if [[ $cur == = ]]; then
		return 0
	fi
	if [[ $prev == = ]] && ((cword >= 2)); then
		prev=${words[cword - 2]}
		if [[ $prev == -* ]]; then
			_taskq_value "" "$prev" "$cur"
			return 0
		fi
	fi

	# Global options, then the command.
	for ((i = 1; i < cword; i++)); do
		w=${words[i]}
		case $w in
		--home)
			((i++))
			_taskq_home=${words[i]}
			;;
		--home=*) _taskq_home=${w#--home=} ;;
		--db | --node) ((i++)) ;;
		-*) ;;
		*)
			cmd=$w
			cmd_at=$i
			break
			;;
		esac
	done
	_taskq_home=${_taskq_home/#\~/$HOME}
	if [[ -z $cmd ]]; then
		if [[ $prev == --home ]]; then
			_taskq_value "" --home "$cur"
		elif [[ $prev == --db || $prev == --node ]]; then
			return 0
		elif [[ $cur == -* ]]; then
			_taskq_words "--home --db --node --help -h --version" "$cur"
		else
			_taskq_words "$_taskq_commands" "$cur"
		fi
		return 0
	fi

	# The command's words before the cursor: options (and their values),
	# subcommand, positional arguments. submit stops taking options at the
	# first argument (the task's command) or at --.
	local npos=0 ddash=0 taskcmd_at=0
	for ((i = cmd_at + 1; i < cword; i++)); do
		w=${words[i]}
		if ((ddash)) || [[ $w != -* || $w == - ]]; then
			[[ $w == = || ${words[i - 1]} == = ]] && continue
			if ((npos == 0)); then
				case $cmd in batch | group | session | sessions) sub=$w ;; esac
			fi
			((npos++))
			if [[ $cmd == submit ]] && ((taskcmd_at == 0)); then
				taskcmd_at=$i
			fi
			continue
		fi
		if [[ $w == -- ]]; then
			ddash=1
			[[ $cmd == submit ]] && taskcmd_at=$((i + 1))
			continue
		fi
		_taskq_takes_value "$cmd" "$w" && ((i++))
	done

	# submit: from the task's command on, complete that command.
	if [[ $cmd == submit ]] && ((taskcmd_at > 0)); then
		if declare -F _command_offset >/dev/null; then
			_command_offset "$taskcmd_at"
		elif ((cword == taskcmd_at)); then
			mapfile -t COMPREPLY < <(compgen -c -- "$cur" | sort -u)
		else
			_taskq_files "$cur"
		fi
		return 0
	fi

	# The value of an option.
	if [[ $prev == -* ]] && ((!ddash)) && _taskq_takes_value "$cmd" "$prev"; then
		_taskq_value "$cmd" "$prev" "$cur"
		return 0
	fi

	if [[ $cur == -* ]] && ((!ddash)); then
		_taskq_options "$cmd" "$sub"
		_taskq_words "$_taskq_opts" "$cur"
		# "--": long options only
		if [[ $cur == --* ]]; then
			local -a long=()
			for w in "${COMPREPLY[@]}"; do [[ $w == --* ]] && long+=("$w"); done
			COMPREPLY=("${long[@]}")
		fi
		[[ $cmd == submit || $cmd == ask ]] && [[ --wait == "$cur"* ]] && COMPREPLY+=(--wait=)
		return 0
	fi

	# Positional arguments.
	case $cmd in
	help) ((npos == 0)) && _taskq_words "$_taskq_commands" "$cur" ;;
	pause | resume)
		if ((npos == 0)); then
			_taskq_groups
			_taskq_names "$cur"
		fi
		;;
	batch)
		if ((npos == 0)); then
			_taskq_words "list show" "$cur"
		elif [[ $sub == show ]] && ((npos == 1)); then
			_taskq_batches
			_taskq_names "$cur"
		fi
		;;
	group)
		if ((npos == 0)); then
			_taskq_words "set list" "$cur"
		elif [[ $sub == set ]] && ((npos == 1)); then
			_taskq_groups
			_taskq_names "$cur"
		fi
		;;
	session) ((npos == 0)) && _taskq_words "show" "$cur" ;;
	sessions) ((npos == 0)) && _taskq_words "close" "$cur" ;;
	submit)
		# the task's command (the first word that is not an option)
		if declare -F _command_offset >/dev/null; then
			_command_offset "$cword"
		else
			mapfile -t COMPREPLY < <(compgen -c -- "$cur" | sort -u)
		fi
		;;
	show)
		# ID...: every id, as many as given
		_taskq_ids ""
		_taskq_words "${_taskq_vals[*]}" "$cur"
		;;
	log | poll | result | classify)
		if ((npos == 0)); then
			_taskq_ids ""
			_taskq_words "${_taskq_vals[*]}" "$cur"
		fi
		;;
	*)
		_taskq_id_states "$cmd"
		if [[ $_taskq_states_arg != none ]]; then
			_taskq_ids "$_taskq_states_arg"
			_taskq_words "${_taskq_vals[*]}" "$cur"
		fi
		;;
	esac
	return 0
}

complete -F _taskq taskq
