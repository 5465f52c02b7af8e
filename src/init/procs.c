/* PS: the processes in the sandbox, read from its own /proc (the init is
 * PID 1 of the sandbox's pid namespace, so /proc shows the sandbox and
 * nothing else; under gVisor it is the Sentry's). The reading happens in a
 * forked helper running as the sandbox user, like LIST and READ (fsread.c):
 * a process can make reading its /proc files slow (its memory map locked),
 * and nothing it does may hang the init, which keeps serving the call in
 * flight meanwhile. The answer is PROCS (channel.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "answer.h"
#include "init_priv.h"
#include "base.h"

/* /proc/<pid>/stat and status are a few hundred bytes; more is not Linux's
 * (or gVisor's) format. */
#define PROC_TEXT_MAX 4096

struct ps_req {
	uint64_t call_id;
	uint32_t max;
};

/* ---- child side -------------------------------------------------------- */

/* Up to n - 1 bytes of /proc/<pid>/<name>, NUL-terminated; its length, or
 * -1 when the process is gone (or the file unreadable). */
static ssize_t read_proc(int pid_dir, const char *name, char *buf, size_t n)
{
	cleanup_close int fd = openat(pid_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	size_t got = 0;

	if (fd < 0)
		return -1;
	while (got < n - 1) {
		ssize_t r = read(fd, buf + got, n - 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	return (ssize_t)got;
}

struct proc_row {
	uint32_t pid, ppid, uid;
	uint8_t state;
	uint64_t cpu_us, rss_bytes, age_us;
	char comm[64];
	char command[BH_CHAN_COMMAND_MAX + 1];
	size_t command_len;
};

/* stat: "pid (comm) state ppid ... utime stime ... starttime vsize rss".
 * comm may hold spaces and parentheses: it ends at the last ')'. */
static int parse_stat(char *text, struct proc_row *row, uint64_t *start_ticks)
{
	char *open = strchr(text, '('), *close = strrchr(text, ')');
	unsigned long long f[22] = { 0 };
	char state;
	int n;

	if (!open || !close || close < open)
		return -1;
	snprintf(row->comm, sizeof(row->comm), "%.*s", (int)(close - open - 1), open + 1);
	/* Fields 3 (state) to 24 (rss), numbered as proc(5) numbers them. */
	n = sscanf(close + 1,
		   " %c %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
		   "%llu %llu %llu %llu %llu %llu %llu",
		   &state, &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10], &f[11], &f[12],
		   &f[13], &f[14], &f[15], &f[16], &f[17], &f[18], &f[19], &f[20], &f[21],
		   &f[0], &f[1], &f[2]);
	if (n < 22)
		return -1;
	/* f[4] ppid ... f[14] utime, f[15] stime; f[0] starttime (22), f[2]
	 * rss in pages (24); f[1] is vsize (23). */
	row->state = state && strchr(BH_CHAN_PROC_STATES, state) ? (uint8_t)state : (uint8_t)'?';
	row->ppid = (uint32_t)f[4];
	{
		long tck = sysconf(_SC_CLK_TCK);
		uint64_t ticks = f[14] + f[15];

		if (tck <= 0)
			tck = 100;
		row->cpu_us = ticks * (1000000u / (uint64_t)tck);
		*start_ticks = f[0] * (1000000u / (uint64_t)tck);
	}
	row->rss_bytes = f[2] * (uint64_t)getpagesize();
	return 0;
}

/* The effective uid, status's second "Uid:" figure. */
static uint32_t parse_uid(const char *status)
{
	const char *p = strstr(status, "\nUid:");
	unsigned long real, eff;

	if (!p || sscanf(p + 5, "%lu %lu", &real, &eff) != 2)
		return UINT32_MAX;
	return (uint32_t)eff;
}

/* argv joined by spaces; [comm] when there is none (a zombie, a kernel
 * thread). NULs never reach the frame. */
static void set_command(int pid_dir, struct proc_row *row)
{
	ssize_t n = read_proc(pid_dir, "cmdline", row->command, sizeof(row->command));

	if (n < 0)
		n = 0;
	for (ssize_t i = 0; i < n; i++)
		if (row->command[i] == '\0')
			row->command[i] = ' ';
	while (n > 0 && row->command[n - 1] == ' ')
		n--;
	if (n == 0)
		n = snprintf(row->command, sizeof(row->command), "[%s]", row->comm);
	row->command_len = (size_t)n < BH_CHAN_COMMAND_MAX ? (size_t)n : BH_CHAN_COMMAND_MAX;
}

static uint64_t uptime_us(void)
{
	char text[128];
	cleanup_close int fd = open("/proc/uptime", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);
	unsigned long long sec = 0, frac = 0;

	if (n <= 0)
		return 0;
	text[n] = '\0';
	if (sscanf(text, "%llu.%2llu", &sec, &frac) < 1)
		return 0;
	return sec * 1000000u + frac * 10000u;
}

static int cmp_pids(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* One process, or -1 when it is gone since the directory was read. */
static int read_row(int proc, uint32_t pid, uint64_t now_us, struct proc_row *row)
{
	char name[16], stat[PROC_TEXT_MAX], status[PROC_TEXT_MAX];
	cleanup_close int dir = -1;
	uint64_t start_us = 0;

	snprintf(name, sizeof(name), "%u", pid);
	dir = openat(proc, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0 || read_proc(dir, "stat", stat, sizeof(stat)) < 0 ||
	    read_proc(dir, "status", status, sizeof(status)) < 0)
		return -1;
	memset(row, 0, sizeof(*row));
	row->pid = pid;
	if (parse_stat(stat, row, &start_us) < 0)
		return -1;
	row->uid = parse_uid(status);
	row->age_us = now_us > start_us ? now_us - start_us : 0;
	set_command(dir, row);
	return 0;
}

static void put_row(struct abuf *b, const struct proc_row *row)
{
	ab_u32(b, row->pid);
	ab_u32(b, row->ppid);
	ab_u32(b, row->uid);
	ab_u8(b, row->state);
	ab_u64(b, row->cpu_us);
	ab_u64(b, row->rss_bytes);
	ab_u64(b, row->age_us);
	ab_str(b, row->command, row->command_len);
}

static void ps_body(int fd, const void *arg)
{
	const struct ps_req *rq = arg;
	uint32_t max = rq->max < BH_CHAN_PS_MAX_ENTRIES ? rq->max : BH_CHAN_PS_MAX_ENTRIES;
	uint32_t *pids = NULL, self = (uint32_t)getpid();
	size_t n = 0, cap = 0, shown = 0, count_at;
	struct abuf b = { 0 };
	struct dirent *e;
	struct proc_row *row = malloc(sizeof(*row));
	int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = proc < 0 ? NULL : fdopendir(dup(proc));
	uint64_t now_us = uptime_us();

	if (!d || !row)
		answer_error(fd, BH_CHAN_FAIL, rq->call_id, 0, errno ? errno : ENOMEM,
			     "/proc: %s", strerror(errno ? errno : ENOMEM));
	while ((e = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(e->d_name, &end, 10);

		/* The helper itself is not what anyone asked about. */
		if (*end || end == e->d_name || !isdigit((unsigned char)e->d_name[0]) ||
		    pid == 0 || pid > UINT32_MAX || pid == self)
			continue;
		if (n == cap) {
			uint32_t *p = realloc(pids, (cap = cap ? cap * 2 : 256) * sizeof(*p));

			if (!p)
				answer_error(fd, BH_CHAN_FAIL, rq->call_id, 0, ENOMEM,
					     "processes: %s", strerror(ENOMEM));
			pids = p;
		}
		pids[n++] = (uint32_t)pid;
	}
	if (n)
		qsort(pids, n, sizeof(*pids), cmp_pids);
	ab_u8(&b, BH_CHAN_PROCS);
	ab_u64(&b, rq->call_id);
	count_at = b.buf.len;
	ab_u32(&b, 0);
	bool more = false;
	for (size_t i = 0; i < n; i++) {
		size_t before = b.buf.len;

		if (read_row(proc, pids[i], now_us, row) < 0)
			continue; /* ended since the directory was read */
		if (shown == max) {
			more = true;
			break;
		}
		put_row(&b, row);
		if (b.buf.len > BH_CHAN_MAX_FRAME) {
			b.buf.len = before;
			more = true;
			break;
		}
		shown++;
	}
	if (!b.oom) {
		uint32_t v = (uint32_t)shown | (more ? 0x80000000u : 0);

		for (int i = 0; i < 4; i++)
			b.buf.data[count_at + (size_t)i] = (uint8_t)(v >> (8 * i));
	}
	ab_send(fd, &b, rq->call_id);
}

/* ---- init side --------------------------------------------------------- */

int handle_ps(struct init *st, const uint8_t *payload, size_t len)
{
	struct proto_cursor c = proto_cursor(payload, len);
	struct helper *slot = NULL;
	struct ps_req rq;
	int ret;

	if (proto_get_u64(&c, &rq.call_id) < 0 || proto_get_u32(&c, &rq.max) < 0 || c.left != 0)
		return -EPROTO;
	for (int i = 0; i < MAX_FSOPS && !slot; i++)
		if (st->fsops[i].kind == HK_NONE)
			slot = &st->fsops[i];
	if (!slot)
		return queue_fail(st, rq.call_id, EBUSY,
				  "%d LIST/READ/PS calls are already running", MAX_FSOPS);
	ret = helper_start(slot, HK_PS, rq.call_id, ps_body, &rq);
	if (ret < 0)
		return queue_fail(st, rq.call_id, -ret, "fork: %s", strerror(-ret));
	return 0;
}
