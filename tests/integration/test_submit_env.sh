#!/usr/bin/env bash
# test_submit_env.sh - the environment a task is stored with: the
# submitter's minus the scrub list (built in, plus $TASKQ_SCRUB_ENV), then
# --unset, then --env; --clean-env starts from nothing. Read through show
# --json --show-env, and checked against the environment the task runs with.
. "$(dirname "$0")/lib.sh"

scrubbed=(CLAUDECODE CLAUDE_CODE_ENTRYPOINT CLAUDE_CODE_SESSION_ID
	CLAUDE_CODE_CHILD_SESSION CLAUDE_CODE_SSE_PORT CLAUDE_CODE_EXECPATH
	AI_AGENT CLAUDE_EFFORT CLAUDE_CODE_RETRY_WATCHDOG)

# Is "K=V" (a whole line), or a variable NAME, in task ID's stored
# environment? The environment of the last ID asked for is cached.
load_env() {
	if [ "${cached_id:-}" != "$1" ]; then
		cached_env=$(task_env "$1")
		cached_id=$1
	fi
}
# (here-strings, not pipes: grep -q leaves early, and under pipefail the
# writer's SIGPIPE would fail the check)
has_env() { load_env "$1"; grep -qxF -- "$2" <<<"$cached_env"; }
has_name() { load_env "$1"; grep -q "^$2=" <<<"$cached_env"; }

check "the scrub list is left out; everything else passes through"
assert_exit 0 env CLAUDECODE=1 CLAUDE_CODE_ENTRYPOINT=cli CLAUDE_CODE_SESSION_ID=s \
	CLAUDE_CODE_CHILD_SESSION=1 CLAUDE_CODE_SSE_PORT=1234 CLAUDE_CODE_EXECPATH=/x \
	AI_AGENT=x CLAUDE_EFFORT=high CLAUDE_CODE_RETRY_WATCHDOG=1 \
	FOO=bar CLAUDE_CODE_MAX_RETRIES=7 ANTHROPIC_API_KEY=sk-test \
	ANTHROPIC_BASE_URL=http://127.0.0.1:9 'ODD=a b\c' $'BIN=\xff\xfe' \
	"$TASKQ_BIN" submit -- env -0
id=$(out)
for v in "${scrubbed[@]}"; do
	has_name "$id" "$v" && fail "$v was not scrubbed"
done
for kv in FOO=bar CLAUDE_CODE_MAX_RETRIES=7 ANTHROPIC_API_KEY=sk-test \
	ANTHROPIC_BASE_URL=http://127.0.0.1:9 'ODD=a b\c' "HOME=$HOME"; do
	has_env "$id" "$kv" || fail "$kv missing from the stored environment"
done

check "show --json reports the environment the task runs with (and taskq's two variables)"
assert_exit 0 tq drain --workers 1
ran=$(tq log "$id" --offset 0 --raw | tr '\0' '\n' | grep -av '^TASKQ_TASK_' | sort)
assert_eq "$(task_env "$id" | sort)" "$ran"
assert_contains "$ran" $'BIN=\xff\xfe' "a value that is not UTF-8"
assert_eq "TASKQ_TASK_HOME=$TASKQ_HOME
TASKQ_TASK_ID=$id" "$(tq log "$id" --offset 0 --raw | tr '\0' '\n' | grep -a '^TASKQ_TASK_' | sort)"

check "TASKQ_SCRUB_ENV adds names (comma-separated, spaces ignored)"
assert_exit 0 env TASKQ_SCRUB_ENV='MY_SESSION, OTHER ,' MY_SESSION=1 OTHER=2 KEEP=3 \
	CLAUDECODE=1 "$TASKQ_BIN" submit true
id=$(out)
has_name "$id" MY_SESSION && fail "MY_SESSION not scrubbed"
has_name "$id" OTHER && fail "OTHER not scrubbed"
has_name "$id" CLAUDECODE && fail "the defaults still apply"
has_env "$id" KEEP=3 || fail "KEEP missing"

check "--env sets and overrides, --unset removes, in env(1)'s order"
assert_exit 0 env FOO=old GONE=1 "$TASKQ_BIN" submit --env FOO=new --env 'NEW=x=y' \
	--env EMPTY= --unset GONE --unset NEVER_SET -- true
id=$(out)
has_env "$id" FOO=new || fail "FOO not overridden"
load_env "$id"
assert_eq 1 "$(grep -c '^FOO=' <<<"$cached_env")" "FOO entries"
has_env "$id" NEW=x=y || fail "NEW missing"
has_env "$id" EMPTY= || fail "EMPTY missing"
has_name "$id" GONE && fail "GONE not unset"
assert_exit 0 env A=1 "$TASKQ_BIN" submit --env A=2 --unset A true
has_env "$(out)" A=2 || fail "--unset applies before --env"

check "--env can set a scrubbed name on purpose"
assert_exit 0 env CLAUDECODE=1 "$TASKQ_BIN" submit --env CLAUDECODE=2 true
id=$(out)
has_env "$id" CLAUDECODE=2 || fail "an explicit --env is kept"

check "--clean-env starts from an empty environment; --env adds to it"
assert_exit 0 env FOO=bar "$TASKQ_BIN" submit --clean-env --env A=1 --env B=2 true
id=$(out)
assert_eq $'A=1\nB=2' "$(task_env "$id")"
assert_exit 0 tq submit --clean-env true
id=$(out)
assert_eq "" "$(task_env "$id")"
assert_exit 0 tq show "$id" --json
assert_eq "[]" "$(out | pyjson 'd["env"]')"

check "bytes that are not UTF-8 in a value are kept exactly"
assert_exit 0 env $'BIN=\xff\xfe' "$TASKQ_BIN" submit true
id=$(out)
has_env "$id" $'BIN=\xff\xfe' || fail "BIN changed"
assert_exit 0 tq show "$id" --json
assert_contains "$(out | pyjson 'd["env_base64"]')" "\"$(printf 'BIN=\xff\xfe' | base64)\"" \
	"env_base64 holds BIN's exact bytes"

check "bad --env / --unset values: one line, exit 2, nothing stored"
n=$(task_count)
for args in "--env NOEQUALS" "--env =v" "--unset A=B" "--unset="; do
	# shellcheck disable=SC2086
	assert_exit 2 tq submit $args true
	assert_one_line_error
done
assert_eq 'taskq: submit: --env "NOEQUALS": expected NAME=VALUE' \
	"$(tq submit --env NOEQUALS true 2>&1 || true)"
assert_eq "$n" "$(task_count)"
