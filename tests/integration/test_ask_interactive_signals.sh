#!/usr/bin/env bash
# test_ask_interactive_signals.sh - `taskq ask --interactive` runs the agent
# in the foreground (src/agent/agent.c run_foreground, through the spawn
# and the event loop of src/proc): in our session and process group, with
# SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD and SIGPIPE at their default and
# nothing blocked; while it runs, SIGTERM and SIGHUP sent to taskq are
# passed on to the agent and SIGINT is not (the terminal sends ^C to the
# whole foreground group: passing it on would make one ^C two); taskq exits
# with the agent's status.
. "$(dirname "$0")/lib.sh"

OUT="$TQ_TMP/agent.out"
cat >"$TQ_TMP/agent.sh" <<'EOF'
#!/bin/sh
# what the agent saw at its start, then each signal it gets, until TERM;
# read with builtins only: a shell waiting for a child blocks signals
while IFS= read -r line; do
	case $line in SigBlk:* | SigIgn:*) echo "$line" ;; esac
done <"/proc/$$/status" >"$AGENT_OUT.status"
read -r stat <"/proc/$$/stat"
echo "$$ ${stat##*) }" >"$AGENT_OUT.stat"
trap 'echo INT >>"$AGENT_OUT"' INT
trap 'echo HUP >>"$AGENT_OUT"' HUP
trap 'echo TERM >>"$AGENT_OUT"; exit 7' TERM
echo ready >>"$AGENT_OUT"
while :; do sleep 0.05; done
EOF
chmod +x "$TQ_TMP/agent.sh"
cat >"$TQ_TMP/config.json" <<EOF
{"profiles": {"sig": {"command": ["true", "{prompt}"], "interactive": ["$TQ_TMP/agent.sh"]}}}
EOF
export TASKQ_CONFIG="$TQ_TMP/config.json" AGENT_OUT="$OUT"

# The signal numbers' bits in a /proc/PID/status mask.
bit() { echo $((1 << ($1 - 1))); }
mask_of() { sed -n "s/^$1:[[:space:]]*//p" "$OUT.status"; }

check "the agent: our session and group, its signals at their default"
# a background job of a script starts with INT and QUIT ignored; a
# terminal's taskq would not: put them back to their default first
tq_bg env --default-signal=INT,QUIT "$TASKQ_BIN" ask --interactive --agent sig "hi"
pid=$TQ_LAST_PID
wait_for "grep -q ready '$OUT'" 20 || fail "the agent did not start: $(cat "$TQ_TMP"/*.err 2>/dev/null)"
read -r apid _state _ppid pgrp sid _ <"$OUT.stat"
assert_eq "$pid" "$pgrp" "the agent's process group"
assert_eq "$pid" "$sid" "the agent's session"
[ "$apid" != "$pid" ] || fail "the agent is taskq itself"
assert_eq 0 $((16#$(mask_of SigBlk))) "signals blocked in the agent"
ign=$((16#$(mask_of SigIgn)))
for sig in 1 2 3 13 15 17; do # HUP INT QUIT PIPE TERM CHLD
	[ $((ign & $(bit $sig))) -eq 0 ] || fail "signal $sig ignored in the agent (SigIgn $(mask_of SigIgn))"
done

check "SIGINT to taskq stays with taskq; SIGHUP is passed on"
kill -INT "$pid"
kill -HUP "$pid"
wait_for "grep -q HUP '$OUT'" 20 || fail "SIGHUP did not reach the agent: $(cat "$OUT")"
_tq_alive "$pid" || fail "taskq died of SIGINT"

check "SIGTERM is passed on; taskq exits with the agent's status"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
assert_eq 7 "$rc" "taskq's exit status"
assert_eq "ready|HUP|TERM" "$(paste -sd'|' "$OUT")" "what the agent got"
