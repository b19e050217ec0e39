# lib_agents.sh - helpers for tests that run agent CLIs, real or fake, against
# the mock model API (tests/agents/). Source after lib.sh:
#
#     . "$(dirname "$0")/lib.sh"
#     . "$(dirname "$0")/lib_agents.sh"
#
# What is here (tests/agents/README.md tells the whole story):
#   mock_start [MODE] [ARGS]  start tests/agents/mock_api.py on a free port of
#                             127.0.0.1 (tracked: cleanup stops it), wait until
#                             it listens, export ANTHROPIC_BASE_URL and a key
#   mock_mode MODE            change what it answers (e.g. 429,429,ok)
#   mock_text / mock_tool_command   change the reply text / the tool's command
#   mock_requests [API]       how many model requests it has received
#   mock_request N [EXPR]     request N as JSON, or EXPR over it (pyjson)
#   mock_request_has N TEXT   request N's body contains TEXT
#   mock_wait_requests N [S]  wait until N model requests have arrived
#   mock_stop                 SIGTERM it and require a clean exit 0
#   claude_bin                the pinned real claude in CLAUDE_BIN, or skip
#   claude_path               a dir with only `claude` (the real one) to put on PATH
#   claude_run ARGS...        run the real claude (stdin /dev/null, deadline),
#                             output in TQ_OUT/TQ_ERR, status in TQ_RC
#   fake_agents_path          a dir with claude/gemini/codex/opencode -> fakeagent
#   fake_agent_args NAME ARGS fake options for NAME, read by the fake at each run
#   gemini_setup / codex_setup / opencode_setup DIR   point those CLIs at the mock
#   last_result [FILE]        the last {"type":"result"} line of FILE (or TQ_OUT)
#   skip REASON               print "SKIP: REASON", clean up, exit 77 (meson: skipped)
#
# The environment is made hermetic for agents: every variable a Claude Code,
# Gemini, Codex or OpenCode session may have left in ours (CLAUDECODE,
# CLAUDE_CODE_*, ANTHROPIC_*, AI_AGENT, ...) is unset here, so a test run
# from inside an agent behaves as one run from cron; a test that wants them
# sets them itself.

TQ_AGENTS_DIR="${TASKQ_SRCDIR:?}/tests/agents"
FAKEAGENT="${TASKQ_FIXTURES:?}/fakeagent"

# The real user's home (lib.sh pointed HOME at the test's temp dir): the
# installed CLI and npm's cache live there, shared by every test and run.
TQ_REAL_HOME=$(getent passwd "$(id -u)" 2>/dev/null | cut -d: -f6)
: "${TQ_REAL_HOME:=/root}"
export TASKQ_AGENT_CACHE="${TASKQ_AGENT_CACHE:-$TQ_REAL_HOME/.cache/taskq-agents}"

_agents_scrub_env() {
	local v
	for v in $(compgen -e); do
		case $v in
		CLAUDE* | ANTHROPIC_* | AI_AGENT | GEMINI_* | GOOGLE_GEMINI_* | GOOGLE_GENAI_* | \
			GOOGLE_API_KEY | OPENAI_* | CODEX_* | OPENCODE* | AGENT | FAKEAGENT_* | IS_SANDBOX | \
			API_TIMEOUT_MS | DISABLE_AUTOUPDATER | DISABLE_TELEMETRY | DISABLE_ERROR_REPORTING | \
			BASH_DEFAULT_TIMEOUT_MS | BASH_MAX_TIMEOUT_MS | MCP_TIMEOUT | MCP_TOOL_TIMEOUT)
			unset "$v"
			;;
		esac
	done
}
_agents_scrub_env

# What every real-CLI run gets: no update checks, no telemetry, no side
# requests (research section 2). CLAUDE_CODE_MAX_RETRIES is not set here:
# a test says how many retries it wants (0 for a quick failure), or leaves
# it to taskq's profile when that is what it tests.
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 \
	DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1

# ---------------------------------------------------------------------------
# Skipping

# skip REASON: the test cannot run here (exit 77, which meson counts as
# skipped). Processes the test started are still stopped; lib.sh's cleanup
# would call a non-zero exit a failure, so its verdict line is silenced.
skip() {
	echo "SKIP: $*"
	trap - EXIT
	if declare -F _tq_cleanup >/dev/null; then
		(exit 77) || _tq_cleanup 2>/dev/null
	fi
	exit 77
}

# ---------------------------------------------------------------------------
# The mock API

