#!/usr/bin/env bash
# test_cron.sh - a nightly batch driven by a real cron daemon (issue 8):
# a crontab that, every minute, submits a batch of three tasks with --unique
# keys and runs `taskq drain`. The tasks outlast a minute (each waits for a
# release file), so the second firing finds the first one's tasks still
# running: its submits must add nothing (they print the existing ids) and its
# drain must leave the queue to the one running. After two firings: exactly
# one task per key, `taskq wait --batch` times out (124) while they run, and
# once they are released it reports the outcome (1: one of them failed).
#
# The daemon is Debian's cron (`cron -f`), else busybox crond. It runs as
# root (the test is skipped, exit 77, when not root or when there is no cron
# daemon) in private namespaces made with unshare(1):
#   - a mount namespace in which, for Debian's cron (its paths are fixed),
#     /etc/cron.d, /etc/crontab, /var/spool/cron and /run are bind mounts of
#     directories under the test's temp dir, so this cron reads only the
#     test's crontab (never the machine's: no system job runs, no real
#     crontab is read or written) and its pid file does not clash with a
#     system cron's (busybox crond is given its own directory with -c); and
#     /etc/pam.d/cron is a copy with pam_loginuid optional (in a container
#     it fails, and cron would run no job);
#   - a pid namespace with cron as its init, so that killing it (the test's
#     cleanup does, through unshare --kill-child) kills every process a job
#     started: the drain, its workers and the tasks. Nothing outlives the
#     test, which checks it at the end.
# Without namespaces (unshare refused) the test is skipped: it never falls
# back to the machine's real /etc/cron.d.
#
# Cron's granularity is one minute: the test takes two firings, 1-2 minutes
# depending on where in the minute it starts, plus a few seconds for the
# tasks to end (every wait has a deadline).
. "$(dirname "$0")/lib.sh"

skip() {
	echo "SKIP: $*"
	trap - EXIT
	(exit 77) || _tq_cleanup 2>/dev/null
	exit 77
}

[ "$(id -u)" -eq 0 ] || skip "needs root to run a cron daemon"
export PATH="$PATH:/usr/sbin:/sbin"
CRON_KIND=""
if command -v cron >/dev/null; then
	CRON_KIND=debian
elif command -v busybox >/dev/null && busybox crond --help >/dev/null 2>&1; then
	CRON_KIND=busybox
else
	skip "no cron daemon (Debian: apt-get install cron)"
fi
command -v unshare >/dev/null || skip "no unshare(1) to give cron private namespaces"
unshare --mount --pid --fork --propagation private true 2>/dev/null ||
	skip "unshare cannot make mount and pid namespaces here (a container without CAP_SYS_ADMIN?)"

CR="$TQ_TMP/cron"
mkdir -p "$CR/cron.d" "$CR/spool/crontabs" "$CR/run"
: >"$CR/crontab"
chmod 0755 "$CR/cron.d"
chmod 1730 "$CR/spool/crontabs"
JOBLOG="$CR/job.log"
RELEASE="$CR/release"
STOP="$CR/stop"
# Every process a job starts carries this in its environment (the crontab
# sets it), so the test can tell whether any of them is left.
MARK="taskq-cron-test-$$-$RANDOM"

# One run of the nightly job. Cron gives it a minimal environment: what it
# needs comes from the crontab (TASKQ_HOME, TASKQ_AUTOSTART=0) and its own
# absolute paths.
cat >"$CR/nightly.sh" <<EOF
#!/bin/sh
# written by test_cron.sh: one cron run of the nightly batch
[ -e "$STOP" ] && exit 0
echo "run \$\$ start \$(date +%T) TASKQ_HOME=\$TASKQ_HOME" >>"$JOBLOG"
for key in alpha beta gamma; do
	code=0
	[ \$key = gamma ] && code=3
	id=\$("$TASKQ_BIN" submit --unique "nightly-\$key" --batch nightly --name "\$key" \\
		--timeout 4m -- sh -c 'while [ ! -e "\$1" ]; do sleep 0.2; done; echo "\$2 done"; exit "\$3"' \\
		task "$RELEASE" "\$key" "\$code" 2>>"$CR/submit.err")
	echo "submit \$\$ \$key \$id rc=\$?" >>"$JOBLOG"
done
echo "run \$\$ submitted" >>"$JOBLOG"
"$TASKQ_BIN" drain --workers 3 >>"$CR/drain.\$\$.log" 2>&1
echo "drain \$\$ rc=\$?" >>"$JOBLOG"
EOF
chmod 0755 "$CR/nightly.sh"

# The crontab: every minute. Variables for the sanitizer builds, the
# test-run mark and the store (TASKQ_DB: the PostgreSQL run, cron_pg) are
# passed on when set, as cron passes nothing of ours.
envlines="TASKQ_HOME=$TASKQ_HOME
TASKQ_AUTOSTART=0
TASKQ_CRON_MARK=$MARK"
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS TASKQ_TESTRUN_MARK TASKQ_DB; do
	[ -n "${!v:-}" ] && envlines+=$'\n'"$v=${!v}"
