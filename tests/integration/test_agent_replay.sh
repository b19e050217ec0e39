#!/usr/bin/env bash
# test_agent_replay.sh - what taskq stores and shows for outputs recorded byte
# for byte from the real CLIs (tests/fixtures/agent-outputs/*-0.61-*,
# *-0.169-*, *-1.18-*; tests/agents/record-fixtures.sh), replayed through a
# real supervisor and workers by a stand-in program of the CLI's name:
#   - issue 17.2: OpenCode's "Cannot connect to API: The socket connection
#     was closed unexpectedly" and "... Unable to connect. Is the computer
#     able to access the url?" ("isRetryable":true) are network, retried, and
#     `classify --explain` shows the decision (rule opencode.retryable);
#   - issue 17.9: codex and opencode results name the model the task asked
#     for (--model / -m), and `show` says "agent time: - (not reported)",
#     `result --json` duration_ms null, `stats` "agent time: -"; a timed-out
#     gemini that exited 0 on SIGTERM shows EXIT "-", not 0;
#   - issue 17.9: with no model on the command line, a codex or opencode
#     result names the one the CLI's config gives the run, read at spawn as
#     the task's environment and directory point at it: codex `-c model=`,
#     --profile's $CODEX_HOME/NAME.config.toml, config.toml; opencode the
#     project's opencode.json (the nearest up to the git root), its
#     .opencode/, $OPENCODE_CONFIG, $OPENCODE_CONFIG_CONTENT, the global
#     ~/.config/opencode, an agent's own model; none anywhere: '-';
#   - issue 16.9: an agent session id that is an option
#     ("--dangerously-skip-permissions") is never stored nor put in the next
#     link's argv, and the attempt's reason says why.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

FIX="$TASKQ_FIXTURES/agent-outputs"
BIN="$TQ_TMP/bin"
mkdir -p "$BIN"
cd "$TQ_TMP" || exit 1

# stand_in NAME: $BIN/NAME replays, on its Nth run, the fixture named in
# $BIN/NAME.N (else the last one listed in $BIN/NAME.plays): its stdout
# (.jsonl), its stderr (.stderr, if any) and its exit status (.rc, else 0),
# and appends its argv (one line, NUL-free) to $BIN/NAME.argv. "hang:F"
# prints F, then sleeps (a request that never returns).
stand_in() {
	cat >"$BIN/$1" <<'EOF'
#!/usr/bin/env bash
me=$(basename "$0"); dir=$(dirname "$0")
printf '%s\n' "$*" >>"$dir/$me.argv"
n=$(( $(cat "$dir/$me.count" 2>/dev/null || echo 0) + 1 )); echo "$n" >"$dir/$me.count"
f=$(sed -n "${n}p" "$dir/$me.plays"); [ -n "$f" ] || f=$(tail -n 1 "$dir/$me.plays")
hang=; case $f in hang:*) hang=1; f=${f#hang:} ;; esac
cat "$FIX/$f.jsonl"
[ -f "$FIX/$f.stderr" ] && cat "$FIX/$f.stderr" >&2
if [ -n "$hang" ]; then
	# as gemini does: SIGTERM ends it with status 0
	trap 'exit 0' TERM
	sleep 1000 & wait
fi
rc=$(cat "$FIX/$f.rc" 2>/dev/null || echo 0)
exit "$rc"
EOF
	chmod +x "$BIN/$1"
	: >"$BIN/$1.argv"
	rm -f "$BIN/$1.count"
	printf '%s\n' "${@:2}" >"$BIN/$1.plays"
}

export FIX
PATH="$BIN:$PATH"
export PATH
serve_start 2

# att ID N FIELD...: fields of attempt N of task ID, joined by '|'.
att() { attempt_field "$@"; }

check "17.2: opencode's dropped connection is network, retried; explain names opencode.retryable"
stand_in opencode opencode-1.18-drop opencode-1.18-success
id=$(tq ask --agent opencode --model mockant/claude-mock --backoff 100ms --backoff-max 100ms \
	--retries 1 "hello")
