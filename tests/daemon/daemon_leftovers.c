/* inflight: a daemon that dies holding a paused sandbox and a running cell
 * (daemon_leftovers.h). */
#include "daemon_leftovers.h"
#include "harness.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#define OPS "bulkhead.v1.OperatorService/"

static void sql(const struct dead_daemon *dd, char *out, size_t n, const char *query)
{
	harness_sh_into(out, n, "sqlite3 -readonly '%s/bulkhead.db' \"%s\"", dd->state, query);
	out[strcspn(out, "\n")] = '\0';
}

/* The warden works from inside the state directory (warden.c): its cwd. */
static pid_t warden_of(const char *state, pid_t daemon)
{
	DIR *d = opendir("/proc");
	cr_assert_not_null(d);
	struct dirent *de;
	pid_t found = 0;
	while ((de = readdir(d)) && !found) {
		pid_t pid = (pid_t)atoi(de->d_name);
		if (pid <= 0 || pid == daemon)
			continue;
		char link[64], cwd[PATH_MAX];
		snprintf(link, sizeof link, "/proc/%d/cwd", pid);
		ssize_t k = readlink(link, cwd, sizeof cwd - 1);
		if (k <= 0)
			continue;
		cwd[k] = '\0';
		if (!strcmp(cwd, state))
			found = pid;
	}
	closedir(d);
	return found;
}

/* kill -9 of the warden, then of the daemon (d->pid is 0 after), and its
 * view of the rootfs unmounted in our namespace. */
static void kill_daemon_and_warden(struct daemon *d, struct dead_daemon *dd)
{
	/* The warden first: left alone it would stop the dead engine's
	 * sandboxes (that is its job), and the test is about what an
	 * operator finds when nothing did. */
	pid_t warden = 0;
	for (int i = 0; i < 100 && !(warden = warden_of(dd->state, d->pid)); i++)
		usleep(50 * 1000); /* started beside the engine, a moment after it */
	cr_assert_gt(warden, 0, "no warden works in %s", dd->state);
	cr_assert_eq(kill(warden, SIGKILL), 0);
	cr_assert_eq(kill(d->pid, SIGKILL), 0);
	int st = 0;
	waitpid(d->pid, &st, 0);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the daemon was not killed (%d)", st);
	d->pid = 0;
	/* A daemon forked from a test whose own engine hid the hybrid cgroup
	 * mount shares the test's mount namespace: its view of the rootfs
	 * outlives it there (a SIGTERM would have unmounted it). Not evidence. */
	char view[4300];
	snprintf(view, sizeof view, "%s/view", dd->state);
	umount2(view, MNT_DETACH | UMOUNT_NOFOLLOW);
	/* The warden is not our child: gone once its /proc entry is. */
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/%d", warden);
	for (int i = 0; i < 200 && access(proc, F_OK) == 0; i++)
		usleep(10 * 1000);
}

/* Where the daemon's state directory is, resolved, and its cgroup parent. */
static void dead_daemon_named(struct daemon *d, struct dead_daemon *dd)
{
	memset(dd, 0, sizeof *dd);
	char named[4200];
	snprintf(named, sizeof named, "%s/state", d->dir);
	cr_assert_not_null(realpath(named, dd->state));
	char key[128];
	harness_sh_into(key, sizeof key, "printf %%s '%s' | sha256sum | cut -c1-12", dd->state);
	key[strcspn(key, "\n")] = '\0';
	snprintf(dd->cgroup_parent, sizeof dd->cgroup_parent, "/bulkhead/%.12s", key);
}

/* A session opened, given code (NULL: none), paused; its row's sandbox. */
static void open_and_pause(struct daemon *d, struct dead_daemon *dd, const char *code)
{
	struct daemon_session paused;
	daemon_open_session(d, &paused);
	struct answer *a;
	if (code) {
		a = daemon_cell(d, d->run_token, paused.id, "python", code);
		cr_assert_eq(a->status, 200, "%s", a->body);
		answer_free(a);
	}
	char body[256];
	snprintf(body, sizeof body, "{\"session\":\"%s\"}", paused.fp);
	a = daemon_call(d, d->op_token, OPS "Pause", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);
	snprintf(dd->paused_fp, sizeof dd->paused_fp, "%s", paused.fp);
	char q[256];
	snprintf(q, sizeof q, "SELECT sandbox FROM sessions WHERE fingerprint = '%s'", paused.fp);
	sql(dd, dd->paused_sandbox, sizeof dd->paused_sandbox, q);
	cr_assert(*dd->paused_sandbox, "no row for the paused session");
}

