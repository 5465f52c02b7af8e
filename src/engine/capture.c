/* Capture: evidence of a finding or a session written into a folder the
 * operator names, before anything reaps it, with a MANIFEST of every
 * file's SHA-256 and size (bulkhead.h's "capture" block).
 *
 * What the host can see is read here: the sandbox's cgroup (its processes,
 * its usage files), each process's /proc status and command line, the open
 * sockets of the init's network namespace, the bundle's config.json and the
 * store's rows. Everything a sandbox can shape (command lines, process
 * names, socket tables) is read from the kernel's files under /proc with no
 * link followed and a size cap, never through a path inside the sandbox.
 * What only the init can answer (its own view of its processes, /work) the
 * caller asks through the session and adds: the engine writes every file,
 * the caller never does, and the engine prints nothing. */
#include "capture_manifest.h"
#include "engine_priv.h"
#include "store.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>

#define PROC_FILE_CAP (64u * 1024)     /* one /proc status or cmdline */
#define NET_FILE_CAP (1024u * 1024)    /* one socket table */
#define CONFIG_CAP (1024u * 1024)      /* the bundle's config.json */
#define PIDS_MAX 4096u                 /* processes listed from the cgroup */
#define STORE_ROWS_MAX 10000u          /* records and events kept of one session */

struct captured {
	char *name;
	char sha256[65];
	uint64_t size;
	int64_t at_ms;
	bool truncated;
	char *note;
};

struct bh_capture {
	bh_engine *e;
	struct bh_capture_target t;
	char *dir;
	int dirfd;
	int64_t started_ms;
	struct captured *files;
	size_t n_files;
	char **missing; /* "what: why" */
	size_t n_missing;
};

const char *bh_capture_dir(const bh_capture *c)
{
	return c->dir;
}

void bh_capture_free(bh_capture *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_files; i++) {
		free(c->files[i].name);
		free(c->files[i].note);
	}
	free(c->files);
	for (size_t i = 0; i < c->n_missing; i++)
		free(c->missing[i]);
	free(c->missing);
	if (c->dirfd >= 0)
		close(c->dirfd);
	free(c->dir);
	free(c);
}

char *bh_capture_file_name(size_t index, const char *work_path)
{
	char clean[80];
	size_t n = 0;
	for (const char *p = work_path; *p && n < sizeof clean - 1; p++) {
		unsigned char ch = (unsigned char)*p;
		clean[n++] = (isalnum(ch) || ch == '.' || ch == '-') ? (char)ch : '_';
	}
	clean[n] = '\0';
	return xasprintf("work-%02zu-%s", index, n ? clean : "_");
}

/* ---- writing the folder ---- */

void bh_capture_missing(bh_capture *c, const char *what, const char *why)
{
	c->missing = realloc(c->missing, (c->n_missing + 1) * sizeof *c->missing);
	if (!c->missing)
		abort();
	cleanup_free char *line = xasprintf("%s: %s", what, why);
	/* One line each in the manifest: a reason never breaks it. */
	for (char *p = line; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	c->missing[c->n_missing++] = steal_ptr(line);
}

static int write_at(int dirfd, const char *name, const void *data, size_t len, bh_error **err)
{
	cleanup_close int fd =
		openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "create evidence file %s", name);
	const uint8_t *p = data;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return bh_fail(err, BH_E_SYSTEM, errno, "write evidence file %s", name);
		p += w;
		len -= (size_t)w;
	}
	if (fsync(fd) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "sync evidence file %s", name);
	return 0;
}

int bh_capture_add(bh_capture *c, const char *name, const void *data, size_t len, bool truncated,
		   const char *note, bh_error **err)
{
	if (!capture_name_ok(name))
		return bh_fail(err, BH_E_INVALID, 0, "\"%.80s\" is no name for an evidence file", name);
	if (c->n_files >= BH_CAPTURE_FILES_MAX)
		return bh_fail(err, BH_E_INVALID, 0, "a capture holds at most %u files",
			       BH_CAPTURE_FILES_MAX);
	if (len > BH_CAPTURE_FILE_CAP) {
		len = BH_CAPTURE_FILE_CAP;
		truncated = true;
	}
	if (write_at(c->dirfd, name, data, len, err) < 0)
		return -1;
	c->files = realloc(c->files, (c->n_files + 1) * sizeof *c->files);
	if (!c->files)
		abort();
	struct captured *f = &c->files[c->n_files++];
	*f = (struct captured){.name = xstrdup(name), .size = len, .at_ms = (int64_t)now_real_ms(),
			       .truncated = truncated, .note = note ? xstrdup(note) : NULL};
	sha256_hex(data, len, f->sha256);
	return 0;
}

