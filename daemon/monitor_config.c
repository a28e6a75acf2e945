/* cadred's configuration file and its defaults (daemon/monitor.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "duration.h"
#include "error.h"
#include "log.h"
#include "monitor.h"
#include "spec.h"
#include "strutil.h"
#include "xmalloc.h"

#ifndef BINDIR
#define BINDIR	"/usr/local/bin"
#endif
#ifndef DATADIR
#define DATADIR	"/usr/local/share/cadre"
#endif

/*
 * Where a program the runs need lives when the config does not say: next
 * to the running cadre or cadred when it is there (a build tree, or any
 * install prefix), else the configured bindir. So build/release/cadre run
 * uses build/release/cadre-agent, not an older installed one.
 */
static char *
default_program(const char *name)
{
	char	 self[4096], *slash, *p;
	ssize_t	 n;

	n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = '\0';
		if ((slash = strrchr(self, '/')) != NULL) {
			*slash = '\0';
			xasprintf(&p, "%s/%s", self, name);
			if (access(p, X_OK) == 0)
				return p;
			free(p);
		}
	}
	xasprintf(&p, "%s/%s", BINDIR, name);
	return p;
}

/* The installed templates, else (an uninstalled build) the source tree's. */
static char *
default_templates(void)
{
#ifdef ABS_TOP_SRCDIR
	if (access(DATADIR "/templates/slurm.sh.in", R_OK) != 0 &&
	    access(ABS_TOP_SRCDIR "/etc/templates/slurm.sh.in", R_OK) == 0)
		return xstrdup(ABS_TOP_SRCDIR "/etc/templates");
#endif
	return xstrdup(DATADIR "/templates");
}

void
monitor_config_init(struct monitor_config *c)
{
	memset(c, 0, sizeof *c);
	c->poll_interval = 5;
	c->agent = default_program("cadre-agent");
	c->trainer = default_program("cadre-train");
	c->templates = default_templates();
	c->backoff_cap = 3600;
}

void
monitor_config_free(struct monitor_config *c)
{
	free(c->bindir);
	free(c->agent);
	free(c->trainer);
	free(c->templates);
	free(c->log_level);
	memset(c, 0, sizeof *c);
}

void
monitor_config_copy(struct monitor_config *dst,
    const struct monitor_config *src)
{
	*dst = *src;
	dst->bindir = src->bindir != NULL ? xstrdup(src->bindir) : NULL;
	dst->agent = src->agent != NULL ? xstrdup(src->agent) : NULL;
	dst->trainer = src->trainer != NULL ? xstrdup(src->trainer) : NULL;
	dst->templates = src->templates != NULL ? xstrdup(src->templates) :
	    NULL;
	dst->log_level = src->log_level != NULL ? xstrdup(src->log_level) :
	    NULL;
}

enum config_type { CFG_SECONDS, CFG_INT, CFG_PATH, CFG_BOOL, CFG_LEVEL };

static const struct {
	const char		*key;
	enum config_type	 type;
	size_t			 off;
	double			 min, max;
} config_keys[] = {
	{ "poll_interval", CFG_SECONDS, offsetof(struct monitor_config,
	    poll_interval), 0.05, 3600 },
	{ "bindir", CFG_PATH, offsetof(struct monitor_config, bindir), 0, 0 },
	{ "agent", CFG_PATH, offsetof(struct monitor_config, agent), 0, 0 },
	{ "trainer", CFG_PATH, offsetof(struct monitor_config, trainer), 0, 0 },
	{ "templates", CFG_PATH, offsetof(struct monitor_config, templates),
	    0, 0 },
	{ "cmd_timeout", CFG_INT, offsetof(struct monitor_config,
	    cmd_timeout), 1, 3600 },
	{ "backoff_cap", CFG_SECONDS, offsetof(struct monitor_config,
	    backoff_cap), 0, 86400 * 7 },
	{ "dry", CFG_BOOL, offsetof(struct monitor_config, dry), 0, 1 },
	{ "log_level", CFG_LEVEL, offsetof(struct monitor_config, log_level),
	    0, 0 },
};
#define NCONFIG_KEYS	(sizeof config_keys / sizeof config_keys[0])

