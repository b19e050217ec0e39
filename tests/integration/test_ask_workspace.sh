#!/usr/bin/env bash
# test_ask_workspace.sh - isolated workspaces of `taskq ask`, with the fake
# agents and two probe profiles (sh scripts) on PATH:
#   - the agent runs in STATE/work/taskq-UUID, which holds the sources as
#     symlinks, prompt.md, the owner file and empty MCP configs for every
#     known agent; {workdir}, {prompt_file}, {mcp_config}, {task_id} name
#     them; PWD is the workspace; claude gets --mcp-config and
#     --strict-mcp-config;
#   - it is removed when the task ends: succeeded, failed, timed out;
#   - a source gone by run time: spawn_failed, the reason naming it, and no
#     workspace left;
#   - an isolated --session chain uses one workspace path in turn, so the
#     second link resumes the first's session (claude keeps sessions by
#     directory);
#   - the sweep (a supervisor's start) removes workspaces of finished, gone
#     and dead-interactive owners and old ownerless ones, and those in
#     $TMPDIR that name this state directory; it keeps those of running and
#     waiting tasks, young ownerless ones, and other state directories';
#   - --interactive: the agent runs in the foreground with our stdin and
#     stdout, in a workspace that is gone afterwards; its exit status is
#     ours; nothing is queued; --session resumes the chain's session.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"

PATH="$(fake_agents_path):$PATH"
export PATH
REC="$TQ_TMP/rec.jsonl"
fake_agent_args claude --record "$REC" --key-order real
mkdir -p "$TQ_TMP/proj" "$TQ_TMP/src/dir" "$TQ_TMP/tmp"
echo "the notes" >"$TQ_TMP/src/notes.txt"
echo "inside" >"$TQ_TMP/src/dir/file"
cd "$TQ_TMP/proj" || exit 1
export TMPDIR="$TQ_TMP/tmp" # where the sweep also looks (workers inherit it)
WORK="$TASKQ_HOME/work"

# probe: what the agent sees, written to $PROBE_OUT.
cat >"$TQ_TMP/probe.sh" <<'EOF'
#!/bin/sh
# args: WORKDIR PROMPT_FILE MCP_CONFIG TASK_ID
{
	echo "cwd=$(pwd -P)"
	echo "pwd=$PWD"
	echo "args=$1|$2|$3|$4"
	echo "ls=$(ls -A | tr '\n' ' ')"
	echo "notes=$(readlink notes)|$(cat notes)"
	echo "dir=$(cat dir/file)"
	echo "prompt=$(cat prompt.md)"
	echo "mcp=$(cat .mcp.json)"
	echo "cursor=$(cat .cursor/mcp.json)"
	echo "gemini=$(cat .gemini/settings.json)"
	echo "opencode=$(cat opencode.json)"
	echo "owner=$(cat .taskq-task)"
	echo "mode=$(stat -c %a .)"
} >"$PROBE_OUT"
exec sleep "${PROBE_SLEEP:-0}"
EOF
chmod +x "$TQ_TMP/probe.sh"
cat >"$TQ_TMP/config.json" <<EOF
{"profiles": {
  "probe": {"command": ["$TQ_TMP/probe.sh", "{workdir}", "{prompt_file}", "{mcp_config}",
                        "{task_id}", "{?prompt}"],
            "isolate": true, "timeout": "2m"},
  "probe-i": {"command": ["true", "{prompt}"],
              "interactive": ["$TQ_TMP/probe.sh", "{workdir}", "{prompt_file}", "{mcp_config}",
                              "{?task_id}x"]}}}
EOF
export TASKQ_CONFIG="$TQ_TMP/config.json"

