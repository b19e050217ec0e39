#!/usr/bin/env bash
# test_session_cwd_real.sh - a --session's links submitted from two
# directories, with the REAL Claude Code and Gemini CLIs (pinned,
# tests/agents/install-agent.sh; skipped, exit 77, when one cannot be had)
# talking to the mock API (tests/agents/mock_api.py) on 127.0.0.1 (issue 17,
# item 4). Each keeps its conversations per directory: resumed from another,
# claude said "No conversation found with session ID" and gemini exited 42
# ("No previous sessions found for this project"). The second link now runs
# in the first's directory and continues its conversation: it succeeds, the
# mock sees the first turn in its request, and claude keeps the session id.
# Each run takes 2-5 s here: the test about 30 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_agents.sh"
. "$(dirname "$0")/lib_serve.sh"

agent_bin claude
agent_bin gemini
mock_start ok
PATH="$(agent_path claude gemini):$PATH"
export PATH
gemini_setup
A="$TQ_TMP/proj-a"
B="$TQ_TMP/proj-b"
mkdir -p "$A" "$B"

# att ID FIELD: a field of task ID's last attempt.
att() { attempt_field "$1" last "$2"; }

# ended ID: task ID has reached a final state.
ended() { case $(state_of "$1") in succeeded|failed|timed_out|killed|canceled) return 0 ;; esac; return 1; }

# Both agents at once (two workers, a session each): on a loaded machine a
# node CLI can take a minute to start.
serve_start 2
mock_mode ok
declare -A s1 s2
check "the first links, submitted from A"
cd "$A" || exit 1
for agent in claude gemini; do
	s1[$agent]=$(tq ask --agent "$agent" --session "k-$agent" --retries 0 "remember the word kiwi")
done
for agent in claude gemini; do
	wait_state "${s1[$agent]}" succeeded 240
done
check "the second links, submitted from B"
cd "$B" || exit 1
for agent in claude gemini; do
	s2[$agent]=$(tq ask --agent "$agent" --session "k-$agent" --retries 0 \
		"which word did I ask you to remember?")
done
for agent in claude gemini; do
	wait_for "ended ${s2[$agent]}" 240 || fail "task ${s2[$agent]} did not end"
done

for agent in claude gemini; do
	check "$agent: the second link ran in A and continued the first's conversation"
	id=${s2[$agent]}
	assert_eq succeeded "$(state_of "$id")" \
		"the second link ($(task_field "$id" reason); $(tq log "$id" 2>&1 | tail -n 3))"
	assert_eq "$A" "$(task_field "$id" cwd)" "where the second link ran"
	first=$(att "${s1[$agent]}" agent_session)
	[ -n "$first" ] || fail "task ${s1[$agent]} reported no agent session"
	if [ "$agent" = claude ]; then
		assert_eq "$first" "$(att "$id" agent_session)" "claude kept the session id"
	fi
done
check "each API got a request holding both turns (the second link resumed the first)"
for api in anthropic gemini; do
	n=$(_mock_query '
both = [r for r in reqs if r["api"] == sys.argv[2] and all(t in json.dumps(r.get("body"),
        ensure_ascii=False) for t in ("remember the word kiwi", "which word did I ask"))]
print(len(both))' "$api")
	[ "$n" -ge 1 ] || fail "$api: no request held the first turn with the second"
done