wait_state "$id" succeeded 30
assert_eq "failed|network" "$(att "$id" 1 outcome category)" "attempt 1"
assert_contains "$(att "$id" 1 reason)" "Cannot connect to API: The socket connection was closed unexpectedly"
assert_exit 0 tq classify --explain "$id" --attempt 1
assert_contains "$(out)" "json opencode.retryable: error.error.data.isRetryable=true -> network"
assert_contains "$(out)" "result: network, transient"

check "17.2: opencode's 'Unable to connect' is network and retried"
stand_in opencode opencode-1.18-refused opencode-1.18-success
id=$(tq ask --agent opencode --backoff 100ms --backoff-max 100ms --retries 1 "hello")
wait_state "$id" succeeded 30
assert_eq "failed|network" "$(att "$id" 1 outcome category)" "attempt 1"
assert_contains "$(att "$id" 1 reason)" "Is the computer able to access the url?"

check "17.9: opencode's result names the model asked for; agent time is '-', not 0ms"
stand_in opencode opencode-1.18-success
id=$(tq ask --agent opencode --model mockant/claude-mock --retries 0 "hello")
wait_state "$id" succeeded 30
assert_eq "mockant/claude-mock|Hello from the mock." "$(att "$id" 1 model result)"
assert_eq "" "$(att "$id" 1 duration_ms)" "duration_ms stored as NULL (with the result above)"
assert_exit 0 tq show "$id"
grep -Eq '^ +agent time: +- \(not reported\)$' "$TQ_OUT" || fail "show: $(grep 'agent time' "$TQ_OUT")"
grep -Eq '^ +model: +mockant/claude-mock$' "$TQ_OUT" || fail "show: $(grep 'model' "$TQ_OUT")"
assert_exit 0 tq result "$id" --json
assert_eq "None|mockant/claude-mock" "$(out | pyjson 'str(d["duration_ms"]) + "|" + d["model"]')"

check "17.9: a plain 'codex exec -m M' names M; stats say agent time '-'"
stand_in codex codex-0.169-success
id=$(submit_id --retries 0 -- codex exec --json -m gpt-mock --skip-git-repo-check -- hello)
wait_state "$id" succeeded 30
assert_eq "gpt-mock|Hello from the mock.|01a20dff-fcbd-7631-ad82-18aa279ff769" \
	"$(att "$id" 1 model result agent_session)"
assert_exit 0 tq stats --group codex
grep -Eq '^agent time: +-$' "$TQ_OUT" || fail "stats: $(grep 'agent time' "$TQ_OUT")"
assert_exit 0 tq stats --group codex --json
assert_eq null "$(out | pyjson 'd["agent_ms"]')" "stats --json agent_ms"

# model_of ID: the model `taskq result ID --json` names ("None": null).
model_of() {
	assert_exit 0 tq result "$1" --json
	out | pyjson 'str(d["model"])'
}

check "17.9: codex without -m: the model of config.toml, --profile's file, -c model="
stand_in codex codex-0.169-success
mkdir -p "$HOME/.codex"
printf 'model = "cfg-model"\nmodel_provider = "openai"\n[notice]\nmodel = "not-this"\n' \
	>"$HOME/.codex/config.toml"