done
if [ "$CRON_KIND" = debian ]; then
	# /etc/cron.d format (with the user); the name must be letters, digits,
	# - and _ only, the file root's and not group/other writable
	{
		echo "# written by test_cron.sh"
		echo "SHELL=/bin/sh"
		echo "PATH=/usr/bin:/bin"
		echo "MAILTO=\"\""
		echo "$envlines"
		echo "* * * * * root $CR/nightly.sh >>$CR/job.out 2>&1"
	} >"$CR/cron.d/taskq-test"
	chmod 0644 "$CR/cron.d/taskq-test"
	# Its PAM session for a job requires pam_loginuid, which fails in a
	# container without CAP_AUDIT_CONTROL (and then no job runs): the
	# namespace gets a copy of /etc/pam.d/cron where it is optional.
	if [ -f /etc/pam.d/cron ]; then
		sed -E 's/^(session[[:space:]]+)required([[:space:]]+pam_loginuid\.so)/\1optional\2/' \
			/etc/pam.d/cron >"$CR/pam.cron"
	fi
	DAEMON=(cron -f -L 15)
else
	# busybox: a user crontab in the directory given with -c; variables
	# inline, as busybox crond takes few of them from the file
	echo "* * * * * env $(tr '\n' ' ' <<<"$envlines") $CR/nightly.sh >>$CR/job.out 2>&1" \
		>"$CR/spool/crontabs/root"
	chmod 0600 "$CR/spool/crontabs/root"
	DAEMON=(busybox crond -f -c "$CR/spool/crontabs" -L "$CR/crond.log" -l 0)
fi

