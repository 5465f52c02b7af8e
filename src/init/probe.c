/* bulkhead-init --probe: evidence of the sandbox's walls, gathered from the
 * inside. Keys are stable and printed in a fixed order; every value is one
 * line. A check that cannot be carried out reports what stopped it (an errno
 * name, "absent", ...) rather than failing the probe. */
#include "probe.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base.h"
#include "probe_keys.h"

extern char **environ;

#define PROBE_NAME ".bh_probe"
#define CONNECT_WAIT_MS 1000

/* ---- output ------------------------------------------------------------ */

/* Control characters (a newline in a mount point, say) would split a fact
 * over two lines; they are printed as octal escapes instead. */
static void emit(const char *key, const char *value)
{
	fputs(key, stdout);
	putchar('=');
	for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			printf("\\%03o", *p);
		else
			putchar(*p);
	}
	putchar('\n');
}

__attribute__((format(printf, 2, 3))) static void emitf(const char *key,
							const char *fmt, ...)
{
	cleanup_free char *value = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&value, fmt, ap);
	va_end(ap);
	if (n < 0) {
		value = NULL;
		emit(key, "ENOMEM");
		return;
	}
	emit(key, value);
}

static const char *errno_name(int err)
{
	static char other[16];

	switch (err) {
#define E(x)     \
	case x:  \
		return #x
		E(EPERM);
		E(ENOENT);
		E(ESRCH);
		E(EINTR);
		E(EIO);
		E(ENXIO);
		E(E2BIG);
		E(ENOEXEC);
		E(EBADF);
		E(ECHILD);
		E(EAGAIN);
		E(ENOMEM);
		E(EACCES);
		E(EFAULT);
		E(EBUSY);
		E(EEXIST);
		E(EXDEV);
		E(ENODEV);
		E(ENOTDIR);
		E(EISDIR);
		E(EINVAL);
		E(ENFILE);
		E(EMFILE);
		E(ENOTTY);
		E(ETXTBSY);
		E(EFBIG);
		E(ENOSPC);
		E(ESPIPE);
		E(EROFS);
		E(EMLINK);
		E(EPIPE);
		E(ERANGE);
		E(ENAMETOOLONG);
		E(ENOSYS);
		E(ELOOP);
		E(EUSERS);
		E(ENOTSOCK);
		E(EPROTOTYPE);
		E(EPROTONOSUPPORT);
		E(ESOCKTNOSUPPORT);
		E(EOPNOTSUPP);
		E(EPFNOSUPPORT);
		E(EAFNOSUPPORT);
		E(EADDRINUSE);
		E(EADDRNOTAVAIL);
		E(ENETDOWN);
		E(ENETUNREACH);
		E(ENETRESET);
		E(ECONNABORTED);
		E(ECONNRESET);
		E(ENOBUFS);
		E(EISCONN);
		E(ENOTCONN);
		E(ETIMEDOUT);
		E(ECONNREFUSED);
		E(EHOSTDOWN);
		E(EHOSTUNREACH);
		E(EALREADY);
		E(EINPROGRESS);
		E(EDQUOT);
		E(EPROTO);
		E(EOVERFLOW);
#undef E
	case 0:
		return "ok";
	}
	snprintf(other, sizeof(other), "E%d", err);
	return other;
}

/* ---- string lists ------------------------------------------------------ */

struct strv {
	char **v;
	size_t n, cap;
};

static void strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	*s = (struct strv){ 0 };
}

#define cleanup_strv __attribute__((cleanup(strv_free)))

