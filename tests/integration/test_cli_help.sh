#!/usr/bin/env bash
# test_cli_help.sh - help, version, --help for every command, and the shape
# of usage errors: one line on stderr, exit 2, nothing on stdout.
. "$(dirname "$0")/lib.sh"

commands=(submit list show cancel remove help version)

check "taskq help lists every command with its synopsis, exit codes and variables"
assert_exit 0 tq help
for c in "${commands[@]}"; do
	assert_contains "$(out)" "taskq $c" "help lists $c"
done
assert_contains "$(out)" "Exit status:"
assert_contains "$(out)" "2   usage error"
assert_contains "$(out)" "1   runtime error"
assert_contains "$(out)" "TASKQ_SCRUB_ENV"
assert_eq "" "$(err)" "stderr of help"
overview=$(out)

check "-h and --help before a command print the same overview"
assert_exit 0 tq --help
assert_eq "$overview" "$(out)"
assert_exit 0 tq -h
assert_eq "$overview" "$(out)"

check "help CMD, CMD --help and CMD -h agree and start with the synopsis"
for c in "${commands[@]}"; do
	assert_exit 0 tq help "$c"
	one=$(out)
	assert_contains "$one" "usage: taskq $c" "help $c"
	assert_exit 0 tq "$c" --help
	assert_eq "$one" "$(out)" "$c --help"
	assert_exit 0 tq "$c" -h
	assert_eq "$one" "$(out)" "$c -h"
	# the synopsis in the overview is the one in the command's help
	synopsis=$(head -1 <<<"$one")
	assert_contains "$overview" "${synopsis#usage: }" "overview synopsis of $c"
done

check "aliases: ls is list, rm is remove"
assert_exit 0 tq help ls
assert_contains "$(out)" "usage: taskq list"
assert_exit 0 tq rm --help
assert_contains "$(out)" "usage: taskq remove"

check "version and --version"
assert_exit 0 tq version
assert_contains "$(out)" "taskq "
v=$(out)
assert_exit 0 tq --version
assert_eq "$v" "$(out)"

check "help never needs or creates the state directory"
assert_eq "no" "$([ -e "$TASKQ_HOME" ] && echo yes || echo no)"

check "no command, an unknown command: one line, exit 2"
assert_exit 2 tq
assert_one_line_error
assert_eq "" "$(out)" "stdout"
assert_exit 2 tq frobnicate
assert_one_line_error
assert_contains "$(err)" 'unknown command "frobnicate"'
assert_exit 2 tq help frobnicate
assert_one_line_error

check "an unknown flag, for each command: one line naming it, exit 2"
for c in "${commands[@]}"; do
	assert_exit 2 tq "$c" --no-such-flag
	assert_one_line_error
	assert_eq "taskq: $c: unknown option \"--no-such-flag\"" "$(err)"
	assert_eq "" "$(out)" "stdout of $c with a bad flag"
done
assert_exit 2 tq --no-such-flag list
assert_eq 'taskq: unknown option "--no-such-flag"' "$(err)"

check "a flag given a value it does not take, or missing its value"
assert_exit 2 tq list --json=yes
assert_eq 'taskq: list: --json: takes no value' "$(err)"
assert_exit 2 tq submit --timeout
assert_eq 'taskq: submit: --timeout: missing value' "$(err)"
assert_exit 2 tq --home
assert_one_line_error

check "no long-option abbreviations (a later flag must not break scripts)"
assert_exit 2 tq list --lim 5
assert_contains "$(err)" 'unknown option "--lim"'

check "the value of an unknown --flag=VALUE is not echoed (it may be a secret)"
assert_exit 2 tq submit --tokn=hunter2 true
assert_not_contains "$(err)" hunter2

check "errors are escaped to stay on one line"
assert_exit 2 tq show $'12\n34'
assert_one_line_error
assert_contains "$(err)" '"12\n34"'

check "a command missing its id quotes its whole synopsis on the one line, with no literal \\n"
for c in log show result classify kill poll cancel remove; do
	assert_exit 2 tq "$c"
	assert_one_line_error
	assert_contains "$(err)" "no task id given; usage: taskq $c ID"
	assert_not_contains "$(err)" '\n' "the usage of $c"
done
assert_exit 2 tq log
assert_contains "$(err)" "[--stream stdout|stderr] [-f|--follow]" "log's usage, both lines of it"
