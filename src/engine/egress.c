/* Egress, the engine's side (issue 18): the broker's socket mounted into
 * a sandbox, the proxy and CA environment of the sandboxes that may use a
 * profile, the holds that let the broker serve them, and the broker's
 * notes turned into events and counts.
 *
 * Each sandbox that may reach the broker gets a directory of its own,
 * STATE/egress/<sandbox>, bound read-only at /run: the broker listens on
 * host-api.sock there once a session (or a granted run) takes the sandbox,
 * and host-api-ca.pem beside it is the system's CA bundle with the broker's
 * interception CA appended. The directory and its files belong to the
 * sandbox's own root (host uid base) and group (base + 1000, its user),
 * mode 0750/0660: the init and user code of that sandbox reach them, no
 * other sandbox's uids and no host user but root do; read-only, so nothing
 * inside can add a file to the host's disk there.
 *
 * The engine never speaks HTTP: it reaches the broker only through struct
 * bh_egress_ops (egress.h). */
#include "engine_priv.h"
#include "egress_relay.h"
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>

#include "egress.h"

_Static_assert(BH_PROTO_EGRESS_RELAY_PORT == BH_EGRESS_RELAY_PORT,
	       "the init relays the port egress.h names");
_Static_assert(sizeof BH_PROTO_EGRESS_SOCKET == sizeof BH_EGRESS_SOCKET_IN_SANDBOX,
	       "the socket is where egress.h says");

#define SOCKET_NAME "host-api.sock"
#define CA_NAME "host-api-ca.pem"
#define SYSTEM_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define MAX_CA_BYTES (4u << 20)
/* Notes waiting for the loop; past this the broker's newest are counted
 * but not stored as events (the loop is stuck; the broker must not be). */
#define MAX_QUEUED_NOTES 4096u

/* Set only in sandboxes that may use a profile (their posture allows
 * exactly these names beside the sandbox's own). */
const char *const bh_egress_env[] = {"HTTP_PROXY=" BH_PROTO_EGRESS_PROXY_URL,
				     "HTTPS_PROXY=" BH_PROTO_EGRESS_PROXY_URL,
				     "http_proxy=" BH_PROTO_EGRESS_PROXY_URL,
				     "https_proxy=" BH_PROTO_EGRESS_PROXY_URL,
				     "NO_PROXY=localhost,127.0.0.1",
				     "no_proxy=localhost,127.0.0.1",
				     "SSL_CERT_FILE=" BH_PROTO_EGRESS_CA_FILE,
				     "REQUESTS_CA_BUNDLE=" BH_PROTO_EGRESS_CA_FILE,
				     "PIP_CERT=" BH_PROTO_EGRESS_CA_FILE,
				     "NODE_EXTRA_CA_CERTS=" BH_PROTO_EGRESS_CA_FILE,
				     /* Node 20's fetch ignores HTTP_PROXY: this one
				      * goes through the relay (data/interp). */
				     "NODE_OPTIONS=--require " BH_INTERP_SANDBOX_DIR
				     "/javascript/egress_fetch.js",
				     NULL};

struct queued_note {
	char fp[65];
	char profile[72], method[16], origin[300], route[300], refusal[160];
	int status;
	uint64_t bytes_out, bytes_in;
	uint32_t ms;
	struct queued_note *next;
};

struct egress_count {
	char profile[72];
	int status;
	uint64_t requests, bytes_out, bytes_in;
};

struct egress_state {
	pthread_mutex_t mu;
	int wake_fd; /* an eventfd the broker's thread writes */
	struct bh_watch *w;
	struct queued_note *head, **tail;
	size_t queued;
	struct egress_count *counts;
	size_t n_counts, cap_counts;
};

static bool valid_profile_name(const char *p)
{
	size_t n = strlen(p);
	if (n < 1 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			  (i > 0 && (c == '.' || c == '_' || c == '-'));
		if (!ok)
			return false;
	}
	return true;
}

int egress_check_profile(bh_engine *e, const char *profile, bh_error **err)
{
	if (!profile || !*profile)
		return 0;
	/* The daemon checks who may use which profile; this is the engine's
	 * own guard: without a broker nothing could serve one, and a name
	 * that is not a name is not passed on. One text for both, as the
	 * daemon's refusal has (a caller learns nothing from the difference). */
	if (!e->egress || !valid_profile_name(profile))
		return bh_refuse(err, BH_REFUSAL_PERMISSION, BH_EGRESS_REFUSED_FMT,
				 valid_profile_name(profile) ? profile : "(not a profile name)");
	return 0;
}