static void add_buf(bh_capture *c, const char *name, struct buf *b, const char *note)
{
	bh_error *err = NULL;
	if (bh_capture_add(c, name, b->data ? (const void *)b->data : "", b->len, false, note, &err) < 0) {
		bh_capture_missing(c, name, err->msg);
		bh_error_free(err);
	}
}

static void bprintf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	buf_append(b, s, (size_t)n);
	free(s);
}

/* ---- reading what the host sees ---- */

/* A kernel file under /proc or the cgroup tree: no link followed (a pid's
 * directory is reached by number, never through /proc/self), cut at cap. */
static char *read_capped(const char *path, size_t cap, size_t *len, bool *cut)
{
	cleanup_close int fd = open_nofollow(AT_FDCWD, path, O_RDONLY, 0);
	if (fd < 0)
		return NULL;
	char *data = xzalloc(cap + 1);
	size_t n = 0;
	for (;;) {
		if (n == cap) {
			char probe;
			if (cut)
				*cut = read(fd, &probe, 1) > 0;
			break;
		}
		ssize_t r = read(fd, data + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	data[n] = '\0';
	if (len)
		*len = n;
	return data;
}

/* What a sandbox wrote (a command line) made one printable line. */
static void put_escaped(struct buf *b, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '\0')
			buf_append(b, " ", 1);
		else if (ch < 0x20 || ch >= 0x7f || ch == '\\')
			bprintf(b, "\\x%02x", ch);
		else
			buf_append(b, &s[i], 1);
	}
}

static const char *status_field(const char *status, const char *key, char *out, size_t cap)
{
	size_t kl = strlen(key);
	for (const char *p = status; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, key, kl) && p[kl] == ':') {
			const char *v = p + kl + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			size_t n = strcspn(v, "\n");
			if (n >= cap)
				n = cap - 1;
			memcpy(out, v, n);
			out[n] = '\0';
			return out;
		}
	}
	snprintf(out, cap, "?");
	return out;
}

static bool is_kernel_tier(const struct bh_capture_target *t)
{
	return !strcmp(t->runtime, "runsc");
}

static char *cgroup_procs_path(const bh_engine *e, const char *leaf)
{
	/* v1: the pids hierarchy lists every task, frozen or not. */
	return cgroups_file(&e->cg, e->cg.pure_v2 ? "" : "pids", leaf, "cgroup.procs");
}

/* Processes in the sandbox's cgroup, as the host numbers them; the init's
 * host pid (the one that is 1 in its own pid namespace) comes back. */
