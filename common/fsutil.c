#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