/* ---- a sandbox's directory ---- */

static int chown_to_sandbox(int fd, uint32_t uid_base)
{
	return fchown(fd, uid_base, uid_base + 1000u);
}

static int write_all_fd(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int write_ca_bundle(bh_engine *e, int dir_fd, uint32_t uid_base, bh_error **err)
{
	size_t sys_len = 0, ca_len = 0;
	cleanup_free char *sys = read_file(SYSTEM_CA_BUNDLE, MAX_CA_BYTES, &sys_len);
	const char *ca_path = e->egress->ca_cert_path ? e->egress->ca_cert_path(e->egress_arg) : NULL;
	cleanup_free char *ca = ca_path ? read_file(ca_path, 1u << 20, &ca_len) : NULL;
	if (ca_path && !ca)
		return bh_fail(err, BH_E_SYSTEM, errno, "read the broker's CA certificate %s", ca_path);
	struct buf b = {0};
	if (sys)
		buf_append(&b, sys, sys_len);
	if (b.len && b.data[b.len - 1] != '\n')
		buf_append(&b, "\n", 1);
	if (ca)
		buf_append(&b, ca, ca_len);
	int fd = openat(dir_fd, CA_NAME, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640);
	int rc = 0;
	if (fd < 0 || (b.len && write_all_fd(fd, b.data, b.len) < 0) || chown_to_sandbox(fd, uid_base) < 0 ||
	    fchmod(fd, 0640) < 0)
		rc = bh_fail(err, BH_E_SYSTEM, errno, "write the sandbox's CA bundle");
	if (fd >= 0)
		close(fd);
	buf_free(&b);
	return rc;
}

char *egress_sandbox_dir(bh_engine *e, const char *sandbox)
{
	return xasprintf("%s/egress/%s", e->state_dir, sandbox);
}

int egress_sandbox_prepare(bh_engine *e, const char *sandbox, uint32_t uid_base, char **dir_out,
			   bh_error **err)
{
	*dir_out = NULL;
	cleanup_free char *top = xasprintf("%s/egress", e->state_dir);
	/* Others may search it: the runtime reaches the bind source as the
	 * sandbox's uids (state_parents.c). */
	if (mkdir_p(top, 0711) < 0 || chmod(top, 0711) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "create %s", top);
	char *dir = egress_sandbox_dir(e, sandbox);
	rm_rf(dir); /* a dead engine's, for a name it cannot have reused */
	if (mkdir(dir, 0750) < 0) {
		bh_fail(err, BH_E_SYSTEM, errno, "create %s", dir);
		free(dir);
		return -1;
	}
	int fd = open_nofollow(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY, 0);
	int rc = 0;
	if (fd < 0 || chown_to_sandbox(fd, uid_base) < 0 || fchmod(fd, 0750) < 0)
		rc = bh_fail(err, BH_E_SYSTEM, errno, "make %s the sandbox's", dir);
	if (rc == 0)
		rc = write_ca_bundle(e, fd, uid_base, err);
	if (fd >= 0)
		close(fd);
	if (rc < 0) {
		rm_rf(dir);
		free(dir);
		return -1;
	}
	*dir_out = dir;
	return 0;
}

/* ---- a session's socket and holds ---- */

int egress_open_session(bh_engine *e, const char *fp, const struct sandbox *sb, bh_error **err)
{
	if (!e->egress || !sb->egress_dir)
		return 0;
	cleanup_free char *path = xasprintf("%s/" SOCKET_NAME, sb->egress_dir);
	unlink(path); /* the last holder's, if the broker left it */
	if (e->egress->open_session(e->egress_arg, fp, path, err) < 0) {
		bh_error_wrap(*err, "the egress broker could not listen for the sandbox");
		return -1;
	}
	/* Whoever made it, the socket is the sandbox's: its init (the relay)
	 * and its user connect; nobody else's uids. */
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		uint32_t base = sb->host_uid_base;
		if (lchown(path, base, base + 1000u) < 0 || chmod(path, 0660) < 0) {
			e->egress->close_session(e->egress_arg, fp);
			return bh_fail(err, BH_E_SYSTEM, errno, "make the broker's socket the sandbox's");
		}
	}
	return 0;
}

