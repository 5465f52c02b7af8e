#include "ui_files.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

FILE *ui_create_new(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int e = errno;
		close(fd);
		unlink(path);
		errno = e;
	}
	return f;
}

int ui_create_set(const char *stem, const char *const *exts, size_t count, FILE **files,
		  char (*names)[256])
{
	for (int n = 0; n < 100; n++) {
		size_t made = 0;
		for (; made < count; made++) {
			if (n)
				snprintf(names[made], 256, "%s-%d.%s", stem, n, exts[made]);
			else
				snprintf(names[made], 256, "%s.%s", stem, exts[made]);
			files[made] = ui_create_new(names[made]);
			if (!files[made])
				break;
		}
		if (made == count)
			return 0;
		int e = errno;
		/* Undo this attempt's files: the set goes together or not at all. */
		for (size_t i = 0; i < made; i++) {
			fclose(files[i]);
			unlink(names[i]);
		}
		if (e != EEXIST) {
			errno = e;
			return -1;
		}
	}
	errno = EEXIST;
	return -1;
}

