/*
 * test_registry.c - the table of agent CLIs (src/agent/registry.h): its
 * entries are whole and unique, the built-in profiles and the table agree
 * (every entry has its profile, whose parser is the entry; every built-in
 * parser is an entry or "none"), lookups, the names for messages, and the
 * parser error of a profile, which lists the table, word for word as when
 * the list was written in profile.c; the files a workspace gives each
 * agent and the names its run takes there, which no source may take (the
 * names a workspace kept from sources when agent.c listed them itself are
 * still refused, and no others); each agent's stream-input mode (issue
 * 19): claude's, its message and interrupt lines as the CLI reads them,
 * the command it runs from a task's expanded one; none for the others.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/profile.h"
#include "agent/registry.h"
#include "agent/result.h"

#include <cjson/cJSON.h>

static void test_table(void **state)
{
	size_t n = 0;

	(void)state;
	for (const struct tq_agent_def *d; (d = tq_registry_at(n)) != NULL; n++) {
		assert_non_null(d->name);
		assert_true(d->name[0] != '\0');
		assert_string_not_equal(d->name, "none");
		assert_non_null(d->read_obj);
		assert_ptr_equal(tq_registry_find(d->name), d);
		for (size_t k = 0; k < n; k++)
			assert_string_not_equal(tq_registry_at(k)->name, d->name);
		/* isolating comes after capping, for the same run */
		if (d->isolate != NULL)
			assert_non_null(d->cap_retries);
	}
	assert_int_equal(n, 4);
	assert_null(tq_registry_find(NULL));
	assert_null(tq_registry_find(""));
	assert_null(tq_registry_find("none"));
	assert_null(tq_registry_find("Claude"));
	assert_null(tq_registry_find("claude "));
}

static void test_names(void **state)
{
	char buf[256], small[9];

	(void)state;
	tq_registry_names(buf, sizeof(buf));
	assert_string_equal(buf, "claude, gemini, codex, opencode");
	tq_registry_names(small, sizeof(small));
	assert_string_equal(small, "claude, ");
	tq_registry_names(buf, 0); /* writes nothing */
}

/* The built-in profiles and the table agree, both ways. */
static void test_profiles_agree(void **state)
{
	struct tq_profiles *ps = NULL;
	struct tq_err err = TQ_ERR_INIT;
	const struct tq_agent_def *d;
	char names[512];

	(void)state;
	assert_int_equal(tq_profiles_load_file(&ps, "", &err), 0);
	for (size_t i = 0; (d = tq_registry_at(i)) != NULL; i++) {
		const struct tq_profile *p = tq_profiles_find(ps, d->name);

		assert_non_null(p);
		assert_string_equal(p->parser, d->name);
		assert_string_equal(p->argv[0], d->name);
	}
	tq_profiles_names(ps, names, sizeof(names));
	for (char *save = NULL, *tok = strtok_r(names, ", ", &save); tok != NULL;
	     tok = strtok_r(NULL, ", ", &save)) {
		const struct tq_profile *p = tq_profiles_find(ps, tok);

		assert_non_null(p);
		if (strcmp(p->parser, "none") != 0 && tq_registry_find(p->parser) == NULL)
			fail_msg("built-in profile %s: parser %s is not in the registry", tok,
				 p->parser);
	}
	tq_profiles_free(ps);
}

/* A profile naming a parser no entry has: the message lists the table. */
static void test_parser_message(void **state)
{
	char *dir = th_tempdir(), path[4096];
	struct tq_profiles *ps = NULL;
	struct tq_err err = TQ_ERR_INIT;
	FILE *fp;

	(void)state;
	snprintf(path, sizeof(path), "%s/config.json", dir);
	assert_non_null(fp = fopen(path, "w"));
	fputs("{\"profiles\": {\"x\": {\"command\": [\"x\"], \"parser\": \"gpt\"}}}", fp);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(tq_profiles_load_file(&ps, path, &err), TQ_EINVAL);
	assert_null(ps);
	if (strstr(err.msg, ": \"parser\" must be one of claude, gemini, codex, opencode, "
		   "none, not gpt") == NULL)
		fail_msg("got [%s]", err.msg);
	/* each entry's name, and none, is a parser a profile may name */
	for (size_t i = 0; i <= 4; i++) {
		const char *name = i < 4 ? tq_registry_at(i)->name : "none";

		assert_non_null(fp = fopen(path, "w"));
		fprintf(fp, "{\"profiles\": {\"x\": {\"command\": [\"x\"], \"parser\": \"%s\"}}}",
			name);
		assert_int_equal(fclose(fp), 0);
		assert_int_equal(tq_profiles_load_file(&ps, path, &err), 0);
		assert_string_equal(tq_profiles_find(ps, "x")->parser, name);
		tq_profiles_free(ps);
		ps = NULL;
	}
	th_rmtree(dir);
}

/* Session id forms come from the entry; a name without one, the generic
 * form. */