void egress_close_session(bh_engine *e, const char *fp)
{
	if (e->egress)
		e->egress->close_session(e->egress_arg, fp);
}

int egress_hold(bh_engine *e, const char *fp, uint64_t hold, const char *profile, bh_error **err)
{
	if (!e->egress)
		return bh_refuse(err, BH_REFUSAL_PERMISSION, BH_EGRESS_REFUSED_FMT, profile);
	if (e->egress->hold(e->egress_arg, fp, hold, profile, err) < 0)
		return -1;
	return 0;
}

void egress_release(bh_engine *e, const char *fp, uint64_t hold)
{
	if (e->egress)
		e->egress->release(e->egress_arg, fp, hold);
}

/* ---- the broker's notes ---- */

static void count_note(struct egress_state *q, const struct queued_note *n)
{
	struct egress_count *c = NULL;
	for (size_t i = 0; i < q->n_counts && !c; i++)
		if (q->counts[i].status == n->status && !strcmp(q->counts[i].profile, n->profile))
			c = &q->counts[i];
	if (!c) {
		if (q->n_counts == q->cap_counts) {
			q->cap_counts = q->cap_counts ? q->cap_counts * 2 : 16;
			q->counts = realloc(q->counts, q->cap_counts * sizeof *q->counts);
			if (!q->counts)
				abort();
		}
		c = &q->counts[q->n_counts++];
		*c = (struct egress_count){.status = n->status};
		snprintf(c->profile, sizeof c->profile, "%s", n->profile);
	}
	c->requests++;
	c->bytes_out += n->bytes_out;
	c->bytes_in += n->bytes_in;
}

/* What the event says: metadata only, never a body, query or secret (the
 * broker reports no more; the origin and route are cut at their limits
 * and stripped of control bytes all the same). */