static pid_t capture_host_processes(bh_capture *c)
{
	cleanup_free char *path = cgroup_procs_path(c->e, c->t.sandbox);
	cleanup_free char *procs = read_capped(path, PIDS_MAX * 12, NULL, NULL);
	if (!procs) {
		bh_capture_missing(c, "processes-host.txt",
				   errno == ENOENT ? "the sandbox has no cgroup any more"
						   : "its cgroup.procs could not be read");
		return 0;
	}
	struct buf b = {0};
	bprintf(&b, "# from %s\n", path);
	if (is_kernel_tier(&c->t))
		bprintf(&b, "# kernel tier: these are gVisor's own processes (the Sentry and its "
				  "gofer); the sandbox's processes live inside the Sentry and only its "
				  "init can list them\n");
	bprintf(&b, "%-8s %-8s %-8s %-6s %-5s %-16s %s\n", "PID", "PPID", "NSPID", "UID",
		      "STATE", "NAME", "COMMAND");
	pid_t init = 0;
	size_t listed = 0;
	for (char *save = NULL, *l = strtok_r(procs, "\n", &save); l && listed < PIDS_MAX;
	     l = strtok_r(NULL, "\n", &save), listed++) {
		char *end;
		long pid = strtol(l, &end, 10);
		if (pid <= 0 || *end)
			continue;
		cleanup_free char *sp = xasprintf("/proc/%ld/status", pid);
		cleanup_free char *cp = xasprintf("/proc/%ld/cmdline", pid);
		cleanup_free char *status = read_capped(sp, PROC_FILE_CAP, NULL, NULL);
		size_t clen = 0;
		bool cut = false;
		cleanup_free char *cmd = read_capped(cp, PROC_FILE_CAP, &clen, &cut);
		if (!status) {
			bprintf(&b, "%-8ld (gone before its status was read)\n", pid);
			continue;
		}
		char ppid[16], nspid[64], uid[64], state[32], name[64];
		status_field(status, "PPid", ppid, sizeof ppid);
		status_field(status, "NSpid", nspid, sizeof nspid);
		status_field(status, "Uid", uid, sizeof uid);
		status_field(status, "State", state, sizeof state);
		status_field(status, "Name", name, sizeof name);
		const char *inner = strrchr(nspid, '\t') ? strrchr(nspid, '\t') + 1 : nspid;
		if (!init && !strcmp(inner, "1"))
			init = (pid_t)pid;
		uid[strcspn(uid, "\t ")] = '\0';
		state[1] = '\0';
		bprintf(&b, "%-8ld %-8s %-8s %-6s %-5s ", pid, ppid, inner, uid, state);
		put_escaped(&b, name, strlen(name));
		buf_append(&b, " ", 1);
		if (cmd && clen)
			put_escaped(&b, cmd, clen && cmd[clen - 1] == '\0' ? clen - 1 : clen);
		if (cut)
			bprintf(&b, " [cut at %u bytes]", PROC_FILE_CAP);
		buf_append(&b, "\n", 1);
	}
	add_buf(c, "processes-host.txt", &b, "the host's view: cgroup.procs and /proc/<pid>/{status,cmdline}");
	buf_free(&b);
	return init;
}

static void capture_usage(bh_capture *c)
{
	static const char *const v1[][2] = {
		{"cpuacct", "cpuacct.usage"}, {"memory", "memory.usage_in_bytes"},
		{"memory", "memory.max_usage_in_bytes"}, {"memory", "memory.limit_in_bytes"},
		{"memory", "memory.oom_control"}, {"pids", "pids.current"}, {"pids", "pids.max"},
		{"freezer", "freezer.state"}};
	static const char *const v2[][2] = {
		{"", "cpu.stat"}, {"", "memory.current"}, {"", "memory.peak"}, {"", "memory.max"},
		{"", "memory.events"}, {"", "pids.current"}, {"", "pids.max"}, {"", "cgroup.freeze"}};
	const char *const(*files)[2] = c->e->cg.pure_v2 ? v2 : v1;
	size_t n = c->e->cg.pure_v2 ? sizeof v2 / sizeof *v2 : sizeof v1 / sizeof *v1;
	struct buf b = {0};
	size_t read_ok = 0;
	for (size_t i = 0; i < n; i++) {
		cleanup_free char *p = cgroups_file(&c->e->cg, files[i][0], c->t.sandbox, files[i][1]);
		cleanup_free char *v = read_capped(p, 4096, NULL, NULL);
		bprintf(&b, "== %s\n%s%s", p, v ? v : "(unreadable)\n",
			      v && v[0] && v[strlen(v) - 1] != '\n' ? "\n" : "");
		read_ok += v != NULL;
	}
	if (!read_ok) {
		bh_capture_missing(c, "usage.txt", "none of the sandbox's cgroup files could be read "
						   "(its cgroup is gone)");
		buf_free(&b);
		return;
	}
	add_buf(c, "usage.txt", &b, "the sandbox's cgroup files as the kernel keeps them");
	buf_free(&b);
}

