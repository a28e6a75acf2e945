/* program.json (docs/program.md) into struct program and back, and the
 * program's command with its {name}s expanded (common/rundir.c's
 * rundir_expand, the one reader of that syntax). */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agent.h"
#include "buf.h"
#include "error.h"
#include "json.h"
#include "program.h"
#include "rundir.h"
#include "strutil.h"
#include "xmalloc.h"

#define PROGRAM_WORD_MAX	((size_t)1 << 20)	/* bytes of an expanded word */

static const char *const launch_names[] = {
	[PROGRAM_PER_RANK] = PROGRAM_LAUNCH_PER_RANK,
	[PROGRAM_PER_NODE] = PROGRAM_LAUNCH_PER_NODE,
	[PROGRAM_ONCE] = PROGRAM_LAUNCH_ONCE,
};

const char *
program_launch_name(enum program_launch l)
{
	return launch_names[l];
}

int
program_launch_parse(const char *name, enum program_launch *l)
{
	size_t	i;

	for (i = 0; i < sizeof launch_names / sizeof launch_names[0]; i++) {
		if (strcmp(name, launch_names[i]) == 0) {
			*l = (enum program_launch)i;
			return 0;
		}
	}
	return CADRE_ERR_INVALID;
}

/* An optional string member into *out (a copy; NULL when absent). */
static int
opt_string(const json_t *root, const char *key, char **out, char *msg,
    size_t msglen)
{
	const char	*s;
	int		 error;

	*out = NULL;
	if ((error = cjson_get_string(root, key, &s)) == CADRE_ERR_NOT_FOUND)
		return 0;
	if (error != 0)
		return cadre_errf(msg, msglen, error, "%s: expected a string",
		    key);
	*out = xstrdup(s);
	return 0;
}

/* A list of strings (absent: none) into *out, *n. */
static int
string_list(const json_t *root, const char *key, char ***out, size_t *n,
    char *msg, size_t msglen)
{
	const json_t	*a = json_object_get(root, key), *e;
	size_t		 i;

	*out = NULL;
	*n = 0;
	if (a == NULL || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "%s: expected a list of strings", key);
	if (json_array_size(a) > PROGRAM_LIST_MAX)
		return cadre_errf(msg, msglen, CADRE_ERR_TOO_LARGE,
		    "%s: more than %d items", key, PROGRAM_LIST_MAX);
	*out = xcalloc(json_array_size(a) + 1, sizeof **out);
	json_array_foreach(a, i, e) {
		if (!json_is_string(e))
			return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
			    "%s[%zu]: expected a string", key, i);
		(*out)[(*n)++] = xstrdup(json_string_value(e));
	}
	return 0;
}

/* An object of strings (absent: none) into pairs. Names of env must be
 * variable names. */
static int
string_map(const json_t *root, const char *key, int env_names,
    struct program_pair **out, size_t *n, char *msg, size_t msglen)
{
	const json_t	*o = json_object_get(root, key), *v;
	const char	*name;

	*out = NULL;
	*n = 0;
	if (o == NULL || json_is_null(o))
		return 0;
	if (!json_is_object(o))
		return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "%s: expected an object of strings", key);
	if (json_object_size(o) > PROGRAM_LIST_MAX)
		return cadre_errf(msg, msglen, CADRE_ERR_TOO_LARGE,
		    "%s: more than %d members", key, PROGRAM_LIST_MAX);
	*out = xcalloc(json_object_size(o) + 1, sizeof **out);
	json_object_foreach((json_t *)o, name, v) {
		if (!json_is_string(v))
			return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
			    "%s.%s: expected a string", key, name);
		if (env_names && !str_is_env_name(name))
			return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
			    "%s: '%s' is not a variable name", key, name);
		(*out)[*n].name = xstrdup(name);
		(*out)[*n].value = xstrdup(json_string_value(v));
		(*n)++;
	}
	return 0;
}