static void note_detail(const struct queued_note *n, char *out, size_t len)
{
	snprintf(out, len, "%s %s%s%s -> %d%s%s; out %llu B, in %llu B, %u ms; profile %s",
		 n->method, n->origin, *n->route ? " route " : "", n->route, n->status,
		 *n->refusal ? ", refused: " : "", n->refusal, (unsigned long long)n->bytes_out,
		 (unsigned long long)n->bytes_in, n->ms, *n->profile ? n->profile : "(none held)");
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static const char *sandbox_of(bh_engine *e, const char *fp);

static void on_notes(bh_engine *e, void *arg, uint32_t events)
{
	(void)events;
	struct egress_state *q = arg;
	uint64_t v;
	if (read(q->wake_fd, &v, sizeof v) < 0 && errno != EAGAIN)
		bh_log(e, BH_LOG_WARN, "egress: reading the notes' wake-up: %s", strerror(errno));
	pthread_mutex_lock(&q->mu);
	struct queued_note *list = q->head;
	q->head = NULL;
	q->tail = &q->head;
	q->queued = 0;
	pthread_mutex_unlock(&q->mu);
	while (list) {
		struct queued_note *n = list;
		list = n->next;
		char detail[1024];
		note_detail(n, detail, sizeof detail);
		if (e->store)
			store_event(e->store, "egress", n->fp, sandbox_of(e, n->fp), detail);
		sessions_note_egress(e, n->fp, detail);
		free(n);
	}
	engine_changed(e);
}

static void copy_field(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

int bh_engine_note_egress(bh_engine *e, const struct bh_egress_note *note, bh_error **err)
{
	struct egress_state *q = e ? e->egress_q : NULL;
	if (!q || !note || !note->session_fp)
		return bh_fail(err, BH_E_INVALID, 0, "egress: a note needs an engine with a broker and a session");
	struct queued_note *n = xzalloc(sizeof *n);
	copy_field(n->fp, sizeof n->fp, note->session_fp);
	copy_field(n->profile, sizeof n->profile, note->profile);
	copy_field(n->method, sizeof n->method, note->method);
	copy_field(n->origin, sizeof n->origin, note->origin);
	copy_field(n->route, sizeof n->route, note->route);
	copy_field(n->refusal, sizeof n->refusal, note->refusal);
	n->status = note->status;
	n->bytes_out = note->bytes_out;
	n->bytes_in = note->bytes_in;
	n->ms = note->ms;
	pthread_mutex_lock(&q->mu);
	count_note(q, n);
	bool kept = q->queued < MAX_QUEUED_NOTES;
	if (kept) {
		*q->tail = n;
		q->tail = &n->next;
		q->queued++;
	}
	pthread_mutex_unlock(&q->mu);
	if (!kept) {
		free(n);
		return 0;
	}
	uint64_t one = 1;
	if (write(q->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
		return bh_fail(err, BH_E_SYSTEM, errno, "egress: wake the engine");
	return 0;
}

void bh_engine_egress_counts(bh_engine *e, bh_egress_count_fn fn, void *arg)
{
	struct egress_state *q = e ? e->egress_q : NULL;
	if (!q || !fn)
		return;
	pthread_mutex_lock(&q->mu);
	size_t n = q->n_counts;
	struct egress_count *copy = n ? xzalloc(n * sizeof *copy) : NULL;
	if (n)
		memcpy(copy, q->counts, n * sizeof *copy);
	pthread_mutex_unlock(&q->mu);
	for (size_t i = 0; i < n; i++) {
		struct bh_egress_count c = {.profile = copy[i].profile,
					    .status = copy[i].status,
					    .requests = copy[i].requests,
					    .bytes_out = copy[i].bytes_out,
					    .bytes_in = copy[i].bytes_in};
		fn(arg, &c);
	}
	free(copy);
}

/* ---- the engine's part ---- */

/* The directories a dead engine's sandboxes left: each goes unless a
 * bundle of that name is kept (a hibernated session's, restored later). */
void egress_sweep_stale(bh_engine *e)
{
	cleanup_free char *top = xasprintf("%s/egress", e->state_dir);
	cleanup_close int fd = open_nofollow(AT_FDCWD, top, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return;
	int dup_fd = dup(fd);
	cleanup_dir DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		cleanup_free char *bundle = xasprintf("%s/%s", e->bundles_dir, de->d_name);
		struct stat st;
		if (sandbox_name_valid(de->d_name) && lstat(bundle, &st) == 0 && S_ISDIR(st.st_mode))
			continue;
		bool live = false;
		for (struct sandbox *sb = e->sandboxes; sb && !live; sb = sb->next)
			live = !strcmp(sb->name, de->d_name);
		if (live)
			continue;
		cleanup_free char *path = xasprintf("%s/%s", top, de->d_name);
		rm_rf(path);
	}
}

int egress_engine_start(bh_engine *e, const struct bh_config *cfg, bh_error **err)
{
	if (!cfg->egress)
		return 0;
	const struct bh_egress_ops *ops = cfg->egress;
	if (!ops->open_session || !ops->close_session || !ops->hold || !ops->release)
		return bh_fail(err, BH_E_INVALID, 0, "egress: the broker's ops are incomplete");
	e->egress = ops;
	e->egress_arg = cfg->egress_arg;
	/* runsc connects a sandbox to a host socket only with this; only the
	 * sockets mounted into the sandbox can be reached (the gofer serves
	 * nothing else), and the tier's proof runs with it. */
	e->runtimes[BH_TIER_KERNEL].host_uds = true;
	struct egress_state *q = xzalloc(sizeof *q);
	pthread_mutex_init(&q->mu, NULL);
	q->tail = &q->head;
	q->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->wake_fd < 0) {
		pthread_mutex_destroy(&q->mu);
		free(q);
		return bh_fail(err, BH_E_SYSTEM, errno, "egress: eventfd");
	}
	q->w = loop_watch(e->loop, q->wake_fd, EPOLLIN, on_notes, q);
	e->egress_q = q;
	return 0;
}

void egress_engine_stop(bh_engine *e)
{
	struct egress_state *q = e->egress_q;
	if (!q)
		return;
	if (e->loop && q->w)
		on_notes(e, q, 0); /* what the broker said last is kept */
	if (e->loop)
		loop_unwatch(e->loop, q->w);
	close(q->wake_fd);
	pthread_mutex_destroy(&q->mu);
	free(q->counts);
	free(q);
	e->egress_q = NULL;
}

/* The sandbox a session's (or a run's) fingerprint names, for its event. */
static const char *sandbox_of(bh_engine *e, const char *fp)
{
	const char *s = sessions_sandbox_of(e, fp);
	if (s)
		return s;
	return execs_sandbox_of(e, fp);
}
