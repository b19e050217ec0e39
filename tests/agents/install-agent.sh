#!/usr/bin/env bash
# install-agent.sh - install one pinned agent CLI for the agent tests, and
# print the path of its binary on stdout.
#
#   tests/agents/install-agent.sh NAME            install if needed, print the path
#   tests/agents/install-agent.sh NAME --check    print the path if installed, never install
#   tests/agents/install-agent.sh all [--check]   every CLI below, one path a line;
#                                                 exit 3 if any is unavailable
#
# NAME   npm package              pinned (override)                    binary
# claude @anthropic-ai/claude-code 2.1.197 (TASKQ_CLAUDE_VERSION)      claude
# gemini @google/gemini-cli       0.61.0  (TASKQ_GEMINI_VERSION)       gemini
# codex  @openai/codex            0.169.0 (TASKQ_CODEX_VERSION)        codex
# opencode opencode-ai            1.18.33 (TASKQ_OPENCODE_VERSION)     opencode
#
# Versions are pinned because the CLIs' output changes between releases
# (shared research, section 3.7). Each goes into
# ${TASKQ_AGENT_CACHE:-$HOME/.cache/taskq-agents}/PKG-VERSION (PKG: the
# package's last name part: claude-code, gemini-cli, codex, opencode-ai),
# installed from the npm registry and nothing else, into a temporary
# directory renamed into place once `BIN --version` reports the pinned
# version, so a half-done install is never used. Idempotent and safe to run
# concurrently: an installed version is found without the lock (a stamp
# file written once its binary reported the version); otherwise a lock file serialises installers and
# the second finds the first's work done.
#
# Exit status: 0 with the path on stdout; 3 with one line on stderr when the
# CLI cannot be had (no npm, registry unreachable, install failed or timed
# out) - tests then skip with that line; 2 for a bad NAME. A failed install
# is remembered for TASKQ_AGENT_RETRY_AFTER seconds (default 600), so a
# suite of tests does not pay the npm timeout once per test. Quiet: npm's
# output goes to a log file whose first error line is quoted on failure.
set -uo pipefail

me=install-agent.sh
cache=${TASKQ_AGENT_CACHE:-${HOME:-/root}/.cache/taskq-agents}
limit=${TASKQ_AGENT_INSTALL_TIMEOUT:-600}
retry_after=${TASKQ_AGENT_RETRY_AFTER:-600}
names="claude gemini codex opencode"

usage() {
	echo "usage: $me NAME|all [--check]   (NAME: ${names// /, })" >&2
	exit 2
}

[ $# -ge 1 ] || usage
name=$1
check=
case ${2:-} in
--check) check=1 ;;
'') ;;
*) usage ;;
esac

if [ "$name" = all ]; then
	rc=0
	for n in $names; do
		"$0" "$n" ${check:+--check} || rc=3
	done
	exit "$rc"
fi

