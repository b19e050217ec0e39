#!/usr/bin/env bash
# A descendant that leaves its task's session and clears its environment
# (`setsid env -i`) still dies with its task when the worker and the
# supervisor are SIGKILLed together and a new supervisor starts: no
# environment mark finds it, so recovery must know the task's processes the
# way the kernel does. Both ways are run where the machine allows: a cgroup
# v2 group, the worker's, kept for its attempts (where a cgroup is
# delegated to us: root, or a Delegate=yes unit), and the process-tree
# record (TASKQ_CGROUP=0 forces it).
# Then the supervisor's housekeeping: a record and a group that a crash left
# for an attempt that no longer runs are cleaned up, and what they held is
# killed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_serve.sh"

# The cgroup2 mount and the test's own cgroup directory (where a supervisor
# started by the test makes its tasks' groups), or "" when there is none.
cg_dir() {
	local mnt root rel
	read -r root mnt < <(awk '$0 ~ / - cgroup2 / { print $4, $5; exit }' /proc/self/mountinfo) || true
	[ -n "${mnt:-}" ] || return 0
	rel=$(sed -n 's/^0:://p' /proc/self/cgroup)
	[ "$root" = / ] || rel=${rel#"$root"}
	echo "$mnt${rel%/}"
}
CG=$(cg_dir)
REL=$(sed -n 's/^0:://p' /proc/self/cgroup)
REL=${REL%/}
# The name prefix of this state directory's groups (made by the first serve).
PREFIX=

containment() { tq status --json | pyjson 'd.get("containment", "")'; }

# The escapee of task $1: the `sleep 304` child of the task's shell once it
# has left the session (setsid) and its environment is empty (env -i).
escapee() {
	local p=$1 c
	for c in $(cat "/proc/$p/task/$p/children" 2>/dev/null); do
		[ "$(tr '\0' ' ' <"/proc/$c/cmdline" 2>/dev/null)" = "sleep 304 " ] || continue
		[ "$(awk '{ print $6 }' "/proc/$c/stat" 2>/dev/null)" = "$c" ] || continue
		[ ! -s "/proc/$c/environ" ] || continue
		echo "$c"
		return 0
	done
	return 1
}

# Run the reproduction of issue 16 item 6 under the containment $1.
double_crash() {
	local want=$1 got t p e s w g=
	serve_start 1
	PREFIX=taskq.$(stat -c '%d.%i' "$TASKQ_HOME")
	got=$(containment)
	t=$(submit_id -- sh -c 'setsid env -i sleep 304 & sleep 305')
	wait_for "[ -n \"\$(task_pid $t)\" ]" 10 || fail "task $t did not start"
	p=$(task_pid "$t")
	wait_for "escapee $p" 10 || fail "task $t: no setsid env -i child appeared"
	e=$(escapee "$p")
	tq_track "$e" # whatever happens, cleanup stops it
	s=$(tr '\0' ' ' <"/proc/$p/task/$p/children")
	s=${s/$e/}
	s=${s// /}
	# Crash only once the escapee is known (checked at the end: a taskq
	# that says nothing here must still fail below, on the escapee).
	if [ "$got" = record ]; then
		# The worker's record lists it (it looks again within a second).
		wait_for "grep -qs '^$e ' $TASKQ_HOME/procs/w*" 10 ||
			fail "the record of task $t does not list its escapee $e: $(cat "$TASKQ_HOME"/procs/w* 2>&1)"
	fi
	w=$(running_worker_pid "$t")
	[ -n "$w" ] || fail "no worker runs task $t"
	if [ "$got" = cgroup ]; then
		# the worker's group: taskq.<dev>.<ino>.w<pid>.<start>
		g=$PREFIX.w$w.$(sed 's/.*) //' "/proc/$w/stat" | awk '{ print $20 }')
		assert_eq "0::$REL/$g" "$(grep '^0::' "/proc/$e/cgroup")" \
			"the escapee is in its worker's cgroup"
	fi
	kill -9 "$w" "$SERVE_PID"
	wait_for "! _tq_alive $SERVE_PID && ! _tq_alive $w" 10 || fail "supervisor or worker still alive"
	_tq_alive "$e" || fail "the escapee $e died with its worker: nothing to recover"
	serve_start 1
	wait_state "$t" failed 20
	assert_eq lost "$(outcome_of "$t")"
	wait_for "! _tq_alive $e" 10 ||
		fail "task $t's escapee $e (setsid env -i sleep 304) outlived the double crash"
	wait_for "! _tq_alive $s" 10 || fail "task $t's sleep 305 ($s) outlived the double crash"
	wait_for "! grep -qs '^taskq-procs 2 $t 1 ' $TASKQ_HOME/procs/w*" 10 ||
		fail "task $t's record was not removed: $(grep -l . "$TASKQ_HOME"/procs/w* 2>&1)"
	if [ -n "$CG" ] && [ -n "$g" ]; then
		wait_for "[ ! -d $CG/$g ]" 10 || fail "task $t's cgroup ($g) was not removed"
	fi
	assert_eq "$want" "$got" "status: how task processes are contained"
	_tq_signal TERM "$SERVE_PID"
	wait_for "! _tq_alive $SERVE_PID" 20 || fail "supervisor did not stop"
}

check "the record path (TASKQ_CGROUP=0): the double crash kills the escapee"
export TASKQ_CGROUP=0
double_crash record
unset TASKQ_CGROUP

check "the cgroup path: the double crash kills the escapee"
if [ -z "$CG" ] || [ "$(stat -c %u "$CG" 2>/dev/null)" != "$(id -u)" ] || [ ! -w "$CG/cgroup.procs" ]; then
	echo "SKIP: no cgroup v2 group delegated to uid $(id -u) here ($CG)"
else
	double_crash cgroup
fi

check "housekeeping: a dead worker's record of an attempt that no longer runs is recovered"
tq_bg sleep 1000
orphan=$TQ_LAST_PID
start=$(awk '{ sub(/.*\) /, ""); print $20 }' "/proc/$orphan/stat")
mkdir -p "$TASKQ_HOME/procs"
# (no process has pid 2147483646: the worker of these files is dead)
printf 'taskq-procs 2 999 1 4 tree\n%s %s\nend 4\n' "$orphan" "$start" >"$TASKQ_HOME/procs/w2147483646.1"
# and one naming a live pid with a start time it never had: not touched
tq_bg sleep 1000
other=$TQ_LAST_PID
printf 'taskq-procs 2 998 1 1 tree\n%s 1\nend 1\n' "$other" >"$TASKQ_HOME/procs/w2147483645.1"
serve_start 1
wait_for "! _tq_alive $orphan" 10 || fail "the process of a stale record survived"
wait_for "[ ! -e $TASKQ_HOME/procs/w2147483646.1 ] && [ ! -e $TASKQ_HOME/procs/w2147483645.1 ]" 10 ||
	fail "stale records stayed: $(ls "$TASKQ_HOME/procs")"
_tq_alive "$other" || fail "a pid whose start time did not match was killed"

check "housekeeping: a cgroup left for an attempt that no longer runs is emptied and removed"
if [ "$(containment)" != cgroup ]; then
	echo "SKIP: no cgroup here"
else
	_tq_signal TERM "$SERVE_PID"
	wait_for "! _tq_alive $SERVE_PID" 20
	mkdir "$CG/$PREFIX.997.1"
	tq_bg sleep 1000
	held=$TQ_LAST_PID
	echo "$held" >"$CG/$PREFIX.997.1/cgroup.procs"
	mkdir "$CG/$PREFIX.996.1"
	# a dead worker's group (no process has pid 2147483644), no record
	mkdir "$CG/$PREFIX.w2147483644.1"
	tq_bg sleep 1000
	held2=$TQ_LAST_PID
	echo "$held2" >"$CG/$PREFIX.w2147483644.1/cgroup.procs"
	serve_start 1
	wait_for "! _tq_alive $held && ! _tq_alive $held2" 10 ||
		fail "the process in a stale cgroup survived"
	wait_for "[ ! -d $CG/$PREFIX.997.1 ] && [ ! -d $CG/$PREFIX.996.1 ] && [ ! -d $CG/$PREFIX.w2147483644.1 ]" 10 ||
		fail "stale cgroups stayed: $(ls -d "$CG/$PREFIX".* 2>&1)"
fi
