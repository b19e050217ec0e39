#!/usr/bin/env bash
# test_contrib.sh - contrib/: the man page, the bash and zsh completions, the
# systemd user unit and the crontab example, checked against the binary's
# own help so that none of them drifts from it:
#   - taskq(1) builds from contrib/taskq.1.scd (scdoc), renders without a
#     warning (man -l, groff), names every command of `taskq help`, and in
#     each command's entry every option its --help names;
#   - bash completion: bash -n, then the completion function run the way
#     bash runs it (COMP_WORDS/COMP_CWORD): commands, options, values, task
#     ids, group and batch names; it knows every option of every --help;
#   - zsh completion (when zsh is installed): zsh -n, then real completions
#     in an interactive zsh on a pty (zpty), the same checks;
#   - the unit passes systemd-analyze verify (when installed), and stops
#     the way taskq needs (KillMode=mixed, TimeoutStopSec above the grace);
#   - crontab.example uses --unique, --batch, wait --batch and drain, with
#     options the commands take, and % escaped for cron.
# Parts whose tool is missing (scdoc, groff, zsh, systemd-analyze) are
# skipped with a message; the rest still runs.
. "$(dirname "$0")/lib.sh"

CONTRIB="$TASKQ_SRCDIR/contrib"
BUILD_ROOT=$(cd "$(dirname "$TASKQ_BIN")/../.." && pwd)
BASH_COMP="$CONTRIB/completions/taskq.bash"
ZSH_COMP="$CONTRIB/completions/_taskq"
PAGE_SRC="$CONTRIB/taskq.1.scd"

say_skip() { echo "SKIP (part): $*"; }

# ---------------------------------------------------------------------------
# What the binary says: its commands, and each command's options.

check "taskq help lists the commands; each command's --help names its options"
assert_exit 0 tq help
printf '%s\n' "$(out)" >"$TQ_TMP/help.txt"
mapfile -t COMMANDS < <(sed -n 's/^  taskq \([a-z][a-z-]*\).*/\1/p' "$TQ_TMP/help.txt" | awk '!seen[$0]++')
[ "${#COMMANDS[@]}" -ge 20 ] || fail "only ${#COMMANDS[@]} commands in taskq help: ${COMMANDS[*]}"
for c in submit wait list drain help; do
	assert_contains " ${COMMANDS[*]} " " $c " "taskq help lists $c"
done

# The options a help text names: in its usage block (up to the first blank
# line) and at the start of its option lines ("  --name VALUE  ...",
# "  -f, --follow  ..."); not the ones its prose mentions in passing. And a
# command's subcommands: the lowercase words that start its synopsis or
# follow a "|" in it (batch list | show NAME).
declare -A HELP_OPTS HELP_SUBS
for c in "${COMMANDS[@]}"; do
	# a command still being written may have no --help of its own yet;
	# `taskq help CMD` then still gives its synopsis
	if ! "$TASKQ_BIN" "$c" --help >"$TQ_TMP/help-$c.txt" 2>/dev/null; then
		echo "note: taskq $c --help failed; using taskq help $c"
		assert_exit 0 tq help "$c"
		out >"$TQ_TMP/help-$c.txt"
	fi
done
"$TQ_PYTHON" - "$TQ_TMP" "${COMMANDS[@]}" <<'PY' >"$TQ_TMP/helpopts" || fail "parsing the help texts"
import re, sys
tmp, cmds = sys.argv[1], sys.argv[2:]
for c in cmds:
    text = open(f"{tmp}/help-{c}.txt", encoding="utf-8").read()
    usage, _, rest = text.partition("\n\n")
    opts = set(re.findall(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9-]*)", usage))
    for line in rest.splitlines():
        m = re.match(r" {1,8}(-[A-Za-z0-9], )?(--?[A-Za-z][A-Za-z0-9-]*)", line)
        if m:
            opts.add(m.group(2))
            if m.group(1):
                opts.add(m.group(1)[:2])
    subs = []
    syn = usage.split("\n", 1)[0].removeprefix("usage: ")
    for part in syn.split("|"):
        w = part.split()
        if w[:2] == ["taskq", c]:
            w = w[2:]
        if w and re.fullmatch(r"[a-z]+", w[0]):
            subs.append(w[0])
    print(c + "|" + " ".join(subs) + "|" + " ".join(sorted(opts)))