# pkg version bin: what NAME is. The version the binary prints is the
# first word of `--version` that looks like one ("2.1.197 (Claude Code)",
# "0.61.0", "codex-cli 0.169.0", "1.18.33").
case $name in
claude) pkg=@anthropic-ai/claude-code version=${TASKQ_CLAUDE_VERSION:-2.1.197} bin=claude ;;
gemini) pkg=@google/gemini-cli version=${TASKQ_GEMINI_VERSION:-0.61.0} bin=gemini ;;
codex) pkg=@openai/codex version=${TASKQ_CODEX_VERSION:-0.169.0} bin=codex ;;
opencode) pkg=opencode-ai version=${TASKQ_OPENCODE_VERSION:-1.18.33} bin=opencode ;;
*) usage ;;
esac
dir=$cache/${pkg##*/}-$version
path=$dir/node_modules/.bin/$bin
failed=$cache/${pkg##*/}-$version.failed

unavailable() {
	echo "$me: $name $version unavailable: $*" >&2
	exit 3
}

# reports P: the binary at P reports the pinned version. Its HOME is a
# scratch directory, removed after: nothing of the caller's configuration is
# read, and what a first run writes (codex's ~/.codex, gemini's ~/.gemini)
# is left nowhere.
reports() {
	local v w h rc=1
	[ -x "$1" ] || return 1
	h=$(mktemp -d "${TMPDIR:-/tmp}/taskq-agent-version.XXXXXX") || return 1
	v=$(env -i HOME="$h" PATH=/usr/local/bin:/usr/bin:/bin DISABLE_AUTOUPDATER=1 \
		OPENCODE_DISABLE_AUTOUPDATE=1 TERM=dumb \
		timeout 60 "$1" --version </dev/null 2>/dev/null) && rc=2
	rm -rf "$h"
	[ "$rc" = 2 ] || return 1
	for w in $v; do
		[ "$w" = "$version" ] && return 0
	done
	return 1
}

# installed: the install in dir is whole. An install stamps its directory
# (.taskq-installed holds the version) once its binary has reported the
# version, before it is renamed into place; so the common case costs a file
# read, not a `--version` (gemini's takes 2 s). An older install without the
# stamp is checked the slow way and stamped.
installed() {
	local stamp=$dir/.taskq-installed
	[ -x "$path" ] || return 1
	[ "$(cat "$stamp" 2>/dev/null)" = "$version" ] && return 0
	reports "$path" || return 1
	echo "$version" >"$stamp.$$" && mv -f "$stamp.$$" "$stamp"
	return 0
}

if [ -n "$check" ]; then
	installed || unavailable "not installed in $dir (run $0 $name)"
	echo "$path"
	exit 0
fi

# Fast path: installed, no lock needed (a reader never sees a half install).
if installed; then
	echo "$path"
	exit 0
fi

mkdir -p "$cache" || unavailable "cannot create $cache"
exec 9>"$cache/.install.lock" || unavailable "cannot open $cache/.install.lock"
flock -w "$((limit + 60))" 9 || unavailable "another install holds $cache/.install.lock"

if installed; then
	echo "$path"
	exit 0
fi
if [ -f "$failed" ] && [ $(($(date +%s) - $(stat -c %Y "$failed"))) -lt "$retry_after" ]; then
	unavailable "$(cat "$failed") (cached failure; delete $failed to retry now)"
fi
npm=${TASKQ_AGENT_NPM:-npm}
command -v "$npm" >/dev/null 2>&1 || unavailable "$npm not found (install Node.js and npm)"

tmp=$(mktemp -d "$cache/.${pkg##*/}-$version.XXXXXX") || unavailable "mktemp in $cache failed"
trap 'rm -rf "$tmp"' EXIT

# Record why the install failed, for this message and the next callers.
install_failed() {
	echo "$*" >"$failed"
	unavailable "$*"
}

# --prefix: install into tmp whatever the caller's cwd; no package.json of
# the project is touched. Scripts stay enabled: claude's postinstall links
# bin/claude.exe to the native binary of its optional dependency, and
# opencode's picks the native binary of opencode-linux-x64 (no download;
# codex's native binary comes the same way). gemini's node-pty and keytar
# builds fail without a compiler or libsecret and are optional: the CLI runs
# headless without them. The fetch timeouts keep an unreachable registry
# from costing more than about a minute.
chmod 755 "$tmp"
printf '{"name":"taskq-agents","private":true}\n' >"$tmp/package.json"
rc=0
timeout "$limit" "$npm" install --prefix "$tmp" --no-audit --no-fund \
	--no-update-notifier --loglevel=error --fetch-retries=1 \
	--fetch-timeout=60000 --fetch-retry-mintimeout=2000 \
	--fetch-retry-maxtimeout=10000 \
	"$pkg@$version" </dev/null >"$tmp/npm.log" 2>&1 || rc=$?
if [ "$rc" -eq 124 ]; then
	install_failed "npm install timed out after ${limit}s"
elif [ "$rc" -ne 0 ]; then
	# npm's first error line says why; its last one only where the log is
	why=$(grep -m1 -E '^npm (error|ERR!) ' "$tmp/npm.log" | grep -v 'complete log')
	[ -n "$why" ] || why=$(grep -v '^[[:space:]]*$' "$tmp/npm.log" | tail -n 1)
	install_failed "npm install $pkg@$version failed (exit $rc): ${why:-no output}"
fi

reports "$tmp/node_modules/.bin/$bin" ||
	install_failed "installed, but $bin --version does not report $version"
echo "$version" >"$tmp/.taskq-installed"
rm -rf "$dir"
mv "$tmp" "$dir" || install_failed "cannot move the install to $dir"
trap - EXIT
rm -f "$failed"
echo "$path"
