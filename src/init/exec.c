/* EXEC: one program to completion, then the sweep, then DONE. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "init_priv.h"
#include "base.h"

struct exec_req {
	uint64_t call_id;
	uint32_t timeout_ms;
	uint32_t output_cap;
	uint32_t argc;
	struct proto_cursor argv; /* the argc strings, still encoded */
	const uint8_t *stdin_data;
	uint32_t stdin_len;
};

struct spawn_fds {
	int in_r, in_w;
	int out_r, out_w;
	int err_r, err_w;
	int rep_r, rep_w; /* exec error report */
};

static void spawn_fds_close(struct spawn_fds *f)
{
	bh_close_now(&f->in_r);
	bh_close_now(&f->in_w);
	bh_close_now(&f->out_r);
	bh_close_now(&f->out_w);
	bh_close_now(&f->err_r);
	bh_close_now(&f->err_w);
	bh_close_now(&f->rep_r);
	bh_close_now(&f->rep_w);
}

/* Every end is close-on-exec: the child dup2()s what it needs onto 0-2 and
 * the rest vanish at execve(); the report pipe closing is how the parent
 * learns that execve() succeeded. */
static int spawn_fds_open(struct spawn_fds *f, bool with_stdin)
{
	int p[2];

	if (with_stdin) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return -errno;
		f->in_r = p[0];
		f->in_w = p[1];
	}
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	f->out_r = p[0];
	f->out_w = p[1];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	f->err_r = p[0];
	f->err_w = p[1];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	f->rep_r = p[0];
	f->rep_w = p[1];
	return 0;
}

static void stdin_close(struct job *j)
{
	if (j->in_fd >= 0)
		close(j->in_fd);
	j->in_fd = -1;
	free(j->in_owner);
	j->in_owner = NULL;
	j->in_data = NULL;
}

