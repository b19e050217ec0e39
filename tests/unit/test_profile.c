/*
 * test_profile.c - agent profiles: the built-in set, a user's config over
 * it (field by field, env variable by variable, extends, removal, the
 * default agent), template expansion ({?x}, missing values, literal
 * braces, unknown placeholders), the prompt-on-stdin template, and that
 * every broken config is one clear error naming the file and profile.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/profile.h"

struct fx {
	char *dir;
	char path[4096];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->dir = th_tempdir();
	snprintf(f->path, sizeof(f->path), "%s/config.json", f->dir);
	unsetenv("TASKQ_CONFIG");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	th_rmtree(f->dir);
	free(f);
	unsetenv("TASKQ_CONFIG");
	return 0;
}

static void write_config(struct fx *f, const char *text)
{
	FILE *fp = fopen(f->path, "we");

	assert_non_null(fp);
	assert_int_equal(fputs(text, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
}

/* Load with f's config holding text; returns the code, err filled. */
static int load(struct fx *f, const char *text, struct tq_profiles **ps, struct tq_err *err)
{
	write_config(f, text);
	return tq_profiles_load_file(ps, f->path, err);
}

/* The argv as one string, elements joined by '|'. */
static void joined(char *const *v, size_t n, char *buf, size_t cap)
{
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (i)
			strncat(buf, "|", cap - strlen(buf) - 1);
		strncat(buf, v[i], cap - strlen(buf) - 1);
	}
}

static const char *env_of(const struct tq_profile *p, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < p->nenv_set; i++)
		if (strncmp(p->env_set[i], name, len) == 0 && p->env_set[i][len] == '=')
			return p->env_set[i] + len + 1;
	return NULL;
}

/* Expand t (NULL-terminated) with v, joined into buf; returns the code. */
static int expand(const char *const *t, const struct tq_placeholders *v, char *buf,
		  size_t cap, struct tq_err *err)
{
	size_t n = 0, outc = 0;
	char **out = NULL;
	int rc;

	while (t[n] != NULL)
		n++;
	rc = tq_profile_expand((char *const *)t, n, v, &out, &outc, err);
	if (rc == 0) {
		joined(out, outc, buf, cap);
		assert_null(out[outc]);
	} else {
		assert_null(out);
		buf[0] = '\0';
	}
	tq_profile_argv_free(out);
	return rc;
}

/* ------------------------------------------------------------------ */

static void test_builtin(void **state)
{
	struct tq_profiles *ps = NULL;
	struct tq_err err = TQ_ERR_INIT;
	static const char *const names[] = { "claude", "gemini", "codex", "opencode" };
	char buf[256];

	(void)state;
	assert_int_equal(tq_profiles_load_file(&ps, "", &err), 0);
	for (size_t i = 0; i < 4; i++) {
		const struct tq_profile *p = tq_profiles_find(ps, names[i]);

		assert_non_null(p);
		assert_string_equal(p->argv[0], names[i]);
		assert_string_equal(p->parser, names[i]);
		assert_non_null(p->interactive);
		assert_true(p->timeout_ms >= 30 * 60 * 1000);
		assert_int_equal(p->isolate, 0);
		assert_non_null(p->stdin_prompt);
		assert_int_equal(tq_profile_check(p->argv, p->argc, &err), 0);
	}
	assert_string_equal(tq_profiles_find(ps, NULL)->name, "claude");
	assert_null(tq_profiles_find(ps, "nosuch"));
	assert_string_equal(env_of(tq_profiles_find(ps, "claude"), "CLAUDE_CODE_MAX_RETRIES"), "0");
	assert_string_equal(env_of(tq_profiles_find(ps, "gemini"), "GEMINI_CLI_TRUST_WORKSPACE"),
			    "true");
	tq_profiles_names(ps, buf, sizeof(buf));
	assert_string_equal(buf, "claude, gemini, codex, opencode");
	tq_profiles_free(ps);
}

/* The claude template expands to what the real 2.1.197 accepts: the prompt
 * after "--", --model/--resume pairs only with values, the MCP flags only
 * in a workspace. */