static void test_session_forms(void **state)
{
	static const char uuid[] = "01a20dff-fcbd-7631-ad82-18aa279ff769";
	static const char ses[] = "ses_df1ffcc88ffe7PukM9Ns2Jg3ay";
	char why[64];

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		const char *name = tq_registry_at(i)->name;

		assert_int_equal(tq_result_session_check(name, uuid, why, sizeof(why)), 0);
		assert_int_equal(tq_result_session_check(name, ses, why, sizeof(why)), -1);
		assert_string_equal(why, "not a uuid");
	}
	assert_int_equal(tq_result_session_check("opencode", ses, why, sizeof(why)), 0);
	assert_int_equal(tq_result_session_check("opencode", uuid, why, sizeof(why)), -1);
	assert_string_equal(why, "not ses_ and letters and digits");
	assert_int_equal(tq_result_session_check("none", ses, why, sizeof(why)), 0);
	assert_int_equal(tq_result_session_check(NULL, "a b", why, sizeof(why)), -1);
	assert_string_equal(why, "has characters other than letters, digits and -_.:");
}

/* Whether path's first component ("DIR" of "DIR/NAME") is name. */
static int first_is(const char *path, const char *name)
{
	size_t k = strcspn(path, "/");

	return strlen(name) == k && strncmp(path, name, k) == 0;
}

/* A source may not take name: the workspace has a file of that name. */
static void assert_reserved(const char *name)
{
	struct tq_err err = TQ_ERR_INIT;
	char want[256];

	snprintf(want, sizeof(want), "source \"%s\": the workspace has a file of this name "
		 "already", name);
	assert_int_equal(tq_workspace_check_source(name, "/", &err), TQ_EINVAL);
	if (strcmp(err.msg, want) != 0)
		fail_msg("source %s: got [%s]", name, err.msg);
}

/* A source may not take path's first component. */
static void assert_top_reserved(const char *path)
{
	char top[256];
	size_t k = strcspn(path, "/");

	assert_true(k < sizeof(top));
	memcpy(top, path, k);
	top[k] = '\0';
	assert_reserved(top);
}

/*
 * Each entry's workspace files are relative ("NAME" or "DIR/NAME", no "."
 * or ".." part), with their text; no two of them, the entries' ws_names and
 * what every workspace holds share a first component (each DIR is made
 * once; a name is one file's); each first component and name is refused as
 * a source's name.
 */
static void test_workspace_files(void **state)
{
	static const char *const common[] = { TQ_WORKSPACE_OWNER, TQ_WORKSPACE_PROMPT,
					      TQ_WORKSPACE_MCP, ".cursor", NULL };
	const char *seen[64];
	size_t nseen = 0, nfiles = 0;
	const struct tq_agent_def *d;

	(void)state;
	for (size_t i = 0; common[i] != NULL; i++)
		seen[nseen++] = common[i];
	for (size_t i = 0; (d = tq_registry_at(i)) != NULL; i++) {
		for (const struct tq_agent_file *f = d->ws_files; f != NULL && f->path != NULL;
		     f++, nfiles++) {
			const char *slash = strchr(f->path, '/');

			assert_non_null(f->text);
			assert_true(f->path[0] != '\0' && f->path[0] != '/');
			assert_true(slash == NULL ||
				    (slash[1] != '\0' && strchr(slash + 1, '/') == NULL));
			assert_false(first_is(f->path, ".") || first_is(f->path, ".."));
			for (size_t k = 0; k < nseen; k++)
				if (first_is(f->path, seen[k]))
					fail_msg("%s: %s shares %s", d->name, f->path, seen[k]);
			assert_true(nseen < sizeof(seen) / sizeof(seen[0]));
			seen[nseen++] = f->path;
			assert_top_reserved(f->path);
		}
		for (const char *const *n = d->ws_names; n != NULL && *n != NULL; n++) {
			assert_null(strchr(*n, '/'));
			for (size_t k = 0; k < nseen; k++)
				if (first_is(seen[k], *n))
					fail_msg("%s: %s shares %s", d->name, *n, seen[k]);
			assert_true(nseen < sizeof(seen) / sizeof(seen[0]));
			seen[nseen++] = *n;
			assert_reserved(*n);
		}
	}
	assert_true(nfiles > 0);
	for (size_t i = 0; common[i] != NULL; i++)
		assert_reserved(common[i]);
}

/* The names a workspace kept from sources when agent.c listed them: the
 * same, no more (a source of another name is linked). */
static void test_reserved_as_before(void **state)
{
	static const char *const before[] = { "prompt.md", ".mcp.json", ".gemini", ".cursor",
					      "opencode.json", ".taskq-task",
					      ".taskq-codex-home", NULL };
	static const char *const others[] = { "notes", ".gemini2", "opencode.jsonc", ".taskq",
					      "prompt", ".codex", "settings.json", NULL };
	struct tq_err err = TQ_ERR_INIT;

	(void)state;
	for (size_t i = 0; before[i] != NULL; i++)
		assert_reserved(before[i]);
	for (size_t i = 0; others[i] != NULL; i++)
		if (tq_workspace_check_source(others[i], "/", &err) != 0)
			fail_msg("source %s refused: %s", others[i], err.msg);
}

