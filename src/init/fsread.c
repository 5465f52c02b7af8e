/* LIST and READ: looking at /work on the engine's behalf, in a forked
 * helper running as the sandbox user, so the kernel grants exactly what
 * that user may see; no symlink is ever followed (ELOOP), and a FIFO is
 * refused before it is opened (EINVAL), so nothing can hang the helper
 * for long, and nothing it does can hang the init. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "answer.h"
#include "init_priv.h"
#include "base.h"
#include "walk.h"

#define MAX_READ (BH_CHAN_MAX_FRAME - 1u - BH_CHAN_CONTENT_FIXED)
/* Names read from one directory before sorting; past this the listing is
 * of the first ones read, flagged as incomplete. */
#define LIST_SCAN_MAX 1000000u

struct fs_req {
	uint64_t call_id;
	const uint8_t *path;
	uint32_t path_len;
	uint32_t max; /* entries or bytes */
};

/* ---- child side -------------------------------------------------------- */

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char type_of(mode_t m)
{
	if (S_ISREG(m))
		return 'f';
	if (S_ISDIR(m))
		return 'd';
	if (S_ISLNK(m))
		return 'l';
	if (S_ISFIFO(m))
		return 'p';
	if (S_ISSOCK(m))
		return 's';
	if (S_ISCHR(m))
		return 'c';
	if (S_ISBLK(m))
		return 'b';
	return '?';
}

static uint64_t mtime_ms(const struct stat *sb)
{
	if (sb->st_mtim.tv_sec < 0)
		return 0;
	return (uint64_t)sb->st_mtim.tv_sec * 1000u + (uint64_t)sb->st_mtim.tv_nsec / 1000000u;
}

static int open_dir_of(const struct fs_req *rq, char *buf, size_t n)
{
	cleanup_close int work = open_work();

	if (work < 0)
		return work;
	memcpy(buf, rq->path, rq->path_len);
	buf[rq->path_len] = '\0';
	return walk_dir(work, buf, n, NULL, NULL);
}

static void put_entry(struct abuf *b, int dfd, const char *name)
{
	struct stat sb;
	char target[BH_CHAN_TARGET_MAX + 1];
	ssize_t tl = 0;

	if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
		/* Gone since readdir(): still listed, as "other". */
		memset(&sb, 0, sizeof(sb));
		sb.st_mode = 0;
	}
	if (S_ISLNK(sb.st_mode)) {
		tl = readlinkat(dfd, name, target, sizeof(target) - 1);
		if (tl < 0)
			tl = 0;
	}
	ab_str(b, name, strlen(name));
	ab_u8(b, (uint8_t)type_of(sb.st_mode));
	ab_u64(b, sb.st_size > 0 ? (uint64_t)sb.st_size : 0);
	ab_u64(b, mtime_ms(&sb));
	ab_str(b, target, (size_t)tl);
}

static void list_body(int fd, const void *arg)
{
	const struct fs_req *rq = arg;
	char path[BH_MAX_PATH_BYTES + 1];
	char **names = NULL;
	size_t n = 0, cap = 0, shown = 0, count_at;
	bool more = false;
	struct abuf b = { 0 };
	struct dirent *e;
	DIR *d;
	int dfd = open_dir_of(rq, path, rq->path_len);

	if (dfd < 0)
		answer_error(fd, BH_CHAN_FAIL, rq->call_id, 0, -dfd, "%s: %s",
			     rq->path_len ? path : "/work", strerror(-dfd));
	d = fdopendir(openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (!d)
		answer_error(fd, BH_CHAN_FAIL, rq->call_id, 0, errno, "opendir: %s",
			     strerror(errno));
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n == LIST_SCAN_MAX) {
			more = true;
			break;
		}
		if (n == cap) {
			char **p = realloc(names, (cap = cap ? cap * 2 : 256) * sizeof(*p));

			if (!p)
				answer_error(fd, BH_CHAN_FAIL, rq->call_id, 0, ENOMEM,
					     "listing: %s", strerror(ENOMEM));
			names = p;
		}
		if (!(names[n] = strdup(e->d_name)))
			answer_error(fd, BH_CHAN_FAIL, rq->call_id, 0, ENOMEM,
				     "listing: %s", strerror(ENOMEM));
		n++;
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	ab_u8(&b, BH_CHAN_LISTING);
	ab_u64(&b, rq->call_id);
	count_at = b.buf.len;
	ab_u32(&b, 0);
	for (size_t i = 0; i < n && i < rq->max; i++) {
		size_t before = b.buf.len;

		put_entry(&b, dfd, names[i]);
		/* A listing always fits one frame: what does not is "more". */
		if (b.buf.len > BH_CHAN_MAX_FRAME) {
			b.buf.len = before;
			break;
		}
		shown++;
	}
	if (shown < n)
		more = true;
	if (!b.oom) {
		uint32_t v = (uint32_t)shown | (more ? 0x80000000u : 0);

		for (int i = 0; i < 4; i++)
			b.buf.data[count_at + (size_t)i] = (uint8_t)(v >> (8 * i));
	}
	ab_send(fd, &b, rq->call_id);
}

static void read_fail(int fd, const struct fs_req *rq, const char *path, int err)
{
	answer_error(fd, BH_CHAN_FAIL, rq->call_id, 0, err, "%s: %s", path,
		     err == EINVAL ? "not a regular file" : strerror(err));
}

