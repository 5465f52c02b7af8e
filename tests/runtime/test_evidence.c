/* A state directory an operator opens may be a tampered copy (everything
 * that crosses into bulkhead is parsed as hostile; issue 14): the real
 * `bulkhead` command on directories whose entries are symbolic links, owned
 * by someone else, or holding a registry row or a daemon note crafted
 * against the operator. Every target outside the state directory is
 * compared, contents, modes and times, before and after. */
#include "harness.h"
#include "store.h"

#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define OTHER_UID 65534 /* nobody: a uid that is neither root nor us */

static char root[512];

static const char *test_root(void)
{
	const char *r = getenv("BULKHEAD_TEST_ROOT");
	return r && *r ? r : "/tmp/bulkhead-tests";
}

static void setup(void)
{
	mkdir(test_root(), 0711);
	snprintf(root, sizeof root, "%s/evidence-XXXXXX", test_root());
	cr_assert_not_null(mkdtemp(root), "mkdtemp: %s", strerror(errno));
	cr_assert_eq(chmod(root, 0711), 0);
	unsetenv("BULKHEAD_TOKEN");
	unsetenv("BULKHEAD_STATE");
	char evidence[600];
	snprintf(evidence, sizeof evidence, "%s/evidence", test_root());
	setenv("BULKHEAD_EVIDENCE", evidence, 1);
	setenv("BULKHEAD_INTERP", BH_TEST_INTERP, 1);
}

static void teardown(void)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(evidence, .init = setup, .fini = teardown, .timeout = 300);

