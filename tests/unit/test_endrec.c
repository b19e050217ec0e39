/*
 * test_endrec.c - end records (src/worker/endrec.h) on real files: a record
 * written and read back gives every field of the finish exactly (strings
 * with newlines and any byte but NUL, an agent result, a double to the last
 * bit); its file is 0600 and nothing temporary is left; listing finds
 * records and skips what is not one; and a record that is truncated at any
 * byte, has any byte flipped, names another attempt, or is of another
 * version is refused with TQ_ECORRUPT and a message, never trusted.
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "common/sys.h"
#include "worker/endrec.h"

struct fx {
	char *home;
	char path[600];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->home = th_tempdir();
	assert_non_null(f->home);
	snprintf(f->path, sizeof(f->path), "%s/" TQ_ENDREC_DIR "/42.3", f->home);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	th_rmtree(f->home);
	free(f);
	return 0;
}

static const struct tq_result agent_result = {
	.has_result = 1, .result = "done\nwith two lines", .is_error = 0,
	.subtype = "success", .agent_session = "0b5e2c1e-7d2a-4f00-9a4b-1c2d3e4f5a6b",
	.cost_usd = 0.1 + 0.2, .duration_ms = 1234, .num_turns = 7, .input_tokens = 100,
	.output_tokens = 200, .cache_read_tokens = 300, .cache_creation_tokens = 400,
	.model = "claude-x",
};

static struct tq_finish sample(void)
{
	struct tq_finish f = {
		.task_id = 42, .attempt = 3, .worker_id = 9, .outcome = TQ_OUT_FAILED,
		.exit_code = 3, .signal = 0, .category = TQ_CAT_RATE_LIMIT,
		.reason = "exit code 3\nsecond line \x01\xff bytes", .next = TQ_NEXT_RETRY,
		.retry_at = 1700000000123, .pause_group = "claude",
		.pause_until = 1700000000456, .result = &agent_result,
		.ended_at = 1700000000001, .probe_passed = 1,
	};
	return f;
}

static void write_sample(struct fx *f)
{
	struct tq_finish fin = sample();
	struct tq_err err = TQ_ERR_INIT;

	if (tq_endrec_write(f->home, &fin, &err) != 0)
		fail_msg("write: %s", err.msg);
}

static char *slurp(const char *path, size_t *len)
{
	int fd = tq_open(path, O_RDONLY, 0);
	char *buf = malloc(1 << 20);
	ssize_t n;

	assert_true(fd >= 0);
	assert_non_null(buf);
	n = tq_read_full(fd, buf, 1 << 20);
	tq_close(fd);
	assert_true(n > 0);
	*len = (size_t)n;
	return buf;
}

static void spill(const char *path, const char *buf, size_t len)
{
	int fd = tq_open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(tq_write_all(fd, buf, len), 0);
	tq_close(fd);
}

static void test_round_trip(void **state)
{
	struct fx *f = *state;
	struct tq_endrec r;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_finish want = sample();
	char tmp[700];
	struct stat sb;

	write_sample(f);
	assert_int_equal(stat(f->path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	snprintf(tmp, sizeof(tmp), "%s/" TQ_ENDREC_DIR "/.42.3.tmp", f->home);
	assert_int_not_equal(access(tmp, F_OK), 0);
	assert_true(tq_endrec_exists(f->home, 42, 3));
	assert_false(tq_endrec_exists(f->home, 42, 2));
	if (tq_endrec_read(f->home, 42, 3, &r, &err) != 0)
		fail_msg("read: %s", err.msg);
	assert_int_equal(r.f.task_id, 42);
	assert_int_equal(r.f.attempt, 3);
	assert_int_equal(r.f.worker_id, 9);
	assert_int_equal(r.f.outcome, TQ_OUT_FAILED);
	assert_int_equal(r.f.exit_code, 3);
	assert_int_equal(r.f.signal, 0);
	assert_int_equal(r.f.category, TQ_CAT_RATE_LIMIT);
	assert_string_equal(r.f.reason, want.reason);
	assert_int_equal(r.f.next, TQ_NEXT_RETRY);
	assert_int_equal(r.f.retry_at, want.retry_at);
	assert_string_equal(r.f.pause_group, "claude");
	assert_int_equal(r.f.pause_until, want.pause_until);
	assert_int_equal(r.f.probe_passed, 1);
	assert_int_equal(r.f.ended_at, want.ended_at);
	assert_non_null(r.f.result);
	assert_int_equal(r.f.result->has_result, 1);
	assert_string_equal(r.f.result->result, agent_result.result);
	assert_string_equal(r.f.result->subtype, "success");
	assert_string_equal(r.f.result->agent_session, agent_result.agent_session);
	assert_string_equal(r.f.result->model, "claude-x");
	assert_true(r.f.result->cost_usd == agent_result.cost_usd); /* to the bit */
	assert_int_equal(r.f.result->duration_ms, 1234);
	assert_int_equal(r.f.result->num_turns, 7);
	assert_int_equal(r.f.result->cache_creation_tokens, 400);
	tq_endrec_release(&r);

	/* a plain success: no result, no reason, a signal-less exit 0 */
	struct tq_finish ok = { .task_id = 7, .attempt = 1, .worker_id = 2,
				.outcome = TQ_OUT_SUCCEEDED, .exit_code = 0 };
	assert_int_equal(tq_endrec_write(f->home, &ok, &err), 0);
	assert_int_equal(tq_endrec_read(f->home, 7, 1, &r, &err), 0);
	assert_int_equal(r.f.outcome, TQ_OUT_SUCCEEDED);
	assert_int_equal(r.f.exit_code, 0);
	assert_null(r.f.reason);
	assert_null(r.f.result);
	tq_endrec_release(&r);

	/* removal, twice: the second is not an error */
	assert_int_equal(tq_endrec_remove(f->home, 7, 1, &err), 0);
	assert_int_equal(tq_endrec_remove(f->home, 7, 1, &err), 0);
	assert_int_equal(tq_endrec_read(f->home, 7, 1, &r, &err), TQ_ENOTFOUND);
	tq_endrec_release(&r);
}