static void read_body(int fd, const void *arg)
{
	const struct fs_req *rq = arg;
	char path[BH_MAX_PATH_BYTES + 1];
	cleanup_close int dfd = -1;
	cleanup_close int ffd = -1;
	const char *base;
	size_t dir_len, hdr, got = 0;
	uint32_t cap = rq->max < MAX_READ ? rq->max : MAX_READ;
	struct abuf b = { 0 };
	struct stat sb;
	bool truncated;

	memcpy(path, rq->path, rq->path_len);
	path[rq->path_len] = '\0';
	path_split(path, rq->path_len, &dir_len, &base);
	dfd = open_dir_of(rq, path, dir_len);
	/* open_dir_of copied the path again; the buffer is intact. */
	if (dfd < 0)
		read_fail(fd, rq, path, -dfd);
	if (fstatat(dfd, base, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		read_fail(fd, rq, path, errno);
	if (S_ISLNK(sb.st_mode))
		read_fail(fd, rq, path, ELOOP);
	/* Checked before opening: opening a FIFO or a device has effects of
	 * its own. O_NONBLOCK covers a swap between the check and the open. */
	if (!S_ISREG(sb.st_mode))
		read_fail(fd, rq, path, EINVAL);
	ffd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (ffd < 0)
		read_fail(fd, rq, path, errno);
	if (fstat(ffd, &sb) < 0)
		read_fail(fd, rq, path, errno);
	if (!S_ISREG(sb.st_mode))
		read_fail(fd, rq, path, EINVAL);
	ab_u8(&b, BH_CHAN_CONTENT);
	ab_u64(&b, rq->call_id);
	ab_u64(&b, sb.st_size > 0 ? (uint64_t)sb.st_size : 0);
	ab_u8(&b, 0);
	ab_u32(&b, 0);
	hdr = b.buf.len;
	/* Reserve the whole cap at once, exactly (the helper's memory is the
	 * sandbox's): read() then lands in place. */
	{
		size_t want = hdr + cap;
		uint8_t *p = realloc(b.buf.data, want ? want : 1);

		if (!p)
			read_fail(fd, rq, path, ENOMEM);
		b.buf.data = p;
		b.buf.cap = want;
	}
	while (got < cap) {
		ssize_t r = read(ffd, b.buf.data + hdr + got, cap - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			read_fail(fd, rq, path, errno);
		if (r == 0)
			break;
		got += (size_t)r;
	}
	truncated = got < (uint64_t)sb.st_size;
	if (!truncated && got == cap) {
		uint8_t probe;

		truncated = read(ffd, &probe, 1) > 0;
	}
	b.buf.len = hdr + got;
	b.buf.data[hdr - 5] = truncated;
	for (int i = 0; i < 4; i++)
		b.buf.data[hdr - 4 + (size_t)i] = (uint8_t)(got >> (8 * i));
	ab_send(fd, &b, rq->call_id);
}

/* ---- init side --------------------------------------------------------- */

static int parse_fs(const uint8_t *p, size_t n, struct fs_req *rq)
{
	struct proto_cursor c = proto_cursor(p, n);

	if (proto_get_u64(&c, &rq->call_id) < 0 ||
	    proto_get_str(&c, &rq->path, &rq->path_len) < 0 ||
	    proto_get_u32(&c, &rq->max) < 0 || c.left != 0)
		return -EPROTO;
	return 0;
}

static int start_fsop(struct init *st, const uint8_t *payload, size_t len,
		      enum helper_kind kind)
{
	struct helper *slot = NULL;
	struct fs_req rq;
	char shown[512];
	enum proto_path_problem why;
	int ret;

	if (parse_fs(payload, len, &rq) < 0)
		return -EPROTO;
	path_printable(rq.path, rq.path_len, shown, sizeof(shown));
	why = proto_path_check(rq.path, rq.path_len, kind == HK_LIST ? PROTO_PATH_ALLOW_EMPTY : 0);
	if (why != PROTO_PATH_OK)
		return queue_fail(st, rq.call_id, proto_path_errno(why), "invalid path \"%s\": %s",
				  shown, proto_path_problem_text(why));
	for (int i = 0; i < MAX_FSOPS && !slot; i++)
		if (st->fsops[i].kind == HK_NONE)
			slot = &st->fsops[i];
	if (!slot)
		return queue_fail(st, rq.call_id, EBUSY,
				  "%d LIST/READ calls are already running", MAX_FSOPS);
	ret = helper_start(slot, kind, rq.call_id, kind == HK_LIST ? list_body : read_body,
			   &rq);
	if (ret < 0)
		return queue_fail(st, rq.call_id, -ret, "fork: %s", strerror(-ret));
	return 0;
}

int handle_list(struct init *st, const uint8_t *payload, size_t len)
{
	return start_fsop(st, payload, len, HK_LIST);
}

int handle_read(struct init *st, const uint8_t *payload, size_t len)
{
	return start_fsop(st, payload, len, HK_READ);
}

static int finish(struct init *st, struct helper *h, uint64_t now)
{
	int ret = 0;

	if (helper_expired(h, now)) {
		ret = queue_fail(st, h->call_id, ETIMEDOUT,
				 "the helper did not answer within %d ms", HELPER_TIMEOUT_MS);
	} else if (helper_done(h)) {
		ret = answer_relay(st, h,
				   h->kind == HK_LIST ? "TF" : h->kind == HK_PS ? "SF" : "BF");
		if (ret == ANSWER_INVALID || ret == ANSWER_PLAIN)
			ret = queue_fail(st, h->call_id, EIO,
					 "the helper died or answered nonsense");
		else if (ret > 0)
			ret = 0;
	} else {
		return 0;
	}
	helper_release(h);
	return ret;
}

int fsops_progress(struct init *st)
{
	uint64_t now = now_mono_ns();

	for (int i = 0; i < MAX_FSOPS; i++) {
		int ret = finish(st, &st->fsops[i], now);

		if (ret < 0)
			return ret;
	}
	return 0;
}