static char *at(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *at(const char *fmt, ...)
{
	static char bufs[16][1024];
	static int next;
	char *b = bufs[next++ % 16];
	int n = snprintf(b, sizeof bufs[0], "%s/", root);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b + n, sizeof bufs[0] - (size_t)n, fmt, ap);
	va_end(ap);
	return b;
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "create %s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

/* Runs `bulkhead ARGS` with stdin empty, after `env ENV` (env NULL: as
 * is); its stdout and stderr in out, its exit status (128 + a signal). */
static int cli(const char *env, char *out, size_t outlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int cli(const char *env, char *out, size_t outlen, const char *fmt, ...)
{
	char prefix[256] = "", args[4096], cmd[8192];
	if (env)
		snprintf(prefix, sizeof prefix, "env %s ", env);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof cmd, "%s%s %s 2>&1 </dev/null", prefix, BH_TEST_CLI, args);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	size_t n = fread(out, 1, outlen - 1, f);
	out[n] = '\0';
	int st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- a tree's every entry: type, mode, owner, size, times, content ---- */

static char *snap;
static size_t snap_len, snap_cap;
static size_t snap_base;

static void snap_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void snap_add(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char line[8192];
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (snap_len + (size_t)n + 1 > snap_cap) {
		snap_cap = (snap_len + (size_t)n + 1) * 2;
		snap = realloc(snap, snap_cap);
		cr_assert_not_null(snap);
	}
	memcpy(snap + snap_len, line, (size_t)n + 1);
	snap_len += (size_t)n;
}

static int snap_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)type;
	(void)ftw;
	snap_add("%s %o %u:%u %lld m%lld.%09ld c%lld.%09ld", path + snap_base, (unsigned)st->st_mode,
		 (unsigned)st->st_uid, (unsigned)st->st_gid, (long long)st->st_size,
		 (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec,
		 st->st_ctim.tv_nsec);
	if (S_ISLNK(st->st_mode)) {
		char target[1024];
		ssize_t n = readlink(path, target, sizeof target - 1);
		target[n > 0 ? n : 0] = '\0';
		snap_add(" -> %s", target);
	} else if (S_ISREG(st->st_mode)) {
		char *text = harness_slurp(path);
		snap_add(" [%s]", text ? text : "(unreadable)");
		free(text);
	}
	snap_add("\n");
	return 0;
}

/* Caller frees. */
static char *snapshot(const char *dir)
{
	snap = NULL;
	snap_len = snap_cap = 0;
	snap_base = strlen(dir);
	snap_add("%s\n", dir);
	if (nftw(dir, snap_entry, 16, FTW_PHYS) != 0)
		snap_add("(%s is gone: %s)\n", dir, strerror(errno));
	return snap;
}

/* The first line where two snapshots differ, both ways. */
static void assert_same(const char *before, const char *after, const char *what)
{
	if (!strcmp(before, after))
		return;
	const char *b = before, *a = after;
	while (*b && *a) {
		const char *be = strchr(b, '\n'), *ae = strchr(a, '\n');
		size_t bn = be ? (size_t)(be - b) : strlen(b), an = ae ? (size_t)(ae - a) : strlen(a);
		if (bn != an || memcmp(b, a, bn))
			cr_assert_fail("%s:\n  before: %.*s\n  after:  %.*s", what, (int)bn, b, (int)an, a);
		b += bn + (be ? 1 : 0);
		a += an + (ae ? 1 : 0);
	}
	cr_assert_fail("%s:\n  before ends: %.300s\n  after ends:  %.300s", what, b, a);
}

/* ---- a tampered state directory ---- */

/* root/targets/NAME: what a link under the state directory points at,
 * with contents that must survive. */
static const char *target(const char *name, bool dir)
{
	mkdir(at("targets"), 0755);
	const char *t = at("targets/%s", name);
	if (!dir) {
		put(t, "precious\n");
		return t;
	}
	cr_assert_eq(mkdir(t, 0755), 0);
	char p[1200];
	snprintf(p, sizeof p, "%s/etc", t);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/etc/passwd", t);
	put(p, "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/bash\n");
	snprintf(p, sizeof p, "%s/keep", t);
	put(p, "precious\n");
	snprintf(p, sizeof p, "%s/bh-0123456789abcdef", t);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/bh-0123456789abcdef/config.json", t);
	put(p, "{}\n");
	return t;
}

static void link_entry(const char *state, const char *entry, bool dir)
{
	char tname[64], path[1200];
	snprintf(tname, sizeof tname, "%s", entry);
	for (char *c = tname; *c; c++)
		if (*c == '/')
			*c = '-';
	snprintf(path, sizeof path, "%s/%s", state, entry);
	char *slash = strrchr(path, '/');
	*slash = '\0';
	mkdir(path, 0700);
	*slash = '/';
	cr_assert_eq(symlink(target(tname, dir), path), 0, "symlink %s: %s", path, strerror(errno));
}

/* A store closed cleanly, as a stopped daemon leaves it. */
static void make_store(const char *state)
{
	char path[1200];
	snprintf(path, sizeof path, "%s/bulkhead.db", state);
	struct bh_store *s = NULL;
	bh_error *err = NULL;
	cr_assert_eq(store_open(path, false, false, &s, &err), 0, "%s", err ? err->msg : "?");
	store_event(s, "evidence", "", "", "a copy of production");
	store_close(s);
}

/* A directory of the test's own (at()'s buffers are reused). */
static const char *state_dir(const char *name)
{
	static char dirs[16][1024];
	static int next;
	char *s = dirs[next++ % 16];
	snprintf(s, sizeof dirs[0], "%s", at("%s", name));
	cr_assert_eq(mkdir(s, 0711), 0);
	return s;
}

Test(evidence, inspect_commands_on_a_state_directory_of_links_change_nothing_anywhere)
{
	const char *s = state_dir("state");
	make_store(s);
	link_entry(s, "lock", false);
	link_entry(s, "rootfs", true);
	link_entry(s, "bundles", true);
	link_entry(s, "images", true);
	put(at("quit.txt"), ":q\n");
	char *targets = snapshot(at("targets"));
	char *state = snapshot(s);

	/* Every command first, then what they changed, then what they said. */
	static const char *const cmds[] = {"ls --state %s --no-attach", "records --state %s --no-attach",
					   "verify --state %s", "leaks --state %s --no-attach",
					   "console --db %s/bulkhead.db --script %s"};
	char out[5][8192];
	int rc[5];
	for (int i = 0; i < 5; i++)
		rc[i] = cli(NULL, out[i], sizeof out[i], cmds[i], s, at("quit.txt"));

	char *targets_after = snapshot(at("targets"));
	assert_same(targets, targets_after, "a link's target changed");
	char *state_after = snapshot(s);
	assert_same(state, state_after, "the state directory changed");
	for (int i = 0; i < 5; i++)
		cr_assert(rc[i] == 0 || (i == 3 && rc[i] == 1), "`%s` exited %d: %s", cmds[i], rc[i],
			  out[i]);
	cr_assert_not_null(strstr(out[0], "not followed"), "ls said nothing of the links: %s", out[0]);
	cr_assert_not_null(strstr(out[2], "0 records verified"), "%s", out[2]);
	free(targets);
	free(targets_after);
	free(state);
	free(state_after);
}

Test(evidence, a_full_engine_refuses_each_linked_entry_and_follows_none)
{
	static const struct {
		const char *entry;
		bool dir;
	} entries[] = {
		{"lock", false},	 {"rootfs", true},	      {"bundles", true}, {"images", true},
		{"run/crun", true},	 {"lib", true},		      {"bulkhead.db-wal", false},
		{"daemon.sock.path", false},
		{"egress", true}, /* ---- egress: the sandboxes' socket directories ---- */
	};
	for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
		char name[32];
		snprintf(name, sizeof name, "state-%zu", i);
		const char *s = state_dir(name);
		link_entry(s, entries[i].entry, entries[i].dir);
		char *before = snapshot(at("targets"));
		char out[16384];
		int rc = cli(NULL, out, sizeof out, "doctor --state %s", s);
		char *after = snapshot(at("targets"));
		char what[64];
		snprintf(what, sizeof what, "doctor followed %s", entries[i].entry);
		assert_same(before, after, what);
		cr_assert_neq(rc, 0, "doctor ran on %s a link: %s", entries[i].entry, out);
		char want[128];
		snprintf(want, sizeof want, "%s is a symbolic link", entries[i].entry);
		cr_assert_not_null(strstr(out, want), "doctor on %s a link said: %s", entries[i].entry,
				   out);
		if (i == 0) {
			rc = cli(NULL, out, sizeof out, "shell --state %s --no-attach", s);
			cr_assert_neq(rc, 0, "shell ran: %s", out);
			cr_assert_not_null(strstr(out, want), "shell said: %s", out);
			free(after);
			after = snapshot(at("targets"));
			assert_same(before, after, "shell followed lock");
		}
		free(before);
		free(after);
	}
}

