#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "fsutil.h"
#include "xmalloc.h"

int
fs_fsync_dir(const char *dir)
{
	int	fd, r, saved;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return CADRE_ERR_SYSTEM;
	r = fsync(fd);
	saved = errno;
	close(fd);
	errno = saved;
	return r == 0 ? 0 : CADRE_ERR_SYSTEM;
}

int
fs_remove_flat_dir(const char *dir)
{
	struct dirent	*de;
	DIR		*d;
	char		*p;
	int		 first = 0;

	if ((d = opendir(dir)) == NULL)
		return errno == ENOENT ? 0 : CADRE_ERR_SYSTEM;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		xasprintf(&p, "%s/%s", dir, de->d_name);
		if (unlink(p) == -1 && errno != ENOENT && first == 0)
			first = errno;
		free(p);
	}
	closedir(d);
	if (rmdir(dir) == -1 && errno != ENOENT && first == 0)
		first = errno;
	if (first != 0) {
		errno = first;
		return CADRE_ERR_SYSTEM;
	}
	return 0;
}

static int	remove_tree_errno;

static int
remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if ((flag == FTW_DP ? rmdir(path) : unlink(path)) == -1 &&
	    errno != ENOENT && remove_tree_errno == 0)
		remove_tree_errno = errno;
	return 0;
}

int
fs_remove_tree(const char *path)
{
	struct stat	sb;

	if (lstat(path, &sb) == -1)
		return errno == ENOENT ? 0 : CADRE_ERR_SYSTEM;
	if (!S_ISDIR(sb.st_mode))
		return unlink(path) == -1 && errno != ENOENT ?
		    CADRE_ERR_SYSTEM : 0;
	/* nftw's callback has no context: one removal at a time. */
	remove_tree_errno = 0;
	if (nftw(path, remove_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) ==
	    -1 && remove_tree_errno == 0)
		remove_tree_errno = errno;
	if (remove_tree_errno != 0) {
		errno = remove_tree_errno;
		return CADRE_ERR_SYSTEM;
	}
	return 0;
}

/* fsyncs the directory holding path, so that a rename into it is
 * durable. */
static int
sync_parent(const char *path)
{
	const char	*slash = strrchr(path, '/');
	char		*dir;
	int		 r, saved;

	dir = slash == NULL ? xstrdup(".") : slash == path ? xstrdup("/") :
	    xstrndup(path, (size_t)(slash - path));
	r = fs_fsync_dir(dir);
	saved = errno;
	free(dir);
	errno = saved;
	return r;
}

int
fs_write_atomic(const char *path, const void *data, size_t len, int mode)
{
	const char	*p = data;
	char		*tmp;
	ssize_t		 n;
	int		 fd, saved;

	xasprintf(&tmp, "%s.tmp.XXXXXX", path);
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		free(tmp);
		return CADRE_ERR_SYSTEM;
	}
	if (fchmod(fd, (mode_t)mode) == -1)
		goto fail;
	while (len > 0) {
		if ((n = write(fd, p, len)) == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		p += n;
		len -= (size_t)n;
	}
	if (fsync(fd) == -1 || close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) == -1)
		goto fail;
	free(tmp);
	return sync_parent(path);

 fail:
	saved = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	errno = saved;
	return CADRE_ERR_SYSTEM;
}

int
fs_is_executable(const char *path)
{
	struct stat	st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    access(path, X_OK) == 0;
}

int
fs_on_path(const char *name)
{
	const char	*path = getenv("PATH"), *p, *end;
	char		*full;
	int		 found = 0;

	if (path == NULL)
		path = "/usr/bin:/bin";
	for (p = path; !found; p = end + 1) {
		end = strchr(p, ':');
		if (end == NULL)
			end = p + strlen(p);
		if (end == p)
			xasprintf(&full, "./%s", name);
		else
			xasprintf(&full, "%.*s/%s", (int)(end - p), p, name);
		found = fs_is_executable(full);
		free(full);
		if (*end == '\0')
			break;
	}
	return found;
}

int
fs_is_squashfs(const char *path)
{
	char	m[4];
	int	fd, ok;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	ok = read(fd, m, sizeof m) == (ssize_t)sizeof m &&
	    memcmp(m, "hsqs", sizeof m) == 0;
	close(fd);
	return ok;
}