/* Takes ownership of str (also on failure). */
static int strv_push(struct strv *s, char *str)
{
	if (!str)
		return -ENOMEM;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		char **v = realloc(s->v, cap * sizeof(*v));

		if (!v) {
			free(str);
			return -ENOMEM;
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = str;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void strv_sort_unique(struct strv *s)
{
	size_t out = 0;

	qsort(s->v, s->n, sizeof(*s->v), cmp_str);
	for (size_t i = 0; i < s->n; i++) {
		if (out > 0 && strcmp(s->v[out - 1], s->v[i]) == 0)
			free(s->v[i]);
		else
			s->v[out++] = s->v[i];
	}
	s->n = out;
}

static void emit_list(const char *key, struct strv *s)
{
	cleanup_free char *joined = NULL;
	size_t len = 1, off = 0;

	strv_sort_unique(s);
	for (size_t i = 0; i < s->n; i++)
		len += strlen(s->v[i]) + 1;
	joined = malloc(len);
	if (!joined) {
		emit(key, "ENOMEM");
		return;
	}
	joined[0] = '\0';
	for (size_t i = 0; i < s->n; i++) {
		size_t l = strlen(s->v[i]);

		if (i > 0)
			joined[off++] = ',';
		memcpy(joined + off, s->v[i], l);
		off += l;
		joined[off] = '\0';
	}
	emit(key, joined);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* ---- file helpers ------------------------------------------------------ */

static char *read_small_file(const char *path)
{
	cleanup_file FILE *f = fopen(path, "re");
	cleanup_free char *buf = NULL;
	size_t cap = 0, len = 0, n;

	if (!f)
		return NULL;
	do {
		if (cap - len < 4096) {
			char *p = realloc(buf, cap + 8192);

			if (!p)
				return NULL;
			buf = p;
			cap += 8192;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	buf[len] = '\0';
	return steal_ptr(buf);
}

/* Runs of whitespace become one space; the ends are trimmed. */
static void collapse_ws(char *s)
{
	char *out = s;
	bool gap = false;

	for (char *p = s; *p; p++) {
		if (isspace((unsigned char)*p)) {
			gap = out != s;
			continue;
		}
		if (gap)
			*out++ = ' ';
		gap = false;
		*out++ = *p;
	}
	*out = '\0';
}

/* The value of a "Key:\tvalue" line of /proc/self/status, or NULL. */
static char *status_field(const char *status, const char *key)
{
	size_t klen = strlen(key);

	for (const char *line = status; line && *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);

		if (len > klen && strncmp(line, key, klen) == 0 &&
		    line[klen] == ':') {
			char *v = strndup(line + klen + 1, len - klen - 1);

			if (v)
				collapse_ws(v);
			return v;
		}
		line = eol ? eol + 1 : NULL;
	}
	return NULL;
}

/* 0 if the file could be created (and, if asked, removed again), else the
 * errno of the step that failed. O_EXCL: never adopt someone else's file. */
static int create_once(const char *path, bool must_remove)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		      0600);

	if (fd < 0)
		return errno;
	close(fd);
	if (unlink(path) < 0 && must_remove)
		return errno;
	return 0;
}

/* A leftover from an earlier, interrupted probe (EEXIST) says nothing about
 * writability, and the pid is the same in every fresh sandbox: step aside
 * to a suffixed name rather than report a writable place as read-only. */
static int try_create(const char *path, bool must_remove)
{
	int err = create_once(path, must_remove);

	for (int i = 1; err == EEXIST && i <= 8; i++) {
		cleanup_free char *alt = NULL;

		if (asprintf(&alt, "%s.%d", path, i) < 0) {
			alt = NULL;
			return ENOMEM;
		}
		err = create_once(alt, must_remove);
	}
	return err;
}

/* ---- facts ------------------------------------------------------------- */

static void probe_ids(void)
{
	cleanup_free char *map = read_small_file("/proc/self/uid_map");

	emitf(PROBE_UID, "%u", (unsigned)getuid());
	emitf(PROBE_GID, "%u", (unsigned)getgid());
	if (map) {
		char *eol = strchr(map, '\n');

		if (eol)
			*eol = '\0';
		collapse_ws(map);
	}
	emit(PROBE_UID_MAP, map ? map : "absent");
}

static void probe_status(void)
{
	static const struct {
		const char *key, *field;
	} facts[] = {
		{ PROBE_CAP_EFF, "CapEff" },	  { PROBE_CAP_BND, "CapBnd" },
		{ PROBE_CAP_PRM, "CapPrm" },	  { PROBE_NO_NEW_PRIVS, "NoNewPrivs" },
		{ PROBE_SECCOMP_MODE, "Seccomp" },
	};
	cleanup_free char *status = read_small_file("/proc/self/status");

	for (size_t i = 0; i < ARRAY_SIZE(facts); i++) {
		cleanup_free char *v =
			status ? status_field(status, facts[i].field) : NULL;

		emit(facts[i].key, v ? v : "absent");
	}
}

static void probe_writable(const char *key, const char *errkey,
			   const char *path)
{
	int err = try_create(path, false);

	emitf(key, "%d", err == 0);
	emit(errkey, errno_name(err));
}

struct mount {
	char *point, *fstype, *super_opts, *opts;
};

struct mounts {
	struct mount *m;
	size_t n, cap;
};

static void mounts_free(struct mounts *ms)
{
	for (size_t i = 0; i < ms->n; i++) {
		free(ms->m[i].point);
		free(ms->m[i].fstype);
		free(ms->m[i].super_opts);
		free(ms->m[i].opts);
	}
	free(ms->m);
	*ms = (struct mounts){ 0 };
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static char *unescape_octal(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;

	if (!out)
		return NULL;
	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				      (s[3] - '0'));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
	return out;
}

/* id parent maj:min root mountpoint opts [optional...] - fstype source super */
static int parse_mount_line(char *line, struct mount *m)
{
	char *tok[64];
	size_t n = 0, sep = 0;
	char *save = NULL;

	for (char *t = strtok_r(line, " \n", &save); t && n < ARRAY_SIZE(tok);
	     t = strtok_r(NULL, " \n", &save))
		tok[n++] = t;
	for (size_t i = 6; i < n; i++) {
		if (strcmp(tok[i], "-") == 0) {
			sep = i;
			break;
		}
	}
	if (sep == 0 || sep + 3 >= n)
		return -EINVAL;
	*m = (struct mount){
		.point = unescape_octal(tok[4]),
		.fstype = strdup(tok[sep + 1]),
		.super_opts = strdup(tok[sep + 3]),
		.opts = strdup(tok[5]),
	};
	if (!m->point || !m->fstype || !m->super_opts || !m->opts) {
		free(m->point);
		free(m->fstype);
		free(m->super_opts);
		free(m->opts);
		return -ENOMEM;
	}
	return 0;
}

static int read_mounts(struct mounts *ms)
{
	cleanup_file FILE *f = fopen("/proc/self/mountinfo", "re");
	cleanup_free char *line = NULL;
	size_t cap = 0;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		struct mount m;

		if (parse_mount_line(line, &m) < 0)
			continue;
		if (ms->n == ms->cap) {
			size_t ncap = ms->cap ? ms->cap * 2 : 32;
			struct mount *p = realloc(ms->m, ncap * sizeof(*p));

			if (!p)
				return -ENOMEM;
			ms->m = p;
			ms->cap = ncap;
		}
		ms->m[ms->n++] = m;
	}
	return 0;
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static void probe_writable_mounts(const struct mounts *ms)
{
	cleanup_strv struct strv ok = { 0 };

	for (size_t i = 0; i < ms->n; i++) {
		const char *mp = ms->m[i].point;
		cleanup_free char *path = NULL;

		if (under(mp, "/proc") || under(mp, "/sys"))
			continue;
		if (asprintf(&path, "%s/%s.%d", strcmp(mp, "/") ? mp : "",
			     PROBE_NAME, (int)getpid()) < 0) {
			path = NULL;
			continue;
		}
		if (try_create(path, true) == 0 && strv_push(&ok, strdup(mp)) < 0)
			break;
	}
	emit_list(PROBE_WRITABLE_MOUNTS, &ok);
}

/* The last entry for a mount point is the one on top, the one in effect. */
static void probe_mount_of(const struct mounts *ms, const char *point)
{
	cleanup_free char *key = NULL;
	const struct mount *top = NULL;

	for (size_t i = 0; i < ms->n; i++)
		if (strcmp(ms->m[i].point, point) == 0)
			top = &ms->m[i];
	if (asprintf(&key, PROBE_MOUNT "%s", point) < 0)
		return;
	if (!top)
		emit(key, "absent");
	else
		emitf(key, "%s %s %s", top->fstype, top->super_opts, top->opts);
}

static void probe_mounts(void)
{
	__attribute__((cleanup(mounts_free))) struct mounts ms = { 0 };

	read_mounts(&ms);
	probe_writable_mounts(&ms);
	probe_mount_of(&ms, "/tmp");
	probe_mount_of(&ms, "/work");
	probe_mount_of(&ms, "/dev/shm");
	probe_mount_of(&ms, "/");
	probe_mount_of(&ms, "/usr");
}

static int ifaces_from_proc(struct strv *names)
{
	cleanup_file FILE *f = fopen("/proc/net/dev", "re");
	cleanup_free char *line = NULL;
	size_t cap = 0;

	if (!f)
		return -errno;
	/* "  eth0: 1234 ..." after two header lines without a colon-name. */
	while (getline(&line, &cap, f) > 0) {
		char *colon = strchr(line, ':');
		char *start = line;

		if (!colon || strchr(line, '|'))
			continue;
		*colon = '\0';
		while (isspace((unsigned char)*start))
			start++;
		if (strv_push(names, strdup(start)) < 0)
			return -ENOMEM;
	}
	return 0;
}

static void probe_net_ifaces(void)
{
	cleanup_strv struct strv names = { 0 };
	struct if_nameindex *ifs = if_nameindex();

	if (ifs) {
		for (struct if_nameindex *i = ifs; i->if_index; i++)
			if (strv_push(&names, strdup(i->if_name)) < 0)
				break;
		if_freenameindex(ifs);
	} else {
		int ret = ifaces_from_proc(&names);

		if (ret < 0) {
			emit(PROBE_NET_IFACES, errno_name(-ret));
			return;
		}
	}
	emit_list(PROBE_NET_IFACES, &names);
}

static const char *connect_result(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(80) };
	cleanup_close int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
						      SOCK_CLOEXEC, 0);
	struct pollfd p;
	socklen_t len = sizeof(int);
	int err = 0;

	if (fd < 0)
		return errno_name(errno);
	inet_pton(AF_INET, "1.1.1.1", &sa.sin_addr);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return "ok";
	if (errno != EINPROGRESS)
		return errno_name(errno);
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	if (poll(&p, 1, CONNECT_WAIT_MS) <= 0)
		return "timeout";
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return errno_name(errno);
	return errno_name(err);
}

