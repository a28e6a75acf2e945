/* Where cadred and the command line keep things: see paths.h. */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "log.h"
#include "paths.h"
#include "xmalloc.h"

/* An absolute value of name, or NULL. */
static const char *
abs_env(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && v[0] == '/' ? v : NULL;
}

int
paths_state_dir(char **out)
{
	const char *v;

	*out = NULL;
	if ((v = abs_env("CADRE_STATE_DIR")) != NULL)
		*out = xstrdup(v);
	else if ((v = abs_env("XDG_STATE_HOME")) != NULL)
		xasprintf(out, "%s/cadre", v);
	else if ((v = abs_env("HOME")) != NULL)
		xasprintf(out, "%s/.local/state/cadre", v);
	else
		return CADRE_ERR_INVALID;
	return 0;
}

int
paths_runtime_dir(char **out)
{
	const char *v;

	*out = NULL;
	if ((v = abs_env("CADRE_RUNTIME_DIR")) != NULL)
		*out = xstrdup(v);
	else if ((v = abs_env("XDG_RUNTIME_DIR")) != NULL)
		xasprintf(out, "%s/cadre", v);
	else
		xasprintf(out, "/tmp/cadre-%lu", (unsigned long)getuid());
	return 0;
}

static int
under(int (*base)(char **), const char *leaf, char **out)
{
	char	*dir;
	int	 rc;

	*out = NULL;
	if ((rc = base(&dir)) != 0)
		return rc;
	xasprintf(out, "%s/%s", dir, leaf);
	free(dir);
	return 0;
}

int
paths_db(char **out)
{
	return under(paths_state_dir, "cadre.db", out);
}

int
paths_socket(char **out)
{
	return under(paths_runtime_dir, "cadred.sock", out);
}

int
paths_run_dir(const char *run_id, char **out)
{
	char	*leaf;
	int	 rc;

	xasprintf(&leaf, "runs/%s", run_id);
	rc = under(paths_state_dir, leaf, out);
	free(leaf);
	return rc;
}

int
paths_mkdir(const char *dir, int mode, int strict)
{
	struct stat	 sb;
	char		*p, *s;
	int		 rc = 0;

	p = xstrdup(dir);
	/* Create each missing component, parents first. */
	for (s = p + 1; ; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, (mode_t)mode) != 0 && errno != EEXIST) {
			log_error("mkdir %s: %s", p, strerror(errno));
			rc = CADRE_ERR_SYSTEM;
			goto out;
		}
		*s = c;
		if (c == '\0')
			break;
	}
	if (stat(dir, &sb) != 0) {
		log_error("%s: %s", dir, strerror(errno));
		rc = CADRE_ERR_SYSTEM;
	} else if (!S_ISDIR(sb.st_mode)) {
		log_error("%s: not a directory", dir);
		rc = CADRE_ERR_INVALID;
	} else if (sb.st_uid != geteuid()) {
		log_error("%s: owned by uid %lu, not by us (%lu)", dir,
		    (unsigned long)sb.st_uid, (unsigned long)geteuid());
		rc = CADRE_ERR_INVALID;
	} else if (strict && (sb.st_mode & 077) != 0) {
		log_error("%s: open to group or others (mode %03o); run: "
		    "chmod 700 %s", dir, (unsigned)(sb.st_mode & 0777), dir);
		rc = CADRE_ERR_INVALID;
	}
out:
	free(p);
	return rc;
}
