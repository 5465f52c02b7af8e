/* bulkhead-init --project: the project runner, started by an EXEC inside
 * the sandbox as the sandbox user in /work. It reads the plan on stdin,
 * writes the files, runs the steps, reads the artifacts and writes one
 * report on stdout (include/bulkhead-proto/project.h says both layouts and
 * why the nonce). Nothing here is trusted by the engine beyond what the
 * report's shape allows: it is the sandbox's own account of the run, as
 * plimsoll's runner.mjs is. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base.h"
#include "codec.h"
#include "path_rule.h"
#include "project.h"
#include "runner.h"
#include "walk.h"

struct plan {
	const uint8_t *nonce;
	uint32_t budget_ms, output_cap, artifact_budget;
	uint32_t nfiles, nsteps, nartifacts;
	struct proto_cursor files, steps, artifacts;
};

static int read_stdin(struct buf *in)
{
	for (;;) {
		if (in->len > BH_PROJECT_PLAN_MAX)
			return -EMSGSIZE;
		if (buf_reserve(in, 65536) < 0)
			return -ENOMEM;
		ssize_t r = read(0, in->data + in->len, in->cap - in->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return 0;
		in->len += (size_t)r;
	}
}

/* Skips n strings, so each list's cursor starts at its first. */
static int skip_strings(struct proto_cursor *c, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *s;
		uint32_t len;
		if (proto_get_str(c, &s, &len) < 0)
			return -1;
	}
	return 0;
}

static int parse_plan(const struct buf *in, struct plan *p)
{
	struct proto_cursor c = proto_cursor(in->data, in->len);
	if (proto_take(&c, BH_PROJECT_NONCE, &p->nonce) < 0 || proto_get_u32(&c, &p->budget_ms) < 0 ||
	    proto_get_u32(&c, &p->output_cap) < 0 || proto_get_u32(&c, &p->artifact_budget) < 0 ||
	    proto_get_u32(&c, &p->nfiles) < 0 || p->nfiles > BH_MAX_FILES)
		return -1;
	p->files = c;
	if (skip_strings(&c, 2 * p->nfiles) < 0 || proto_get_u32(&c, &p->nsteps) < 0 ||
	    p->nsteps > BH_PROJECT_MAX_STEPS)
		return -1;
	p->steps = c;
	if (skip_strings(&c, p->nsteps) < 0 || proto_get_u32(&c, &p->nartifacts) < 0 ||
	    p->nartifacts > BH_PROJECT_MAX_ARTIFACTS)
		return -1;
	p->artifacts = c;
	if (skip_strings(&c, p->nartifacts) < 0 || c.left != 0)
		return -1;
	if (p->output_cap > BH_PROJECT_STEP_OUTPUT_CAP || p->artifact_budget > BH_PROJECT_ARTIFACT_BUDGET)
		return -1;
	return 0;
}

/* ---- files ---- */

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n > (1u << 20) ? (1u << 20) : n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* walk_dir makes missing directories only when told of each. */
static void on_created(const char *path, void *arg)
{
	(void)path;
	(void)arg;
}

/* One file under /work: its directories made on the way, no link followed
 * (walk.c), the file itself replaced only when it is a regular file. */