check "a $CRON_KIND cron daemon starts in private namespaces, with only the test's crontab"
# Inside: for Debian's cron (whose paths are fixed), bind the private
# directories over the real ones (a private mount namespace: nothing changes
# outside; /run only for its pid file, and not when our temp dir is under
# it); busybox crond is told its directory. Then become the daemon, pid 1.
tq_bg unshare --mount --pid --fork --mount-proc --kill-child --propagation private -- \
	/bin/sh -c '
		set -e
		if [ "$2" = debian ]; then
			mount --bind "$1/cron.d" /etc/cron.d
			if [ -e /etc/crontab ]; then mount --bind "$1/crontab" /etc/crontab; fi
			if [ -d /var/spool/cron ]; then mount --bind "$1/spool" /var/spool/cron; fi
			if [ -f "$1/pam.cron" ]; then mount --bind "$1/pam.cron" /etc/pam.d/cron; fi
			case "$1" in /run/*) ;; *) mount --bind "$1/run" /run ;; esac
		fi
		: >"$1/ready"
		shift 2
		exec "$@"
	' sh "$CR" "$CRON_KIND" "${DAEMON[@]}" >"$CR/daemon.log" 2>&1
CRON_NS=$TQ_LAST_PID
wait_for "[ -e '$CR/ready' ]" 20 || fail "the namespace did not come up: $(cat "$CR/daemon.log")"
# the daemon runs, as pid 1 of its namespace (the child of unshare)
# The pid of a child of $1 (from /proc: procps may be missing).
child_of() {
	local f s
	for f in /proc/[0-9]*/stat; do
		read -r s 2>/dev/null <"$f" || continue
		s=${s##*) } # "STATE PPID ..." after the command name
		s=${s#* }
		if [ "${s%% *}" = "$1" ]; then
			f=${f#/proc/}
			echo "${f%/stat}"
			return 0
		fi
	done
	return 1
}
daemon_runs() {
	cron_pid=$(child_of "$CRON_NS") &&
		[ "$(tr '\0' ' ' <"/proc/$cron_pid/cmdline")" = "${DAEMON[*]} " ]
}
wait_for daemon_runs 10 || fail "no cron process: $(cat "$CR/daemon.log")"
# the machine's crontabs are out of its sight
if [ "$CRON_KIND" = debian ]; then
	assert_eq "taskq-test" "$(nsenter -t "$cron_pid" -m ls -A /etc/cron.d)" "/etc/cron.d as the daemon sees it"
	assert_eq "0" "$(nsenter -t "$cron_pid" -m stat -c %s /etc/crontab)" "/etc/crontab as the daemon sees it"
fi

# Deadlines: the next minute starts within 60 s; the second firing comes
# 60 s after the first. 30 s of slack for a loaded machine.
sec=$((10#$(date +%S)))
first_by=$((60 - sec + 30))
echo "started at second $sec of the minute; first firing expected within $((60 - sec))s"

check "the first firing submits the batch and drains it: three tasks running"
wait_for "[ \$(grep -c ' submitted\$' '$JOBLOG' 2>/dev/null) -ge 1 ]" "$first_by" ||
	fail "no cron firing within ${first_by}s; job output: $(cat "$CR/job.out" 2>/dev/null); daemon: $(cat "$CR/daemon.log")"
cat "$JOBLOG"
assert_contains "$(cat "$JOBLOG")" "TASKQ_HOME=$TASKQ_HOME" "the crontab passed TASKQ_HOME"
mapfile -t first < <(awk '/^submit / && !seen[$3]++ { print $3 "=" $4 }' "$JOBLOG")
assert_eq "alpha=1 beta=2 gamma=3" "${first[*]}" "the first run's ids"
for id in 1 2 3; do
	wait_for "[ \"\$(task_field $id state)\" = running ]" 30 ||
		fail "task $id is not running: $(task_field "$id" state reason); drain: $(cat "$CR"/drain.*.log)"
done

check "the second firing, a minute later, finds them still running: no duplicate"
wait_for "[ \$(grep -c ' submitted\$' '$JOBLOG') -ge 2 ]" 95 ||
	fail "no second firing; job log: $(cat "$JOBLOG")"
# no third run: the job exits at once from now on
touch "$STOP"
# the second run's drain found the first one's supervisor and left
wait_for "[ \$(grep -c '^drain ' '$JOBLOG') -ge 1 ]" 30 || fail "the second drain did not end: $(cat "$JOBLOG")"
cat "$JOBLOG"
mapfile -t runs < <(awk '/ submitted$/ { print $2 }' "$JOBLOG")
second=${runs[1]}
for key in alpha beta gamma; do
	ids=$(awk -v k="$key" '$1 == "submit" && $3 == k { print $4 }' "$JOBLOG" | sort -u | tr '\n' ' ')
	assert_eq "$(awk -v k="$key" '$1 == "submit" && $3 == k { print $4; exit }' "$JOBLOG") " "$ids" \
		"every run printed the same id for $key"
done
assert_eq 3 "$(grep -c "^submit $second .* rc=0\$" "$JOBLOG")" "a --unique no-op exits 0"
assert_eq "3" "$(wc -l <"$CR/submit.err")" "one note on stderr per no-op submit ($(cat "$CR/submit.err"))"
assert_contains "$(grep "^drain $second " "$JOBLOG")" "rc=1" "the second drain refused"
assert_contains "$(cat "$CR/drain.$second.log")" "already running" "the second drain's message"
assert_eq "3" "$(task_count)" "tasks in the queue"
assert_exit 0 tq list --json --batch nightly --state running
assert_eq "3|3" "$(out | pyjson '"%d|%d" % (len(d), len(set(t["name"] for t in d)))')" \
	"one unfinished task per unique key"

check "taskq wait --batch times out (124) while the batch runs"
assert_exit 124 tq wait --batch nightly --timeout 1s

check "released, the batch ends; wait --batch reports it: exit 1, one failure"
touch "$RELEASE"
assert_exit 1 tq wait --batch nightly --timeout 60s
assert_exit 1 tq wait --batch nightly --timeout 5s --json
echo "wait --json: $(out)"
assert_eq "True 1 3 2 1 gamma" "$(pyjson '" ".join(str(x) for x in [d["done"], d["exit_status"], d["total"],
	d["counts"]["succeeded"], d["counts"]["failed"]] + [t["name"] for t in d["tasks"] if t["state"] != "succeeded"])' <"$TQ_OUT")" \
	"wait --json: done, exit status, counts, the failed task"
assert_exit 0 tq list --json --limit 0
assert_eq "succeeded|alpha
succeeded|beta
failed|gamma" "$(out | json_get --each state name | tac)"
assert_exit 0 tq wait 1 2 --timeout 5s
assert_exit 3 tq wait 3 --timeout 5s
assert_exit 0 tq log 1
assert_eq "alpha done" "$(out)"
# the first run's drain ran them: it ends once nothing is left, exit 1
wait_for "[ \$(grep -c '^drain ' '$JOBLOG') -ge 2 ]" 30 || fail "the first drain did not end: $(cat "$JOBLOG")"
assert_contains "$(grep "^drain ${runs[0]} " "$JOBLOG")" "rc=1" "the first drain: a task failed"

check "the cron daemon stops, and nothing any job started is left"
# cron is its pid namespace's init: when it dies, the kernel kills every
# process left in the namespace, and unshare (which ignores TERM while it
# waits for its child) exits. Every task has ended by now; only cron is left.
kill -KILL "$cron_pid"
wait_for "! _tq_alive $CRON_NS" 10 || fail "cron's namespace did not stop"
marked() {
	grep -lzxsF -- "TASKQ_CRON_MARK=$MARK" /proc/[0-9]*/environ 2>/dev/null | head -5
}
wait_for "[ -z \"\$(marked)\" ]" 10 || fail "processes left: $(marked)"
