#!/usr/bin/env bash
# test_bad_args.sh - hostile command lines:
#   - ids that are not numbers or do not exist, for every command that
#     takes one: exit 2, one line naming the id (README, "Exit codes"), and
#     nothing stored changes;
#   - argv of 1 MB (16 arguments of 64 KiB: the kernel's limit on one
#     argument is 128 KiB): stored byte for byte, run, shown;
#   - invalid UTF-8 and control characters in everything else a submit
#     stores (name, batch, group, labels, environment, unique key,
#     session, on-exit command, working directory): either refused on one
#     line (control characters in names; invalid UTF-8 in what the store
#     keeps as text, on SQLite as on PostgreSQL: exit 2, nothing stored)
#     or stored (an environment value, the working directory: bytes,
#     exactly), and then every --json output stays valid JSON and no human
#     output lets a raw control byte reach the terminal; valid UTF-8 that
#     moves text about (a bidi override) is stored and shown escaped.
# (Invalid UTF-8 and control characters in argv: test_submit_argv; in
# output: test_log_bytes.)
#
# How we know it catches what it checks: tq_parse_id() made lenient
# (strtoll without an end check; tried on a copy of the tree in /tmp) let
# "1e3" through as task 1 (caught: exit 0); the JSON check caught a
# status --json bug (invalid UTF-8 in a group name, which a submit no
# longer stores); before names had to be UTF-8 on SQLite too, the
# PostgreSQL run (reliability_bad_args_pg) failed: its text column refused
# the byte 0xff with "invalid byte sequence for encoding UTF8".
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../integration/lib_serve.sh"
. "$(dirname "$0")/lib_rel.sh"

# Strict: the bytes must be UTF-8 (Python's text stdin would let invalid
# bytes through as surrogates under a C.UTF-8 locale).
valid_json() { "$TQ_PYTHON" -c 'import json, sys; json.loads(sys.stdin.buffer.read().decode("utf-8"))' <"$1" 2>/dev/null; }
valid_json_lines() { "$TQ_PYTHON" -c '
import json, sys
for line in sys.stdin.buffer:
    json.loads(line.decode("utf-8"))' <"$1" 2>/dev/null; }
# no byte below 0x20 but newline, and no DEL, in file $1
no_raw_controls() { ! LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$1" && ! LC_ALL=C grep -qaP '\x00' "$1"; }

assert_exit 0 tq submit --name keep -- echo kept
keep=$(out)
before=$(rel_digest)

check "ids that are not numbers or do not exist: exit 2, one line naming the id, for every command"
cmds=(show log poll cancel remove kill write retry wait result classify clear)
for c in "${cmds[@]}"; do
	extra=()
	[ "$c" = write ] && extra=(data)
	run tq "$c" 424242 "${extra[@]}"
	if grep -q "not implemented yet" "$TQ_ERR"; then
		echo "skipped $c: not implemented yet"
		continue
	fi
	# every kind of bad id for the first command; a few for the others
	if [ "$c" = show ]; then
		bad=(abc 0 1e3 99999999999999999999 '' 12abc ' 7' 0x10 '1 2' $'4\n2' 424242 -5)
	else
		bad=(12abc '' 424242)
	fi
	for id in "${bad[@]}"; do
		run tq "$c" "$id" "${extra[@]}"
		[ "$TQ_RC" -eq 2 ] || fail "$c \"$id\": exit $TQ_RC, stderr [$(err)]"
		assert_one_line_error
		assert_contains "$(err)" "taskq: $c: "
		case $id in
		424242) assert_contains "$(err)" "task 424242: no such task" ;;
		-5) assert_contains "$(err)" '"-5"' ;;
		*) assert_contains "$(err)" "expected a task id" "$c \"$id\"" ;;
		esac
	done
done
assert_eq "$before" "$(rel_digest)" "tasks after the refusals"
assert_eq queued "$(task_field "$keep" state)"

check "invalid UTF-8 and control characters in what a submit stores"
inv=$'n\xff\xfe\xc3\x28x'
ctl=$'a\x01\x1b[31mb\tc'
odd=$'\xc3\xa9\xe2\x80\xaeb'  # e-acute, a right-to-left override: valid UTF-8
mkdir -p "$TQ_TMP/$inv"
ids=()
for v in "$inv" "$ctl" "$odd"; do
	for f in --name --batch --group --label=k= --label=K --env=V= --unique --on-exit --session; do
		case $f in
		--label=K) args=(--label "$v=1") ;;
		*=) args=("${f%%=*}" "${f#*=}$v") ;;
		*) args=("$f" "$v") ;;
		esac
		before=$(rel_digest)
		run tq submit "${args[@]}" -- echo hi
		if [ "$v" = "$inv" ] && [ "$f" != --env=V= ]; then
			# text in the store (a PostgreSQL text column): UTF-8 or refused
			[ "$TQ_RC" -eq 2 ] || fail "submit $f with invalid UTF-8: exit $TQ_RC [$(err)]"
			assert_one_line_error
			assert_contains "$(err)" "${args[0]}"
			assert_contains "$(err)" "not valid UTF-8"
			assert_eq "$before" "$(rel_digest)" "tasks after submit $f refused"
		elif [ "$TQ_RC" -eq 0 ]; then
			ids+=("$(out)")
		else
			# refused: a usage error on one line that shows the value escaped
			[ "$TQ_RC" -eq 2 ] || fail "submit $f: exit $TQ_RC [$(err)]"
			assert_one_line_error
			assert_contains "$(err)" "${args[0]}"
			no_raw_controls "$TQ_ERR" || fail "raw control bytes in the error for $f"
		fi
	done
