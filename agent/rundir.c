/* The run directory: private permissions, the run's client key pair. */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libssh/libssh.h>

#include "agent.h"
#include "buf.h"
#include "error.h"
#include "xmalloc.h"

char *
rundir_path(const char *dir, const char *rel)
{
	char	*p;

	xasprintf(&p, "%s/%s", dir, rel);
	return p;
}

int
self_user(char *buf, size_t len)
{
	struct passwd	*pw;

	if ((pw = getpwuid(geteuid())) == NULL || pw->pw_name == NULL ||
	    strlen(pw->pw_name) >= len)
		return CADRE_ERR_NOT_FOUND;
	snprintf(buf, len, "%s", pw->pw_name);
	return 0;
}

int
rundir_check_private(const char *path, int want_dir, char *msg, size_t msglen)
{
	struct stat	st;

	if (lstat(path, &st) == -1) {
		snprintf(msg, msglen, "%s: %s", path, strerror(errno));
		return errno == ENOENT ? CADRE_ERR_NOT_FOUND : CADRE_ERR_SYSTEM;
	}
	if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
		snprintf(msg, msglen, "%s: not a %s", path,
		    want_dir ? "directory" : "regular file");
		return CADRE_ERR_AUTH;
	}
	if (st.st_uid != geteuid()) {
		snprintf(msg, msglen, "%s: owned by uid %lu, not by us (uid %lu)",
		    path, (unsigned long)st.st_uid, (unsigned long)geteuid());
		return CADRE_ERR_AUTH;
	}
	if ((st.st_mode & 077) != 0) {
		snprintf(msg, msglen, "%s: permissions %04o are too open: "
		    "it must be private to its owner (chmod %s %s)", path,
		    (unsigned)(st.st_mode & 07777), want_dir ? "0700" : "0600",
		    path);
		return CADRE_ERR_AUTH;
	}
	return 0;
}

int
rundir_check(const char *dir, char *msg, size_t msglen)
{
	static const struct {
		const char	*rel;
		int		 dir;
	} paths[] = {
		{ ".", 1 },
		{ RUNDIR_KEYS, 1 },
		{ RUNDIR_CLIENT_KEY, 0 },
		{ RUNDIR_CLIENT_PUB, 0 },
	};
	char	*p;
	size_t	 i;
	int	 error = 0;

	for (i = 0; i < sizeof paths / sizeof paths[0] && error == 0; i++) {
		p = rundir_path(dir, paths[i].rel);
		error = rundir_check_private(p, paths[i].dir, msg, msglen);
		free(p);
	}
	return error;
}

int
rundir_mkdir_private(const char *path, char *msg, size_t msglen)
{
	if (mkdir(path, 0700) == -1 && errno != EEXIST) {
		snprintf(msg, msglen, "%s: %s", path, strerror(errno));
		return CADRE_ERR_SYSTEM;
	}
	return rundir_check_private(path, 1, msg, msglen);
}

int
pubkey_parse_line(const char *text, size_t len, ssh_key *out)
{
	char	*line = NULL, *sp, *b64;
	int	 error = CADRE_ERR_INVALID;

	*out = NULL;
	if (len > AGENT_PUBKEY_MAX || memchr(text, '\0', len) != NULL)
		return CADRE_ERR_INVALID;
	line = xstrndup(text, len);
	line[strcspn(line, "\r\n")] = '\0';
	if (strncmp(line, "ssh-ed25519 ", 12) != 0)
		goto out;
	b64 = line + 12;
	if ((sp = strchr(b64, ' ')) != NULL)
		*sp = '\0';
	if (*b64 == '\0' || strspn(b64, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789+/=") != strlen(b64))
		goto out;
	if (ssh_pki_import_pubkey_base64(b64, SSH_KEYTYPE_ED25519, out) !=
	    SSH_OK) {
		*out = NULL;
		goto out;
	}
	error = 0;
 out:
	free(line);
	return error;
}

int
rundir_load_client_pub(const char *dir, ssh_key *out, char *msg,
    size_t msglen)
{
	struct cbuf	 b;
	char		*path;
	int		 error;

	*out = NULL;
	path = rundir_path(dir, RUNDIR_CLIENT_PUB);
	cbuf_init(&b, AGENT_PUBKEY_MAX);
	if ((error = cbuf_read_file(&b, path)) != 0) {
		snprintf(msg, msglen, "%s: %s", path,
		    error == CADRE_ERR_SYSTEM ? strerror(errno) :
		    cadre_strerror(error));
		goto out;
	}
	if ((error = pubkey_parse_line(b.data, b.len, out)) != 0)
		snprintf(msg, msglen, "%s: not an ssh-ed25519 public key",
		    path);
 out:
	cbuf_free(&b);
	free(path);
	return error;
}

/* Writes text to path with mode 0600, failing if it exists. */
static int
write_new_private(const char *path, const char *text, char *msg,
    size_t msglen)
{
	size_t	len = strlen(text);
	ssize_t	n;
	int	fd;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) ==
	    -1) {
		snprintf(msg, msglen, "%s: %s", path, strerror(errno));
		return errno == EEXIST ? CADRE_ERR_EXISTS : CADRE_ERR_SYSTEM;
	}
	n = write(fd, text, len);
	if (n != (ssize_t)len || fsync(fd) == -1 || close(fd) == -1) {
		snprintf(msg, msglen, "%s: %s", path,
		    n >= 0 && n != (ssize_t)len ? "short write" :
		    strerror(errno));
		if (fd >= 0)
			close(fd);
		unlink(path);
		return CADRE_ERR_IO;
	}
	return 0;
}

int
rundir_keygen(const char *dir, char *msg, size_t msglen)
{
	ssh_key	 key = NULL;
	char	*keys = NULL, *priv = NULL, *pub = NULL, *b64 = NULL;
	char	*pemtext = NULL, *pubtext = NULL;
	int	 error;

	keys = rundir_path(dir, RUNDIR_KEYS);
	priv = rundir_path(dir, RUNDIR_CLIENT_KEY);
	pub = rundir_path(dir, RUNDIR_CLIENT_PUB);
	if ((error = rundir_mkdir_private(dir, msg, msglen)) != 0 ||
	    (error = rundir_mkdir_private(keys, msg, msglen)) != 0)
		goto out;
	if (ssh_pki_generate(SSH_KEYTYPE_ED25519, 0, &key) != SSH_OK ||
	    ssh_pki_export_pubkey_base64(key, &b64) != SSH_OK ||
	    ssh_pki_export_privkey_base64(key, NULL, NULL, NULL, &pemtext) !=
	    SSH_OK) {
		snprintf(msg, msglen, "cannot generate an ed25519 key");
		error = CADRE_ERR_SYSTEM;
		goto out;
	}
	xasprintf(&pubtext, "ssh-ed25519 %s cadre-run\n", b64);
	if ((error = write_new_private(priv, pemtext, msg, msglen)) != 0)
		goto out;
	if ((error = write_new_private(pub, pubtext, msg, msglen)) != 0) {
		unlink(priv);
		goto out;
	}
 out:
	ssh_key_free(key);
	ssh_string_free_char(b64);
	ssh_string_free_char(pemtext);
	free(pubtext);
	free(keys);
	free(priv);
	free(pub);
	return error;
}