Test(evidence, a_state_directory_not_owned_by_root_or_writable_by_others_is_refused)
{
	const char *s = state_dir("state");
	make_store(s);
	char out[16384];
	/* Owned by another uid (a copy unpacked as that user). */
	cr_assert_eq(chown(s, OTHER_UID, OTHER_UID), 0);
	const char *const cmds[] = {"records --no-attach", "verify", "ls --no-attach", "doctor"};
	for (size_t i = 0; i < 4; i++) {
		int rc = cli(NULL, out, sizeof out, "%s --state %s", cmds[i], s);
		cr_assert_eq(rc, 125, "%s on a directory of uid %d exited %d: %s", cmds[i], OTHER_UID, rc,
			     out);
		cr_assert_not_null(strstr(out, "owned by uid 65534"), "%s: %s", cmds[i], out);
		cr_assert_not_null(strstr(out, "chown"), "%s names no fix: %s", cmds[i], out);
	}
	/* Ours, but anyone may rename its entries. */
	cr_assert_eq(chown(s, 0, 0), 0);
	cr_assert_eq(chmod(s, 0777), 0);
	for (size_t i = 0; i < 4; i++) {
		int rc = cli(NULL, out, sizeof out, "%s --state %s", cmds[i], s);
		cr_assert_eq(rc, 125, "%s on a 0777 directory exited %d: %s", cmds[i], rc, out);
		cr_assert_not_null(strstr(out, "mode 0777"), "%s: %s", cmds[i], out);
		cr_assert_not_null(strstr(out, "chmod go-w"), "%s names no fix: %s", cmds[i], out);
	}
	/* The state directory itself a link to a good one. */
	cr_assert_eq(chmod(s, 0711), 0);
	cr_assert_eq(symlink(s, at("state-link")), 0);
	for (size_t i = 0; i < 4; i++) {
		int rc = cli(NULL, out, sizeof out, "%s --state %s", cmds[i], at("state-link"));
		cr_assert_eq(rc, 125, "%s through a link exited %d: %s", cmds[i], rc, out);
		cr_assert_not_null(strstr(out, "is a symbolic link"), "%s: %s", cmds[i], out);
	}
	/* And a good one works. */
	int rc = cli(NULL, out, sizeof out, "verify --state %s", s);
	cr_assert_eq(rc, 0, "%s", out);
}