ask() { "$TASKQ_BIN" ask "$@"; }
ws_count() { find "$WORK" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
probe() { grep "^$1=" "$PROBE_OUT" | cut -d= -f2-; }

serve_start 2

check "an isolated run: the workspace's contents as the agent sees them"
export PROBE_OUT="$TQ_TMP/probe1.out"
id=$(ask --agent probe --source notes="$TQ_TMP/src/notes.txt" --source dir="$TQ_TMP/src/dir" \
	--retries 0 "the prompt text")
wait_state "$id" succeeded
ws=$(probe cwd)
case $ws in "$WORK"/taskq-????????-????-4???-????-????????????) ;;
*) fail "the agent ran in [$ws], not in a workspace under $WORK" ;; esac
assert_eq "$ws" "$(probe pwd)" "PWD"
assert_eq "$ws|$ws/prompt.md|$ws/.mcp.json|$id" "$(probe args)" "placeholders"
assert_eq ".cursor .gemini .mcp.json .taskq-task dir notes opencode.json prompt.md " \
	"$(probe ls | tr ' ' '\n' | sort | grep . | tr '\n' ' ')" "files"
assert_eq "$TQ_TMP/src/notes.txt|the notes" "$(probe notes)" "a source is a symlink"
assert_eq "inside" "$(probe dir)" "a directory source"
assert_eq "the prompt text" "$(probe prompt)" "prompt.md"
assert_eq '{"mcpServers":{}}' "$(probe mcp)" ".mcp.json"
assert_eq '{"mcpServers":{}}' "$(probe cursor)" ".cursor/mcp.json"
assert_eq '{"mcpServers":{},"general":{"maxAttempts":1}}' "$(probe gemini)" ".gemini/settings.json"
assert_eq '{"$schema":"https://opencode.ai/config.json","mcp":{}}' "$(probe opencode)" "opencode.json"
assert_eq "{\"task\":$id,\"attempt\":1,\"home\":\"$TASKQ_HOME\"}" "$(probe owner)" "owner file"
assert_eq 700 "$(probe mode)" "workspace mode"
wait_for "[ ! -e '$ws' ]" 10 || fail "workspace $ws left behind"
[ -e "$TQ_TMP/src/notes.txt" ] && [ -e "$TQ_TMP/src/dir/file" ] ||
	fail "removing the workspace touched a source"

check "claude --isolate: --mcp-config with the empty .mcp.json, --strict-mcp-config; removed after"
id=$(ask --isolate --retries 0 "isolated hello")
wait_state "$id" succeeded
ws=$("$TQ_PYTHON" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readlines()[-1])["cwd"])' "$REC")
assert_contains "$ws" "$WORK/taskq-" "claude's cwd"
assert_contains "$(tail -n 1 "$REC")" "\"--mcp-config\", \"$ws/.mcp.json\", \"--strict-mcp-config\", \"--\", \"isolated hello\"" \
	"claude argv"
wait_for "[ ! -e '$ws' ]" 10 || fail "workspace $ws left behind"

check "removed after a failure and after a timeout"
fake_agent_args claude --record "$REC" --mode rate_limit
id=$(ask --isolate --retries 0 "fail")
wait_state "$id" failed
fake_agent_args claude --record "$REC" --sleep 30
id2=$(ask --isolate --retries 0 --timeout 1s --kill-grace 1s "hang")
wait_state "$id2" timed_out 20
fake_agent_args claude --record "$REC" --key-order real
wait_for "[ \"\$(ws_count)\" -eq 0 ]" 10 || fail "workspaces left: $(ls -A "$WORK")"

check "a source gone by the time the task runs: spawn_failed, naming it; no workspace"
cp "$TQ_TMP/src/notes.txt" "$TQ_TMP/src/gone.txt"
id=$(ask --source gone="$TQ_TMP/src/gone.txt" --delay 1s --retries 0 "late")
rm "$TQ_TMP/src/gone.txt"
wait_state "$id" failed
assert_eq spawn_failed "$(outcome_of "$id")" "outcome"
assert_contains "$(task_field "$id" reason)" \
	"source \"gone\": $TQ_TMP/src/gone.txt: No such file or directory" "reason"
assert_eq 0 "$(ws_count)" "workspaces"

