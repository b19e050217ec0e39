#!/usr/bin/env bash
# test_ask.sh - `taskq ask` with the fake agents (tests/fixtures/fakeagent as
# claude, gemini, codex and opencode on PATH, recording each run):
#   - each built-in profile runs the command its real CLI accepts (argv,
#     cwd, the profile's environment), named after the agent, grouped by
#     program, with the profile's timeout; the result is parsed;
#   - --model and {session_id}: a two-task --session chain where the second
#     runs `--resume <the first's agent session>`;
#   - the submitter's agent-session variables (CLAUDECODE=1,
#     CLAUDE_CODE_SESSION_ID=x) do not reach the agent; --env and --unset
#     win over the profile's settings;
#   - the prompt from an argument (after --, starting with '-'), from
#     --prompt-file, from stdin; one over 100 KiB goes on the agent's stdin;
#   - --wait and --json as submit; a profile of the user's config (extends);
#   - usage errors exit 2 with one line: a missing --source, an unknown
#     agent, an empty prompt, a broken config file.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"

PATH="$(fake_agents_path):$PATH"
export PATH
REC="$TQ_TMP/rec.jsonl"
for a in claude gemini codex opencode; do
	fake_agent_args "$a" --record "$REC" --key-order real
done
mkdir -p "$TQ_TMP/proj"
cd "$TQ_TMP/proj" || exit 1

ask() { "$TASKQ_BIN" ask "$@"; }

# rec N EXPR: Python expression EXPR over the Nth recorded run (d; 1-based,
# -1 the last), printed as pyjson does.
rec() {
	"$TQ_PYTHON" - "$REC" "$1" "$2" <<'EOF'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
d = runs[int(sys.argv[2]) - 1 if int(sys.argv[2]) > 0 else int(sys.argv[2])]
r = eval(sys.argv[3])
print(json.dumps(r) if isinstance(r, (list, tuple, dict, bool)) or r is None else r)
EOF
}
runs() { if [ -f "$REC" ]; then wc -l <"$REC"; else echo 0; fi; }

# The recorded argv without the program's path, as JSON.
argv_of() { rec "$1" 'd["argv"][1:]'; }

col() { task_field "$1" "$2"; }

serve_start 2

check "claude: the built-in profile's command, cwd and environment; name, group, timeout"
CLAUDECODE=1 CLAUDE_CODE_SESSION_ID=x CLAUDE_CODE_ENTRYPOINT=cli AI_AGENT=claude-code \
	CLAUDE_CODE_MAX_RETRIES=9 run ask --retries 0 "review the code"
assert_eq 0 "$TQ_RC" "ask exit status ($(err))"
id=$(out)
[[ $id =~ ^[0-9]+$ ]] || fail "ask printed [$id], not an id"
wait_state "$id" succeeded
assert_eq '["-p", "--output-format", "stream-json", "--verbose", "--", "review the code"]' \
	"$(argv_of 1)" "claude argv"
assert_eq "$TQ_TMP/proj" "$(rec 1 'd["cwd"]')" "claude cwd"
assert_eq "0" "$(rec 1 'd["env"].get("CLAUDE_CODE_MAX_RETRIES")')" \
	"the profile turns claude's own retries off, over the submitter's setting"
assert_eq "None|None|None|None" \
	"$(rec 1 '"|".join(str(d["env"].get(k)) for k in ("CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_ENTRYPOINT", "AI_AGENT"))')" \
	"agent-session variables of the submitter"
assert_eq "claude|claude|claude|3600000|false" \
	"$(task_field "$id" name group agent timeout_ms isolate)" "task fields"
assert_eq "review the code" "$(col "$id" prompt)" "stored prompt"
assert_exit 0 tq show "$id"
assert_contains "$(out)" '"{?session_id}--resume"' "show: the template"
assert_eq "Hello from fakeagent." "$(attempts_of "$id" result)" "parsed result (its one attempt)"