PY
while IFS='|' read -r c subs opts; do
	HELP_SUBS[$c]=$subs
	HELP_OPTS[$c]=$opts
done <"$TQ_TMP/helpopts"
echo "submit's options: ${HELP_OPTS[submit]}"
assert_contains " ${HELP_OPTS[submit]} " " --timeout " "submit --help parsed"
assert_contains " ${HELP_OPTS[log]} " " -f " "log --help parsed (short options)"
assert_eq "" "${HELP_SUBS[submit]}" "submit has no subcommands"

# ---------------------------------------------------------------------------
# The man page

PAGE=""
if [ -f "$BUILD_ROOT/contrib/taskq.1" ]; then
	PAGE="$BUILD_ROOT/contrib/taskq.1"
elif command -v scdoc >/dev/null; then
	echo "note: no built page in $BUILD_ROOT/contrib; building it here"
	PAGE="$TQ_TMP/taskq.1"
	scdoc <"$PAGE_SRC" >"$PAGE" || fail "scdoc failed on $PAGE_SRC"
fi

if [ -z "$PAGE" ]; then
	say_skip "no scdoc: the man page is not built (apt-get install scdoc)"
else
	check "the man page is built from taskq.1.scd, and is current"
	if command -v scdoc >/dev/null; then
		scdoc <"$PAGE_SRC" >"$TQ_TMP/fresh.1" 2>"$TQ_TMP/scdoc.err" ||
			fail "scdoc: $(cat "$TQ_TMP/scdoc.err")"
		# scdoc stamps the build date; the rest must be what the build has
		assert_eq "$(grep -v '^\.TH' "$TQ_TMP/fresh.1")" "$(grep -v '^\.TH' "$PAGE")" \
			"$PAGE is stale: rebuild"
	fi
	assert_contains "$(head -20 "$PAGE")" '.TH "taskq" "1"'
	# outside code blocks, a text line of the source that starts with "."
	# loses it in scdoc's output, and one with "-" starts a list: reflow them
	bad=$(awk '/^```/ { code = !code; next } !code && /^\t*[.\047-]/ { print NR ": " $0 }' "$PAGE_SRC")
	assert_eq "" "$bad" "lines of taskq.1.scd that start with . or ' or -"

	check "the page renders without warnings (man -l, groff)"
	rendered="$TQ_TMP/taskq.txt"
	if command -v man >/dev/null; then
		MANWIDTH=80 man --warnings -E UTF-8 -l "$PAGE" >"$rendered" 2>"$TQ_TMP/man.err" ||
			fail "man -l failed: $(cat "$TQ_TMP/man.err")"
		assert_eq "" "$(cat "$TQ_TMP/man.err")" "warnings from man -l"
	fi
	if command -v groff >/dev/null; then
		groff -t -man -Tutf8 -ww -z "$PAGE" 2>"$TQ_TMP/groff.err" ||
			fail "groff failed: $(cat "$TQ_TMP/groff.err")"
		assert_eq "" "$(cat "$TQ_TMP/groff.err")" "warnings from groff"
	fi
	if command -v mandoc >/dev/null; then
		mandoc -Tlint -Wwarning "$PAGE" >"$TQ_TMP/mandoc.err" 2>&1 || true
		assert_eq "" "$(grep -v 'lower case character in document title' "$TQ_TMP/mandoc.err")" \
			"warnings from mandoc -Tlint"
	fi
	if ! command -v man >/dev/null && ! command -v groff >/dev/null; then
		say_skip "neither man nor groff: the page is checked as text only"
	fi

	# One plain-text copy for the checks below: a paragraph a line, no
	# hyphenation (so no option is broken across lines), ASCII hyphens.
	if command -v groff >/dev/null; then
		groff -t -man -Tutf8 -P-cbou -rLL=5000n -rHY=0 "$PAGE" 2>/dev/null
	elif command -v man >/dev/null; then
		MANWIDTH=400 man -E UTF-8 -l "$PAGE" 2>/dev/null
	else
		cat "$PAGE"
	fi | sed -e 's/\x1b\[[0-9;]*m//g' -e 's/.\x08//g' -e 's/‐/-/g' -e 's/−/-/g' \
		-e 's/\\-/-/g' -e 's/\\fB//g; s/\\fI//g; s/\\fR//g' >"$TQ_TMP/page.txt"

	check "the page has the sections a man page needs, and the environment and files"
	for s in NAME SYNOPSIS DESCRIPTION COMMANDS "EXIT STATUS" ENVIRONMENT FILES EXAMPLES "SEE ALSO"; do
		grep -q "^$s\$" "$TQ_TMP/page.txt" || fail "no section $s in the page"
	done
	for v in TASKQ_HOME TASKQ_AUTOSTART TASKQ_SCRUB_ENV TASKQ_CONFIG XDG_STATE_HOME \
		XDG_CONFIG_HOME NO_COLOR taskq.db serve.log serve.pid; do
		grep -q -- "$v" "$TQ_TMP/page.txt" || fail "the page does not mention $v"
	done
	for code in 0 1 2 124 127; do
		grep -Eq "^ +$code +[a-z]" "$TQ_TMP/page.txt" || fail "the page does not explain exit status $code"
	done

	check "the page has an entry for every command of taskq help, and in it every option"
	# An entry starts at a line "taskq CMD ..." at the section's indent.
	"$TQ_PYTHON" - "$TQ_TMP/page.txt" "${COMMANDS[@]}" <<'PY' >"$TQ_TMP/entries" || fail "$(cat "$TQ_TMP/entries")"
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
cmds = sys.argv[2:]
# the COMMANDS section: from its heading to the next one
first = lines.index("COMMANDS") if "COMMANDS" in lines else len(lines)
last = next((k for k in range(first + 1, len(lines)) if re.match(r"^[A-Z]", lines[k])), len(lines))
starts = {}
for i in range(first, last):
    m = re.match(r"^( {7})taskq (\w[\w-]*)( |$)", lines[i])
    if m and m.group(2) in cmds and m.group(2) not in starts:
        starts[m.group(2)] = i