/* "SIGUSR1" into its number; 0 when it names none. */
static int
signal_number(const char *name)
{
	const char	*abbrev;
	int		 i;

	if (strncmp(name, "SIG", 3) != 0)
		return 0;
	for (i = 1; i < NSIG; i++)
		if ((abbrev = sigabbrev_np(i)) != NULL &&
		    strcmp(abbrev, name + 3) == 0)
			return i;
	return 0;
}

static int
parse_root(const json_t *root, struct program *p, char *msg, size_t msglen)
{
	const json_t	*cmd;
	const char	*s;
	char		*sig = NULL;
	int64_t		 v;
	int		 error;

	if (!json_is_object(root))
		return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "expected a JSON object");
	if (cjson_get_int(root, PJ_VERSION, &v) != 0 || v != PROGRAM_VERSION)
		return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "%s: expected %d (written by another cadre version?)",
		    PJ_VERSION, PROGRAM_VERSION);
	cmd = json_object_get(root, PJ_COMMAND);
	if (json_is_string(cmd)) {
		if (json_string_length(cmd) == 0)
			return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
			    "%s: empty", PJ_COMMAND);
		p->shell = xstrdup(json_string_value(cmd));
	} else {
		if ((error = string_list(root, PJ_COMMAND, &p->words,
		    &p->nwords, msg, msglen)) != 0)
			return error;
		if (p->nwords == 0 || p->words[0][0] == '\0')
			return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
			    "%s: expected a non-empty list of words or a "
			    "string", PJ_COMMAND);
	}
	p->launch = PROGRAM_PER_RANK;
	if ((error = cjson_get_string(root, PJ_LAUNCH, &s)) == 0) {
		if (program_launch_parse(s, &p->launch) != 0)
			return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
			    "%s: '%s': expected %s, %s or %s", PJ_LAUNCH, s,
			    PROGRAM_LAUNCH_PER_RANK, PROGRAM_LAUNCH_PER_NODE,
			    PROGRAM_LAUNCH_ONCE);
	} else if (error != CADRE_ERR_NOT_FOUND)
		return cadre_errf(msg, msglen, error, "%s: expected a string",
		    PJ_LAUNCH);
	if ((error = opt_string(root, PJ_WORKDIR, &p->workdir, msg,
	    msglen)) != 0 ||
	    (error = opt_string(root, PJ_METRICS_REGEX, &p->metrics_regex,
	    msg, msglen)) != 0 ||
	    (error = opt_string(root, PJ_EXPERIMENT, &p->experiment, msg,
	    msglen)) != 0 ||
	    (error = opt_string(root, PJ_RUN_ID, &p->run_id, msg,
	    msglen)) != 0 ||
	    (error = opt_string(root, PJ_CONFIG_ID, &p->config_id, msg,
	    msglen)) != 0 ||
	    (error = string_map(root, PJ_ENV, 1, &p->env, &p->nenv, msg,
	    msglen)) != 0 ||
	    (error = string_map(root, PJ_VARS, 0, &p->vars, &p->nvars, msg,
	    msglen)) != 0 ||
	    (error = string_list(root, PJ_SETUP, &p->setup, &p->nsetup, msg,
	    msglen)) != 0)
		return error;
	if (p->workdir != NULL && p->workdir[0] != '/')
		return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "%s: '%s' is not absolute", PJ_WORKDIR, p->workdir);
	p->signal = SIGUSR1;
	if ((error = opt_string(root, PJ_SIGNAL, &sig, msg, msglen)) != 0)
		return error;
	if (sig != NULL) {
		p->signal = signal_number(sig);
		if (p->signal <= 0) {
			error = cadre_errf(msg, msglen, CADRE_ERR_INVALID,
			    "%s: '%s' is not a signal name such as SIGUSR1",
			    PJ_SIGNAL, sig);
			free(sig);
			return error;
		}
		free(sig);
	}
	if ((error = cjson_get_int(root, PJ_CHECKPOINT_EVERY,
	    &p->checkpoint_every)) != 0 && error != CADRE_ERR_NOT_FOUND)
		return cadre_errf(msg, msglen, error, "%s: expected seconds",
		    PJ_CHECKPOINT_EVERY);
	if ((error = cjson_get_int(root, PJ_KEEP_CHECKPOINTS,
	    &p->keep_checkpoints)) != 0 && error != CADRE_ERR_NOT_FOUND)
		return cadre_errf(msg, msglen, error, "%s: expected an integer",
		    PJ_KEEP_CHECKPOINTS);
	if (p->checkpoint_every < 0 || p->keep_checkpoints < 0)
		return cadre_errf(msg, msglen, CADRE_ERR_INVALID,
		    "%s and %s must not be negative", PJ_CHECKPOINT_EVERY,
		    PJ_KEEP_CHECKPOINTS);
	return 0;
}