static void test_claude_expansion(void **state)
{
	struct tq_profiles *ps = NULL;
	struct tq_err err = TQ_ERR_INIT;
	const struct tq_profile *p;
	struct tq_placeholders v = { .prompt = "-fix it", .model = "sonnet",
				     .session_id = "0d5f", .mcp_config = "/w/.mcp.json" };
	char **out = NULL;
	size_t n = 0;
	char buf[1024];

	(void)state;
	assert_int_equal(tq_profiles_load_file(&ps, "", &err), 0);
	p = tq_profiles_find(ps, "claude");
	assert_int_equal(tq_profile_expand(p->argv, p->argc, &v, &out, &n, &err), 0);
	joined(out, n, buf, sizeof(buf));
	assert_string_equal(buf, "claude|-p|--output-format|stream-json|--verbose|--model|sonnet|"
			    "--resume|0d5f|--mcp-config|/w/.mcp.json|--strict-mcp-config|--|"
			    "-fix it");
	tq_profile_argv_free(out);
	v = (struct tq_placeholders){ .prompt = "hi" };
	assert_int_equal(tq_profile_expand(p->argv, p->argc, &v, &out, &n, &err), 0);
	joined(out, n, buf, sizeof(buf));
	assert_string_equal(buf, "claude|-p|--output-format|stream-json|--verbose|--|hi");
	tq_profile_argv_free(out);
	tq_profiles_free(ps);
}