static void stdin_feed(struct job *j)
{
	while (j->in_fd >= 0 && j->in_off < j->in_len) {
		size_t want = j->in_len - j->in_off;
		ssize_t n = write(j->in_fd, j->in_data + j->in_off,
				  want > IO_CHUNK ? IO_CHUNK : want);

		if (n > 0) {
			j->in_off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		break; /* EPIPE: the program does not want the rest */
	}
	/* Closing delivers EOF to the program. */
	stdin_close(j);
}

static void free_argv(char ***argv)
{
	if (!*argv)
		return;
	for (char **a = *argv; *a; a++)
		free(*a);
	free(*argv);
}

/* Decodes argv into C strings; a NUL inside an argument has no C form. */
static int build_argv(const struct exec_req *rq, char ***out, uint32_t *bad)
{
	__attribute__((cleanup(free_argv))) char **argv = NULL;
	struct proto_cursor c = rq->argv;

	argv = calloc((size_t)rq->argc + 1u, sizeof(*argv));
	if (!argv)
		return -ENOMEM;
	for (uint32_t i = 0; i < rq->argc; i++) {
		const uint8_t *s;
		uint32_t n;

		if (proto_get_str(&c, &s, &n) < 0)
			return -EPROTO; /* parse_exec already walked these */
		if (memchr(s, 0, n)) {
			*bad = i;
			return -EINVAL;
		}
		argv[i] = strndup((const char *)s, n);
		if (!argv[i])
			return -ENOMEM;
	}
	*out = steal_ptr(argv);
	return 0;
}

static void job_arm(struct init *st, const struct exec_req *rq, pid_t pid,
		    uint64_t t_start, struct spawn_fds *f, uint8_t **payload)
{
	struct job *j = &st->job;

	*j = (struct job){
		.active = true,
		.call_id = rq->call_id,
		.pid = pid,
		.t_start = t_start,
		.in_fd = -1,
	};
	if (rq->timeout_ms)
		j->deadline = t_start + (uint64_t)rq->timeout_ms * 1000000u;
	capture_init(&j->out, steal_fd(f->out_r), rq->output_cap, false);
	capture_init(&j->err, steal_fd(f->err_r), rq->output_cap, false);
	set_nonblock(j->out.fd);
	set_nonblock(j->err.fd);
	if (f->in_w >= 0) {
		j->in_fd = steal_fd(f->in_w);
		set_nonblock(j->in_fd);
		/* The stdin bytes live in the request payload: keep it rather
		 * than copy up to 16 MiB. */
		j->in_owner = steal_ptr(*payload);
		j->in_data = rq->stdin_data;
		j->in_len = rq->stdin_len;
	}
	st->children = true;
}

/* Forks and execs the program. A failure the engine should hear about is
 * answered with FAIL here; only an unqueueable reply is returned (<0). */
static int job_start(struct init *st, const struct exec_req *rq,
		     uint8_t **payload)
{
	__attribute__((cleanup(spawn_fds_close))) struct spawn_fds f = {
		-1, -1, -1, -1, -1, -1, -1, -1
	};
	__attribute__((cleanup(free_argv))) char **argv = NULL;
	struct child_report report;
	uint32_t bad = 0;
	uint64_t t_start;
	pid_t pid;
	int ret;

	ret = build_argv(rq, &argv, &bad);
	if (ret == -EINVAL)
		return queue_fail(st, rq->call_id, EINVAL,
				  "argv[%u] contains a NUL byte", bad);
	if (ret < 0)
		return queue_fail(st, rq->call_id, -ret, "argv: %s",
				  strerror(-ret));
	ret = spawn_fds_open(&f, rq->stdin_len > 0);
	if (ret < 0)
		return queue_fail(st, rq->call_id, -ret, "pipe: %s",
				  strerror(-ret));
	t_start = now_mono_ns();
	pid = fork();
	if (pid < 0)
		return queue_fail(st, rq->call_id, errno, "fork: %s",
				  strerror(errno));
	if (pid == 0) {
		/* Without stdin bytes, fd 0 stays the init's /dev/null. */
		int map[3] = { f.in_r, f.out_w, f.err_w };

		spawn_child(f.rep_w, map, 3, argv, NULL, NULL, -1);
	}
	/* Only the child may hold these, or EOF would never come. */
	bh_close_now(&f.in_r);
	bh_close_now(&f.out_w);
	bh_close_now(&f.err_w);
	bh_close_now(&f.rep_w);
	if (spawn_wait_report(f.rep_r, &report, t_start + SPAWN_WAIT_MS * 1000000ull)) {
		/* It _exit()s right after reporting (or is stuck); collect it
		 * now so the general reaper does not have to know about it. */
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
			;
		if (report.stage == STAGE_EXEC)
			return queue_fail(st, rq->call_id, report.err,
					  "exec %s: %s", argv[0],
					  strerror(report.err));
		return queue_fail(st, rq->call_id, report.err, "%s: %s",
				  stage_name(report.stage),
				  strerror(report.err));
	}
	job_arm(st, rq, pid, t_start, &f, payload);
	return 0;
}

static void job_release(struct job *j)
{
	capture_free(&j->out);
	capture_free(&j->err);
	stdin_close(j);
	*j = (struct job){ .in_fd = -1, .out.fd = -1, .err.fd = -1 };
}

static void exit_code_of(const struct job *j, int32_t *code, uint32_t *sig)
{
	*code = 0;
	*sig = 0;
	if (j->exited && WIFSIGNALED(j->status)) {
		*sig = (uint32_t)WTERMSIG(j->status);
		*code = 128 + WTERMSIG(j->status);
	} else if (j->exited && WIFEXITED(j->status)) {
		*code = WEXITSTATUS(j->status);
	}
	/* The deadline's SIGKILL stays visible in term_signal. */
	if (j->timed_out)
		*code = 124;
}

static int job_done(struct init *st)
{
	const struct job *j = &st->job;
	struct done_info d = {
		.call_id = j->call_id,
		.flags = j->timed_out ? BH_CHAN_TIMED_OUT : 0,
		.duration_us = (j->t_end - j->t_start) / 1000u,
		.out = &j->out,
		.err = &j->err,
	};

	exit_code_of(j, &d.code, &d.sig);
	return queue_done(st, &d);
}

bool exec_reaped(struct init *st, pid_t pid, int status)
{
	struct job *j = &st->job;

	if (!j->active || pid != j->pid || j->exited)
		return false;
	j->exited = true;
	j->status = status;
	if (!j->timed_out)
		j->t_end = now_mono_ns();
	return true;
}

int exec_progress(struct init *st)
{
	struct job *j = &st->job;
	uint64_t now = now_mono_ns();
	bool settled;
	int ret;

	if (!j->active)
		return 0;
	if (!j->sweeping) {
		if (j->deadline && !j->exited && now >= j->deadline) {
			j->timed_out = true;
			j->t_end = now;
		} else if (!j->exited) {
			return 0;
		}
		j->sweeping = true;
		j->sweep_start = now;
		sweep_begin(st);
		/* Feeding stdin is pointless once the program is gone. */
		stdin_close(j);
	}
	/* Every tick, in case something forked while the last pass ran. */
	settled = sweep_pass(st);
	/* Done when the program is reaped, every holder of its output pipes
	 * is dead (EOF) and nothing but the spared is left. */
	settled = settled && j->exited && j->out.fd < 0 && j->err.fd < 0;
	if (!settled && now - j->sweep_start < SWEEP_GRACE_MS * 1000000ull)
		return 0;
	if (!settled)
		diag("call %llu: leftovers did not die within %d ms",
		     (unsigned long long)j->call_id, SWEEP_GRACE_MS);
	if (st->sweep_note) {
		char line[200];

		snprintf(line, sizeof(line),
			 "\nbulkhead: the session's interpreters %s; the next cell starts "
			 "fresh ones\n", st->sweep_note);
		capture_note(&j->err, line);
	}
	ret = job_done(st);
	if (ret < 0)
		ret = queue_fail(st, j->call_id, -ret, "DONE: %s",
				 strerror(-ret));
	job_release(j);
	return ret;
}

int exec_timeout(const struct init *st)
{
	const struct job *j = &st->job;

	if (!j->active)
		return -1;
	if (j->sweeping)
		return SWEEP_TICK_MS;
	if (j->deadline)
		return ms_until(now_mono_ns(), j->deadline);
	return -1;
}

void exec_pollfds(struct init *st, struct pollset *ps)
{
	struct job *j = &st->job;

	if (!j->active)
		return;
	ps_add(ps, j->out.fd, POLLIN, T_EXEC_OUT, NULL);
	ps_add(ps, j->err.fd, POLLIN, T_EXEC_ERR, NULL);
	ps_add(ps, j->in_fd, POLLOUT, T_EXEC_IN, NULL);
}

void exec_ready(struct init *st, int tag)
{
	if (tag == T_EXEC_OUT)
		capture_read(&st->job.out);
	else if (tag == T_EXEC_ERR)
		capture_read(&st->job.err);
	else if (tag == T_EXEC_IN)
		stdin_feed(&st->job);
}

/* ---- requests ---------------------------------------------------------- */

static int parse_exec(const uint8_t *p, size_t n, struct exec_req *rq)
{
	struct proto_cursor c = proto_cursor(p, n);
	const uint8_t *s;
	uint32_t len;

	if (proto_get_u64(&c, &rq->call_id) < 0 ||
	    proto_get_u32(&c, &rq->timeout_ms) < 0 ||
	    proto_get_u32(&c, &rq->output_cap) < 0 ||
	    proto_get_u32(&c, &rq->argc) < 0)
		return -EPROTO;
	/* Each string costs at least its length word. */
	if (rq->argc > c.left / 4u)
		return -EPROTO;
	rq->argv = c;
	for (uint32_t i = 0; i < rq->argc; i++)
		if (proto_get_str(&c, &s, &len) < 0)
			return -EPROTO;
	rq->argv.left -= c.left;
	if (proto_get_str(&c, &rq->stdin_data, &rq->stdin_len) < 0)
		return -EPROTO;
	/* Trailing bytes mean the two sides disagree about the layout. */
	return c.left == 0 ? 0 : -EPROTO;
}

int handle_exec(struct init *st, uint8_t **payload, size_t len)
{
	struct exec_req rq;

	if (parse_exec(*payload, len, &rq) < 0)
		return -EPROTO;
	if (st->job.active)
		return queue_fail(st, rq.call_id, EBUSY,
				  "an EXEC is already running (call %llu)",
				  (unsigned long long)st->job.call_id);
	if (st->cell.stage != CELL_IDLE)
		return queue_fail(st, rq.call_id, EBUSY,
				  "a CELL is running (call %llu)",
				  (unsigned long long)st->cell.call_id);
	if (rq.argc == 0)
		return queue_fail(st, rq.call_id, EINVAL, "empty argv");
	return job_start(st, &rq, payload);
}
