#!/usr/bin/env bash
# install-claude.sh - install the pinned Claude Code CLI for the agent tests,
# and print the path of its `claude` binary on stdout.
#
#   tests/agents/install-claude.sh            install if needed, print the path
#   tests/agents/install-claude.sh --check    print the path if installed, never install
#
# The version is pinned (TASKQ_CLAUDE_VERSION, default below) because the
# CLI's output changes between releases (shared research, section 3.7). It goes
# into ${TASKQ_AGENT_CACHE:-$HOME/.cache/taskq-agents}/claude-code-VERSION,
# installed from the npm registry and nothing else, into a temporary directory
# renamed into place once `claude --version` reports the pinned version, so a
# half-done install is never used. Idempotent and safe to run concurrently (a
# lock file serialises installers; the second finds the first's work done).
#
# Exit status: 0 with the path on stdout; 3 with one line on stderr when the
# CLI cannot be had (no npm, registry unreachable, install failed or timed
# out) - tests then skip with that line. A failed install is remembered for
# TASKQ_AGENT_RETRY_AFTER seconds (default 600), so a suite of tests does not
# pay the npm timeout once per test. Quiet: npm's output goes to a log file
# whose last line is quoted on failure.
set -uo pipefail

version=${TASKQ_CLAUDE_VERSION:-2.1.197}
cache=${TASKQ_AGENT_CACHE:-${HOME:-/root}/.cache/taskq-agents}
limit=${TASKQ_AGENT_INSTALL_TIMEOUT:-600}
retry_after=${TASKQ_AGENT_RETRY_AFTER:-600}
dir=$cache/claude-code-$version
bin=$dir/node_modules/.bin/claude
failed=$cache/claude-code-$version.failed
me=install-claude.sh

unavailable() {
	echo "$me: claude $version unavailable: $*" >&2
	exit 3
}

# The installed binary reports the pinned version ("2.1.197 (Claude Code)").
installed() {
	local v
	[ -x "$bin" ] || return 1
	v=$(env -i HOME="$cache" PATH=/usr/local/bin:/usr/bin:/bin DISABLE_AUTOUPDATER=1 \
		timeout 60 "$bin" --version </dev/null 2>/dev/null) || return 1
	[ "${v%% *}" = "$version" ]
}

if [ "${1:-}" = --check ]; then
	installed || unavailable "not installed in $dir (run $0)"
	echo "$bin"
	exit 0
fi

mkdir -p "$cache" || unavailable "cannot create $cache"
exec 9>"$cache/.install.lock" || unavailable "cannot open $cache/.install.lock"
flock -w "$((limit + 60))" 9 || unavailable "another install holds $cache/.install.lock"

if installed; then
	echo "$bin"
	exit 0
fi
if [ -f "$failed" ] && [ $(($(date +%s) - $(stat -c %Y "$failed"))) -lt "$retry_after" ]; then
	unavailable "$(cat "$failed") (cached failure; delete $failed to retry now)"
fi
npm=${TASKQ_AGENT_NPM:-npm}
command -v "$npm" >/dev/null 2>&1 || unavailable "$npm not found (install Node.js and npm)"

tmp=$(mktemp -d "$cache/.claude-code-$version.XXXXXX") || unavailable "mktemp in $cache failed"
trap 'rm -rf "$tmp"' EXIT

# Record why the install failed, for this message and the next callers.
install_failed() {
	echo "$*" >"$failed"
	unavailable "$*"
}

# --prefix: install into tmp whatever the caller's cwd; no package.json of
# the project is touched. Scripts stay enabled: the package's postinstall
# links bin/claude.exe to the native binary of the optional dependency
# @anthropic-ai/claude-code-linux-x64 (no download). The fetch timeouts keep
# an unreachable registry from costing more than about a minute.
chmod 755 "$tmp"
printf '{"name":"taskq-agents","private":true}\n' >"$tmp/package.json"
rc=0
timeout "$limit" "$npm" install --prefix "$tmp" --no-audit --no-fund \
	--no-update-notifier --loglevel=error --fetch-retries=1 \
	--fetch-timeout=60000 --fetch-retry-mintimeout=2000 \
	--fetch-retry-maxtimeout=10000 \
	"@anthropic-ai/claude-code@$version" </dev/null >"$tmp/npm.log" 2>&1 || rc=$?
if [ "$rc" -eq 124 ]; then
	install_failed "npm install timed out after ${limit}s"
elif [ "$rc" -ne 0 ]; then
	# npm's first error line says why; its last one only where the log is
	why=$(grep -m1 -E '^npm (error|ERR!) ' "$tmp/npm.log" | grep -v 'complete log')
	[ -n "$why" ] || why=$(grep -v '^[[:space:]]*$' "$tmp/npm.log" | tail -n 1)
	install_failed "npm install @anthropic-ai/claude-code@$version failed (exit $rc): ${why:-no output}"
fi

rm -rf "$dir"
mv "$tmp" "$dir" || install_failed "cannot move the install to $dir"
trap - EXIT
installed || install_failed "installed, but $bin --version does not report $version"
rm -f "$failed"
echo "$bin"