static void probe_uname(void)
{
	struct utsname u;

	if (uname(&u) < 0) {
		emit(PROBE_KERNEL_RELEASE, errno_name(errno));
		emit(PROBE_KERNEL_VERSION, errno_name(errno));
		return;
	}
	emit(PROBE_KERNEL_RELEASE, u.release);
	emit(PROBE_KERNEL_VERSION, u.version);
}

static void probe_rlimits(void)
{
	static const struct {
		const char *key;
		int res;
	} lims[] = {
		{ PROBE_RLIMIT_NPROC, RLIMIT_NPROC },
		{ PROBE_RLIMIT_NOFILE, RLIMIT_NOFILE },
		{ PROBE_RLIMIT_CORE, RLIMIT_CORE },
		{ PROBE_RLIMIT_FSIZE, RLIMIT_FSIZE },
	};

	for (size_t i = 0; i < ARRAY_SIZE(lims); i++) {
		struct rlimit rl;

		if (getrlimit(lims[i].res, &rl) < 0)
			emit(lims[i].key, errno_name(errno));
		else if (rl.rlim_cur == RLIM_INFINITY)
			emit(lims[i].key, "unlimited");
		else
			emitf(lims[i].key, "%llu",
			      (unsigned long long)rl.rlim_cur);
	}
}