int
program_parse(const char *text, size_t len, struct program *p, char *msg,
    size_t msglen)
{
	json_error_t	 jerr;
	json_t		*root = NULL;
	int		 error;

	memset(p, 0, sizeof *p);
	if ((error = cjson_loadb(text, len, PROGRAM_JSON_MAX, &root,
	    &jerr)) != 0) {
		if (error == CADRE_ERR_PARSE)
			return cadre_errf(msg, msglen, error, "line %d column "
			    "%d: %s", jerr.line, jerr.column, jerr.text);
		return cadre_errf(msg, msglen, error, "%s",
		    cadre_strerror(error));
	}
	error = parse_root(root, p, msg, msglen);
	json_decref(root);
	if (error != 0)
		program_free(p);
	return error;
}

int
program_load(const char *path, struct program *p, char *msg, size_t msglen)
{
	struct cbuf	b;
	char		inner[900];
	int		error;

	memset(p, 0, sizeof *p);
	cbuf_init(&b, PROGRAM_JSON_MAX);
	if ((error = cbuf_read_file(&b, path)) != 0)
		error = cadre_errf(msg, msglen, error, "%s: %s", path,
		    error == CADRE_ERR_SYSTEM ? strerror(errno) :
		    cadre_strerror(error));
	else if ((error = program_parse(b.data != NULL ? b.data : "", b.len,
	    p, inner, sizeof inner)) != 0)
		cadre_errf(msg, msglen, error, "%s: %s", path, inner);
	cbuf_free(&b);
	return error;
}

static void
free_list(char **l, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		free(l[i]);
	free(l);
}

static void
free_pairs(struct program_pair *pp, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		free(pp[i].name);
		free(pp[i].value);
	}
	free(pp);
}

void
program_free(struct program *p)
{
	free_list(p->words, p->nwords);
	free(p->shell);
	free(p->workdir);
	free_pairs(p->env, p->nenv);
	free_pairs(p->vars, p->nvars);
	free(p->metrics_regex);
	free_list(p->setup, p->nsetup);
	free(p->experiment);
	free(p->run_id);
	free(p->config_id);
	memset(p, 0, sizeof *p);
}

static json_t *
pairs_json(const struct program_pair *pp, size_t n)
{
	json_t	*o = json_object();
	size_t	 i;

	for (i = 0; i < n; i++)
		json_object_set_new(o, pp[i].name, json_string(pp[i].value));
	return o;
}

static json_t *
list_json(char *const *l, size_t n)
{
	json_t	*a = json_array();
	size_t	 i;

	for (i = 0; i < n; i++)
		json_array_append_new(a, json_string(l[i]));
	return a;
}