static void host_settled(const struct dead_daemon *dd);

void daemon_kill_with_leftovers(struct daemon *d, struct dead_daemon *dd)
{
	dead_daemon_named(d, dd);
	open_and_pause(d, dd, "secret = 42");
	struct daemon_session running;

	daemon_open_session(d, &running);
	snprintf(dd->running_fp, sizeof dd->running_fp, "%s", running.fp);
	/* The call from a child of ours: it never answers. */
	pid_t client = fork();
	cr_assert_neq(client, -1);
	if (client == 0) {
		struct answer *r =
			daemon_cell(d, d->run_token, running.id, "python", DEAD_DAEMON_RUNNING_CODE);
		answer_free(r);
		_exit(0);
	}
	/* Its intent is committed before the init sees the code; the output
	 * line says the init is running it. */
	char got[256] = "";
	for (int i = 0; i < 600; i++) {
		sql(dd, got, sizeof got, "SELECT count(*) FROM inflight");
		if (!strcmp(got, "1"))
			break;
		usleep(50 * 1000);
	}
	cr_assert_str_eq(got, "1", "the running cell's intent never reached the store");
	usleep(500 * 1000); /* the cell starts printing and sleeping */

	kill_daemon_and_warden(d, dd);
	kill(client, SIGKILL);
	waitpid(client, NULL, 0);
	host_settled(dd);
}

/* A command's whole stdout (caller frees). */
static char *capture(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *capture(const char *fmt, ...)
{
	char cmd[16384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	size_t cap = 8192, n = 0, got;
	char *out = malloc(cap);
	while (out && (got = fread(out + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (cap - n < 2)
			out = realloc(out, cap *= 2);
	}
	cr_assert_not_null(out);
	out[n] = '\0';
	pclose(f);
	return out;
}

char *dead_daemon_host(const struct dead_daemon *dd)
{
	return capture("{ crun --root '%s/run/crun' list 2>/dev/null; runsc --root '%s/run/runsc' "
		       "list 2>/dev/null; } | awk '$1 != \"NAME\" && $1 != \"ID\" {print $1, $3}' | sort; "
		       "find /sys/fs/cgroup/*%s -mindepth 1 -type d 2>/dev/null | sort",
		       dd->state, dd->state, dd->cgroup_parent);
}

char *dead_daemon_files(const struct dead_daemon *dd)
{
	return capture("cd '%s' && find . -path ./rootfs -prune -o -printf '%%p %%s %%T@ %%m\\n' "
			  "2>/dev/null | sort",
			  dd->state);
}

/* What a dead engine leaves settles a moment after it dies (an init that
 * finds its channel closed exits, and the runtime then lists its sandbox
 * stopped): a test comparing the host before and after an operator's look
 * starts from the settled state, or it would see that moment as a change.
 * Two listings 300 ms apart that agree; 10 s at most. */
static void host_settled(const struct dead_daemon *dd)
{
	char *was = dead_daemon_host(dd);
	for (int i = 0; i < 33; i++) {
		usleep(300 * 1000);
		char *now = dead_daemon_host(dd);
		bool same = !strcmp(now, was);
		free(was);
		was = now;
		if (same)
			break;
	}
	free(was);
}

void dead_daemon_host_back_to(const struct dead_daemon *dd, const char *want)
{
	for (int i = 0; i < 200; i++) {
		char *now = dead_daemon_host(dd);
		bool same = !strcmp(now, want);
		free(now);
		if (same)
			return;
		usleep(100 * 1000);
	}
}

/* ---- report: a crash loop, one turn of it ---- */
void daemon_kill_holding_a_paused_sandbox(struct daemon *d, struct dead_daemon *dd)
{
	dead_daemon_named(d, dd);
	open_and_pause(d, dd, NULL);
	kill_daemon_and_warden(d, dd);
}

char *dead_daemon_cli(int *status, const char *env, const char *args)
{
	char *out = capture("BULKHEAD_INTERP='%s' %s '%s' %s 2>&1; echo \"rc=$?\"", BH_TEST_INTERP,
			    env ? env : "", BH_TEST_CLI, args);
	char *rc = strrchr(out, '=');
	cr_assert(rc && !strncmp(rc - 2, "rc=", 3), "%s", out);
	*status = atoi(rc + 1);
	rc[-2] = '\0';
	return out;
}
