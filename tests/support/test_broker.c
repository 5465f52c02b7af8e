/* The real broker behind a recorder of the engine's calls: test_broker.h
 * says what it is. */
#include "test_broker.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void tb_log(struct test_broker *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_log(struct test_broker *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pthread_mutex_lock(&b->mu);
	if (b->n_log < TB_LOG)
		vsnprintf(b->log[b->n_log++], sizeof b->log[0], fmt, ap);
	pthread_mutex_unlock(&b->mu);
	va_end(ap);
}

static struct tb_session *tb_find(struct test_broker *b, const char *fp)
{
	for (int i = 0; i < TB_SESSIONS; i++)
		if (b->s[i].live && !strcmp(b->s[i].fp, fp))
			return &b->s[i];
	return NULL;
}

static int tb_open(void *arg, const char *fp, const char *path, bh_error **err)
{
	struct test_broker *b = arg;
	int rc = b->f.ops->open_session(b->f.broker, fp, path, err);
	tb_log(b, "open %.12s%s", fp, rc < 0 ? " failed" : "");
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&b->mu);
	struct tb_session *s = NULL;
	for (int i = 0; i < TB_SESSIONS && !s; i++)
		if (!b->s[i].live)
			s = &b->s[i];
	if (s) {
		snprintf(s->fp, sizeof s->fp, "%s", fp);
		snprintf(s->path, sizeof s->path, "%s", path);
		s->live = true;
	}
	pthread_mutex_unlock(&b->mu);
	cr_assert_not_null(s, "the test broker records %d sessions at most", TB_SESSIONS);
	return 0;
}

static int tb_hold(void *arg, const char *fp, uint64_t hold, const char *profile, bh_error **err)
{
	struct test_broker *b = arg;
	int rc = b->f.ops->hold(b->f.broker, fp, hold, profile, err);
	tb_log(b, "hold %.12s %llu %s%s", fp, (unsigned long long)hold, profile,
	       rc < 0 ? " refused" : "");
	return rc;
}

static void tb_release(void *arg, const char *fp, uint64_t hold)
{
	struct test_broker *b = arg;
	b->f.ops->release(b->f.broker, fp, hold);
	tb_log(b, "release %.12s %llu", fp, (unsigned long long)hold);
}

static void tb_close(void *arg, const char *fp)
{
	struct test_broker *b = arg;
	b->f.ops->close_session(b->f.broker, fp);
	pthread_mutex_lock(&b->mu);
	struct tb_session *s = tb_find(b, fp);
	if (s)
		s->live = false;
	pthread_mutex_unlock(&b->mu);
	tb_log(b, "close %.12s", fp);
}

static const char *tb_ca(void *arg)
{
	struct test_broker *b = arg;
	return b->f.ops->ca_cert_path(b->f.broker);
}

const struct bh_egress_ops tb_ops = {
	.open_session = tb_open,
	.hold = tb_hold,
	.release = tb_release,
	.close_session = tb_close,
	.ca_cert_path = tb_ca,
};

/* ---- what the broker is configured with ---- */

static const struct bh_egress_profile *tb_lookup(void *arg, const char *name, void **keep)
{
	struct test_broker *b = arg;
	*keep = NULL;
	return !strcmp(name, "weather") ? &b->weather : !strcmp(name, "maps") ? &b->maps : NULL;
}

static void tb_note(void *arg, const struct bh_egress_note *n)
{
	struct test_broker *b = arg;
	tb_log(b, "request %.12s [%s] %s %s %s -> %d %s", n->session_fp, n->profile, n->method,
	       n->origin[0] ? n->origin : "-", n->route[0] ? n->route : "-", n->status,
	       n->refusal ? n->refusal : "-");
	/* as the daemon's notes (src/daemon/egress_broker.c), under the lock
	 * tb_engine clears before the engine closes */
	pthread_mutex_lock(&b->mu);
	if (b->engine)
		bh_engine_note_egress(b->engine, n, NULL);
	pthread_mutex_unlock(&b->mu);
}

void tb_engine(struct test_broker *b, bh_engine *e)
{
	pthread_mutex_lock(&b->mu);
	b->engine = e;
	pthread_mutex_unlock(&b->mu);
}

void tb_init(struct test_broker *b, const char *dir)
{
	(void)dir; /* the fixture's files go below BULKHEAD_TEST_ROOT, as dir does */
	memset(b, 0, sizeof *b);
	pthread_mutex_init(&b->mu, NULL);
	fixture_init(&b->f);
	static char weather[] = "weather", maps[] = "maps";
	b->weather = b->f.profile;
	b->weather.name = weather;
	b->maps = b->f.profile;
	b->maps.name = maps;
	b->f.cfg.lookup = tb_lookup;
	b->f.cfg.unkeep = NULL;
	b->f.cfg.lookup_arg = b;
	b->f.cfg.note = tb_note;
	b->f.cfg.note_arg = b;
	snprintf(b->origin, sizeof b->origin, "https://api.test:%u", b->f.api.port);
	static char ca_dir[300]; /* one broker at a time in a test process */
	snprintf(ca_dir, sizeof ca_dir, "%s/broker-ca", b->f.dir);
	b->f.cfg.ca_dir = ca_dir;
	bh_error *err = NULL;
	cr_assert_eq(bh_broker_start(&b->f.cfg, &b->f.broker, &err), 0, "broker: %s",
		     err ? err->msg : "?");
	b->f.ops = bh_broker_ops();
	snprintf(b->ca_path, sizeof b->ca_path, "%s", b->f.ops->ca_cert_path(b->f.broker));
}

void tb_fini(struct test_broker *b)
{
	tb_engine(b, NULL);
	for (int i = 0; i < TB_SESSIONS; i++)
		if (b->s[i].live)
			tb_ops.close_session(b, b->s[i].fp);
	fixture_fini(&b->f); /* stops the broker, then the upstreams */
}

size_t tb_count(struct test_broker *b, const char *prefix, const char *needle)
{
	size_t n = 0;
	pthread_mutex_lock(&b->mu);
	for (size_t i = 0; i < b->n_log; i++)
		n += !strncmp(b->log[i], prefix, strlen(prefix)) && (!needle || strstr(b->log[i], needle));
	pthread_mutex_unlock(&b->mu);
	return n;
}

char *tb_dump(struct test_broker *b)
{
	static char all[TB_LOG * 160];
	size_t off = 0;
	pthread_mutex_lock(&b->mu);
	for (size_t i = 0; i < b->n_log && off + 2 < sizeof all; i++)
		off += (size_t)snprintf(all + off, sizeof all - off, "%.150s\n", b->log[i]);
	pthread_mutex_unlock(&b->mu);
	return all;
}

const char *tb_socket_of(struct test_broker *b, const char *fp)
{
	pthread_mutex_lock(&b->mu);
	struct tb_session *s = tb_find(b, fp);
	const char *p = s ? s->path : "";
	pthread_mutex_unlock(&b->mu);
	return p;
}