static int write_file(int work, const char *path, size_t plen, const uint8_t *content, size_t n)
{
	size_t dlen;
	const char *base;
	path_split(path, plen, &dlen, &base);
	cleanup_close int dfd = walk_dir(work, path, dlen, on_created, NULL);
	if (dfd < 0)
		return dfd;
	struct stat sb;
	if (fstatat(dfd, base, &sb, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(sb.st_mode))
		return S_ISLNK(sb.st_mode) ? -ELOOP : S_ISDIR(sb.st_mode) ? -EISDIR : -EINVAL;
	cleanup_close int fd =
		openat(dfd, base, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	return write_all(fd, content, n);
}

static int write_files(const struct plan *p, char *detail, size_t cap)
{
	cleanup_close int work = open_work();
	if (work < 0) {
		snprintf(detail, cap, "could not open /work: %s", strerror(-work));
		return -1;
	}
	struct proto_cursor c = p->files;
	for (uint32_t i = 0; i < p->nfiles; i++) {
		const uint8_t *path, *content;
		uint32_t plen, clen;
		proto_get_str(&c, &path, &plen);
		proto_get_str(&c, &content, &clen);
		char shown[256];
		path_printable(path, plen, shown, sizeof shown);
		if (proto_path_check(path, plen, PROTO_PATH_STRICT) != PROTO_PATH_OK) {
			snprintf(detail, cap, "illegal file path: %s", shown);
			return -1;
		}
		char name[BH_MAX_PATH_BYTES + 1];
		memcpy(name, path, plen);
		name[plen] = '\0';
		int r = write_file(work, name, plen, content, clen);
		if (r < 0) {
			snprintf(detail, cap, "could not write %s: %s", shown, strerror(-r));
			return -1;
		}
	}
	return 0;
}

/* ---- steps ---- */

struct capture {
	int fd;
	struct buf kept;
	uint32_t cap;
	bool truncated;
};

static void take(struct capture *k)
{
	uint8_t chunk[16384];
	for (;;) {
		ssize_t r = read(k->fd, chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
				bh_close_now(&k->fd);
			return;
		}
		size_t room = k->cap - k->kept.len;
		size_t keep = (size_t)r < room ? (size_t)r : room;
		if (keep)
			buf_append(&k->kept, chunk, keep);
		if ((size_t)r > keep)
			k->truncated = true;
	}
}

struct step_result {
	int32_t exit_code;
	uint8_t flags;
	uint64_t duration_us;
	struct capture out, err;
};

static pid_t start_step(const uint8_t *cmd, uint32_t n, int out_w, int err_w)
{
	char *command = xstrndup((const char *)cmd, n);
	pid_t pid = fork();
	if (pid != 0) {
		free(command);
		return pid;
	}
	/* Its own process group, so a deadline kills what it started too. */
	setpgid(0, 0);
	int null = open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
		_exit(127);
	signal(SIGPIPE, SIG_DFL);
	char *argv[] = {"sh", "-c", command, NULL};
	execv("/bin/sh", argv);
	dprintf(2, "bulkhead: could not run /bin/sh: %s\n", strerror(errno));
	_exit(127);
}

/* Runs one step to its end or the deadline, reading both streams as it
 * goes. Once the step's shell has exited the streams are drained of what
 * is there and closed: a background process left holding them does not
 * keep the run waiting (the EXEC's sweep ends it). */
static void run_step(const uint8_t *cmd, uint32_t n, uint64_t deadline_us, uint32_t cap,
		     struct step_result *r)
{
	memset(r, 0, sizeof *r);
	r->out.cap = r->err.cap = cap;
	int po[2], pe[2];
	uint64_t t0 = now_mono_us();
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		r->exit_code = 127;
		return;
	}
	pid_t pid = start_step(cmd, n, po[1], pe[1]);
	close(po[1]);
	close(pe[1]);
	r->out.fd = po[0];
	r->err.fd = pe[0];
	fcntl(po[0], F_SETFL, O_NONBLOCK);
	fcntl(pe[0], F_SETFL, O_NONBLOCK);
	int status = 0;
	bool exited = pid < 0, timed_out = false;
	while (!exited) {
		uint64_t now = now_mono_us();
		if (now >= deadline_us) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			timed_out = exited = true;
			break;
		}
		struct pollfd fds[2] = {{.fd = r->out.fd, .events = POLLIN},
					{.fd = r->err.fd, .events = POLLIN}};
		uint64_t wait_ms = (deadline_us - now) / 1000 + 1;
		/* The shell's exit is noticed within 20 ms: no SIGCHLD plumbing
		 * in a program this small. */
		poll(fds, 2, wait_ms < 20 ? (int)wait_ms : 20);
		if (r->out.fd >= 0)
			take(&r->out);
		if (r->err.fd >= 0)
			take(&r->err);
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			exited = true;
	}
	if (r->out.fd >= 0)
		take(&r->out);
	if (r->err.fd >= 0)
		take(&r->err);
	bh_close_now(&r->out.fd);
	bh_close_now(&r->err.fd);
	r->duration_us = now_mono_us() - t0;
	if (pid < 0)
		r->exit_code = 127;
	else if (timed_out)
		r->exit_code = 124;
	else if (WIFEXITED(status))
		r->exit_code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		r->exit_code = 128 + WTERMSIG(status);
	else
		r->exit_code = -1;
	r->flags = (timed_out ? BH_PROJECT_STEP_TIMED_OUT : 0) |
		   (r->out.truncated ? BH_PROJECT_STEP_STDOUT_TRUNCATED : 0) |
		   (r->err.truncated ? BH_PROJECT_STEP_STDERR_TRUNCATED : 0);
}

/* ---- artifacts ---- */