/* Lists our open descriptors, leaving out the one reading the listing. */
static int collect_fds(int **out, size_t *count)
{
	cleanup_dir DIR *d = opendir("/proc/self/fd");
	cleanup_free int *fds = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);

		if (*end || end == e->d_name || fd == dirfd(d))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			int *p = realloc(fds, ncap * sizeof(*p));

			if (!p)
				return -ENOMEM;
			fds = p;
			cap = ncap;
		}
		fds[n++] = (int)fd;
	}
	qsort(fds, n, sizeof(*fds), cmp_int);
	*out = steal_ptr(fds);
	*count = n;
	return 0;
}

/* Which descriptors leaked into user code: anything beyond 0-2 is news.
 * Numeric order: a string sort would put 10 before 2. */
static void probe_fds(void)
{
	cleanup_free int *fds = NULL;
	cleanup_free char *buf = NULL;
	size_t n = 0, len = 0;
	FILE *m;
	int ret = collect_fds(&fds, &n);

	if (ret < 0) {
		emit(PROBE_FDS, errno_name(-ret));
		return;
	}
	m = open_memstream(&buf, &len);
	if (!m) {
		emit(PROBE_FDS, "ENOMEM");
		return;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(m, "%s%d", i ? "," : "", fds[i]);
	fclose(m);
	emit(PROBE_FDS, buf ? buf : "");
}

static void probe_pid1(void)
{
	cleanup_dir DIR *d = opendir("/proc/1/fd");
	int fd;

	emitf(PROBE_PID1_FD_READABLE, "%d", d && readdir(d) != NULL);
	fd = open("/proc/1/mem", O_RDONLY | O_CLOEXEC);
	emitf(PROBE_PID1_MEM_READABLE, "%d", fd >= 0);
	if (fd >= 0)
		close(fd);
	fd = open("/proc/1/environ", O_RDONLY | O_CLOEXEC);
	emitf(PROBE_PID1_ENVIRON_READABLE, "%d", fd >= 0);
	if (fd >= 0)
		close(fd);
	struct stat st;
	if (stat("/proc/1", &st) == 0)
		emitf(PROBE_PID1_UID, "%u", (unsigned)st.st_uid);
	else
		emit(PROBE_PID1_UID, errno_name(errno));
	/* The walls that matter: can user code open any of the init's
	 * descriptors (its channel to the engine) through /proc/1/fd, listed
	 * or not? Opened non-blocking and closed at once, stealing nothing. */
	char reached[256] = "";
	for (int n = 3; n < 256; n++) {
		char path[32];
		snprintf(path, sizeof(path), "/proc/1/fd/%d", n);
		int w = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		int r = w < 0 ? open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
		if (w >= 0 || r >= 0) {
			size_t used = strlen(reached);
			snprintf(reached + used, sizeof(reached) - used, "%s%d", used ? "," : "", n);
		}
		if (w >= 0)
			close(w);
		if (r >= 0)
			close(r);
	}
	emit(PROBE_PID1_FDS_OPENABLE, reached[0] ? reached : "none");
	emitf(PROBE_NO_NEW_PRIVS_PRCTL, "%d", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
}

static void probe_environ(void)
{
	cleanup_strv struct strv names = { 0 };

	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');

		if (strv_push(&names, strndup(*e, eq ? (size_t)(eq - *e)
						      : strlen(*e))) < 0)
			break;
	}
	emit_list(PROBE_ENVIRON, &names);
}

/* If the attach worked, pid 1 is about to enter the attach stop; detaching
 * from that stop with no signal consumes the SIGSTOP the attach queued.
 * Detaching any earlier fails (ESRCH), and the SIGSTOP would then stop
 * pid 1 for good once we exit - so the wait has no timeout. */
static const char *ptrace_result(void)
{
	int st;

	if (ptrace(PTRACE_ATTACH, 1, NULL, NULL) < 0)
		return errno_name(errno);
	while (waitpid(1, &st, __WALL) < 0 && errno == EINTR)
		;
	ptrace(PTRACE_DETACH, 1, NULL, NULL);
	return "ok";
}

static const char *syslog_result(void)
{
	return klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0) < 0
		       ? errno_name(errno)
		       : "ok";
}

