/* Each file goes to a temporary name in its own directory (same
 * filesystem, so the rename is atomic) and nothing is renamed into place
 * before every one was written; on a failure the temporaries and any
 * directory this request created are removed again. Every component is
 * opened with O_NOFOLLOW from /work, so a symlink planted by user code
 * can never redirect a write outside /work: it is refused with ELOOP,
 * wherever it sits on the path. */
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "answer.h"
#include "init_priv.h"
#include "base.h"
#include "walk.h"

struct entry {
	const uint8_t *path;
	uint32_t path_len;
	const uint8_t *data;
	uint32_t data_len;
	bool temp_made;
};

struct state {
	int fd; /* answer pipe */
	const struct files_req *rq;
	int work;
	struct entry *e;
	uint32_t n;
	char **created; /* directories made by this request, in order */
	size_t ncreated, created_cap;
};

static void on_created(const char *path, void *arg)
{
	struct state *s = arg;
	char *copy = strdup(path);

	if (copy && s->ncreated == s->created_cap) {
		size_t cap = s->created_cap ? s->created_cap * 2 : 16;
		char **p = realloc(s->created, cap * sizeof(*p));

		if (!p) {
			free(copy);
			return; /* only costs the cleanup of this directory */
		}
		s->created = p;
		s->created_cap = cap;
	}
	if (copy)
		s->created[s->ncreated++] = copy;
}

static void temp_name(const struct state *s, uint32_t i, char *out, size_t cap)
{
	snprintf(out, cap, ".bh-%s-%u", s->rq->tag, i);
}

/* Splits entry i into a NUL-terminated copy with its directory part and
 * last component. */
static void entry_path(const struct entry *e, char *buf, size_t *dir_len,
		       const char **base)
{
	memcpy(buf, e->path, e->path_len);
	buf[e->path_len] = '\0';
	path_split(buf, e->path_len, dir_len, base);
}

static void cleanup(struct state *s)
{
	char buf[BH_MAX_PATH_BYTES + 1], tmp[64];

	for (uint32_t i = 0; i < s->n; i++) {
		size_t dir_len;
		const char *base;
		int dfd;

		if (!s->e[i].temp_made)
			continue;
		entry_path(&s->e[i], buf, &dir_len, &base);
		dfd = walk_dir(s->work, buf, dir_len, NULL, NULL);
		if (dfd < 0)
			continue;
		temp_name(s, i, tmp, sizeof(tmp));
		unlinkat(dfd, tmp, 0);
		close(dfd);
	}
	/* Innermost first; a directory that is not empty (somebody else's
	 * file appeared in it) simply stays. */
	for (size_t i = s->ncreated; i-- > 0;) {
		size_t dir_len;
		const char *base;
		int dfd;

		path_split(s->created[i], strlen(s->created[i]), &dir_len, &base);
		dfd = walk_dir(s->work, s->created[i], dir_len, NULL, NULL);
		if (dfd < 0)
			continue;
		unlinkat(dfd, base, AT_REMOVEDIR);
		close(dfd);
	}
}

__attribute__((noreturn)) static void reject(struct state *s, const struct entry *e,
					     int err, const char *what)
{
	char shown[512];

	cleanup(s);
	if (e)
		path_printable(e->path, e->path_len, shown, sizeof(shown));
	answer_error(s->fd, BH_CHAN_REJECTED, s->rq->call_id, BH_CHAN_REJECT_FILES, err,
		     "%s%s%s: %s", e ? shown : "/work", what ? ": " : "", what ? what : "",
		     strerror(err));
}

/* The final name must not be a symlink (it would be replaced, not
 * followed, but it is still something the sandbox planted on the path) or
 * a directory (rename would fail half-way through the set). */
static int check_target(int dfd, const char *base)
{
	struct stat sb;

	if (fstatat(dfd, base, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISLNK(sb.st_mode))
		return -ELOOP;
	if (S_ISDIR(sb.st_mode))
		return -EISDIR;
	return 0;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n > (1u << 20) ? (1u << 20) : n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void write_temp(struct state *s, uint32_t i)
{
	struct entry *e = &s->e[i];
	char buf[BH_MAX_PATH_BYTES + 1], tmp[64];
	cleanup_close int dfd = -1;
	cleanup_close int fd = -1;
	const char *base;
	size_t dir_len;
	int ret;

	entry_path(e, buf, &dir_len, &base);
	dfd = walk_dir(s->work, buf, dir_len, on_created, s);
	if (dfd < 0)
		reject(s, e, -dfd, NULL);
	if ((ret = check_target(dfd, base)) < 0)
		reject(s, e, -ret, NULL);
	temp_name(s, i, tmp, sizeof(tmp));
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		reject(s, e, errno, "create");
	e->temp_made = true;
	if ((ret = write_all(fd, e->data, e->data_len)) < 0)
		reject(s, e, -ret, "write");
	if (close(steal_fd(fd)) < 0)
		reject(s, e, errno, "write");
}

static void rename_all(struct state *s)
{
	char buf[BH_MAX_PATH_BYTES + 1], tmp[64];
	const char *base;
	size_t dir_len;

	/* Every target is checked before the first rename, so the only
	 * failures left half-way are the kernel's own. */
	for (uint32_t i = 0; i < s->n; i++) {
		int dfd, ret;

		entry_path(&s->e[i], buf, &dir_len, &base);
		dfd = walk_dir(s->work, buf, dir_len, NULL, NULL);
		if (dfd < 0)
			reject(s, &s->e[i], -dfd, NULL);
		ret = check_target(dfd, base);
		close(dfd);
		if (ret < 0)
			reject(s, &s->e[i], -ret, NULL);
	}
	for (uint32_t i = 0; i < s->n; i++) {
		int dfd;

		entry_path(&s->e[i], buf, &dir_len, &base);
		dfd = walk_dir(s->work, buf, dir_len, NULL, NULL);
		if (dfd < 0)
			reject(s, &s->e[i], -dfd, NULL);
		temp_name(s, i, tmp, sizeof(tmp));
		if (renameat(dfd, tmp, dfd, base) < 0) {
			int err = errno;

			close(dfd);
			reject(s, &s->e[i], err, "rename");
		}
		s->e[i].temp_made = false;
		close(dfd);
	}
}

void files_body(int fd, const void *arg)
{
	const struct files_req *rq = arg;
	struct state s = { .fd = fd, .rq = rq, .work = -1 };
	struct proto_cursor c = rq->files;
	struct abuf ok = { 0 };

	umask(022);
	s.e = calloc(rq->nfiles ? rq->nfiles : 1, sizeof(*s.e));
	if (!s.e)
		reject(&s, NULL, ENOMEM, NULL);
	for (uint32_t i = 0; i < rq->nfiles; i++) {
		struct entry *e = &s.e[i];

		/* handle_cell() already walked and checked these. */
		if (proto_get_str(&c, &e->path, &e->path_len) < 0 ||
		    proto_get_str(&c, &e->data, &e->data_len) < 0)
			reject(&s, NULL, EPROTO, NULL);
	}
	s.n = rq->nfiles;
	s.work = open_work();
	if (s.work < 0)
		reject(&s, NULL, -s.work, NULL);
	for (uint32_t i = 0; i < s.n; i++)
		write_temp(&s, i);
	rename_all(&s);
	ab_u8(&ok, ANSWER_FILES_OK);
	ab_u64(&ok, rq->call_id);
	ab_send(fd, &ok, rq->call_id);
}