done
# and every command that names such text, to store it or to look it up:
# refused alike (PostgreSQL's text takes no such bytes, to compare either)
before=$(rel_digest)
while IFS= read -r line; do
	read -ra words <<<"$line"
	v=$inv
	[ "$line" = "list --label" ] && v="k=$inv"
	run tq "${words[@]}" "$v"
	[ "$TQ_RC" -eq 2 ] || fail "$line with invalid UTF-8: exit $TQ_RC [$(err)]"
	assert_one_line_error
	assert_contains "$(err)" "not valid UTF-8" "$line"
done <<EOF
pause
resume
group set --parallel 2
list --name
list --batch
list --group
list --label
stats --batch
stats --group
wait --batch
retry --failed --batch
batch show
session show
sessions close
poll $keep --as
ask --no-start --model
EOF
assert_eq "$before" "$(rel_digest)" "tasks after the invalid UTF-8 refusals"
(cd "$TQ_TMP/$inv" && "$TASKQ_BIN" submit --name incwd -- pwd) >"$TQ_OUT" || fail "submit in a non-UTF-8 cwd"
ids+=("$(out)")
echo "stored ${#ids[@]} tasks with odd bytes"

check "every --json output stays valid JSON, before and after they run"
# group status is what `status` shows while tasks are queued
tq pause "$odd" >/dev/null
json_ok() {
	local c phase=$1
	for c in "list --json" "list --json --limit 1000" "status --json" "batch list --json" \
		"batch show $odd --json" "group list --json"; do
		# shellcheck disable=SC2086
		"$TASKQ_BIN" $c >"$TQ_TMP/j" 2>"$TQ_ERR" || fail "$c: exit $? [$(err)]"
		valid_json "$TQ_TMP/j" || fail "$c is not valid JSON: $(head -c 300 "$TQ_TMP/j")"
	done
	tq list >"$TQ_TMP/h"
	no_raw_controls "$TQ_TMP/h" || fail "raw control bytes in list"
	tq status >"$TQ_TMP/h"
	no_raw_controls "$TQ_TMP/h" || fail "raw control bytes in status"
	# each task's show once, after they ran (the fields only grow)
	[ "$phase" = ran ] || return 0
	for id in "${ids[@]}"; do
		tq show "$id" --json >"$TQ_TMP/j" || fail "show $id --json"
		valid_json "$TQ_TMP/j" || fail "show $id --json is not valid JSON: $(head -c 300 "$TQ_TMP/j")"
		tq show "$id" >"$TQ_TMP/h" || fail "show $id"
		no_raw_controls "$TQ_TMP/h" || fail "raw control bytes in show $id"
	done
}
json_ok queued

check "argv of 1 MB: stored byte for byte, run, shown"
chunk=$(head -c 65534 /dev/zero | tr '\0' a)
args=()
for i in $(seq 10 25); do
	args+=("$i$chunk")
done
assert_exit 0 tq submit -- printf '%s\n' "${args[@]}"
big=$(out)
stored=$(task_argv_hex "$big")
[ "$(hex_args printf '%s\n' "${args[@]}")" = "$stored" ] || fail "argv bytes stored differ"
[ $((${#stored} / 2)) -gt 1048576 ] || fail "argv is not over 1 MB"
assert_exit 0 tq show "$big" --json
assert_eq 1048576 "$(out | pyjson 'sum(len(a) for a in d["argv"][2:])')" "argv length in show --json"
assert_exit 0 tq list
assert_exit 0 tq show "$big"

serve_start 1
wait_state "$big" succeeded 60
printf '%s\n' "${args[@]}" | cmp - <(tq log "$big" --offset 0 --raw) || fail "the task did not get its argv"
tq resume "$odd" >/dev/null
wait_for "[ \"\$(task_count --state queued,running)\" -eq 0 ]" 60 ||
	fail "tasks did not run: $(tq list --state queued,running)"
json_ok ran
for id in "${ids[@]}"; do
	for c in "log $id --json" "poll $id --json"; do
		# shellcheck disable=SC2086
		tq $c >"$TQ_TMP/j" || fail "$c"
		valid_json_lines "$TQ_TMP/j" || valid_json "$TQ_TMP/j" || fail "$c is not valid JSON"
	done
	run tq wait "$id" --json
	valid_json "$TQ_OUT" || fail "wait $id --json is not valid JSON"
done
assert_eq "$TQ_TMP/$inv" "$(tq log "${ids[-1]}" --raw)" "the task ran in its non-UTF-8 cwd"

assert_exit 0 tq shutdown
wait_for "! _tq_alive $SERVE_PID" 30 || fail "the supervisor did not stop"