/* A successful unshare() moves the probe into a new user namespace, which
 * would colour every later check; it runs last and is printed in order.
 * The results are copied because errno_name() may reuse its buffer. */
static void probe_escape_attempts(void)
{
	char ptrace_r[16], syslog_r[16], unshare_r[16];

	snprintf(ptrace_r, sizeof(ptrace_r), "%s", ptrace_result());
	snprintf(syslog_r, sizeof(syslog_r), "%s", syslog_result());
	snprintf(unshare_r, sizeof(unshare_r), "%s",
		 unshare(CLONE_NEWUSER) < 0 ? errno_name(errno) : "ok");
	emit(PROBE_UNSHARE_USER, unshare_r);
	emit(PROBE_PTRACE_PID1, ptrace_r);
	emit(PROBE_SYSLOG, syslog_r);
}

int bh_probe_main(void)
{
	probe_ids();
	probe_status();
	probe_writable(PROBE_ROOT_WRITABLE, PROBE_ROOT_ERRNO, "/" PROBE_NAME);
	probe_writable(PROBE_USR_WRITABLE, PROBE_USR_ERRNO, "/usr/" PROBE_NAME);
	probe_mounts();
	probe_net_ifaces();
	emit(PROBE_CONNECT_PUBLIC, connect_result());
	probe_uname();
	probe_rlimits();
	probe_fds();
	probe_pid1();
	probe_environ();
	bh_probe_seccomp(emit, errno_name);
	emitf(PROBE_PID, "%d", (int)getpid());
	probe_escape_attempts();
	fflush(stdout);
	return 0;
}