# mock_start [MODE] [MOCK_API ARGS...]: start the mock and wait (deadline
# 10 s) until it listens. Sets MOCK_PID, MOCK_PORT, MOCK_URL, MOCK_DIR (its
# control dir), MOCK_LOG (its request log); exports ANTHROPIC_BASE_URL and
# ANTHROPIC_API_KEY=dummy.
mock_start() {
	local mode=${1:-ok}
	shift || true
	MOCK_DIR="$TQ_TMP/mock"
	MOCK_LOG="$MOCK_DIR/requests.jsonl"
	mkdir -p "$MOCK_DIR"
	rm -f "$MOCK_DIR/port" "$MOCK_LOG"
	tq_bg "$TQ_PYTHON" "$TQ_AGENTS_DIR/mock_api.py" --port 0 --port-file "$MOCK_DIR/port" \
		--control-dir "$MOCK_DIR" --log "$MOCK_LOG" --mode "$mode" --parent-pid $$ "$@" \
		>"$MOCK_DIR/stdout" 2>"$MOCK_DIR/stderr"
	MOCK_PID=$TQ_LAST_PID
	wait_for "[ -s '$MOCK_DIR/port' ] || ! _tq_alive $MOCK_PID" 10 ||
		fail "mock API did not start: $(cat "$MOCK_DIR/stderr")"
	[ -s "$MOCK_DIR/port" ] || fail "mock API exited: $(cat "$MOCK_DIR/stderr")"
	MOCK_PORT=$(cat "$MOCK_DIR/port")
	MOCK_URL="http://127.0.0.1:$MOCK_PORT"
	export ANTHROPIC_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=dummy
}

# mock_stop: SIGTERM the mock and require that it exits 0 within 5 s.
mock_stop() {
	local rc=0
	kill -TERM "$MOCK_PID" 2>/dev/null || fail "mock API (pid $MOCK_PID) is not running"
	wait_for "! _tq_alive $MOCK_PID" 5 || fail "mock API ignored SIGTERM"
	wait "$MOCK_PID" 2>/dev/null || rc=$?
	assert_eq 0 "$rc" "mock API exit status after SIGTERM"
}

# Write a control file atomically (the mock re-reads it before each request).
_mock_control() {
	printf '%s\n' "$2" >"$MOCK_DIR/.$1.tmp" && mv -f "$MOCK_DIR/.$1.tmp" "$MOCK_DIR/$1"
}

# mock_mode MODE: what the next model requests get: one mode, or a sequence
# "429,429,ok" used one per request, the last repeating. Restarts the sequence.
mock_mode() { _mock_control mode "$1"; }

# mock_text TEXT: the reply text of ok answers.
mock_text() { _mock_control text "$1"; }

# mock_tool_command CMD: the Bash command the tool mode asks the CLI to run.
mock_tool_command() { _mock_control tool_command "$1"; }

# Query the request log with Python: $1 is a program over `reqs`, the list of
# logged model requests (HEAD / and control requests are left out).
_mock_query() {
	"$TQ_PYTHON" - "$MOCK_LOG" "${@:2}" <<EOF
import json, sys
reqs = []
try:
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            if d.get("api") in ("anthropic", "gemini", "openai") and d.get("mode") is not None:
                reqs.append(d)
except FileNotFoundError:
    pass
$1
EOF
}

# mock_requests [API]: the number of model requests received so far (API:
# anthropic, gemini or openai; default all).
# shellcheck disable=SC2120 # the argument is optional
mock_requests() {
	_mock_query 'print(sum(1 for r in reqs if len(sys.argv) < 3 or r["api"] == sys.argv[2]))' "$@"
}

# mock_request N [EXPR]: model request N (1-based; -1 is the last) as one
# JSON line, or the value of the Python expression EXPR over it as d (as
# pyjson: lists and dicts as JSON). Fails when there is no such request.
mock_request() {
	local n=$1
	shift
	_mock_query '
n = int(sys.argv[2])
if n == 0 or abs(n) > len(reqs):
    sys.exit("mock_request: no request %d (%d logged)" % (n, len(reqs)))
d = reqs[n - 1 if n > 0 else n]
if len(sys.argv) > 3:
    r = eval(sys.argv[3])
    print(json.dumps(r) if isinstance(r, (list, tuple, dict, bool)) or r is None else r)
else:
    print(json.dumps(d))' "$n" "$@"
}

# mock_request_has N TEXT: request N's JSON body contains TEXT (as a plain
# substring of its JSON text, so "earlier turn" checks need no JSON paths).
mock_request_has() {
	_mock_query '
n = int(sys.argv[2])
if n == 0 or abs(n) > len(reqs):
    sys.exit(1)
body = json.dumps(reqs[n - 1 if n > 0 else n].get("body"), ensure_ascii=False)
sys.exit(0 if sys.argv[3] in body else 1)' "$1" "$2"
}