missing = [c for c in cmds if c not in starts]
if missing:
    print("no entry in the page for: " + " ".join(missing))
    sys.exit(1)
bounds = sorted(starts.values()) + [last]
for c, i in starts.items():
    j = min(b for b in bounds if b > i)
    print(c + "\t" + "\n".join(lines[i:j]).replace("\t", " ").replace("\n", "\x01"))
PY
	declare -A ENTRY
	while IFS=$'\t' read -r c text; do
		ENTRY[$c]=${text//$'\x01'/$'\n'}
	done <"$TQ_TMP/entries"
	for c in "${COMMANDS[@]}"; do
		entry=${ENTRY[$c]}
		# ask takes every submit option: its entry refers to submit's
		[ "$c" = ask ] && entry+=${ENTRY[submit]}
		for o in ${HELP_OPTS[$c]}; do
			case $o in -h | --help) continue ;; esac
			re="(^|[^A-Za-z0-9-])$o([^A-Za-z0-9-]|\$)"
			[[ $entry =~ $re ]] ||
				fail "the page's entry for taskq $c does not document $o (its --help does)"
		done
	done
fi

# ---------------------------------------------------------------------------
# What the docs say a built-in agent profile sets

check "the page, the README and help ask give each profile variable the value profiles.json sets"
assert_exit 0 tq help ask
printf '%s\n' "$(out)" >"$TQ_TMP/help-ask.txt"
"$TQ_PYTHON" - "$TASKQ_SRCDIR/profiles.json" "$PAGE_SRC" "$TASKQ_SRCDIR/README.md" \
	"$TQ_TMP/help-ask.txt" <<'PY' || fail "a doc gives a profile variable another value"
import json, re, sys
profiles = json.load(open(sys.argv[1]))["profiles"]
sets = {}
for p in profiles.values():
    for k, v in (p.get("env") or {}).items():
        sets.setdefault(k, set()).add(v)
bad = 0
for doc in sys.argv[2:]:
    text = open(doc, encoding="utf-8").read()
    for k, vals in sets.items():
        for m in re.finditer(re.escape(k) + r"=([A-Za-z0-9_./-]+)", text):
            if m.group(1) not in vals:
                print("%s: %s=%s, but profiles.json sets %s" % (doc, k, m.group(1),
                      " or ".join(sorted(vals))))
                bad = 1