static void capture_sockets(bh_capture *c, pid_t init)
{
	static const char *const tables[] = {"tcp", "tcp6", "udp", "udp6", "unix"};
	if (is_kernel_tier(&c->t)) {
		bh_capture_missing(c, "sockets",
				   "kernel tier: the sandbox's sockets live in gVisor's netstack inside "
				   "the Sentry, which the host's /proc does not show (only the Sentry's "
				   "own, which run no sandbox traffic)");
		return;
	}
	if (!init) {
		bh_capture_missing(c, "sockets", "no process of the sandbox is pid 1 of its namespace: "
						 "no network namespace to read");
		return;
	}
	for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
		cleanup_free char *p = xasprintf("/proc/%d/net/%s", (int)init, tables[i]);
		cleanup_free char *name = xasprintf("net-%s.txt", tables[i]);
		size_t len = 0;
		bool cut = false;
		cleanup_free char *v = read_capped(p, NET_FILE_CAP, &len, &cut);
		if (!v) {
			cleanup_free char *why = xasprintf("%s: %s", p, strerror(errno));
			bh_capture_missing(c, name, why);
			continue;
		}
		cleanup_free char *note = xasprintf("%s (the init's network namespace)", p);
		bh_error *err = NULL;
		if (bh_capture_add(c, name, v, len, cut, note, &err) < 0) {
			bh_capture_missing(c, name, err->msg);
			bh_error_free(err);
		}
	}
}

static void capture_config(bh_capture *c)
{
	if (!sandbox_name_valid(c->t.sandbox)) {
		bh_capture_missing(c, "config.json", "the sandbox's name is not one bulkhead makes: no "
						     "bundle path is made of it");
		return;
	}
	cleanup_free char *p = xasprintf("%s/%s/config.json", c->e->bundles_dir, c->t.sandbox);
	size_t len = 0;
	bool cut = false;
	cleanup_free char *v = read_capped(p, CONFIG_CAP, &len, &cut);
	if (!v) {
		cleanup_free char *why = xasprintf("%s: %s", p, strerror(errno));
		bh_capture_missing(c, "config.json", why);
		return;
	}
	bh_error *err = NULL;
	if (bh_capture_add(c, "config.json", v, len, cut, p, &err) < 0) {
		bh_capture_missing(c, "config.json", err->msg);
		bh_error_free(err);
	}
}

/* ---- the store's rows ---- */

struct rows {
	const char *fp;
	cJSON *session, *records, *events;
	size_t n_events, page_n;
	int64_t last_id;
};

static int session_row(void *arg, const struct bh_history_session *r)
{
	struct rows *w = arg;
	if (strcmp(r->fingerprint, w->fp))
		return 0;
	cJSON *o = w->session = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "fingerprint", r->fingerprint);
	cJSON_AddStringToObject(o, "sandbox", r->sandbox);
	cJSON_AddStringToObject(o, "runtime", r->runtime);
	cJSON_AddStringToObject(o, "tier", r->tier);
	cJSON_AddStringToObject(o, "principal", r->principal);
	cJSON_AddStringToObject(o, "owner", r->owner);
	cJSON_AddStringToObject(o, "state", bh_session_state_name(r->state));
	cJSON_AddStringToObject(o, "endReason", bh_end_reason_name(r->end_reason));
	cJSON_AddStringToObject(o, "endDetail", r->end_detail);
	cJSON_AddStringToObject(o, "lastRecordSha256", r->last_record_sha256);
	cJSON_AddNumberToObject(o, "createdUnixMs", (double)r->created_ms);
	cJSON_AddNumberToObject(o, "lastCallUnixMs", (double)r->last_call_ms);
	cJSON_AddNumberToObject(o, "endedUnixMs", (double)r->ended_ms);
	cJSON_AddNumberToObject(o, "calls", (double)r->calls);
	return 1;
}

static int record_row(void *arg, const struct bh_record_row *row)
{
	struct rows *w = arg;
	const struct bh_record *r = row->record;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "sequence", (double)r->sequence);
	cJSON_AddStringToObject(o, "recordSha256", r->record_sha256);
	cJSON_AddStringToObject(o, "previousSha256", r->previous_sha256);
	cJSON_AddStringToObject(o, "requestSha256", r->request_sha256);
	cJSON_AddStringToObject(o, "resultSha256", r->result_sha256);
	cJSON_AddBoolToObject(o, "digestVerifies", bh_record_verify(r));
	cJSON_AddNumberToObject(o, "exitCode", row->exit_code);
	cJSON_AddStringToObject(o, "language", row->language);
	cJSON_AddStringToObject(o, "flags", row->flags);
	cJSON_AddNumberToObject(o, "startedUnixMs", (double)r->started_unix_ms);
	cJSON_AddItemToArray(w->records, o);
	return cJSON_GetArraySize(w->records) >= (int)STORE_ROWS_MAX;
}

