#!/usr/bin/env bash
# Credentials are masked wherever taskq shows or writes them: a URL's
# password and credential query parameters in any variable (show, show
# --json), and the values of masked variables (secret-looking names, URLs
# with credentials) where a task printed them into the line its reason
# quotes: the stored reason (show --json, list --json, classify), the
# worker's serve.log lines, and an on-exit hook's output copied there.
# --show-env still shows everything; the task's own log keeps its output.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

tok=sk-test-0123456789abcdef
pw=hunter22pw
url="postgres://app:$pw@db.internal/prod"
sig=5f3a9c0d1e2b
hook="https://hooks.example.com/notify?sig=$sig&channel=ops"
secrets=("$tok" "$pw" "$sig")

# Fails unless none of the secrets is in the text.
no_secrets() {  # WHAT TEXT
	for s in "${secrets[@]}"; do
		assert_not_contains "$2" "$s" "a secret in $1"
	done
}

check "show and show --json mask URL credentials in any variable"
assert_exit 0 env DATABASE_URL="$url" NOTIFY="$hook" MY_API_KEY="$tok" \
	REPO=ssh://git@github.com/x.git "$TASKQ_BIN" submit --name quiet -- true
quiet=$(out)
assert_exit 0 tq show "$quiet"
no_secrets show "$(out)"
assert_contains "$(out)" '"DATABASE_URL=postgres://app:***@db.internal/prod"'
assert_contains "$(out)" '"NOTIFY=https://hooks.example.com/notify?sig=***&channel=ops"'
assert_contains "$(out)" '"MY_API_KEY=***"'
assert_contains "$(out)" '"REPO=ssh://git@github.com/x.git"'
assert_exit 0 tq show "$quiet" --json
no_secrets "show --json" "$(out)"
assert_eq '["DATABASE_URL=postgres://app:***@db.internal/prod", "MY_API_KEY=***"]' \
	"$(out | pyjson '[e for e in d["env"] if e.startswith(("DATABASE_URL=", "MY_API_KEY="))]')"

check "--show-env shows them to the owner, and the store keeps the real values"
assert_exit 0 tq show "$quiet" --show-env
assert_contains "$(out)" "\"DATABASE_URL=$url\""
assert_exit 0 tq show "$quiet" --json --show-env
assert_contains "$(out | pyjson 'd["env"]')" "\"NOTIFY=$hook\""
assert_eq "$url" "$(task_env "$quiet" | sed -n 's/^DATABASE_URL=//p')"

check "a task that prints its credentials in its error line"
# text.auth quotes the line ("Invalid API key"); the hook echoes them too
assert_exit 0 env DATABASE_URL="$url" NOTIFY="$hook" MY_API_KEY="$tok" "$TASKQ_BIN" \
	submit --name leaky --on-exit 'echo "hook: $MY_API_KEY $NOTIFY"; echo "$DATABASE_URL" >&2' \
	-- sh -c 'echo "Error: Invalid API key $MY_API_KEY for $DATABASE_URL ($NOTIFY)" >&2; exit 1'
leaky=$(out)
serve_start 1
wait_state "$leaky" failed
wait_for "grep -q 'task $leaky on-exit stderr' '$TQ_TMP/serve.log'" 20 ||
	fail "the hook's output is not in serve.log: $(cat "$TQ_TMP/serve.log")"

check "the stored reason is masked: show --json, list --json"
want='Error: Invalid API key *** for postgres://app:***@db.internal/prod (https://hooks.example.com/notify?sig=***&channel=ops)'
assert_exit 0 tq show "$leaky" --json
no_secrets "show --json" "$(out)"
assert_eq auth "$(out | pyjson 'd["category"]')"
assert_eq "$want" "$(out | pyjson 'd["reason"]')"
assert_eq "$want" "$(out | pyjson 'd["attempts"][0]["reason"]')"
assert_exit 0 tq show "$leaky"
no_secrets show "$(out)"
assert_exit 0 tq list --json
no_secrets "list --json" "$(out)"
assert_contains "$(out)" 'Invalid API key *** for postgres://app:***@'

check "classify says what the worker stored"
assert_exit 0 tq classify "$leaky" --json --explain
no_secrets classify "$(out)"
assert_eq "$want" "$(out | pyjson 'd["reason"]')"

check "serve.log: the worker's reason line and the hook's output"
log=$(cat "$TQ_TMP/serve.log")
no_secrets serve.log "$log"
assert_contains "$log" "task $leaky attempt 1: reason: $want"
assert_contains "$log" "task $leaky on-exit stdout: hook: *** https://hooks.example.com/notify?sig=***&channel=ops"
assert_contains "$log" "task $leaky on-exit stderr: postgres://app:***@db.internal/prod"

check "the task's own log is its output, not rewritten"
assert_exit 0 tq log "$leaky"
assert_contains "$(out)" "Invalid API key $tok for $url"