int
program_write(const char *path, const struct program *p, char *msg,
    size_t msglen)
{
	json_t		*root = json_object();
	char		 sig[40];
	const char	*abbrev = sigabbrev_np(p->signal);
	int		 error;

	snprintf(sig, sizeof sig, "SIG%s", abbrev != NULL ? abbrev : "USR1");
	json_object_set_new(root, PJ_VERSION, json_integer(PROGRAM_VERSION));
	json_object_set_new(root, PJ_COMMAND, p->shell != NULL ?
	    json_string(p->shell) : list_json(p->words, p->nwords));
	json_object_set_new(root, PJ_LAUNCH,
	    json_string(program_launch_name(p->launch)));
	if (p->workdir != NULL)
		json_object_set_new(root, PJ_WORKDIR, json_string(p->workdir));
	json_object_set_new(root, PJ_ENV, pairs_json(p->env, p->nenv));
	json_object_set_new(root, PJ_VARS, pairs_json(p->vars, p->nvars));
	json_object_set_new(root, PJ_SIGNAL, json_string(sig));
	json_object_set_new(root, PJ_CHECKPOINT_EVERY,
	    json_integer(p->checkpoint_every));
	json_object_set_new(root, PJ_KEEP_CHECKPOINTS,
	    json_integer(p->keep_checkpoints));
	if (p->metrics_regex != NULL)
		json_object_set_new(root, PJ_METRICS_REGEX,
		    json_string(p->metrics_regex));
	json_object_set_new(root, PJ_SETUP, list_json(p->setup, p->nsetup));
	if ((error = cjson_write_atomic(path, root, 0600)) != 0)
		cadre_errf(msg, msglen, error, "%s: %s", path,
		    cadre_strerror(error));
	json_decref(root);
	return error;
}

const char *
program_lookup(const char *name, void *ctx)
{
	const struct program	*p = ctx;
	const char		*env, *v;
	size_t			 i;

	for (i = 0; i < p->nvars; i++)
		if (strcmp(p->vars[i].name, name) == 0)
			return p->vars[i].value;
	if ((env = rundir_placeholder_env(name)) == NULL)
		return NULL;
	return (v = getenv(env)) != NULL ? v : "";
}

/* text expanded (shell: values as sh words) into a new string. */
static int
expand(const struct program *p, const char *text, int shell, char **outp,
    char *msg, size_t msglen)
{
	struct cbuf	 b;
	char		 why[256];
	size_t		 pos;
	int		 error;

	*outp = NULL;
	cbuf_init(&b, PROGRAM_WORD_MAX);
	if ((error = rundir_expand(text, program_lookup, (void *)p, shell, &b,
	    &pos, why, sizeof why)) != 0) {
		cbuf_free(&b);
		return cadre_errf(msg, msglen, error, "'%.200s': %s (at byte "
		    "%zu)", text, error == CADRE_ERR_TOO_LARGE ?
		    "expands to more than 1 MiB" : why, pos);
	}
	if (b.data == NULL)
		cbuf_adds(&b, "");
	*outp = cbuf_detach(&b, NULL);
	return 0;
}

int
program_expand_shell(const struct program *p, const char *text, char **outp,
    char *msg, size_t msglen)
{
	return expand(p, text, 1, outp, msg, msglen);
}

int
program_argv(const struct program *p, char ***argvp, char *msg, size_t msglen)
{
	char	**av;
	size_t	  i;
	int	  error;

	*argvp = NULL;
	if (p->shell != NULL) {
		av = xcalloc(4, sizeof *av);
		av[0] = xstrdup("/bin/sh");
		av[1] = xstrdup("-c");
		if ((error = expand(p, p->shell, 1, &av[2], msg,
		    msglen)) != 0) {
			program_argv_free(av);
			return error;
		}
		*argvp = av;
		return 0;
	}
	av = xcalloc(p->nwords + 1, sizeof *av);
	for (i = 0; i < p->nwords; i++) {
		if ((error = expand(p, p->words[i], 0, &av[i], msg,
		    msglen)) != 0) {
			program_argv_free(av);
			return error;
		}
	}
	*argvp = av;
	return 0;
}

void
program_argv_free(char **argv)
{
	size_t	i;

	if (argv == NULL)
		return;
	for (i = 0; argv[i] != NULL; i++)
		free(argv[i]);
	free(argv);
}