static char *
trim(char *s)
{
	char	*e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

int
monitor_config_parse(const char *name, const char *text, size_t len,
    struct monitor_config *c, char *err, size_t errlen)
{
	struct monitor_config	 n;
	enum log_level		 lvl;
	const char		*p, *end;
	char			*line = NULL, *key, *val, *eq, **sp;
	size_t			 lineno = 0, i, bad;
	double			 d;
	int64_t			 v;
	int			 rc = 0;

	if (len > MONITOR_CONFIG_MAX)
		return cadre_errf(err, errlen, CADRE_ERR_TOO_LARGE, "%s: larger than "
		    "%zu bytes", name, MONITOR_CONFIG_MAX);
	if (memchr(text, '\0', len) != NULL || !str_valid_utf8(text, len,
	    &bad))
		return cadre_errf(err, errlen, CADRE_ERR_PARSE, "%s: not UTF-8 text",
		    name);
	monitor_config_copy(&n, c);
	for (p = text; p < text + len && rc == 0; p = end + 1) {
		end = memchr(p, '\n', (size_t)(text + len - p));
		if (end == NULL)
			end = text + len;
		lineno++;
		free(line);
		line = xstrndup(p, (size_t)(end - p));
		key = trim(line);
		if (*key == '\0' || *key == '#')
			continue;
		if ((eq = strchr(key, '=')) == NULL) {
			rc = cadre_errf(err, errlen, CADRE_ERR_PARSE, "%s:%zu: error: "
			    "expected 'key = value'", name, lineno);
			break;
		}
		*eq = '\0';
		key = trim(key);
		val = trim(eq + 1);
		for (i = 0; i < NCONFIG_KEYS; i++) {
			if (strcmp(config_keys[i].key, key) == 0)
				break;
		}
		if (i == NCONFIG_KEYS) {
			rc = cadre_errf(err, errlen, CADRE_ERR_PARSE, "%s:%zu: error: "
			    "unknown key '%.64s' (known: poll_interval, bindir, "
			    "agent, trainer, templates, cmd_timeout, backoff_cap, "
			    "dry, log_level)", name, lineno, key);
			break;
		}
		switch (config_keys[i].type) {
		case CFG_SECONDS:
			if (str_to_double(val, &d) != 0 ||
			    d < config_keys[i].min || d > config_keys[i].max)
				rc = cadre_errf(err, errlen, CADRE_ERR_PARSE, "%s:%zu: "
				    "error: %s: expected seconds in %g..%g",
				    name, lineno, key, config_keys[i].min,
				    config_keys[i].max);
			else
				*(double *)((char *)&n + config_keys[i].off) = d;
			break;
		case CFG_INT:
		case CFG_BOOL:
			if (str_to_int64(val, &v) != 0 ||
			    v < (int64_t)config_keys[i].min ||
			    v > (int64_t)config_keys[i].max)
				rc = cadre_errf(err, errlen, CADRE_ERR_PARSE, "%s:%zu: "
				    "error: %s: expected an integer in %g..%g",
				    name, lineno, key, config_keys[i].min,
				    config_keys[i].max);
			else
				*(int *)((char *)&n + config_keys[i].off) =
				    (int)v;
			break;
		case CFG_PATH:
			if (val[0] != '/' || strlen(val) >= SPEC_MAX_PATH) {
				rc = cadre_errf(err, errlen, CADRE_ERR_PARSE, "%s:%zu: "
				    "error: %s: expected an absolute path", name,
				    lineno, key);
				break;
			}
			sp = (char **)((char *)&n + config_keys[i].off);
			free(*sp);
			*sp = xstrdup(val);
			break;
		case CFG_LEVEL:
			if (log_level_parse(val, &lvl) != 0) {
				rc = cadre_errf(err, errlen, CADRE_ERR_PARSE, "%s:%zu: "
				    "error: log_level: expected error, warn, "
				    "notice, info or debug", name, lineno);
				break;
			}
			sp = (char **)((char *)&n + config_keys[i].off);
			free(*sp);
			*sp = xstrdup(val);
			break;
		}
	}
	free(line);
	if (rc != 0) {
		monitor_config_free(&n);
		return rc;
	}
	monitor_config_free(c);
	*c = n;
	return 0;
}

int
monitor_config_load(const char *path, int missing_ok,
    struct monitor_config *c, char *err, size_t errlen)
{
	struct cbuf	b;
	int		rc;

	cbuf_init(&b, MONITOR_CONFIG_MAX);
	if ((rc = cbuf_read_file(&b, path)) != 0) {
		if (rc == CADRE_ERR_SYSTEM && errno == ENOENT && missing_ok)
			rc = 0;
		else if (rc == CADRE_ERR_TOO_LARGE)
			cadre_errf(err, errlen, rc, "%s: larger than %zu bytes", path,
			    MONITOR_CONFIG_MAX);
		else
			cadre_errf(err, errlen, rc, "%s: %s", path, strerror(errno));
		goto out;
	}
	rc = monitor_config_parse(path, b.data != NULL ? b.data : "", b.len,
	    c, err, errlen);
out:
	cbuf_free(&b);
	return rc;
}