check "gemini, codex, opencode: each profile's command, with --model"
g=$(ask --agent gemini --model gemini-2.5-flash --retries 0 "g prompt")
c=$(ask --agent codex --model gpt-5 --retries 0 "c prompt")
o=$(ask --agent opencode --model prov/m1 --retries 0 "o prompt")
for t in "$g" "$c" "$o"; do wait_state "$t" succeeded; done
for n in 2 3 4; do
	case $(rec "$n" 'd["style"]') in
	gemini)
		assert_eq '["--output-format", "stream-json", "--model=gemini-2.5-flash", "--prompt=g prompt"]' \
			"$(argv_of "$n")" "gemini argv"
		assert_eq true "$(rec "$n" 'd["env"].get("GEMINI_CLI_TRUST_WORKSPACE")')" "gemini env" ;;
	codex)
		assert_eq '["exec", "--json", "--skip-git-repo-check", "-m", "gpt-5", "--", "c prompt"]' \
			"$(argv_of "$n")" "codex argv" ;;
	opencode)
		assert_eq '["run", "--format", "json", "--model=prov/m1", "--", "o prompt"]' \
			"$(argv_of "$n")" "opencode argv"
		assert_eq 1 "$(rec "$n" 'd["env"].get("OPENCODE_DISABLE_AUTOUPDATE")')" "opencode env" ;;
	*) fail "run $n: unexpected style $(rec "$n" 'd["style"]')" ;;
	esac
done
assert_eq "gemini|gemini|gemini-2.5-flash" "$(task_field "$g" name group model)" \
	"gemini task"
assert_eq "codex|gpt-5" "$(task_field "$c" name model)" "codex task"
assert_eq "opencode|prov/m1" "$(task_field "$o" name model)" "opencode task"
assert_eq "Hello from fakeagent." "$(attempts_of "$c" result)" "codex result"

check "--session: the second task resumes the first's agent session"
s1=$(ask --session chat --retries 0 "remember kiwi")
s2=$(ask --session chat --retries 0 --model opus "which fruit?")
wait_state "$s1" succeeded
wait_state "$s2" succeeded
first=$(attempts_of "$s1" agent_session)
[ -n "$first" ] || fail "task $s1 stored no agent session"
assert_eq "[\"-p\", \"--output-format\", \"stream-json\", \"--verbose\", \"--model\", \"opus\", \"--resume\", \"$first\", \"--\", \"which fruit?\"]" \
	"$(argv_of -1)" "the second link's command"
assert_eq "$first" "$(attempts_of "$s2" agent_session)" \
	"the resumed session keeps its id"

check "--env and --unset win over the profile's settings"
n0=$(runs)
id=$(ask --env CLAUDE_CODE_MAX_RETRIES=5 --env EXTRA=1 --retries 0 "env one")
wait_state "$id" succeeded
assert_eq "5|1" "$(rec -1 'str(d["env"].get("CLAUDE_CODE_MAX_RETRIES")) + "|" + d["env"].get("EXTRA")')" "--env"
id=$(ask --unset CLAUDE_CODE_MAX_RETRIES --retries 0 "env two")
wait_state "$id" succeeded
assert_eq "None" "$(rec -1 'str(d["env"].get("CLAUDE_CODE_MAX_RETRIES"))')" "--unset"
assert_eq $((n0 + 2)) "$(runs)" "runs"

check "the prompt: after --, from --prompt-file, from stdin"
id=$(ask --retries 0 -- "-starts with a dash")
wait_state "$id" succeeded
assert_eq "-starts with a dash" "$(rec -1 'd["argv"][-1]')" "a prompt starting with -"
printf 'line one\nline two\n' >"$TQ_TMP/p.md"
id=$(ask --retries 0 --prompt-file "$TQ_TMP/p.md")
wait_state "$id" succeeded
assert_eq "$(printf 'line one\nline two\n')" "$(rec -1 'd["argv"][-1]')" "--prompt-file"
id=$(printf 'from stdin' | ask --retries 0)
wait_state "$id" succeeded
assert_eq "from stdin" "$(rec -1 'd["argv"][-1]')" "stdin"

check "a prompt over 100 KiB goes on the agent's stdin, not in argv"
"$TQ_PYTHON" -c 'import sys; sys.stdout.write("x" * 150000 + " END")' >"$TQ_TMP/big.md"
id=$(ask --retries 0 --prompt-file "$TQ_TMP/big.md")
wait_state "$id" succeeded
assert_eq '["-p", "--output-format", "stream-json", "--verbose", "--"]' "$(argv_of -1)" "argv without the prompt"
assert_eq "150004|True" "$(rec -1 'str(d["stdin_bytes"]) + "|" + str(d["prompt"].endswith(" END"))')" \
	"the agent read the prompt on stdin"