static int event_row(void *arg, const struct bh_event *ev)
{
	struct rows *w = arg;
	w->page_n++;
	w->last_id = ev->id;
	if (w->n_events >= STORE_ROWS_MAX || strcmp(ev->session, w->fp))
		return 0;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", (double)ev->id);
	cJSON_AddNumberToObject(o, "atUnixMs", (double)ev->at_unix_ms);
	cJSON_AddStringToObject(o, "kind", ev->kind);
	cJSON_AddStringToObject(o, "sandbox", ev->sandbox);
	cJSON_AddStringToObject(o, "detail", ev->detail);
	cJSON_AddItemToArray(w->events, o);
	w->n_events++;
	return 0;
}

static void capture_store_rows(bh_capture *c)
{
	if (!c->e->store) {
		bh_capture_missing(c, "store-rows.json", "this engine has no store open");
		return;
	}
	if (!c->t.fingerprint[0]) {
		bh_capture_missing(c, "store-rows.json", "no registry row names this sandbox");
		return;
	}
	struct rows w = {.fp = c->t.fingerprint, .records = cJSON_CreateArray(),
			 .events = cJSON_CreateArray()};
	bh_error *err = NULL;
	cJSON *root = cJSON_CreateObject();
	if (store_session_rows(c->e->store, 0, session_row, &w, &err) < 0 ||
	    store_record_rows_chained(c->e->store, c->t.fingerprint, record_row, &w, &err) < 0) {
		bh_capture_missing(c, "store-rows.json", err->msg);
		bh_error_free(err);
		cJSON_Delete(w.session), cJSON_Delete(w.records), cJSON_Delete(w.events);
		cJSON_Delete(root);
		return;
	}
	/* Events a page at a time, oldest first, bounded. */
	for (int page = 0; page < (int)(STORE_ROWS_MAX / 100); page++) {
		w.page_n = 0;
		if (store_events(c->e->store, w.last_id, 1000, event_row, &w, &err) < 0 ||
		    w.page_n < 1000 || w.n_events >= STORE_ROWS_MAX)
			break;
	}
	if (err) {
		bh_capture_missing(c, "store-rows.json (events)", err->msg);
		bh_error_free(err);
	}
	cJSON_AddItemToObject(root, "session", w.session ? w.session : cJSON_CreateNull());
	cJSON_AddItemToObject(root, "records", w.records);
	cJSON_AddItemToObject(root, "events", w.events);
	cleanup_free char *json = cJSON_Print(root);
	cJSON_Delete(root);
	err = NULL;
	if (bh_capture_add(c, "store-rows.json", json, strlen(json), false,
			   "the registry row, the record chain and the events naming the session",
			   &err) < 0) {
		bh_capture_missing(c, "store-rows.json", err->msg);
		bh_error_free(err);
	}
}

/* ---- what a name points at ---- */

struct candidates {
	struct bh_capture_target v[8];
	size_t n;
	bool more;
};

static void candidate(struct candidates *c, const char *sandbox, const char *fp, const char *runtime,
		      bool held)
{
	for (size_t i = 0; i < c->n; i++) {
		struct bh_capture_target *t = &c->v[i];
		bool same = (fp[0] && !strcmp(t->fingerprint, fp)) ||
			    (sandbox[0] && !strcmp(t->sandbox, sandbox));
		if (!same)
			continue;
		/* The same suspect seen by another view: fill what it knew. */
		if (!t->sandbox[0])
			snprintf(t->sandbox, sizeof t->sandbox, "%s", sandbox);
		if (!t->fingerprint[0])
			snprintf(t->fingerprint, sizeof t->fingerprint, "%s", fp);
		if (!t->runtime[0])
			snprintf(t->runtime, sizeof t->runtime, "%s", runtime);
		t->held |= held;
		return;
	}
	if (c->n == sizeof c->v / sizeof *c->v) {
		c->more = true;
		return;
	}
	struct bh_capture_target *t = &c->v[c->n++];
	memset(t, 0, sizeof *t);
	snprintf(t->sandbox, sizeof t->sandbox, "%s", sandbox);
	snprintf(t->fingerprint, sizeof t->fingerprint, "%s", fp);
	snprintf(t->runtime, sizeof t->runtime, "%s", runtime);
	t->held = held;
}

