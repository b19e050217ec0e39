#!/usr/bin/env bash
# test_submit_options.sh - submit's options: --shell, --cwd, --name and the
# derived names, --timeout, --label, --priority, --batch, --json; and that a
# refused option is one line, exit 2, and stores nothing.
. "$(dirname "$0")/lib.sh"

# The value of FIELD for task ID, from show --json (null: empty).
col() { task_field "$1" "$2"; }

check "submit prints the id alone; --json prints {\"id\":N}"
assert_exit 0 tq submit true
assert_eq 1 "$(out)"
assert_exit 0 tq submit --json true
assert_eq '{"id":2}' "$(out)"
assert_eq 2 "$(out | pyjson 'd["id"]')"

check "--shell stores /bin/sh -c STRING and marks the task"
script='echo "$HOME" | wc -c > out.txt; exit 3'
assert_exit 0 tq submit --shell "$script"
id=$(out)
assert_eq "$(hex_args /bin/sh -c "$script")" "$(task_argv_hex "$id")"
assert_eq true "$(col "$id" shell)"
assert_eq false "$(col 1 shell)" "a plain command is not a shell task"
assert_exit 2 tq submit --shell 'ls' -- ls
assert_one_line_error
assert_contains "$(err)" "not both"
assert_exit 2 tq submit --shell ''
assert_one_line_error

check "--cwd: the current directory by default, relative made absolute"
mkdir -p "$TQ_TMP/work/sub dir"
cd "$TQ_TMP/work"
real=$(pwd -P)
assert_exit 0 tq submit true
assert_eq "$real" "$(col "$(out)" cwd)"
assert_exit 0 tq submit --cwd "sub dir" true
assert_eq "$real/sub dir" "$(col "$(out)" cwd)"
assert_exit 0 tq submit --cwd ../work/./"sub dir" true
assert_eq "$real/sub dir" "$(col "$(out)" cwd)"
assert_exit 0 tq submit --cwd "$TQ_TMP/work/sub dir" true
assert_eq "$TQ_TMP/work/sub dir" "$(col "$(out)" cwd)" "an absolute --cwd is kept as written"

check "--cwd that does not exist, or is not a directory: exit 2 naming it"
assert_exit 2 tq submit --cwd "$TQ_TMP/missing" true
assert_one_line_error
assert_contains "$(err)" "--cwd \"$TQ_TMP/missing\""
assert_exit 2 tq submit --cwd missing-rel true
assert_contains "$(err)" '--cwd "missing-rel"'
touch afile
assert_exit 2 tq submit --cwd afile true
assert_eq 'taskq: submit: --cwd "afile": not a directory' "$(err)"
assert_exit 2 tq submit --cwd "" true
assert_one_line_error
cd - >/dev/null

check "--name, and names derived from the command"
assert_exit 0 tq submit --name "nightly build" make all
assert_eq "nightly build" "$(col "$(out)" name)"
assert_exit 0 tq submit make all
assert_eq "make all" "$(col "$(out)" name)"
assert_exit 0 tq submit /usr/bin/python3 train.py --epochs 3
assert_eq "python3 train.py" "$(col "$(out)" name)"
assert_exit 0 tq submit claude -p "review src/"
assert_eq "claude" "$(col "$(out)" name)"

check "names are bounded and printable"
long=$(printf 'n%.0s' $(seq 200))
assert_exit 2 tq submit --name "$long" true
assert_one_line_error
assert_contains "$(err)" "longer than 127 bytes"
assert_exit 0 tq submit --name "$(printf 'n%.0s' $(seq 127))" true
assert_exit 2 tq submit --name $'two\nlines' true
assert_one_line_error
assert_contains "$(err)" "control character"
assert_exit 2 tq submit --name "" true
assert_one_line_error

check "--timeout: default 30m, durations, 0 for none, bad values refused exactly"
assert_exit 0 tq submit true
assert_eq 1800000 "$(col "$(out)" timeout_ms)"
assert_exit 0 tq submit --timeout 90s true
assert_eq 90000 "$(col "$(out)" timeout_ms)"
assert_exit 0 tq submit --timeout 1h30m true
assert_eq 5400000 "$(col "$(out)" timeout_ms)"
assert_exit 0 tq submit --timeout=2h true
assert_eq 7200000 "$(col "$(out)" timeout_ms)"
assert_exit 0 tq submit --timeout 0 true
assert_eq 0 "$(col "$(out)" timeout_ms)"
assert_exit 2 tq submit --timeout 5x -- true
assert_eq 'taskq: submit: --timeout "5x": expected a duration such as 30s, 5m, 2h' "$(err)"
assert_eq "" "$(out)"
for bad in -5s 5 5S '' 1e3s 99999999999999999999s; do
	[ "$bad" = 5 ] && continue
	assert_exit 2 tq submit --timeout "$bad" true
	assert_one_line_error
done

check "--label K=V, repeatable; bad syntax and duplicate keys refused"
assert_exit 0 tq submit --label kind=review --label 'pr=12=b' --label empty= true
id=$(out)
assert_eq "empty=|kind=review|pr=12=b" \
	"$(tq show "$id" --json | pyjson '"|".join(k + "=" + v for k, v in sorted(d["labels"].items()))')"
assert_exit 2 tq submit --label novalue true
assert_eq 'taskq: submit: --label "novalue": expected NAME=VALUE' "$(err)"
assert_exit 2 tq submit --label =v true
assert_one_line_error
assert_exit 2 tq submit --label a=1 --label a=2 true
assert_one_line_error
assert_contains "$(err)" "given twice"

check "--priority: an integer, may be negative"
assert_exit 0 tq submit --priority -5 true
assert_eq -5 "$(col "$(out)" priority)"
assert_exit 0 tq submit --priority 100 true
assert_eq 100 "$(col "$(out)" priority)"
for bad in 1.5 abc '' 99999999999 +3; do
	assert_exit 2 tq submit --priority "$bad" true
	assert_one_line_error
	assert_contains "$(err)" "--priority"
done

check "--batch"
assert_exit 0 tq submit --batch nightly true
assert_eq nightly "$(col "$(out)" batch)"
assert_exit 0 tq submit true
assert_eq "" "$(col "$(out)" batch)" "no batch is NULL"
assert_exit 2 tq submit --batch "" true
assert_one_line_error

check "a refused submit stores nothing"
n=$(task_count)
assert_exit 2 tq submit --label a=1 --timeout nope true
assert_exit 2 tq submit --bogus true
assert_eq "$n" "$(task_count)"

check "the state directory is created 0700 and the database 0600"
assert_eq 700 "$(stat -c %a "$TASKQ_HOME")"
assert_eq 600 "$(stat -c %a "$TASKQ_HOME/taskq.db")"

check "--home DIR wins over TASKQ_HOME"
assert_exit 0 tq --home "$TQ_TMP/other" submit true
assert_eq 1 "$(out)"
assert_eq 1 "$(TASKQ_HOME="$TQ_TMP/other" task_count)" "tasks stored in the --home directory"