check "an isolated --session chain: one workspace path in turn, the second resumes the first"
s1=$(ask --isolate --session iso --retries 0 "remember kiwi")
s2=$(ask --isolate --session iso --retries 0 "which fruit?")
wait_state "$s1" succeeded
wait_state "$s2" succeeded
sid=$(attempts_of "$s1" agent_session)
[ -n "$sid" ] || fail "task $s1 stored no agent session"
c1=$("$TQ_PYTHON" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readlines()[-2])["cwd"])' "$REC")
c2=$("$TQ_PYTHON" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readlines()[-1])["cwd"])' "$REC")
assert_eq "$c1" "$c2" "the session's workspace path"
assert_contains "$(tail -n 1 "$REC")" "\"--resume\", \"$sid\"" "the second link resumes"
assert_eq "$sid" "$(attempts_of "$s2" agent_session)" \
	"the fake found the session in that directory"
wait_for "[ \"\$(ws_count)\" -eq 0 ]" 10 || fail "workspaces left: $(ls -A "$WORK")"

check "the sweep: stale workspaces go, those of running and waiting tasks stay"
done_id=$s1
waiting=$(ask --agent probe --delay 1h "later")
export PROBE_OUT="$TQ_TMP/probe-run.out" PROBE_SLEEP=60
running=$(ask --agent probe --retries 0 "keep running")
wait_state "$running" running
wait_for "[ -s '$PROBE_OUT' ]" 10 || fail "the running probe did not start"
run_ws=$(probe cwd)
unset PROBE_SLEEP
# plant: name OWNER-JSON [DIR]
plant() {
	local d="${3:-$WORK}/taskq-$1"
	mkdir -p "$d/sub"
	echo x >"$d/sub/file"
	ln -s "$TQ_TMP/src/notes.txt" "$d/notes"
	[ -z "$2" ] || printf '%s' "$2" >"$d/.taskq-task"
}
H=$TASKQ_HOME
plant 00000000-0000-4000-8000-000000000001 "{\"task\":$done_id,\"attempt\":1,\"home\":\"$H\"}"
plant 00000000-0000-4000-8000-000000000002 "{\"task\":99999,\"attempt\":1,\"home\":\"$H\"}"
plant 00000000-0000-4000-8000-000000000003 "{\"task\":$waiting,\"attempt\":0,\"home\":\"$H\"}"
plant 00000000-0000-4000-8000-000000000004 ""
plant 00000000-0000-4000-8000-000000000005 ""
touch -d '3 hours ago' "$WORK/taskq-00000000-0000-4000-8000-000000000005"
plant 00000000-0000-4000-8000-000000000006 "{\"pid\":999999999,\"start\":1,\"home\":\"$H\"}"
plant 00000000-0000-4000-8000-000000000007 "{\"task\":$running,\"attempt\":1,\"home\":\"$H\"}"
plant 00000000-0000-4000-8000-000000000008 "{\"task\":$running,\"attempt\":0,\"home\":\"$H\"}"
plant 00000000-0000-4000-8000-000000000009 "{\"pid\":$$,\"start\":$(cut -d' ' -f22 /proc/$$/stat),\"home\":\"$H\"}"
plant 00000000-0000-4000-8000-000000000010 "{\"task\":$done_id,\"attempt\":1,\"home\":\"$H\"}" "$TMPDIR"
plant 00000000-0000-4000-8000-000000000011 "{\"task\":$done_id,\"attempt\":1,\"home\":\"/elsewhere\"}" "$TMPDIR"
plant 00000000-0000-4000-8000-000000000012 "" "$TMPDIR"
mkdir -p "$WORK/not-a-workspace"
# A new supervisor sweeps at start; the old one's workers (and the running
# task) carry on and are adopted.
kill -KILL "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null || true
serve_start 2
gone() { [ ! -e "$WORK/taskq-00000000-0000-4000-8000-0000000000$1" ]; }
wait_for "gone 01 && gone 02 && gone 05 && gone 06 && gone 08" 15 ||
	fail "stale workspaces left: $(ls -A "$WORK")"
wait_for "[ ! -e '$TMPDIR/taskq-00000000-0000-4000-8000-000000000010' ]" 5 ||
	fail "a stale workspace of ours in \$TMPDIR was left"