static bool names(const char *name, const char *sandbox, const char *fp)
{
	size_t n = strlen(name);
	return (sandbox[0] && !strcmp(name, sandbox)) || (n >= 8 && !strncmp(fp, name, n));
}

struct row_match {
	const char *name;
	struct candidates *c;
};

static int match_row(void *arg, const struct bh_history_session *r)
{
	struct row_match *m = arg;
	if (names(m->name, r->sandbox, r->fingerprint))
		candidate(m->c, r->sandbox, r->fingerprint, r->runtime, false);
	return 0;
}

int bh_engine_capture_target(bh_engine *e, const char *name, struct bh_capture_target *out,
			     bh_error **err)
{
	memset(out, 0, sizeof *out);
	if (!name || !name[0])
		return bh_fail(err, BH_E_INVALID, 0, "name a finding or a session to capture");
	struct candidates c = {0};
	bh_session **list = NULL;
	size_t ns = bh_engine_sessions(e, &list);
	for (size_t i = 0; i < ns; i++) {
		struct bh_session_info info;
		bh_session_get_info(list[i], &info);
		if (!names(name, info.sandbox ? info.sandbox : "", info.fingerprint))
			continue;
		const struct runtime *rt = &e->runtimes[info.tier];
		candidate(&c, info.sandbox ? info.sandbox : "", info.fingerprint,
			  rt->ops ? rt->ops->name : "", info.end_reason == BH_END_NONE);
	}
	free(list);
	struct bh_leak *leaks = NULL;
	size_t nl = bh_engine_leaks(e, &leaks);
	for (size_t i = 0; i < nl; i++)
		if (names(name, leaks[i].sandbox, leaks[i].fingerprint))
			candidate(&c, leaks[i].sandbox, leaks[i].fingerprint, leaks[i].runtime, false);
	free(leaks);
	if (e->store) {
		struct row_match m = {.name = name, .c = &c};
		bh_error *ignored = NULL;
		/* A store that cannot be read still leaves the runtime's view. */
		if (store_session_rows(e->store, 0, match_row, &m, &ignored) < 0)
			bh_error_free(ignored);
	}
	if (!c.n)
		return bh_fail(err, BH_E_INVALID, 0,
			       "no finding, session or registry row is named \"%.80s\" (a sandbox name, "
			       "or at least 8 characters of a fingerprint)", name);
	if (c.n > 1 || c.more)
		return bh_fail(err, BH_E_INVALID, 0,
			       "\"%.80s\" names more than one suspect (%s and %s): give more of it",
			       name, c.v[0].sandbox[0] ? c.v[0].sandbox : c.v[0].fingerprint,
			       c.v[1].sandbox[0] ? c.v[1].sandbox : c.v[1].fingerprint);
	*out = c.v[0];
	return 0;
}

/* ---- the folder and its manifest ---- */

static void utc(int64_t ms, char out[32])
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 32 - n, ".%03dZ", (int)(ms % 1000));
}

int bh_capture_begin(bh_engine *e, const struct bh_capture_target *t, const char *out_dir,
		     bh_capture **out, bh_error **err)
{
	*out = NULL;
	if (!out_dir || out_dir[0] != '/')
		return bh_fail(err, BH_E_INVALID, 0,
			       "the evidence folder must be an absolute path (\"%.200s\" is not)",
			       out_dir ? out_dir : "");
	if (mkdir(out_dir, 0700) < 0 && errno != EEXIST)
		return bh_fail(err, BH_E_SYSTEM, errno, "make the evidence folder %s", out_dir);
	/* The folder's ancestors are followed as the operator named them; the
	 * folder itself is never a link, and it must hold nothing yet (older
	 * evidence is never mixed in or overwritten). */
	int fd = open(out_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "open the evidence folder %s", out_dir);
	int probe = dup(fd);
	DIR *d = probe >= 0 ? fdopendir(probe) : NULL;
	struct dirent *de;
	bool empty = d != NULL;
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = false;
	if (d)
		closedir(d);
	if (!empty) {
		close(fd);
		return bh_fail(err, BH_E_INVALID, 0,
			       "the evidence folder %s is not empty: name a new one", out_dir);
	}
	bh_capture *c = xzalloc(sizeof *c);
	c->e = e;
	c->t = *t;
	c->dir = xstrdup(out_dir);
	c->dirfd = fd;
	c->started_ms = (int64_t)now_real_ms();
	if (t->sandbox[0]) {
		pid_t init = capture_host_processes(c);
		capture_usage(c);
		capture_sockets(c, init);
		capture_config(c);
	} else {
		bh_capture_missing(c, "processes, usage, sockets, config.json",
				   "no sandbox name is known for this session");
	}
	capture_store_rows(c);
	*out = c;
	return 0;
}