/* ---- registry rows are input ---- */

static void sql(const char *state, const char *text)
{
	char path[1200];
	snprintf(path, sizeof path, "%s/bulkhead.db", state);
	sqlite3 *db = NULL;
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	char *msg = NULL;
	cr_assert_eq(sqlite3_exec(db, text, NULL, NULL, &msg), SQLITE_OK, "%s", msg ? msg : "");
	sqlite3_close(db);
}

static char *sql_text(const char *state, const char *query)
{
	char path[1200];
	snprintf(path, sizeof path, "%s/bulkhead.db", state);
	sqlite3 *db = NULL;
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_stmt *st = NULL;
	cr_assert_eq(sqlite3_prepare_v2(db, query, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
	char *out = NULL;
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		out = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return out ? out : strdup("");
}

Test(evidence, a_hibernated_row_naming_a_path_is_reported_and_nothing_is_deleted)
{
	/* root/victim looks like a hibernated sandbox's bundle and image to a
	 * row whose sandbox is "../../victim": STATE/images/../../victim. */
	const char *s = state_dir("state");
	cr_assert_eq(mkdir(at("state/images"), 0700), 0);
	cr_assert_eq(mkdir(at("state/bundles"), 0700), 0);
	cr_assert_eq(mkdir(at("victim"), 0755), 0);
	put(at("victim/config.json"), "{}\n");
	put(at("victim/precious"), "precious\n");
	make_store(s);
	/* Retention long over (hibernated at the epoch): the first tick ends it. */
	sql(s, "INSERT INTO sessions (fingerprint, sandbox, runtime, tier, state, engine_pid, "
	       "lease_until_ms, created_ms, expires_ms, hibernated_ms, lifetime_ms) VALUES "
	       "('f00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeedf00dfeed', '../../victim', "
	       "'runsc', 'kernel', 'hibernated', 1, 0, 0, 4102444800000, 0, 60000)");
	char *victim = snapshot(at("victim"));

	struct harness h = {0};
	harness_open_at(&h, s, NULL);
	bool never = false;
	bh_error *err = NULL;
	bh_engine_wait(h.e, &never, 1500, &err); /* the retention timer's moment, and a slack */
	bh_error_free(err);
	bh_session **held = NULL;
	size_t n_held = bh_engine_sessions(h.e, &held);
	free(held);
	char *after = snapshot(at("victim"));
	assert_same(victim, after, "the engine touched what the row's name pointed at");
	cr_assert_eq(n_held, 0, "the row was adopted as a session");
	char *state = sql_text(s, "SELECT state || ' ' || end_reason || ': ' || end_detail FROM sessions");
	cr_assert_not_null(strstr(state, "ended reaped"), "the row: %s", state);
	cr_assert_not_null(strstr(state, "not a name bulkhead makes"), "the row: %s", state);
	char *event = sql_text(s, "SELECT detail FROM events WHERE kind = 'invalid_row'");
	cr_assert_not_null(strstr(event, "../../victim"), "no event names the row: \"%s\"", event);
	cr_assert_not_null(strstr(h.log, "../../victim"), "the log says nothing: %s", h.log);
	/* Closing the engine touches it no more. */
	char *dir = strdup(s);
	harness_close(&h);
	free(after);
	after = snapshot(at("victim"));
	assert_same(victim, after, "closing the engine touched it");
	free(dir);
	free(state);
	free(event);
	free(victim);
	free(after);
}

/* ---- the daemon note: where a token goes ---- */

/* The test's own "daemon": records every byte anyone sends it. */
struct listener {
	int fd;
	pthread_t th;
	volatile bool stop;
	int conns;
	char got[16384];
	size_t n;
};

static void *listen_loop(void *arg)
{
	struct listener *l = arg;
	for (;;) {
		/* Stopping drains the backlog first: a command that connected and
		 * exited is counted, whenever the thread got to it. */
		struct pollfd p = {.fd = l->fd, .events = POLLIN};
		int ready = poll(&p, 1, l->stop ? 0 : 50);
		if (ready <= 0 && l->stop)
			break;
		if (ready <= 0)
			continue;
		int c = accept(l->fd, NULL, NULL);
		if (c < 0)
			continue;
		l->conns++;
		/* Until the end of the request's headers, or a second of silence. */
		for (;;) {
			struct pollfd q = {.fd = c, .events = POLLIN};
			if (poll(&q, 1, 1000) <= 0)
				break;
			ssize_t r = read(c, l->got + l->n, sizeof l->got - 1 - l->n);
			if (r <= 0)
				break;
			l->n += (size_t)r;
			l->got[l->n] = '\0';
			if (strstr(l->got, "\r\n\r\n") || l->n + 1 >= sizeof l->got)
				break;
		}
		close(c);
	}
	return NULL;
}

static void listener_start(struct listener *l, int fd)
{
	memset(l, 0, sizeof *l);
	l->fd = fd;
	cr_assert_eq(listen(fd, 8), 0);
	cr_assert_eq(pthread_create(&l->th, NULL, listen_loop, l), 0);
}

static void listener_stop(struct listener *l)
{
	l->stop = true;
	pthread_join(l->th, NULL);
	close(l->fd);
}

static int unix_socket_at(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	cr_assert_lt(strlen(path), sizeof sa.sun_path, "socket path too long: %s", path);
	strcpy(sa.sun_path, path);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0, "bind %s: %s", path,
		     strerror(errno));
	return fd;
}

static int tcp_socket(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	socklen_t len = sizeof sa;
	getsockname(fd, (struct sockaddr *)&sa, &len);
	*port = ntohs(sa.sin_port);
	return fd;
}

static void note(const char *state, const char *text)
{
	char path[1200];
	snprintf(path, sizeof path, "%s/daemon.sock.path", state);
	put(path, text);
}

/* A state directory with a store, its note naming a unix socket
 * (run/bulkhead.sock, into sock) that l listens on. */
static const char *state_noting_socket(struct listener *l, char sock[1024])
{
	const char *s = state_dir("state");
	make_store(s);
	cr_assert_eq(mkdir(at("run"), 0755), 0);
	snprintf(sock, 1024, "%s", at("run/bulkhead.sock"));
	listener_start(l, unix_socket_at(sock));
	char text[1200];
	snprintf(text, sizeof text, "%s\n", sock);
	note(s, text);
	return s;
}

/* The token the auto-attach cases look for where it must not go. */
#define PROBE_TOKEN "BULKHEAD_TOKEN=bh_PROBE"

/* The commands that attach through the note when a token is there to send. */
static const char *const attaching[] = {"records", "ls", "leaks"};

Test(evidence, auto_attach_sends_no_token_to_a_socket_owned_by_another_uid)
{
	char sock[1024];
	struct listener l;
	const char *s = state_noting_socket(&l, sock);
	put(at("quit.txt"), ":q\n");

	/* Another uid's socket: a stale note's path bound by someone else. */
	cr_assert_eq(chown(sock, OTHER_UID, OTHER_UID), 0);
	char said[4][8192];
	for (size_t i = 0; i < 4; i++) {
		if (i < 3)
			cli(PROBE_TOKEN, said[i], sizeof said[i], "%s --state %s", attaching[i], s);
		else
			cli(PROBE_TOKEN " TERM=xterm LINES=24 COLUMNS=80", said[i], sizeof said[i],
			    "console --state %s --script %s", s, at("quit.txt"));
	}
	listener_stop(&l);
	cr_assert_null(strstr(l.got, "bh_PROBE"), "the token went to uid %d's socket:\n%s", OTHER_UID,
		       l.got);
	cr_assert_eq(l.conns, 0, "%d connections reached uid %d's socket:\n%s", l.conns, OTHER_UID,
		     l.got);
	for (size_t i = 0; i < 4; i++) {
		const char *what = i < 3 ? attaching[i] : "console";
		cr_assert_not_null(strstr(said[i], "not attaching"), "%s said: %s", what, said[i]);
		cr_assert_not_null(strstr(said[i], "owned by uid 65534"), "%s said: %s", what, said[i]);
	}

	/* The same socket, root's: the note is trusted and the token goes (the
	 * listener would have seen it above). */
	cr_assert_eq(unlink(sock), 0);
	listener_start(&l, unix_socket_at(sock));
	char out[8192];
	cli(PROBE_TOKEN, out, sizeof out, "records --state %s", s);
	listener_stop(&l);
	cr_assert_not_null(strstr(l.got, "Bearer bh_PROBE"), "root's socket got no token:\n%s\n%s",
			   l.got, out);
}

Test(evidence, auto_attach_follows_no_https_note_and_no_path_too_long_to_check)
{
	const char *s = state_dir("state");
	make_store(s);
	int port = 0;
	struct listener l;
	listener_start(&l, tcp_socket(&port));
	char text[1200];
	const char *const why[] = {"https", "http", "long"};
	static char said[3][3][8192];
	for (int k = 0; k < 3; k++) {
		if (k == 0)
			snprintf(text, sizeof text, "https://127.0.0.1:%d/%0100d\n", port, 0);
		else if (k == 1)
			snprintf(text, sizeof text, "http://127.0.0.1:%d\n", port);
		else
			snprintf(text, sizeof text, "%s/%0120d\n", root, 0);
		note(s, text);
		for (size_t i = 0; i < sizeof attaching / sizeof attaching[0]; i++)
			cli(PROBE_TOKEN, said[k][i], sizeof said[k][i], "%s --state %s",
			    attaching[i], s);
	}
	listener_stop(&l);
	cr_assert_eq(l.conns, 0, "%d connections reached 127.0.0.1:%d:\n%s", l.conns, port, l.got);
	for (int k = 0; k < 3; k++)
		for (size_t i = 0; i < sizeof attaching / sizeof attaching[0]; i++) {
			cr_assert_not_null(strstr(said[k][i], "not attaching"),
					   "%s with a %s note said: %s", attaching[i], why[k], said[k][i]);
			cr_assert_not_null(
				strstr(said[k][i], k == 2 ? "too long" : "absolute path of a unix socket"),
				"%s with a %s note said: %s", attaching[i], why[k], said[k][i]);
		}
}

Test(evidence, auto_attach_never_starts_from_a_state_directory_of_another_uid)
{
	char sock[1024], out[16384];
	struct listener l;
	const char *s = state_noting_socket(&l, sock);
	cr_assert_eq(chown(s, OTHER_UID, OTHER_UID), 0);
	int rc = cli(PROBE_TOKEN, out, sizeof out, "records --state %s", s);
	listener_stop(&l);
	cr_assert_null(strstr(l.got, "bh_PROBE"), "the token went through uid %d's note:\n%s",
		       OTHER_UID, l.got);
	cr_assert_eq(l.conns, 0, "the note was followed:\n%s", l.got);
	cr_assert_eq(rc, 125, "%s", out);
	cr_assert_not_null(strstr(out, "owned by uid 65534"), "%s", out);
}