printf '# the profile\nmodel = "prof-model"\n' >"$HOME/.codex/p3.config.toml"
id=$(submit_id --retries 0 -- codex exec --json --skip-git-repo-check -- hello)
id2=$(submit_id --retries 0 -- codex exec --json --profile p3 --skip-git-repo-check -- hello)
id3=$(submit_id --retries 0 -- codex -c 'model="cli-model"' exec --json -p p3 -- hello)
id4=$(submit_id --retries 0 -- codex -c model=bare-model exec --json -- -c model=prompt)
wait_state "$id4" succeeded 30
for i in "$id" "$id2" "$id3"; do wait_state "$i" succeeded 30; done
assert_eq "cfg-model" "$(model_of "$id")" "config.toml"
assert_eq "prof-model" "$(model_of "$id2")" "--profile p3"
assert_eq "cli-model" "$(model_of "$id3")" "-c model= over the profile"
assert_eq "bare-model" "$(model_of "$id4")" "a bare -c value; nothing after --"
assert_exit 0 tq show "$id2"
grep -Eq '^ +model: +prof-model$' "$TQ_OUT" || fail "show: $(grep 'model' "$TQ_OUT")"
assert_exit 0 tq show "$id2" --json
assert_eq "prof-model" "$(out | pyjson 'd["attempts"][-1]["model"]')" "show --json"
CODEX_HOME="$TQ_TMP/codexhome"
export CODEX_HOME
mkdir -p "$CODEX_HOME"
printf "model = 'home-model'\n" >"$CODEX_HOME/config.toml"
id=$(submit_id --retries 0 -- codex exec --json -- hello)
wait_state "$id" succeeded 30
assert_eq "home-model" "$(model_of "$id")" "\$CODEX_HOME/config.toml"
unset CODEX_HOME
rm -rf "$HOME/.codex" "$TQ_TMP/codexhome"
id=$(submit_id --retries 0 -- codex exec --json -- hello)
wait_state "$id" succeeded 30
assert_eq "None" "$(model_of "$id")" "no model anywhere"
assert_exit 0 tq show "$id"
grep -Eq '^ +model: +- \(not reported\)$' "$TQ_OUT" || fail "show: $(grep 'model' "$TQ_OUT")"

check "17.9: opencode without --model: the model its config gives the run"
stand_in opencode opencode-1.18-success
mkdir -p "$HOME/.config/opencode" "$TQ_TMP/proj/.git" "$TQ_TMP/proj/sub/deeper"
printf '{\n  // the user global config\n  "model": "g/global-model"\n}\n' \
	>"$HOME/.config/opencode/opencode.json"
id=$(tq ask --agent opencode --retries 0 "hello")
wait_state "$id" succeeded 30
assert_eq "g/global-model" "$(model_of "$id")" "global"
id=$(tq ask --agent opencode --isolate --retries 0 "hello")
wait_state "$id" succeeded 30
assert_eq "g/global-model" "$(model_of "$id")" "isolated: the workspace's opencode.json names none"
printf '{"model":"p/project-model"}\n' >"$TQ_TMP/proj/opencode.json"
printf '{"model":"p/above-the-repo"}\n' >"$TQ_TMP/opencode.json"
id=$(cd "$TQ_TMP/proj/sub/deeper" && tq ask --agent opencode --retries 0 "hello")
wait_state "$id" succeeded 30
assert_eq "p/project-model" "$(model_of "$id")" "the nearest project file, up to the git root"
rm "$TQ_TMP/opencode.json"
mkdir -p "$TQ_TMP/proj/sub/.opencode"
printf '{"model":"p/dot-model"}\n' >"$TQ_TMP/proj/sub/.opencode/opencode.json"
id=$(cd "$TQ_TMP/proj/sub/deeper" && submit_id --retries 0 -- opencode run --format json -- hello)
wait_state "$id" succeeded 30
assert_eq "p/dot-model" "$(model_of "$id")" ".opencode/ over opencode.json"
printf '{"agent":{"build":{"model":"a/build-model"},"plan":{"model":"a/plan-model"}}}\n' \
	>"$TQ_TMP/proj/sub/deeper/opencode.json"
id=$(cd "$TQ_TMP/proj/sub/deeper" && submit_id --retries 0 -- opencode run --format json -- hello)
id2=$(cd "$TQ_TMP/proj/sub/deeper" &&
	submit_id --retries 0 -- opencode run --agent plan --format json -- hello)
id3=$(cd "$TQ_TMP/proj/sub/deeper" &&
	submit_id --retries 0 -- opencode run -m x/argv-model --format json -- hello)