static void put_line_value(struct buf *b, const char *key, const char *v)
{
	bprintf(b, "%s: ", key);
	for (const char *p = v; *p; p++)
		buf_append(b, ((unsigned char)*p < 0x20 || *p == 0x7f) ? " " : p, 1);
	buf_append(b, "\n", 1);
}

int bh_capture_finish(bh_capture *c, char manifest_sha256[65], bh_error **err)
{
	struct buf b = {0};
	char at[32];
	struct utsname u;
	uname(&u);
	bprintf(&b, "bulkhead capture manifest 1\n");
	put_line_value(&b, "sandbox", c->t.sandbox[0] ? c->t.sandbox : "-");
	put_line_value(&b, "session", c->t.fingerprint[0] ? c->t.fingerprint : "-");
	put_line_value(&b, "runtime", c->t.runtime[0] ? c->t.runtime : "-");
	put_line_value(&b, "held-by-this-engine", c->t.held ? "yes" : "no");
	bprintf(&b, "engine-pid: %d\n", (int)getpid());
	put_line_value(&b, "engine-version", BULKHEAD_VERSION);
	put_line_value(&b, "state-dir", c->e->state_dir);
	cleanup_free char *host = xasprintf("%s (%s %s)", u.nodename, u.sysname, u.release);
	put_line_value(&b, "host", host);
	utc(c->started_ms, at);
	put_line_value(&b, "started", at);
	utc((int64_t)now_real_ms(), at);
	put_line_value(&b, "finished", at);
	bprintf(&b, "# file SHA256 BYTES CAPTURED WHOLE|CUT NAME, then what it is\n");
	for (size_t i = 0; i < c->n_files; i++) {
		const struct captured *f = &c->files[i];
		utc(f->at_ms, at);
		bprintf(&b, "file %s %llu %s %s %s\n", f->sha256, (unsigned long long)f->size, at,
			f->truncated ? "cut" : "whole", f->name);
		if (f->note)
			put_line_value(&b, "  about", f->note);
	}
	for (size_t i = 0; i < c->n_missing; i++)
		put_line_value(&b, "not-captured", c->missing[i]);
	int rc = write_at(c->dirfd, BH_CAPTURE_MANIFEST, b.data, b.len, err);
	if (rc == 0)
		sha256_hex(b.data, b.len, manifest_sha256);
	buf_free(&b);
	if (rc == 0 && fsync(c->dirfd) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "sync the evidence folder %s", c->dir);
	return rc;
}

/* ---- verifying a folder ---- */

