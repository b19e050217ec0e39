#!/usr/bin/env bash
# test_task_operations_only_in_ops.sh - src/cli parses, calls and prints;
# what it does to tasks is in src/ops, where a second front end (an HTTP
# API, a library user) calls the same functions (issue 18). This fails on a
# line of C under src/cli (not a comment) that
#   - sleeps or waits on a clock: tq_sleep_ms, sleep, usleep, nanosleep,
#     clock_nanosleep (a wait on the store is ops/wait.h, tq_ops_wait, with
#     an absolute deadline);
#   - signals a process: kill, killpg, sigqueue, tgkill, tkill, raise,
#     pidfd_send_signal, tq_proc_signal, tq_proc_kill*, tq_term_* (a task
#     is killed through its worker, ops/kill.h; the supervisor stopped by
#     ops/shutdown.h);
#   - opens the submit socket itself: tq_wire_* calls, TQ_WIRE_SOCKET,
#     socket(), connect(), an include of ipc/wire.h (ops/submit.h holds the
#     transport and its fallback);
#   - rings the doorbell or includes anything of src/ipc: tq_doorbell_*
#     (ops/change.h rings after a retry, a resume, a group's new limit;
#     ops/submit.h after a submit).
. "$(dirname "$0")/lib.sh"

cd "$TASKQ_SRCDIR" || exit 1

# Lines of C under $2 that match the extended regex $1, comments left out:
# a line whose text starts with /*, * or //.
code_in() {
	grep -rnE --include='*.c' --include='*.h' -- "$1" "$2" |
		grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/\*|\*|//)' || true
}

sleeps='\b(tq_sleep_ms|sleep|usleep|nanosleep|clock_nanosleep)[[:space:]]*\('
signals='\b(kill|killpg|sigqueue|tgkill|tkill|raise|pidfd_send_signal|tq_proc_signal|tq_proc_kill[a-z_]*|tq_term_[a-z_]+)[[:space:]]*\('
socket='\b(tq_wire_[a-z_]+|socket|connect)[[:space:]]*\(|\bTQ_WIRE_SOCKET\b|#include[[:space:]]*"ipc/wire\.h"'

check "src/cli does not sleep"
found=$(code_in "$sleeps" src/cli)
[ -z "$found" ] || fail "src/cli sleeps (wait with ops/wait.h, tq_ops_wait):
$found"

check "src/cli signals no process"
found=$(code_in "$signals" src/cli)
[ -z "$found" ] || fail "src/cli signals a process (ops/kill.h, ops/shutdown.h):
$found"

check "src/cli does not open the submit socket"
found=$(code_in "$socket" src/cli)
[ -z "$found" ] || fail "src/cli speaks to the submit socket (ops/submit.h, tq_ops_submit):
$found"

doorbell='\btq_doorbell_[a-z_]+[[:space:]]*\(|#include[[:space:]]*"ipc/'
check "src/cli rings no doorbell and includes nothing of src/ipc"
found=$(code_in "$doorbell" src/cli)
[ -z "$found" ] || fail "src/cli rings the doorbell or includes src/ipc (ops/change.h, ops/submit.h):
$found"

check "the checks find what they look for"
# each pattern on a line of the ops/ file that does it now
[ -n "$(code_in "$sleeps" src/ops/wait.c)" ] || fail "the sleep pattern finds nothing in src/ops/wait.c"
[ -n "$(code_in "$signals" src/ops/kill.c)" ] || fail "the signal pattern finds nothing in src/ops/kill.c"
[ -n "$(code_in "$signals" src/ops/shutdown.c)" ] || fail "the signal pattern finds nothing in src/ops/shutdown.c"
[ -n "$(code_in "$socket" src/ops/submit.c)" ] || fail "the socket pattern finds nothing in src/ops/submit.c"
[ -n "$(code_in "$doorbell" src/ops/change.c)" ] || fail "the doorbell pattern finds nothing in src/ops/change.c"
# and on a planted line of a copy of src/cli, one per kind
plant="$TQ_TMP/cli"
mkdir -p "$plant"
printf 'static void f(void)\n{\n\ttq_sleep_ms(20);\n}\n' >"$plant/a.c"
printf 'static void g(int p)\n{\n\tkill(p, SIGTERM);\n}\n' >"$plant/b.c"
printf '#include "ipc/wire.h"\n' >"$plant/c.c"
printf '/* tq_sleep_ms(20) in a comment is fine */\n' >"$plant/d.c"
printf 'static void h(const char *home)\n{\n\ttq_doorbell_ring(home);\n}\n' >"$plant/e.c"
assert_eq 1 "$(code_in "$sleeps" "$plant" | wc -l)" "planted sleeps found"
assert_eq 1 "$(code_in "$signals" "$plant" | wc -l)" "planted signals found"
assert_eq 1 "$(code_in "$socket" "$plant" | wc -l)" "planted socket includes found"
assert_eq 2 "$(code_in "$doorbell" "$plant" | wc -l)" "planted doorbell ring and ipc/ include found"