assert_eq file "$(col "$id" stdin)" "stored stdin"
run ask --agent opencode --stdin-file "$TQ_TMP/p.md" --prompt-file "$TQ_TMP/big.md"
assert_eq 2 "$TQ_RC" "a long prompt with a stdin of the user's"
assert_one_line_error

check "--wait prints the answer (test_ask_wait.sh has the rest); --json works as for submit"
assert_exit 0 ask --wait=20s --retries 0 "wait for me"
assert_eq "Hello from fakeagent." "$(out)" "--wait prints the answer, not the stream"
assert_exit 0 ask --json --retries 0 "json please"
[[ $(out) =~ ^\{\"id\":([0-9]+)\}$ ]] || fail "--json printed [$(out)]"
wait_state "${BASH_REMATCH[1]}" succeeded
fake_agent_args claude --record "$REC" --mode rate_limit
assert_exit 1 ask --wait=20s --retries 0 "fail for me"
fake_agent_args claude --record "$REC" --key-order real

check "a profile from the user's config (extends claude), and the default agent"
cat >"$TQ_TMP/config.json" <<'EOF'
{"default_agent": "reviewer",
 "profiles": {"reviewer": {"extends": "claude", "model": "haiku",
   "env": {"REVIEWER": "yes"},
   "command": ["claude", "-p", "--output-format", "stream-json", "--verbose",
               "--max-turns", "3", "{?model}--model", "{model}", "--", "Review: {prompt}"]}}}
EOF
export TASKQ_CONFIG="$TQ_TMP/config.json"
id=$(ask --retries 0 "src/")
wait_state "$id" succeeded
assert_eq '["-p", "--output-format", "stream-json", "--verbose", "--max-turns", "3", "--model", "haiku", "--", "Review: src/"]' \
	"$(argv_of -1)" "the user's profile"
assert_eq "yes|0" "$(rec -1 'd["env"].get("REVIEWER") + "|" + d["env"].get("CLAUDE_CODE_MAX_RETRIES")')" \
	"its env, on top of claude's"
assert_eq "reviewer|reviewer" "$(task_field "$id" name agent)" "name and agent"

check "usage errors: one line, exit 2"
n0=$(task_count)
printf '{"profiles": {"claude": {"comand": ["x"]}}}' >"$TQ_TMP/config.json"
assert_exit 2 ask "hi"
assert_one_line_error
assert_contains "$(err)" "$TQ_TMP/config.json: profile \"claude\": unknown field \"comand\"" "bad config"
printf '{"profiles": ' >"$TQ_TMP/config.json"
assert_exit 2 ask "hi"
assert_one_line_error
assert_contains "$(err)" "invalid JSON" "broken JSON"
unset TASKQ_CONFIG
assert_exit 2 ask --source notes="$TQ_TMP/no-such-file" "hi"
assert_one_line_error
assert_eq "taskq: ask: source \"notes\": $TQ_TMP/no-such-file: No such file or directory" "$(err)" "missing source"
assert_exit 2 ask --source "bad" "hi"
assert_one_line_error
assert_exit 2 ask --source prompt.md="$TQ_TMP/p.md" "hi"
assert_contains "$(err)" "workspace has a file of this name" "reserved source name"
assert_exit 2 ask --agent nosuch "hi"
assert_eq 'taskq: ask: unknown agent "nosuch" (known: claude, gemini, codex, opencode)' "$(err)" "unknown agent"
assert_exit 2 ask "   "
assert_one_line_error
assert_exit 2 ask </dev/null
assert_one_line_error
assert_exit 2 ask one two
assert_one_line_error
assert_exit 2 ask --interactive --batch b "hi"
assert_one_line_error
assert_exit 2 ask --shell "echo" "hi"
assert_one_line_error
assert_eq "$n0" "$(task_count)" "nothing was stored"

check "ask --help"
assert_exit 0 ask --help
assert_contains "$(out)" "taskq ask [--agent NAME]" "synopsis"
assert_contains "$(out)" "--interactive" "help"