for i in "$id" "$id2" "$id3"; do wait_state "$i" succeeded 30; done
assert_eq "a/build-model" "$(model_of "$id")" "the build agent's own model"
assert_eq "a/plan-model" "$(model_of "$id2")" "--agent plan"
assert_eq "x/argv-model" "$(model_of "$id3")" "-m first"
rm -rf "$TQ_TMP/proj"
printf '{"model":"e/file-model"}\n' >"$TQ_TMP/oc.json"
id=$(OPENCODE_CONFIG="$TQ_TMP/oc.json" tq ask --agent opencode --retries 0 "hello")
id2=$(OPENCODE_CONFIG_CONTENT='{"model":"e/inline-model"}' tq ask --agent opencode --retries 0 "hello")
for i in "$id" "$id2"; do wait_state "$i" succeeded 30; done
assert_eq "e/file-model" "$(model_of "$id")" "\$OPENCODE_CONFIG"
assert_eq "e/inline-model" "$(model_of "$id2")" "\$OPENCODE_CONFIG_CONTENT"
rm -rf "$HOME/.config/opencode"
id=$(tq ask --agent opencode --retries 0 "hello")
wait_state "$id" succeeded 30
assert_eq "None" "$(model_of "$id")" "no model anywhere"

check "17.9: a timed-out gemini that exited 0 on SIGTERM shows EXIT -, not 0"
stand_in gemini hang:gemini-0.61-stream-sigterm
id=$(submit_id --timeout 2s --retries 0 -- gemini --output-format stream-json --prompt=hello)
wait_state "$id" timed_out 30
assert_eq "1|0" "$(attempts_of "$id" attempt exit_code)" "the real exit status is kept"
assert_exit 0 tq show "$id"
grep -Eq '^exit: +-$' "$TQ_OUT" || fail "show: exit is not '-': $(grep '^exit' "$TQ_OUT")"
grep -Eq '^1 .* timed_out +unknown +- +timed out' "$TQ_OUT" ||
	fail "show: the attempt's EXIT is not '-': $(grep timed_out "$TQ_OUT")"
assert_exit 0 tq list
grep -Eq "^ *$id +timed_out .* - *\$" "$TQ_OUT" || fail "list: EXIT is not '-': $(out)"
assert_exit 0 tq show "$id" --json
assert_eq 0 "$(out | pyjson 'd["exit_code"]')" "show --json keeps the real exit_code"

check "16.9: a session id that is an option is refused, not put in the next link's argv"
stand_in claude claude-2.1-success-session-dash
s1=$(tq ask --session chat --retries 0 "first")
s2=$(tq ask --session chat --retries 0 "second")
wait_state "$s1" succeeded 30
wait_state "$s2" succeeded 30
assert_eq "" "$(att "$s1" 1 agent_session)" "no session id stored"
assert_contains "$(att "$s1" 1 reason)" \
	"agent session id \"--dangerously-skip-permissions\" refused (starts with '-'); the session cannot continue"
grep -q -- "--dangerously-skip-permissions" "$BIN/claude.argv" &&
	fail "the id reached argv: $(cat "$BIN/claude.argv")"
grep -q -- "--resume" "$BIN/claude.argv" && fail "a link resumed: $(cat "$BIN/claude.argv")"
assert_eq 2 "$(wc -l <"$BIN/claude.argv")" "two runs"

check "16.9: an option stored as a session's id (an older taskq) stops the link with a reason"
stand_in codex codex-0.169-success
s1=$(tq ask --agent codex --session evil --retries 0 "first")
wait_state "$s1" succeeded 30
# an older taskq stored such an id; this one refuses to, so only SQL can
tq_sql "update sessions set agent_session = '--dangerously-bypass-approvals-and-sandbox' where key = 'evil'" # SQL: the database itself (a row an older taskq wrote)
: >"$BIN/codex.argv"
s2=$(tq ask --agent codex --session evil --retries 0 "second")
wait_state "$s2" failed 30
assert_contains "$(task_field "$s2" reason)" \
	"agent session id \"--dangerously-bypass-approvals-and-sandb...\" of the session refused (starts with '-'); the session cannot continue"
assert_eq 0 "$(wc -l <"$BIN/codex.argv")" "codex did not run"

echo "ok: $TQ_TEST ($TQ_CHECKS checks)"