sys.exit(bad)
PY

# ---------------------------------------------------------------------------
# bash completion

check "bash completion: the file parses, and registers _taskq for taskq"
bash -n "$BASH_COMP" || fail "bash -n $BASH_COMP"
assert_contains "$(bash -c ". '$BASH_COMP' && complete -p taskq")" "-F _taskq taskq"

# A queue to complete from: tasks in two states, a batch, a group.
export TASKQ_AUTOSTART=0
q1=$(tq submit --batch nightly-a --group grp-x -- true)
q2=$(tq submit --batch 'two words' --name second -- sleep 100)
tq cancel "$q2" >/dev/null
q3=$(tq submit -- sh -c 'exit 0')

# Completion requests are collected first and run in one shell each (bash,
# zsh): req KEY WORD... asks for the completions of the last word ("" for a
# new one) of the command line WORD...; res SHELL KEY prints what SHELL
# offered, one per line, sorted.
declare -A REQ
REQS=()
req() {
	local key=$1
	shift
	REQS+=("$(printf '%q ' "$@")")
	REQ[$key]=${#REQS[@]}
}
res() {
	[ -n "${REQ[$2]+x}" ] || fail "no completion request $2"
	sort -u "$TQ_TMP/$1.${REQ[$2]}" 2>/dev/null
}
# has_line TEXT LINE [WHAT]: LINE is one of TEXT's lines (no process spawned:
# this runs hundreds of times)
is_line() { [[ $'\n'$1$'\n' == *$'\n'"$2"$'\n'* ]]; }
has_line() { is_line "$1" "$2" || fail "${3:-completion}: [$2] not offered in [${1//$'\n'/ }]"; }

req su taskq su
req un taskq submit --un
req cmds taskq ""
req global taskq -
req home taskq --home "$TQ_TMP/elsewhere" cancel ""
req show taskq show ""
req cancel taskq cancel ""
req retry taskq retry ""
req batch taskq submit --batch ""
req pause taskq pause ""
req states taskq list --state queued,ca
req stream taskq log --stream ""
req signal taskq kill --signal K
req help taskq help cla
req taskargs taskq submit --timeout 5m -- sh ""
req taskcmd taskq submit --timeout 5m slee
for c in "${COMMANDS[@]}"; do
	req "opts-$c" taskq "$c" -
	req "longopts-$c" taskq "$c" --
	for sub in ${HELP_SUBS[$c]}; do
		req "opts-$c-$sub" taskq "$c" "$sub" x -
	done
done

# bash: the completion function called as bash calls it, with COMP_WORDS,
# COMP_CWORD, COMP_LINE and COMP_POINT set.
printf '%s\n' "${REQS[@]}" >"$TQ_TMP/requests"
env PATH="$(dirname "$TASKQ_BIN"):$PATH" OUT="$TQ_TMP" bash -c '
	. "$1" || exit 1
	n=0
	while IFS= read -r line; do
		n=$((n + 1))
		eval "COMP_WORDS=($line)"
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE="${COMP_WORDS[*]}"
		COMP_POINT=${#COMP_LINE}
		COMPREPLY=()
		_taskq taskq "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" 2>/dev/null
		printf "%s\n" "${COMPREPLY[@]}" >"$OUT/bash.$n"
	done
' bash "$BASH_COMP" <"$TQ_TMP/requests" || fail "running the bash completion"

check "bash: taskq su -> submit; taskq submit --un -> --unique"
assert_eq "submit" "$(res bash su)" "completing 'taskq su'"
has_line "$(res bash un)" --unique "completing 'taskq submit --un'"
has_line "$(res bash un)" --unset "completing 'taskq submit --un'"

# Checks both shells pass.
completion_checks() {
	local sh=$1 r c o k offered keys
	check "$sh: every command of taskq help, and the global options"
	r=$(res "$sh" cmds)
	for c in "${COMMANDS[@]}"; do has_line "$r" "$c" "$sh: commands"; done
	r=$(res "$sh" global)
	for o in --home --help --version; do has_line "$r" "$o" "$sh: global options"; done

	check "$sh: every option each command's --help names is completed"
	for c in "${COMMANDS[@]}"; do
		offered=""
		keys=("opts-$c" "longopts-$c")
		for k in ${HELP_SUBS[$c]}; do keys+=("opts-$c-$k"); done
		for k in "${keys[@]}"; do
			[ -f "$TQ_TMP/$sh.${REQ[$k]}" ] && offered+=$'\n'$(<"$TQ_TMP/$sh.${REQ[$k]}")
		done
		for o in ${HELP_OPTS[$c]}; do
			is_line "$offered" "$o" ||
				fail "$sh completion does not know $o of taskq $c (taskq $c --help names it); offered: ${offered//$'\n'/ }"
		done
	done

	check "$sh: task ids by the states a command takes, groups, batches, values"
	r=$(res "$sh" show)
	for id in "$q1" "$q2" "$q3"; do has_line "$r" "$id" "$sh: show ids"; done
	r=$(res "$sh" cancel)
	has_line "$r" "$q1" "$sh: cancel: queued ids"
	if is_line "$r" "$q2"; then fail "$sh: cancel offers the canceled task $q2"; fi
	has_line "$(res "$sh" retry)" "$q2" "$sh: retry: finished ids"
	has_line "$(res "$sh" batch)" nightly-a "$sh: batch names"
	has_line "$(res "$sh" pause)" grp-x "$sh: group names"
	has_line "$(res "$sh" help)" classify "$sh: help CMD"
	assert_not_contains "$(res "$sh" help)" "submit" "$sh: help cla"
	has_line "$(res "$sh" stream)" stdout "$sh: --stream values"
	has_line "$(res "$sh" stream)" stderr "$sh: --stream values"
	has_line "$(res "$sh" signal)" KILL "$sh: --signal values"
	has_line "$(res "$sh" taskcmd)" sleep "$sh: the task's command"
	assert_not_contains "$(res "$sh" taskargs)" "--unique" "$sh: after --, the task's own arguments"
}
completion_checks bash

check "bash: values that are lists or names with spaces, and --home on the line"
assert_eq "" "$(res bash home)" "--home on the line: ids from that (empty) queue"
assert_eq "queued,canceled" "$(res bash states)" "--state completes after a comma"
has_line "$(res bash batch)" 'two\ words' "a batch name with a space, quoted"

# ---------------------------------------------------------------------------
# zsh completion

if ! command -v zsh >/dev/null; then
	say_skip "no zsh: its completion is not checked (apt-get install zsh)"
else
	check "zsh completion: the file parses (zsh -n)"
	zsh -n "$ZSH_COMP" || fail "zsh -n $ZSH_COMP"
	head -1 "$ZSH_COMP" | grep -qx '#compdef taskq' || fail "$ZSH_COMP must start with #compdef taskq"

	# Real completion: an interactive zsh on a pty (zpty) with the file in
	# $fpath and compinit; compadd is wrapped to record every match it is
	# given, and TAB runs complete-word then shows a message, so that we
	# know when it is done. Each request is typed, completed, then the line
	# is killed (^U). Markers are written as FIN''ISHED so that the echo of
	# what we type never matches them.
	mkdir -p "$TQ_TMP/zfunc" "$TQ_TMP/zhome"
	cp "$ZSH_COMP" "$TQ_TMP/zfunc/_taskq"
	cat >"$TQ_TMP/zcap.zsh" <<'ZSH'
zmodload zsh/zpty || exit 1
zpty z env HOME=$ZHOME zsh -f -i
# no listing (it could stop to ask "do you wish to see all N possibilities?")
zpty -w z "PROMPT='%% '; RPROMPT=''; unset zle_bracketed_paste; unsetopt AUTO_LIST AUTO_MENU BEEP; LISTMAX=100000"
# only the completion system's own directories: compinit reads every file
# of $fpath, and the others (Linux, Debian, X, ...) are not needed here
zpty -w z "fpath=($ZFUNC \${(M)fpath:#*/Completion(|/Base|/Unix|/Zsh)}); autoload -U compinit; compinit -u -D; print -r -- RE''ADY-\$_comps[taskq]-"
local out n=0 line
zpty -r z out '*READY-*-' || exit 1
[[ $out == *READY-_taskq-* ]] || { print -u2 "compinit did not register _taskq: [$out]"; exit 1 }
zpty -w z "compadd() { local -a __m; builtin compadd -A __m \"\$@\"; (( \$#__m )) && print -rl -- \$__m >>\$ZOUT; builtin compadd \"\$@\"; }"
zpty -w z "_cap() { zle complete-word; zle -M 'FIN''ISHED' }; zle -N _cap; bindkey '^I' _cap; print BO''UND"
zpty -r z out '*BOUND*' || exit 1
while IFS= read -r line; do
	n=$((n + 1))
	[[ -n $line ]] || continue # a request for bash only
	zpty -w z "ZOUT=$ZOUTDIR/zsh.$n; : >\$ZOUT; print ST''ART-$n-"
	zpty -r z out "*START-$n-*" || exit 1
	zpty -w -n z "$line"$'\t'
	zpty -r z out '*FINISHED*' || exit 1
	zpty -w z $'\x15'"print DO''NE-$n-"
	zpty -r z out "*DONE-$n-*" || exit 1
done
zpty -w z 'exit'
zpty -d z
ZSH
	# the same requests, as typed lines; "--" alone is for bash only (zsh
	# completes "-" with long and short options alike)
	words=()
	for line in "${REQS[@]}"; do
		eval "words=($line)"
		if [ "${words[${#words[@]} - 1]}" = "--" ]; then
			echo
		else
			echo "${words[*]}"
		fi
	done >"$TQ_TMP/zrequests"
	env PATH="$(dirname "$TASKQ_BIN"):$PATH" ZFUNC="$TQ_TMP/zfunc" ZHOME="$TQ_TMP/zhome" \
		ZOUTDIR="$TQ_TMP" timeout 120 zsh -f "$TQ_TMP/zcap.zsh" <"$TQ_TMP/zrequests" \
		>"$TQ_TMP/zsh.log" 2>&1 ||
		fail "the zsh completion harness failed: $(tail -c 2000 "$TQ_TMP/zsh.log")"

	check "zsh: taskq su -> submit; taskq submit --un -> --unique"
	assert_eq "submit" "$(res zsh su)" "zsh completing 'taskq su'"
	has_line "$(res zsh un)" --unique "zsh completing 'taskq submit --un'"
	has_line "$(res zsh un)" --unset "zsh completing 'taskq submit --un'"
	completion_checks zsh
	has_line "$(res zsh states)" canceled "zsh: --state after a comma"
fi

# ---------------------------------------------------------------------------
# The systemd user unit

UNIT="$CONTRIB/taskq.service"
check "the unit runs taskq serve --foreground and stops the way taskq needs"
assert_eq "ExecStart=taskq serve --foreground --grace 30s" "$(grep '^ExecStart=' "$UNIT")"
for kv in Type=simple KillMode=mixed Restart=on-failure "SuccessExitStatus=143 130" \
	WantedBy=default.target; do
	grep -qxF -- "$kv" "$UNIT" || fail "the unit has no $kv"
done
grace=$(sed -n 's/^ExecStart=.*--grace \([0-9]*\)s.*/\1/p' "$UNIT")
stop=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)s$/\1/p' "$UNIT")
if [ -z "$grace" ] || [ -z "$stop" ]; then
	fail "the unit needs --grace Ns and TimeoutStopSec=Ns"
fi
# the grace, then each task's kill grace (5s by default), then exiting
[ "$stop" -ge $((grace + 5 + 10)) ] ||
	fail "TimeoutStopSec=${stop}s is not above --grace ${grace}s plus the kill grace"
if [ -f "$BUILD_ROOT/contrib/taskq.service" ]; then
	# the installed copy names the binary by its absolute path, nothing else changes
	assert_eq "$(grep -v '^ExecStart=' "$UNIT")" \
		"$(grep -v '^ExecStart=' "$BUILD_ROOT/contrib/taskq.service")" "the built unit"
	grep -Eq '^ExecStart=/.*/taskq serve --foreground --grace 30s$' \
		"$BUILD_ROOT/contrib/taskq.service" || fail "the built unit's ExecStart: $(grep ExecStart= "$BUILD_ROOT/contrib/taskq.service")"
fi

if ! command -v systemd-analyze >/dev/null; then
	say_skip "no systemd-analyze: the unit is not verified"
else
	check "systemd-analyze verify: no warning (system and user manager)"
	# as installed: ExecStart with an absolute path (here the built binary),
	# and man:taskq(1) found (the built page, when there is one and man runs)
	mkdir -p "$TQ_TMP/unit" "$TQ_TMP/man/man1" "$TQ_TMP/xdg-run"
	chmod 700 "$TQ_TMP/xdg-run"
	sed "s|^ExecStart=taskq |ExecStart=$TASKQ_BIN |" "$UNIT" >"$TQ_TMP/unit/taskq.service"
	if [ -n "$PAGE" ] && command -v man >/dev/null; then
		cp "$PAGE" "$TQ_TMP/man/man1/taskq.1"
	else
		sed -i '/^Documentation=/d' "$TQ_TMP/unit/taskq.service"
	fi
	for mode in --system --user; do
		run env MANPATH="$TQ_TMP/man" XDG_RUNTIME_DIR="$TQ_TMP/xdg-run" \
			systemd-analyze "$mode" verify "$TQ_TMP/unit/taskq.service"
		if [ "$TQ_RC" -ne 0 ] && grep -q 'Failed to initialize manager' "$TQ_ERR"; then
			# a container without a usable systemd: nothing to verify against
			say_skip "systemd-analyze $mode cannot start a manager here: $(head -1 "$TQ_ERR")"
			continue
		fi
		[ "$TQ_RC" -eq 0 ] && [ ! -s "$TQ_ERR" ] ||
			fail "systemd-analyze $mode verify (exit $TQ_RC): $(err) $(out)"
	done
fi

# ---------------------------------------------------------------------------
# The crontab example

check "crontab.example: every job line is a valid cron line using taskq's own options"
CRONTAB="$CONTRIB/crontab.example"
"$TQ_PYTHON" - "$CRONTAB" <<'PY' >"$TQ_TMP/cronjobs" || fail "$(cat "$TQ_TMP/cronjobs")"
import re, sys
jobs = 0
for n, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    line = line.rstrip("\n")
    if not line.strip() or line.lstrip().startswith("#"):
        continue
    if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", line):
        continue  # a variable
    f = line.split(None, 5)
    if len(f) < 6 or not all(re.fullmatch(r"[0-9*/,-]+", x) for x in f[:5]):
        print(f"line {n}: not 5 time fields and a command: {line}")
        sys.exit(1)
    # cron turns an unescaped % into a newline
    if re.search(r"(?<!\\)%", f[5]):
        print(f"line {n}: an unescaped % (write \\%): {line}")
        sys.exit(1)
    jobs += 1
    print(f[5].replace("\\%", "%"))
if jobs == 0:
    print("no job lines")
    sys.exit(1)
PY
jobs=$(cat "$TQ_TMP/cronjobs")
for want in "--unique" "--batch" "wait --batch" "taskq drain"; do
	assert_contains "$jobs" "$want" "crontab.example uses $want"
done
grep -q '^TASKQ_HOME=/' "$CRONTAB" || fail "crontab.example must set TASKQ_HOME (cron's environment is minimal)"
while IFS= read -r job; do
	bash -n <<<"$job" 2>"$TQ_TMP/sh.err" || fail "crontab.example: not valid shell: $job: $(cat "$TQ_TMP/sh.err")"
	# each "taskq CMD --opt" in the line: CMD takes --opt
	mapfile -t uses < <(grep -oE 'taskq [a-z]+( +(-[-a-z]+|"[^"]*"|[^ ;|&]+))*' <<<"$job")
	for use in "${uses[@]}"; do
		read -r -a ws <<<"$use"
		c=${ws[1]}
		[ -n "${HELP_OPTS[$c]+x}" ] || fail "crontab.example: unknown command taskq $c"
		takes=" ${HELP_OPTS[$c]} "
		# ask takes every submit option
		[ "$c" = ask ] && takes+="${HELP_OPTS[submit]} "
		for w in "${ws[@]:2}"; do
			case $w in
			--) break ;;
			--*)
				o=${w%%=*}
				assert_contains "$takes" " $o " "crontab.example: taskq $c takes $o"
				;;
			esac
		done
	done
done <<<"$jobs"