for k in 03 04 07 09; do
	gone "$k" && fail "workspace $k was removed"
done
[ -d "$TMPDIR/taskq-00000000-0000-4000-8000-000000000011" ] || fail "another state directory's workspace was removed"
[ -d "$TMPDIR/taskq-00000000-0000-4000-8000-000000000012" ] || fail "an ownerless \$TMPDIR directory was removed"
[ -d "$WORK/not-a-workspace" ] || fail "a directory that is no workspace was removed"
[ -d "$run_ws" ] || fail "the running task's workspace was removed"
[ -e "$TQ_TMP/src/notes.txt" ] || fail "the sweep removed a symlink's target"
assert_eq running "$(state_of "$running")" "the running task"
grep -q "removed 6 workspaces of finished tasks" "$TQ_TMP/serve.log" ||
	fail "the supervisor did not report the sweep: $(grep -i workspace "$TQ_TMP/serve.log")"
tq kill "$running" >/dev/null
wait_state "$running" killed
wait_for "[ ! -e '$run_ws' ]" 10 || fail "the killed task's workspace was left"
tq cancel "$waiting" >/dev/null

check "--interactive: foreground, our stdin and stdout, a workspace gone afterwards, its status"
n0=$(task_count)
fake_agent_args claude --record "$REC" --key-order real --stdin --result "got {prompt}"
run sh -c 'printf "abc" | "$0" ask --interactive "hi there"' "$TASKQ_BIN"
assert_eq 0 "$TQ_RC" "exit status ($(err))"
assert_eq "got hi there" "$(out)" "the agent wrote to our stdout"
assert_contains "$(err)" "stdin 3 bytes" "the agent read our stdin"
line=$(tail -n 1 "$REC")
iws=$("$TQ_PYTHON" -c 'import json,sys; print(json.loads(sys.argv[1])["cwd"])' "$line")
assert_contains "$iws" "$WORK/taskq-" "interactive cwd"
assert_contains "$line" "\"argv\": [\"$FAKE_AGENTS_DIR/claude\", \"--mcp-config\", \"$iws/.mcp.json\", \"--strict-mcp-config\", \"--\", \"hi there\"]" \
	"interactive argv (no -p, no stream-json)"
[ ! -e "$iws" ] || fail "the interactive workspace $iws was left"
fake_agent_args claude --record "$REC" --exit 7
assert_exit 7 ask --interactive "exit seven"
fake_agent_args claude --record "$REC" --key-order real
assert_eq "$n0" "$(task_count)" "--interactive stores no task"

check "--interactive with a probe: the workspace's files; --session resumes the chain"
export PROBE_OUT="$TQ_TMP/probe-i.out"
assert_exit 0 ask --interactive --agent probe-i --source notes="$TQ_TMP/src/notes.txt" "interactive prompt"
ws=$(probe cwd)
assert_eq "$ws|$ws/prompt.md|$ws/.mcp.json|" "$(probe args)" "placeholders ({task_id}: none)"
assert_eq "interactive prompt" "$(probe prompt)" "prompt.md"
assert_eq "$TQ_TMP/src/notes.txt|the notes" "$(probe notes)" "source"
assert_contains "$(probe owner)" "\"pid\":" "owner: the interactive process"
[ ! -e "$ws" ] || fail "workspace $ws left"
assert_exit 0 ask --interactive --session iso "and now?"
assert_contains "$(tail -n 1 "$REC")" "\"--resume\", \"$sid\"" "interactive --session resumes"
assert_eq "$c1" "$("$TQ_PYTHON" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readlines()[-1])["cwd"])' "$REC")" \
	"in the session's workspace path"
assert_exit 2 ask --interactive --source nope="$TQ_TMP/nope" "x"
assert_one_line_error
assert_eq 0 "$(find "$WORK" -mindepth 1 -maxdepth 1 -name 'taskq-*' ! -name 'taskq-00000000-*' | wc -l)" \
	"workspaces left by --interactive"