# mock_wait_requests N [SECONDS]: wait until at least N model requests came.
mock_wait_requests() {
	wait_for "[ \"\$(mock_requests)\" -ge $1 ]" "${2:-10}" ||
		fail "mock API: expected $1 requests, got $(mock_requests)"
}

# mock_http METHOD PATH [BODY]: one request to the mock with Python's client;
# prints "STATUS" on the first line, then the headers as "name: value"
# lines, a blank line, and the body. A connection the mock drops prints
# "ERROR <reason>" and returns 1.
mock_http() {
	"$TQ_PYTHON" - "$MOCK_URL" "$@" <<'EOF'
import http.client, signal, sys, urllib.parse
signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # | head -1 is fine
base, method, path = sys.argv[1], sys.argv[2], sys.argv[3]
body = sys.argv[4].encode() if len(sys.argv) > 4 else None
u = urllib.parse.urlsplit(base)
c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
try:
    c.request(method, path, body=body, headers={"content-type": "application/json"})
    r = c.getresponse()
    data = r.read()
except (OSError, http.client.HTTPException) as e:
    print("ERROR %s" % type(e).__name__)
    sys.exit(1)
print(r.status)
for k, v in r.getheaders():
    print("%s: %s" % (k.lower(), v))
print()
sys.stdout.write(data.decode("utf-8", "replace"))
EOF
}

# ---------------------------------------------------------------------------
# The real CLIs (claude, gemini, codex, opencode)

# agent_bin NAME: set NAME_BIN (CLAUDE_BIN, GEMINI_BIN, CODEX_BIN,
# OPENCODE_BIN) to the pinned real CLI, installing it if needed
# (tests/agents/install-agent.sh: cached, locked, bounded in time), or skip
# the test with the installer's one-line reason. Call it as a statement, not
# in $(...): a skip must end the test, not a subshell. TASKQ_NAME_BIN
# (TASKQ_CLAUDE_BIN, ...) names another binary to use instead.
agent_bin() {
	local name=$1 var over path
	var=$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')_BIN
	over=TASKQ_$var
	if [ -n "${!over:-}" ]; then
		[ -x "${!over}" ] || skip "$over=${!over} is not executable"
		printf -v "$var" '%s' "${!over}"
		return 0
	fi
	if ! path=$(HOME="$TQ_REAL_HOME" TASKQ_AGENT_INSTALL_TIMEOUT="${TASKQ_AGENT_INSTALL_TIMEOUT:-300}" \
		"$TQ_AGENTS_DIR/install-agent.sh" "$name" 2>"$TQ_TMP/install-$name.err"); then
		skip "real $name CLI unavailable: $(tail -n 1 "$TQ_TMP/install-$name.err")"
	fi
	printf -v "$var" '%s' "$path"
}

# agent_path NAME...: a directory holding only those real CLIs (installing
# each, or skipping), for a test whose taskq profile runs them from PATH.
# Sets and prints AGENT_PATH_DIR.
agent_path() {
	local name var
	AGENT_PATH_DIR="$TQ_TMP/agent-bin"
	mkdir -p "$AGENT_PATH_DIR"
	for name in "$@"; do
		var=$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')_BIN
		[ -n "${!var:-}" ] || agent_bin "$name"
		ln -sfn "${!var}" "$AGENT_PATH_DIR/$name"
	done
	echo "$AGENT_PATH_DIR"
}

# claude_bin, claude_path: agent_bin claude, and a dir with only `claude`
# (their old names; claude_path also sets CLAUDE_PATH_DIR).
claude_bin() { agent_bin claude; }
claude_path() {
	[ -n "${CLAUDE_BIN:-}" ] || agent_bin claude
	CLAUDE_PATH_DIR="$TQ_TMP/claude-bin"
	mkdir -p "$CLAUDE_PATH_DIR"
	ln -sfn "$CLAUDE_BIN" "$CLAUDE_PATH_DIR/claude"
	echo "$CLAUDE_PATH_DIR"
}

# agent_run NAME ARGS...: run the real CLI NAME with stdin from /dev/null
# (an open stdin makes claude and codex wait) under a deadline
# (AGENT_RUN_TIMEOUT, default 120 s); stdout in $TQ_OUT, stderr in $TQ_ERR,
# the exit status in $TQ_RC.
agent_run() {
	local name=$1 var
	shift
	var=$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')_BIN
	[ -n "${!var:-}" ] || agent_bin "$name"
	run timeout -k 5 "${AGENT_RUN_TIMEOUT:-120}" "${!var}" "$@" </dev/null
}

