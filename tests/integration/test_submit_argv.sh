#!/usr/bin/env bash
# test_submit_argv.sh - a command is stored exactly as given, byte for byte:
# spaces, quotes, empty strings, bytes that are not UTF-8, newlines and
# tabs, a 100 KB argument. Checked three ways: show --json and list --json,
# which the store reads each its own way (argv_base64 carries the exact
# bytes), and the human show (every argument visible and unambiguous).
. "$(dirname "$0")/lib.sh"

# submit ARGS... and check task ID stored exactly ARGS
submit_exact() {
	local id
	assert_exit 0 tq submit -- "$@"
	id=$(out)
	assert_eq "$(hex_args "$@")" "$(task_argv_hex --list "$id")" \
		"argv bytes from list --json"
	assert_exit 0 tq show "$id" --json
	# the exact bytes: argv_base64 when present, else argv as UTF-8
	assert_eq "$(printf '%s\0' "$@" | base64 -w0)" \
		"$(out | pyjson 'base64.b64encode(b"".join(x + b"\0" for x in
			([base64.b64decode(a) for a in d["argv_base64"]] if "argv_base64" in d
			 else [s.encode() for s in d["argv"]]))).decode()')" \
		"argv from show --json"
	LAST_ID=$id
}

check "spaces, quotes, backslashes and empty strings"
submit_exact printf '%s|' "a b" "  lead" "trail  " '"dq"' "'sq'" 'back\slash' "" "" "\$HOME" '*' ';' '|'
assert_exit 0 tq show "$LAST_ID" --json
assert_eq '["printf", "%s|", "a b", "  lead", "trail  ", "\"dq\"", "'"'"'sq'"'"'", "back\\slash", "", "", "$HOME", "*", ";", "|"]' \
	"$(out | pyjson 'd["argv"]')" "argv as JSON strings"
assert_eq "null" "$(out | pyjson 'd.get("argv_base64")')" "no argv_base64 for valid UTF-8"

check "bytes that are not UTF-8"
submit_exact echo $'\xff\xfe' $'caf\xe9' $'\xc3\x28' $'ok\xc3\xa9'
assert_exit 0 tq show "$LAST_ID" --json
assert_eq '["echo", "\ufffd\ufffd", "caf\ufffd", "\ufffd(", "ok\u00e9"]' \
	"$(out | pyjson 'd["argv"]')" "invalid bytes become U+FFFD in argv"
assert_eq "$(printf '\xff\xfe' | base64)" "$(out | pyjson 'd["argv_base64"][1]')" \
	"argv_base64 holds the exact bytes"
assert_eq 5 "$(out | pyjson 'len(d["argv_base64"])')" "argv_base64 has every argument"

check "newlines, tabs, escape sequences and other control characters"
submit_exact cat $'line1\nline2' $'a\tb' $'\r' $'\e[31mred\e[0m' $'\x01\x7f' $'\n'

check "a 100 KB argument"
big=$(head -c 100000 /dev/zero | tr '\0' 'x')
submit_exact echo "$big" tail
assert_eq 100000 "$(tq show "$LAST_ID" --json | pyjson 'len(d["argv"][1])')"

check "UTF-8 stays readable"
submit_exact echo 'café' '日本語' '🙂'

check "the -- is optional when CMD does not start with '-'"
assert_exit 0 tq submit echo --not-a-taskq-flag -x
id=$(out)
assert_eq "$(hex_args echo --not-a-taskq-flag -x)" "$(task_argv_hex "$id")"

check "options after CMD belong to CMD, even --help and --"
assert_exit 0 tq submit ls --help -- --json
id=$(out)
assert_eq "$(hex_args ls --help -- --json)" "$(task_argv_hex "$id")"

check "a CMD starting with '-' needs --"
assert_exit 2 tq submit -weird
assert_one_line_error
submit_exact -weird arg

check "the human show prints each argument on its own line, quoted and escaped"
assert_exit 0 tq submit -- printf '' "a b" $'x\ty' $'\xff' 'q"uote' 'back\slash' $'nl\n' $'\e[2J'
id=$(out)
assert_exit 0 tq show "$id"
shown=$(out)
assert_contains "$shown" 'argv:         9 arguments'
for want in '    "printf"' '    ""' '    "a b"' '    "x\ty"' '    "\377"' \
	'    "q\"uote"' '    "back\\slash"' '    "nl\n"' '    "\033[2J"'; do
	assert_contains "$shown" "$want" "show line $want"
done
# no raw control bytes reach the terminal
assert_eq 0 "$(printf '%s' "$shown" | tr -d '\n' | LC_ALL=C grep -c $'[\x01-\x1f\x7f\xff]' || true)" \
	"raw control bytes in show output"

check "an empty command name and no command are refused, nothing stored"
before=$(task_count)
assert_exit 2 tq submit ""
assert_contains "$(err)" "the command name is empty"
assert_exit 2 tq submit --
assert_contains "$(err)" "no command given"
assert_exit 2 tq submit --name x
assert_eq "$before" "$(task_count)" "tasks after refused submits"