static void test_list(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_endrec_id *ids = NULL;
	size_t n = 0;
	char p[700];

	/* no directory yet: nothing, no error */
	assert_int_equal(tq_endrec_list(f->home, 100, &ids, &n, &err), 0);
	assert_int_equal(n, 0);
	write_sample(f);
	/* what is not a record is skipped */
	const char *junk[] = { ".42.4.tmp", "42.3.damaged", "x.1", "01.2", "5", "5.0" };
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		snprintf(p, sizeof(p), "%s/" TQ_ENDREC_DIR "/%s", f->home, junk[i]);
		spill(p, "x", 1);
	}
	assert_int_equal(tq_endrec_list(f->home, 100, &ids, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ids[0].task, 42);
	assert_int_equal(ids[0].attempt, 3);
	free(ids);
}

/* Every truncation and every flipped byte is refused as damaged. */
static void test_damage_refused(void **state)
{
	struct fx *f = *state;
	struct tq_endrec r;
	size_t len;
	char *good;

	write_sample(f);
	good = slurp(f->path, &len);
	for (size_t cut = 0; cut < len; cut++) {
		struct tq_err err = TQ_ERR_INIT;
		spill(f->path, good, cut);
		if (tq_endrec_read(f->home, 42, 3, &r, &err) != TQ_ECORRUPT)
			fail_msg("a record cut at %zu of %zu bytes was accepted", cut, len);
		assert_non_null(strstr(err.msg, "not trusted"));
		assert_null(r.f.reason);
		tq_endrec_release(&r);
	}
	for (size_t i = 0; i < len; i++) {
		struct tq_err err = TQ_ERR_INIT;
		good[i] ^= 0x20;
		spill(f->path, good, len);
		if (tq_endrec_read(f->home, 42, 3, &r, &err) != TQ_ECORRUPT)
			fail_msg("a record with byte %zu flipped was accepted", i);
		tq_endrec_release(&r);
		good[i] ^= 0x20;
	}
	/* the message says what was wrong */
	{
		struct tq_err err = TQ_ERR_INIT;
		spill(f->path, good, len / 2);
		assert_int_equal(tq_endrec_read(f->home, 42, 3, &r, &err), TQ_ECORRUPT);
		assert_non_null(strstr(err.msg, "truncated"));
		assert_non_null(strstr(err.msg, f->path));
		tq_endrec_release(&r);
	}
	/* and intact again, it reads */
	spill(f->path, good, len);
	assert_int_equal(tq_endrec_read(f->home, 42, 3, &r, NULL), 0);
	tq_endrec_release(&r);
	free(good);
}

static void test_wrong_attempt_and_version(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_endrec r;
	char other[700], *buf;
	size_t len;

	write_sample(f);
	/* the record of 42.3 under the name 42.4 names another attempt */
	buf = slurp(f->path, &len);
	snprintf(other, sizeof(other), "%s/" TQ_ENDREC_DIR "/42.4", f->home);
	spill(other, buf, len);
	assert_int_equal(tq_endrec_read(f->home, 42, 4, &r, &err), TQ_ECORRUPT);
	assert_non_null(strstr(err.msg, "task 42 attempt 3"));
	tq_endrec_release(&r);
	/* set aside: never read again, kept for a person */
	assert_int_equal(tq_endrec_set_aside(f->home, 42, 4, &err), 0);
	assert_false(tq_endrec_exists(f->home, 42, 4));
	snprintf(other, sizeof(other), "%s/" TQ_ENDREC_DIR "/42.4.damaged", f->home);
	assert_int_equal(access(other, F_OK), 0);
	/* a later version's record */
	buf[17] = '2';
	spill(f->path, buf, len);
	assert_int_equal(tq_endrec_read(f->home, 42, 3, &r, &err), TQ_ECORRUPT);
	assert_non_null(strstr(err.msg, "version"));
	tq_endrec_release(&r);
	free(buf);
}

