#!/usr/bin/env bash
# record-fixtures.sh - run the pinned real agent CLIs against the mock API and
# write what they print, byte for byte, to tests/fixtures/agent-outputs/:
#   CLI-VERSION-CASE.jsonl   stdout
#   CLI-VERSION-CASE.stderr  stderr (only where a test reads it)
#   CLI-VERSION-CASE.rc      the exit status ("143", or "signal 15")
#
#   tests/agents/record-fixtures.sh [gemini|codex|opencode]...   (default: all three)
#
# Each CLI runs with an empty temporary HOME configured as tests/agents/README.md
# says, in a temporary work directory, stdin /dev/null, under a deadline.
# Volatile parts (timestamps, ids, the mock's port, durations) are kept as
# printed: the unit tests read the files by key. Takes about 4 minutes
# (opencode's own retries of a dropped connection take a minute each).
# Look at `git diff tests/fixtures/agent-outputs` after running it.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
out=$(cd -- "$here/../fixtures/agent-outputs" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/taskq-record-XXXXXX")
mock_pid=
cleanup() {
	[ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

bin() { "$here/install-agent.sh" "$1"; }

mkdir -p "$tmp/ctl" "$tmp/home" "$tmp/work"
python3 "$here/mock_api.py" --port 0 --port-file "$tmp/port" --control-dir "$tmp/ctl" \
	--log "$tmp/requests.jsonl" --parent-pid $$ >/dev/null 2>&1 &
mock_pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$tmp/port")"
mode() { printf '%s\n' "$1" >"$tmp/ctl/.m" && mv -f "$tmp/ctl/.m" "$tmp/ctl/mode"; }

# rec NAME DEADLINE KILL_AFTER CMD...: run CMD in the work dir with the
# prepared environment; KILL_AFTER > 0 sends SIGTERM to its process group
# after that many seconds (as taskq does at a timeout).
rec() {
	local name=$1 deadline=$2 kill_after=$3 rc
	shift 3
	echo "recording $name" >&2
	set +e
	(cd "$tmp/work" && exec env -i HOME="$tmp/home" PATH=/usr/local/bin:/usr/bin:/bin \
		TERM=dumb LANG=C.UTF-8 "${envs[@]}" setsid timeout -k 5 "$deadline" "$@" \
		</dev/null >"$out/$name.jsonl" 2>"$tmp/$name.stderr") &
	local pid=$!
	if [ "$kill_after" -gt 0 ]; then
		sleep "$kill_after"
		# the subshell exec'd into setsid: its pid leads the CLI's group
		kill -TERM -- "-$pid" 2>/dev/null
	fi
	wait "$pid"
	rc=$?
	set -e
	echo "$rc" >"$out/$name.rc"
	cp "$tmp/$name.stderr" "$out/$name.stderr"
}

gemini() {
	local g
	g=$(bin gemini)
	mkdir -p "$tmp/home/.gemini"
	printf '%s\n' '{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"maxAttempts":1}}' \
		>"$tmp/home/.gemini/settings.json"
	envs=(GEMINI_API_KEY=dummy "GOOGLE_GEMINI_BASE_URL=$url" GEMINI_CLI_TRUST_WORKSPACE=true)
	mode ok
	rec gemini-0.61-stream-success 60 0 "$g" -m gemini-2.5-flash --output-format stream-json --prompt=hello
	# taskq's timeout or kill: SIGTERM while the request hangs; it exits 0
	mode hang
	rec gemini-0.61-stream-sigterm 60 15 "$g" -m gemini-2.5-flash --output-format stream-json --prompt=hello
}

codex() {
	local c
	c=$(bin codex)
	mkdir -p "$tmp/home/.codex"
	cat >"$tmp/home/.codex/config.toml" <<EOF
model = "gpt-mock"
model_provider = "mock"

[model_providers.mock]
name = "mock"
base_url = "$url/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
supports_websockets = false
EOF
	envs=(OPENAI_API_KEY=dummy)
	mode ok
	rec codex-0.169-success 60 0 "$c" exec --json --skip-git-repo-check -- hello
	mode 503
	rec codex-0.169-503-capped 60 0 "$c" -c model_providers.mock.request_max_retries=0 \
		-c model_providers.mock.stream_max_retries=0 exec --json --skip-git-repo-check -- hello
}

opencode() {
	local o
	o=$(bin opencode)
	mkdir -p "$tmp/home/.config/opencode"
	printf '{"provider":{"mockant":{"npm":"@ai-sdk/anthropic","options":{"baseURL":"%s/v1","apiKey":"dummy"},"models":{"claude-mock":{}}}},"model":"mockant/claude-mock"}\n' \
		"$url" >"$tmp/home/.config/opencode/opencode.json"
	envs=(OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1)
	mode ok
	rec opencode-1.18-success 120 0 "$o" run --format json -- hello
	# the connection reset after the request: "The socket connection was closed"
	mode drop
	rec opencode-1.18-drop 180 0 "$o" run --format json -- hello
	# nothing listening: "Unable to connect. Is the computer able to access the url?"
	printf '{"provider":{"mockant":{"npm":"@ai-sdk/anthropic","options":{"baseURL":"http://127.0.0.1:9/v1","apiKey":"dummy"},"models":{"claude-mock":{}}}},"model":"mockant/claude-mock"}\n' \
		>"$tmp/home/.config/opencode/opencode.json"
	rec opencode-1.18-refused 180 0 "$o" run --format json -- hello
}

for cli in "${@:-gemini codex opencode}"; do
	for c in $cli; do
		case $c in
		gemini | codex | opencode) "$c" ;;
		*) echo "record-fixtures.sh: unknown CLI $c" >&2; exit 2 ;;
		esac
	done
done
echo "recorded into $out" >&2