/* What a claude turn writes: its message line, then the interrupt. */
static void test_stream_modes(void **state)
{
	const struct tq_agent_def *c = tq_registry_find("claude");
	const struct tq_agent_stream *st = c->stream;
	struct tq_stream_turn turn = { .prompt = "say \"hi\"\nand go", .cwd = "/",
				       .fresh = 1, .task = 7, .attempt = 1 };
	struct tq_result_parser *p;
	char *line;
	size_t len;
	int64_t at;
	cJSON *o;

	(void)state;
	assert_non_null(st);
	assert_string_equal(st->args[0], "--input-format");
	assert_string_equal(st->args[1], "stream-json");
	assert_null(st->args[2]);
	p = tq_result_parser_stream("claude", &turn);
	assert_non_null(p);
	assert_false(tq_result_quiet(p));
	/* one line, ending in its newline, the text as it is */
	assert_int_equal(tq_result_stream_input(p, &line, &len, &at), 1);
	assert_int_equal(len, strlen(line));
	assert_int_equal(line[len - 1], '\n');
	assert_ptr_equal(strchr(line, '\n') + 1, line + len); /* one line */
	o = cJSON_Parse(line);
	assert_non_null(o);
	assert_string_equal(cJSON_GetObjectItem(o, "type")->valuestring, "user");
	cJSON *m = cJSON_GetObjectItem(o, "message");
	assert_string_equal(cJSON_GetObjectItem(m, "role")->valuestring, "user");
	cJSON *b = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "content"), 0);
	assert_string_equal(cJSON_GetObjectItem(b, "type")->valuestring, "text");
	assert_string_equal(cJSON_GetObjectItem(b, "text")->valuestring, "say \"hi\"\nand go");
	cJSON_Delete(o);
	free(line);
	assert_int_equal(tq_result_stream_input(p, &line, &len, &at), 0);
	assert_int_equal(tq_result_interrupt(p), 0);
	assert_int_equal(tq_result_stream_input(p, &line, &len, &at), 1);
	assert_string_equal(line, "{\"type\":\"control_request\",\"request_id\":\"taskq-7-1-1\","
			    "\"request\":{\"subtype\":\"interrupt\"}}\n");
	free(line);
	assert_string_equal(tq_result_stream_state(p), "");
	tq_result_parser_free(p);
}

/* The command of a warm process: the task's expanded one with the mode's
 * args after the program, less the prompt. */
static void test_stream_argv(void **state)
{
	char *cmd[] = { "claude", "-p", "--output-format", "stream-json", "--verbose",
			"--model", "m1", "--resume", "0b6c7e1e-7c1f-4a43-9d57-1f2b3c4d5e6f",
			"--", "the prompt", NULL };
	char *plain[] = { "claude", "-p", "the prompt", "--verbose", NULL };
	struct tq_agent_run ar = TQ_AGENT_RUN_INIT;
	struct tq_err err = TQ_ERR_INIT;
	char **v = NULL;
	size_t n = 0;

	(void)state;
	strcpy(ar.parser, "claude");
	ar.argv = cmd;
	ar.argc = 11;
	assert_ptr_equal(tq_agent_stream_of(&ar), tq_registry_find("claude")->stream);
	assert_int_equal(tq_agent_stream_argv(&ar, "the prompt", &v, &n, &err), 0);
	assert_int_equal(n, 11);
	const char *want[] = { "claude", "--input-format", "stream-json", "-p",
			       "--output-format", "stream-json", "--verbose", "--model", "m1",
			       "--resume", "0b6c7e1e-7c1f-4a43-9d57-1f2b3c4d5e6f" };
	for (size_t i = 0; i < n; i++)
		assert_string_equal(v[i], want[i]);
	assert_null(v[n]);
	tq_profile_argv_free(v);
	/* a template of the user's with the prompt as a plain argument */
	ar.argv = plain;
	ar.argc = 4;
	assert_int_equal(tq_agent_stream_argv(&ar, "the prompt", &v, &n, &err), 0);
	assert_int_equal(n, 5);
	assert_string_equal(v[3], "-p");
	assert_string_equal(v[4], "--verbose");
	tq_profile_argv_free(v);
	/* every agent of the table has the mode; a run of no agent, none */
	for (size_t i = 0; tq_registry_at(i) != NULL; i++)
		assert_non_null(tq_registry_at(i)->stream);
	strcpy(ar.parser, "none");
	assert_null(tq_agent_stream_of(&ar));
	assert_int_equal(tq_agent_stream_argv(&ar, "x", &v, &n, &err), TQ_EINVAL);
	assert_null(v);
	assert_non_null(strstr(err.msg, "none"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_profiles_agree),
		cmocka_unit_test(test_parser_message),
		cmocka_unit_test(test_session_forms),
		cmocka_unit_test(test_workspace_files),
		cmocka_unit_test(test_reserved_as_before),
		cmocka_unit_test(test_stream_modes),
		cmocka_unit_test(test_stream_argv),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