/* A symlink planted in place of the record or the directory is not followed. */
static void test_symlinks_refused(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_endrec r;
	char dir[700], target[700];

	write_sample(f);
	snprintf(target, sizeof(target), "%s/elsewhere", f->home);
	assert_int_equal(rename(f->path, target), 0);
	assert_int_equal(symlink(target, f->path), 0);
	assert_int_not_equal(tq_endrec_read(f->home, 42, 3, &r, &err), 0);
	tq_endrec_release(&r);
	assert_int_equal(unlink(f->path), 0);
	snprintf(dir, sizeof(dir), "%s/" TQ_ENDREC_DIR, f->home);
	th_rmtree(strdup(dir));
	assert_int_equal(symlink(f->home, dir), 0);
	struct tq_finish fin = sample();
	assert_int_not_equal(tq_endrec_write(f->home, &fin, &err), 0);
}

static void on_alarm(int sig)
{
	(void)sig;
	/* async-signal-safe: say why, then fail the whole program */
	static const char m[] = "an end record operation blocked on a FIFO\n";
	if (write(2, m, sizeof(m) - 1) < 0)
		_exit(3);
	_exit(3);
}

/*
 * What a person or another program may leave in ends/ under a record's
 * name: a FIFO (opening it for reading would wait for a writer for ever:
 * kill, remove, wait and the supervisor's recovery all read records), a
 * directory, a symlink, a file past the bound. Each is refused at once as
 * not trusted (TQ_ECORRUPT, so recovery sets it aside and goes on), never
 * read through; and a FIFO or a symlink planted at the temporary name never
 * keeps a record from being written.
 */
static void test_foreign_files_refused_at_once(void **state)
{
	struct fx *f = *state;
	struct tq_err err = TQ_ERR_INIT;
	struct tq_endrec r;
	struct tq_finish fin = sample();
	char dir[700], tmp[800], target[700];
	int fd;

	signal(SIGALRM, on_alarm);
	alarm(20);
	snprintf(dir, sizeof(dir), "%s/" TQ_ENDREC_DIR, f->home);
	assert_int_equal(mkdir(dir, 0700), 0);

	assert_int_equal(mkfifo(f->path, 0600), 0);
	assert_int_equal(tq_endrec_read(f->home, 42, 3, &r, &err), TQ_ECORRUPT);
	assert_non_null(strstr(err.msg, "not trusted"));
	tq_endrec_release(&r);
	assert_int_equal(tq_endrec_set_aside(f->home, 42, 3, &err), 0);

	assert_int_equal(mkdir(f->path, 0700), 0);
	assert_int_equal(tq_endrec_read(f->home, 42, 3, &r, &err), TQ_ECORRUPT);
	tq_endrec_release(&r);
	assert_int_equal(rmdir(f->path), 0);

	/* a symlink to a good record elsewhere: refused as not trusted, not
	 * an I/O error that recovery would wait on for ever */
	write_sample(f);
	snprintf(target, sizeof(target), "%s/elsewhere", f->home);
	assert_int_equal(rename(f->path, target), 0);
	assert_int_equal(symlink(target, f->path), 0);
	assert_int_equal(tq_endrec_read(f->home, 42, 3, &r, &err), TQ_ECORRUPT);
	assert_non_null(strstr(err.msg, "not trusted"));
	tq_endrec_release(&r);
	assert_int_equal(unlink(f->path), 0);

	/* past the bound: refused without reading it */
	assert_true((fd = tq_open(f->path, O_WRONLY | O_CREAT, 0600)) >= 0);
	assert_int_equal(ftruncate(fd, (off_t)TQ_ENDREC_MAX + 1), 0);
	tq_close(fd);
	assert_int_equal(tq_endrec_read(f->home, 42, 3, &r, &err), TQ_ECORRUPT);
	tq_endrec_release(&r);
	assert_int_equal(unlink(f->path), 0);

	/* a FIFO, then a symlink, at the temporary name: the record is written
	 * all the same, and the link's target is untouched */
	snprintf(tmp, sizeof(tmp), "%s/.42.3.tmp", dir);
	assert_int_equal(mkfifo(tmp, 0600), 0);
	if (tq_endrec_write(f->home, &fin, &err) != 0)
		fail_msg("write over a FIFO at the temporary name: %s", err.msg);
	assert_int_equal(tq_endrec_read(f->home, 42, 3, &r, &err), 0);
	tq_endrec_release(&r);
	assert_int_equal(unlink(f->path), 0);
	spill(target, "keep", 4);
	assert_int_equal(symlink(target, tmp), 0);
	if (tq_endrec_write(f->home, &fin, &err) != 0)
		fail_msg("write over a symlink at the temporary name: %s", err.msg);
	assert_int_equal(tq_endrec_read(f->home, 42, 3, &r, &err), 0);
	tq_endrec_release(&r);
	{
		size_t len;
		char *kept = slurp(target, &len);
		assert_int_equal(len, 4);
		assert_memory_equal(kept, "keep", 4);
		free(kept);
	}
	alarm(0);
	signal(SIGALRM, SIG_DFL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_foreign_files_refused_at_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damage_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_attempt_and_version, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_symlinks_refused, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