# claude_run ARGS...: run the real claude with stdin from /dev/null (an open
# stdin pipe makes it wait) under a 60 s deadline (CLAUDE_RUN_TIMEOUT);
# stdout in $TQ_OUT, stderr in $TQ_ERR, exit status in $TQ_RC.
claude_run() {
	[ -n "${CLAUDE_BIN:-}" ] || claude_bin
	run timeout -k 5 "${CLAUDE_RUN_TIMEOUT:-60}" "$CLAUDE_BIN" "$@" </dev/null
}

# last_result [FILE]: the last line of FILE (default $TQ_OUT) that is a JSON
# object with "type":"result", whatever its key order; fails when none.
last_result() {
	"$TQ_PYTHON" - "${1:-$TQ_OUT}" <<'EOF'
import json, sys
last = None
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if isinstance(d, dict) and d.get("type") == "result":
        last = line.strip()
if last is None:
    sys.exit("last_result: no result line in " + sys.argv[1])
print(last)
EOF
}

# ---------------------------------------------------------------------------
# The fake agents

# fake_agents_path: a directory with claude, gemini, codex and opencode as
# symlinks to tests/fixtures/fakeagent (each takes its style from its name),
# to prepend to PATH. Sets and prints FAKE_AGENTS_DIR.
fake_agents_path() {
	local n
	FAKE_AGENTS_DIR="$TQ_TMP/fake-agents"
	mkdir -p "$FAKE_AGENTS_DIR"
	for n in claude gemini codex opencode; do
		ln -sfn "$FAKEAGENT" "$FAKE_AGENTS_DIR/$n"
	done
	echo "$FAKE_AGENTS_DIR"
}

# fake_agent_args NAME ARGS...: fake options (--mode rate_limit --sleep 5 ...)
# that the fake NAME in FAKE_AGENTS_DIR reads at every run, whatever command
# line and environment taskq gives it. No ARGS: back to the defaults.
fake_agent_args() {
	local name=$1
	shift
	[ -n "${FAKE_AGENTS_DIR:-}" ] || fake_agents_path >/dev/null
	if [ $# -eq 0 ]; then
		rm -f "$FAKE_AGENTS_DIR/$name.args"
	else
		printf '%q ' "$@" >"$FAKE_AGENTS_DIR/$name.args"
	fi
}

# ---------------------------------------------------------------------------
# Pointing the other real CLIs at the mock (tests/agents/README.md says why
# each is done so). Call after mock_start. Each writes the configuration a
# user would have in their own HOME (lib.sh made HOME a temp dir), so taskq's
# runs (isolated workspaces included) find it as they would a user's.

# gemini_setup: $HOME/.gemini/settings.json choosing API-key auth (without
# it GOOGLE_GEMINI_BASE_URL switches gemini 0.61 to "gateway" auth, which it
# then refuses: rc 41), and the environment that sends it to the mock. No
# retry setting: the CLI's default (10 attempts) is what a user has.
gemini_setup() {
	mkdir -p "$HOME/.gemini"
	printf '%s\n' '{"security":{"auth":{"selectedType":"gemini-api-key"}}}' \
		>"$HOME/.gemini/settings.json"
	export GEMINI_API_KEY=dummy GOOGLE_GEMINI_BASE_URL="$MOCK_URL" GEMINI_CLI_TRUST_WORKSPACE=true
}

# codex_setup: ${CODEX_HOME:-$HOME/.codex}/config.toml with the mock as a
# custom provider "mock" (codex 0.169 ignores OPENAI_BASE_URL, and refuses
# to override its built-in "openai"), and OPENAI_API_KEY. No retry setting:
# the provider's defaults (4 request retries, 5 stream retries: 30 requests
# for a 503) are what a user has. Sets CODEX_CONFIG to the file.
codex_setup() {
	local dir=${CODEX_HOME:-$HOME/.codex}
	mkdir -p "$dir"
	CODEX_CONFIG=$dir/config.toml
	cat >"$CODEX_CONFIG" <<EOF
model = "gpt-mock"
model_provider = "mock"

[model_providers.mock]
name = "mock"
base_url = "$MOCK_URL/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
supports_websockets = false
EOF
	export OPENAI_API_KEY=dummy
}

# opencode_setup [DIR]: the mock as an Anthropic provider "mockant" (model
# mockant/claude-mock) in DIR/opencode.json, by default the user's global
# $HOME/.config/opencode/opencode.json (which an isolated workspace's own
# opencode.json does not hide); no models.dev fetch, no update check.
opencode_setup() {
	local dir=${1:-$HOME/.config/opencode}
	mkdir -p "$dir"
	printf '{"provider":{"mockant":{"npm":"@ai-sdk/anthropic","options":{"baseURL":"%s/v1","apiKey":"dummy"},"models":{"claude-mock":{}}}},"model":"mockant/claude-mock"}\n' \
		"$MOCK_URL" >"$dir/opencode.json"
	export OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1
}
