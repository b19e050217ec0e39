/*
 * harness.h - helpers shared by the cmocka unit tests: temporary state
 * directories that are removed afterwards, and waiting with a deadline (the
 * C version of redis's wait_for_condition) instead of fixed sleeps.
 */
#ifndef TQ_TEST_HARNESS_H
#define TQ_TEST_HARNESS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

/* mkdtemp under $TMPDIR (or /tmp): "taskq-test-XXXXXX". Returns a malloc'd path. */
char *th_tempdir(void);

/* rm -rf path (no symlinks followed) and free it. NULL is fine. */
void th_rmtree(char *path);

/* Poll cond(arg) every few ms until it returns nonzero or timeout_ms passes.
 * Returns 1 if it became true, 0 on timeout. */
int th_wait_for(int (*cond)(void *), void *arg, int64_t timeout_ms);

#endif