/* A regular file under /work, reached with no link followed; -errno when
 * it is not one (missing, a link, a directory, a FIFO). */
static int open_artifact(int work, const uint8_t *path, uint32_t plen, struct stat *sb)
{
	if (proto_path_check(path, plen, PROTO_PATH_STRICT) != PROTO_PATH_OK)
		return -EINVAL;
	char name[BH_MAX_PATH_BYTES + 1];
	memcpy(name, path, plen);
	name[plen] = '\0';
	size_t dlen;
	const char *base;
	path_split(name, plen, &dlen, &base);
	cleanup_close int dfd = walk_dir(work, name, dlen, NULL, NULL);
	if (dfd < 0)
		return dfd;
	int fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, sb) < 0 || !S_ISREG(sb->st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static void read_artifacts(const struct plan *p, struct buf *report)
{
	struct buf list = {0};
	uint32_t n = 0, used = 0;
	bool truncated = false;
	cleanup_close int work = open_work();
	struct proto_cursor c = p->artifacts;
	for (uint32_t i = 0; i < p->nartifacts && work >= 0 && !truncated; i++) {
		const uint8_t *path;
		uint32_t plen;
		proto_get_str(&c, &path, &plen);
		struct stat sb;
		cleanup_close int fd = open_artifact(work, path, plen, &sb);
		if (fd < 0)
			continue;
		if ((uint64_t)sb.st_size > p->artifact_budget - used) {
			truncated = true;
			break;
		}
		/* Read at most what was measured, and one byte more to see that
		 * it grew: a file still being written is taken as it was. */
		size_t want = (size_t)sb.st_size;
		uint8_t *data = xzalloc(want + 1);
		size_t got = 0;
		while (got < want) {
			ssize_t r = read(fd, data + got, want - got);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		proto_put_u32(&list, i);
		proto_put_str(&list, data, got);
		used += (uint32_t)got;
		n++;
		free(data);
	}
	proto_put_u8(report, truncated);
	proto_put_u32(report, n);
	if (list.len)
		buf_append(report, list.data, list.len);
	buf_free(&list);
}

static int write_out(const struct buf *b)
{
	return write_all(1, b->data, b->len);
}

int bh_project_main(void)
{
	/* Before a step exists: a process of the same uid can then reach
	 * neither this one's memory nor its descriptors (project.h). */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	signal(SIGPIPE, SIG_IGN);
	struct buf in = {0};
	struct plan p = {0};
	if (read_stdin(&in) < 0 || parse_plan(&in, &p) < 0) {
		/* No nonce to answer with: the engine sees no report. */
		fprintf(stderr, "bulkhead: the project plan does not parse\n");
		return 2;
	}
	char detail[BH_PROJECT_DETAIL_MAX + 1] = "";
	bool setup_failed = write_files(&p, detail, sizeof detail) < 0;
	struct buf steps = {0};
	uint32_t ran = 0;
	uint64_t deadline = now_mono_us() + (uint64_t)p.budget_ms * 1000u;
	struct proto_cursor c = p.steps;
	for (uint32_t i = 0; i < p.nsteps && !setup_failed; i++) {
		const uint8_t *cmd;
		uint32_t n;
		proto_get_str(&c, &cmd, &n);
		struct step_result r;
		run_step(cmd, n, deadline, p.output_cap, &r);
		proto_put_u32(&steps, (uint32_t)r.exit_code);
		proto_put_u8(&steps, r.flags);
		proto_put_u64(&steps, r.duration_us);
		proto_put_str(&steps, r.out.kept.data, r.out.kept.len);
		proto_put_str(&steps, r.err.kept.data, r.err.kept.len);
		buf_free(&r.out.kept);
		buf_free(&r.err.kept);
		ran++;
		if (r.exit_code != 0)
			break;
	}
	struct buf report = {0};
	buf_append(&report, p.nonce, BH_PROJECT_NONCE);
	proto_put_u8(&report, setup_failed);
	proto_put_str(&report, detail, strlen(detail));
	proto_put_u32(&report, ran);
	if (steps.len)
		buf_append(&report, steps.data, steps.len);
	if (setup_failed) {
		proto_put_u8(&report, 0); /* plimsoll's runner reports no artifacts then */
		proto_put_u32(&report, 0);
	} else {
		read_artifacts(&p, &report);
	}
	int ret = write_out(&report) < 0 ? 1 : 0;
	buf_free(&steps);
	buf_free(&report);
	buf_free(&in);
	return ret;
}