int bh_capture_verify(const char *dir, size_t *n_files, char manifest_sha256[65], char **problems,
		      bh_error **err)
{
	*problems = NULL;
	*n_files = 0;
	struct bh_capture_manifest man;
	if (bh_capture_manifest_read(dir, &man, manifest_sha256, err) < 0)
		return -1;
	cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		bh_capture_manifest_free(&man);
		return bh_fail(err, BH_E_SYSTEM, errno, "open the evidence folder %s", dir);
	}
	struct buf bad = {0};
	if (man.problems)
		buf_append(&bad, man.problems, strlen(man.problems));
	for (size_t i = 0; i < man.n_files; i++) {
		const struct bh_capture_manifest_file *f = &man.files[i];
		cleanup_close int fd = openat(dfd, f->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		struct stat fs;
		if (fd < 0 || fstat(fd, &fs) < 0 || !S_ISREG(fs.st_mode)) {
			bprintf(&bad, "%s: missing (or not a regular file)\n", f->name);
			continue;
		}
		char now[65];
		uint64_t n = 0;
		if (sha256_fd_hex(fd, now, &n) < 0) {
			bprintf(&bad, "%s: unreadable: %s\n", f->name, strerror(errno));
			continue;
		}
		if (n != f->size)
			bprintf(&bad, "%s: %llu bytes, the manifest says %llu\n", f->name,
				(unsigned long long)n, (unsigned long long)f->size);
		else if (strcmp(now, f->sha256))
			bprintf(&bad, "%s: SHA-256 %s, the manifest says %s\n", f->name, now, f->sha256);
		else
			(*n_files)++;
	}
	/* Nothing may have been added beside the listed files. */
	int dd = dup(dfd);
	DIR *d = dd >= 0 ? fdopendir(dd) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, BH_CAPTURE_MANIFEST))
			continue;
		bool known = false;
		for (size_t i = 0; i < man.n_files && !known; i++)
			known = !strcmp(man.files[i].name, de->d_name);
		if (!known) {
			bprintf(&bad, "added: ");
			put_escaped(&bad, de->d_name, strlen(de->d_name));
			bprintf(&bad, " is not in the manifest\n");
		}
	}
	if (d)
		closedir(d);
	bh_capture_manifest_free(&man);
	if (bad.len) {
		buf_append(&bad, "", 1);
		*problems = (char *)bad.data;
	}
	return 0;
}

/* ---- what the init answered ---- */

int bh_capture_add_processes(bh_capture *c, const struct bh_process *procs, size_t n, bool more,
			     bh_error **err)
{
	struct buf b = {0};
	bprintf(&b, "# the sandbox's init's view (its own /proc, its pid namespace)\n");
	bprintf(&b, "%-7s %-7s %-6s %-5s %-12s %-12s %s\n", "PID", "PPID", "UID", "STATE", "CPU_US",
		"RSS", "COMMAND");
	for (size_t i = 0; i < n; i++) {
		const struct bh_process *p = &procs[i];
		bprintf(&b, "%-7u %-7u %-6u %-5c %-12llu %-12llu ", p->pid, p->ppid, p->uid,
			isprint((unsigned char)p->state) ? p->state : '?',
			(unsigned long long)p->cpu_us, (unsigned long long)p->rss_bytes);
		put_escaped(&b, p->command ? p->command : "", p->command ? strlen(p->command) : 0);
		buf_append(&b, "\n", 1);
	}
	if (more)
		bprintf(&b, "# more processes were running than one answer holds (%u)\n",
			BH_PROCESSES_MAX);
	int rc = bh_capture_add(c, "processes-init.txt", b.data ? (const void *)b.data : "", b.len,
				more, "the PS frame the sandbox's init answered", err);
	buf_free(&b);
	return rc;
}

int bh_capture_add_listing(bh_capture *c, const char *path, const struct bh_file_entry *entries,
			   size_t n, bool more, bh_error **err)
{
	struct buf b = {0};
	bprintf(&b, "# /work/");
	put_escaped(&b, path, strlen(path));
	bprintf(&b, " as the sandbox's init listed it (no link followed)\n%-4s %-12s %-24s %s\n",
		"TYPE", "BYTES", "MODIFIED", "NAME");
	for (size_t i = 0; i < n; i++) {
		const struct bh_file_entry *f = &entries[i];
		char at[32];
		utc((int64_t)f->mtime_ms, at);
		bprintf(&b, "%-4c %-12llu %-24s ", isprint((unsigned char)f->type) ? f->type : '?',
			(unsigned long long)f->size, at);
		put_escaped(&b, f->name, strlen(f->name));
		if (f->type == 'l' && f->target) {
			bprintf(&b, " -> ");
			put_escaped(&b, f->target, strlen(f->target));
		}
		buf_append(&b, "\n", 1);
	}
	if (more)
		bprintf(&b, "# more entries than one answer holds\n");
	int rc = bh_capture_add(c, "work-listing.txt", b.data ? (const void *)b.data : "", b.len, more,
				"ListFiles through the sandbox's init", err);
	buf_free(&b);
	return rc;
}
