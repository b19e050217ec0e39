# shellcheck shell=bash
# tools/deps.sh - the Debian packages taskq needs, installing the missing ones,
# and configuring a meson build dir.
#
# Sourced (not run) by ./bootstrap and tests/run, so both install exactly the
# same set. Installs only what dpkg says is missing; when nothing is, it touches
# neither the network nor apt's lists, so a second run costs a few dpkg-query
# calls. Needs root or sudo only when something is missing. Non-interactive:
# CI runs it as root with no stdin.

# What each package is for:
#   build-essential, pkg-config, meson, ninja-build   the C toolchain and the build
#   libsqlite3-dev   the store (one SQLite file in WAL mode)
#   libcjson-dev     --json output, agent output parsing
#   libbsd-dev       strtonum, humanize_number, vis, setproctitle
#   libcmocka-dev    unit tests
#   libpq-dev        the PostgreSQL store's types (libpq-fe.h): taskq loads
#                    libpq.so.5 (libpq5, which it pulls in) only when --db
#                    names a PostgreSQL database, and never links it
#   sqlite3          the shell: tests read the database the way a user would
#   python3          tools/embed.py (schema.sql -> schema.h), test log counting
#   scdoc            the man page, taskq(1), from contrib/taskq.1.scd (without
#                    it the build goes on with no page)
TQ_DEPS=(build-essential pkg-config meson ninja-build scdoc
	libsqlite3-dev libcjson-dev libbsd-dev libcmocka-dev libpq-dev sqlite3 python3)

# What only the test command (tests/run) needs, on top of TQ_DEPS; ./bootstrap
# does not install these. Without them those tests are skipped, saying why.
#   valgrind             memcheck over the CLI's integration tests
#   clang, libclang-rt-14-dev   libFuzzer (tests/fuzz/run): clang's fuzzer
#                        and sanitizer runtimes (Debian 12's clang is 14)
#   cron                 test_cron drives a real cron daemon
#   strace               test_run_crash holds a task's process in its exec
#                        (to kill its worker in that window)
#   postgresql           the PostgreSQL pass (suite "postgresql"): a
#                        throwaway PostgreSQL 15 cluster (pg_virtualenv) for
#                        the store's tests against PostgreSQL; psql
TQ_TEST_DEPS=(valgrind clang libclang-rt-14-dev cron strace postgresql)

# Print the packages among "$@" that are not installed, one a line.
tq_deps_missing() {
	local p
	for p in "$@"; do
		if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != *"ok installed" ]]; then
			printf '%s\n' "$p"
		fi
	done
}

# Install the packages among "$@" (default: TQ_DEPS) that are missing.
# Returns non-zero if apt-get fails or nothing can install them.
tq_deps_install() {
	local want=("$@") missing=() sudo=()
	((${#want[@]})) || want=("${TQ_DEPS[@]}")
	if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
		echo "deps: no dpkg/apt-get here; install these yourself: ${want[*]}" >&2
		return 0
	fi
	mapfile -t missing < <(tq_deps_missing "${want[@]}")
	if ((${#missing[@]} == 0)); then
		echo "deps: all present (${want[*]})"
		return 0
	fi
	if ((EUID != 0)); then
		if ! command -v sudo >/dev/null 2>&1; then
			echo "deps: missing ${missing[*]}, and not root and no sudo: install them and re-run" >&2
			return 1
		fi
		sudo=(sudo)
	fi
	echo "deps: installing ${missing[*]}"
	# DPkg::Lock::Timeout: a fresh machine may still be running its own apt
	# job (unattended-upgrades); wait for the lock instead of failing.
	local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -y -q
		-o DPkg::Lock::Timeout=300 -o Dpkg::Use-Pty=0)
	echo "+ apt-get update"
	"${apt[@]}" update </dev/null || return 1
	echo "+ apt-get install --no-install-recommends ${missing[*]}"
	"${apt[@]}" install --no-install-recommends "${missing[@]}" </dev/null || return 1
	mapfile -t missing < <(tq_deps_missing "${want[@]}")
	if ((${#missing[@]})); then
		echo "deps: still missing after apt-get: ${missing[*]}" >&2
		return 1
	fi
}

# Configure meson build dir $1 with options "${@:2}": a first setup, else a
# reconfigure (keeps the dir's other options), else a wipe and a fresh setup
# (a dir left by another meson version). Prints each command it runs.
tq_meson_setup() {
	local dir=$1; shift
	if [[ -f $dir/meson-private/coredata.dat ]]; then
		echo "+ meson setup --reconfigure $dir${*:+ $*}"
		meson setup --reconfigure "$dir" "$@" && return 0
		echo "+ meson setup --wipe $dir${*:+ $*}"
		meson setup --wipe "$dir" "$@"
	else
		echo "+ meson setup $dir${*:+ $*}"
		meson setup "$dir" "$@"
	fi
}