static void test_expand_rules(void **state)
{
	struct tq_err err = TQ_ERR_INIT;
	struct tq_placeholders v = { .prompt = "say {model}", .model = "m1", .task_id = "42",
				     .workdir = "/w", .session_id = "" };
	char buf[512];

	(void)state;
	/* embedded, several in one element, values never expanded again */
	assert_int_equal(expand((const char *[]){ "x", "--model={model}", "{task_id}:{workdir}",
						  "{prompt}", NULL }, &v, buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, "x|--model=m1|42:/w|say {model}");
	/* {?x}TEXT: TEXT only with a value; "" is no value; the bare form adds nothing */
	assert_int_equal(expand((const char *[]){ "x", "{?model}--model", "{model}",
						  "{?session_id}--resume", "{session_id}",
						  "{?model}", "{?prompt_file}-f={prompt_file}", NULL },
				&v, buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, "x|--model|m1");
	/* braces that are no placeholder, and the {{ escape */
	assert_int_equal(expand((const char *[]){ "x", "mcp_servers={}", "{\"a\":{}}",
						  "{{prompt}", "{ model }", "{Model}", NULL },
				&v, buf, sizeof(buf), &err), 0);
	assert_string_equal(buf, "x|mcp_servers={}|{\"a\":{}}|{prompt}|{ model }|{Model}");
	/* unknown placeholders are errors naming them */
	assert_int_equal(expand((const char *[]){ "x", "--p={promt}", NULL }, &v, buf,
				sizeof(buf), &err), TQ_EINVAL);
	assert_non_null(strstr(err.msg, "unknown placeholder {promt}"));
	assert_non_null(strstr(err.msg, "--p={promt}"));
	assert_int_equal(expand((const char *[]){ "x", "{?sesion_id}--resume", NULL }, &v, buf,
				sizeof(buf), &err), TQ_EINVAL);
	assert_non_null(strstr(err.msg, "{?sesion_id}"));
	/* nothing left */
	assert_int_equal(expand((const char *[]){ "{session_id}", NULL }, &v, buf, sizeof(buf),
				&err), TQ_EINVAL);
	/* no values at all */
	assert_int_equal(expand((const char *[]){ "x", "{prompt}", "--", NULL }, NULL, buf,
				sizeof(buf), &err), 0);
	assert_string_equal(buf, "x|--");
	/* a session id that would be an option is refused (issue 16.9) */
	v.session_id = "--dangerously-skip-permissions";
	assert_int_equal(expand((const char *[]){ "claude", "{?session_id}--resume",
						  "{session_id}", NULL }, &v, buf, sizeof(buf), &err),
			 TQ_EINVAL);
	assert_non_null(strstr(err.msg, "{session_id} \"--dangerously-skip-permissions\" starts with '-'"));
}

static void test_uses_and_stdin(void **state)
{
	struct tq_profiles *ps = NULL;
	struct tq_err err = TQ_ERR_INIT;
	const struct tq_profile *p;
	char **out = NULL;
	size_t n = 0;
	char buf[1024];

	(void)state;
	assert_true(tq_profile_uses("{prompt}", "prompt"));
	assert_true(tq_profile_uses("--prompt={prompt}", "prompt"));
	assert_true(tq_profile_uses("{?prompt}--p", "prompt"));
	assert_false(tq_profile_uses("{prompt_file}", "prompt"));
	assert_false(tq_profile_uses("{{prompt}", "prompt"));
	assert_false(tq_profile_uses("--prompt", "prompt"));
	assert_int_equal(tq_profiles_load_file(&ps, "", &err), 0);
	p = tq_profiles_find(ps, "claude");
	assert_int_equal(tq_profile_prompt_on_stdin(p->argv, p->argc, p->stdin_prompt, &out, &n,
						    &err), 0);
	joined(out, n, buf, sizeof(buf));
	assert_null(strstr(buf, "{prompt}"));
	assert_non_null(strstr(buf, "{?session_id}--resume|{session_id}"));
	tq_profile_argv_free(out);
	p = tq_profiles_find(ps, "codex");
	assert_int_equal(tq_profile_prompt_on_stdin(p->argv, p->argc, p->stdin_prompt, &out, &n,
						    &err), 0);
	assert_string_equal(out[n - 1], "-");
	assert_string_equal(out[n - 2], "--");
	tq_profile_argv_free(out);
	p = tq_profiles_find(ps, "gemini");
	assert_int_equal(tq_profile_prompt_on_stdin(p->argv, p->argc, p->stdin_prompt, &out, &n,
						    &err), 0);
	for (size_t i = 0; i < n; i++)
		assert_null(strstr(out[i], "prompt"));
	tq_profile_argv_free(out);
	tq_profiles_free(ps);
}

/* A config changes only what it names: env by variable (null drops one),
 * lists replaced, scalars replaced; new profiles; extends; removal. */
static void test_override(void **state)
{
	struct fx *f = *state;
	struct tq_profiles *ps = NULL;
	struct tq_err err = TQ_ERR_INIT;
	const struct tq_profile *p;
	char buf[1024];

	assert_int_equal(load(f,
		"{\"rules\": [], \"other\": 1,\n"
		" \"default_agent\": \"mine\",\n"
		" \"profiles\": {\n"
		"  \"claude\": {\"env\": {\"CLAUDE_CODE_MAX_RETRIES\": \"4\", \"X_NEW\": \"1\"},\n"
		"              \"model\": \"sonnet\", \"isolate\": true, \"timeout\": \"2h\"},\n"
		"  \"gemini\": {\"env\": {\"GEMINI_CLI_TRUST_WORKSPACE\": null},\n"
		"              \"unset_env\": [\"A\", \"B\"]},\n"
		"  \"opencode\": null,\n"
		"  \"mine\": {\"command\": [\"mycli\", \"--ask\", \"{prompt}\"]},\n"
		"  \"claude-bash\": {\"extends\": \"claude\",\n"
		"                   \"command\": [\"claude\", \"-p\", \"--allowedTools\", \"Bash\",\n"
		"                               \"--\", \"{prompt}\"]}\n"
		" }}\n", &ps, &err), 0);
	p = tq_profiles_find(ps, "claude");
	assert_string_equal(env_of(p, "CLAUDE_CODE_MAX_RETRIES"), "4");
	assert_string_equal(env_of(p, "X_NEW"), "1");
	assert_int_equal(p->nenv_set, 2);
	assert_string_equal(p->model, "sonnet");
	assert_int_equal(p->isolate, 1);
	assert_int_equal(p->timeout_ms, 2 * 3600 * 1000);
	assert_string_equal(p->argv[0], "claude"); /* not given: kept */
	assert_int_equal(p->nenv_unset, 1);
	p = tq_profiles_find(ps, "gemini");
	assert_null(env_of(p, "GEMINI_CLI_TRUST_WORKSPACE"));
	assert_int_equal(p->nenv_unset, 2);
	assert_string_equal(p->env_unset[1], "B");
	assert_null(tq_profiles_find(ps, "opencode"));
	p = tq_profiles_find(ps, NULL);
	assert_string_equal(p->name, "mine");
	assert_string_equal(p->parser, "none");
	assert_null(p->interactive);
	assert_int_equal(p->timeout_ms, 0);
	assert_null(p->stdin_prompt);
	p = tq_profiles_find(ps, "claude-bash");
	assert_string_equal(p->parser, "claude");
	assert_string_equal(env_of(p, "CLAUDE_CODE_MAX_RETRIES"), "4"); /* the changed claude */
	assert_string_equal(p->model, "sonnet");
	joined(p->argv, p->argc, buf, sizeof(buf));
	assert_string_equal(buf, "claude|-p|--allowedTools|Bash|--|{prompt}");
	tq_profiles_names(ps, buf, sizeof(buf));
	assert_string_equal(buf, "claude, gemini, codex, mine, claude-bash");
	tq_profiles_free(ps);
}

/* Each broken config: TQ_EINVAL, one line naming the file and what. */
static void test_bad_configs(void **state)
{
	struct fx *f = *state;
	static const struct { const char *text, *want; } cases[] = {
		{ "{\"profiles\": {\"claude\": {\"comand\": []}}}", "unknown field \"comand\"" },
		{ "{\"profiles\": {\"claude\": {\"parser\": \"gpt\"}}}", "not gpt" },
		{ "{\"profiles\": {\"claude\": {\"command\": []}}}", "non-empty list" },
		{ "{\"profiles\": {\"claude\": {\"command\": [\"{prompt}\"]}}}", "plain name" },
		{ "{\"profiles\": {\"claude\": {\"command\": [\"c\", 5]}}}", "list of strings" },
		{ "{\"profiles\": {\"x\": {\"command\": [\"c\", \"{promt}\"]}}}",
		  "unknown placeholder {promt}" },
		{ "{\"profiles\": {\"x\": {\"interactive\": [\"c\", \"{?nope}a\"], "
		  "\"command\": [\"c\"]}}}", "{?nope}" },
		{ "{\"profiles\": {\"x\": {\"parser\": \"claude\"}}}", "no \"command\"" },
		{ "{\"profiles\": {\"x\": {\"extends\": \"nosuch\"}}}", "extends \"nosuch\"" },
		{ "{\"profiles\": {\"x\": null}}", "null removes" },
		{ "{\"profiles\": {\"bad name\": {}}}", "a name is" },
		{ "{\"profiles\": {\"claude\": {\"env\": {\"A=B\": \"1\"}}}}", "not a variable" },
		{ "{\"profiles\": {\"claude\": {\"env\": {\"A\": 1}}}}", "must be a string" },
		{ "{\"profiles\": {\"claude\": {\"env\": [\"A=1\"]}}}", "\"env\" must be" },
		{ "{\"profiles\": {\"claude\": {\"timeout\": \"5x\"}}}", "\"timeout\"" },
		{ "{\"profiles\": {\"claude\": {\"isolate\": \"yes\"}}}", "true or false" },
		{ "{\"profiles\": {\"claude\": {\"unset_env\": \"A\"}}}", "unset_env" },
		{ "{\"profiles\": {\"claude\": 3}}", "must be an object" },
		{ "{\"profiles\": []}", "\"profiles\" must be an object" },
		{ "{\"default_agent\": \"nosuch\"}", "\"default_agent\" is \"nosuch\"" },
		{ "{\"default_agent\": 1}", "\"default_agent\" must be" },
		{ "[1]", "expected a JSON object" },
		{ "{\"profiles\": {\n  \"claude\": {,}}}", "invalid JSON at line 2, column" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tq_profiles *ps = NULL;
		struct tq_err err = TQ_ERR_INIT;

		if (load(f, cases[i].text, &ps, &err) != TQ_EINVAL || ps != NULL ||
		    strstr(err.msg, cases[i].want) == NULL || strchr(err.msg, '\n') != NULL ||
		    strstr(err.msg, f->path) == NULL)
			fail_msg("case %zu (%s): got [%s], want [%s]", i, cases[i].text, err.msg,
				 cases[i].want);
	}
}

/* $TASKQ_CONFIG is used and must exist; XDG_CONFIG_HOME is looked in;
 * a missing default file is fine. */
static void test_config_lookup(void **state)
{
	struct fx *f = *state;
	struct tq_profiles *ps = NULL;
	struct tq_err err = TQ_ERR_INIT;
	char xdg[4200], dir[4096];

	setenv("TASKQ_CONFIG", f->path, 1);
	write_config(f, "{\"profiles\": {\"claude\": {\"model\": \"from-env\"}}}");
	assert_int_equal(tq_profiles_load(&ps, &err), 0);
	assert_string_equal(tq_profiles_find(ps, "claude")->model, "from-env");
	tq_profiles_free(ps);
	unlink(f->path);
	assert_int_equal(tq_profiles_load(&ps, &err), TQ_EINVAL);
	assert_null(ps);
	assert_non_null(strstr(err.msg, f->path));
	unsetenv("TASKQ_CONFIG");

	snprintf(dir, sizeof(dir), "%s/taskq", f->dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(xdg, sizeof(xdg), "%s/config.json", dir);
	setenv("XDG_CONFIG_HOME", f->dir, 1);
	assert_int_equal(tq_profiles_load(&ps, &err), 0); /* no file: built-ins */
	assert_null(tq_profiles_find(ps, "claude")->model);
	tq_profiles_free(ps);
	assert_true(strlen(xdg) < sizeof(f->path));
	memcpy(f->path, xdg, strlen(xdg) + 1);
	write_config(f, "{\"profiles\": {\"claude\": {\"model\": \"from-xdg\"}}}");
	assert_int_equal(tq_profiles_load(&ps, &err), 0);
	assert_string_equal(tq_profiles_find(ps, "claude")->model, "from-xdg");
	tq_profiles_free(ps);
	write_config(f, "{\"profiles\": {\"claude\": {\"model\": 7}}}");
	assert_int_equal(tq_profiles_load(&ps, &err), TQ_EINVAL);
	assert_non_null(strstr(err.msg, "\"model\" must be a string"));
	unsetenv("XDG_CONFIG_HOME");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtin),
		cmocka_unit_test(test_claude_expansion),
		cmocka_unit_test(test_expand_rules),
		cmocka_unit_test(test_uses_and_stdin),
		cmocka_unit_test_setup_teardown(test_override, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_configs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_lookup, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
