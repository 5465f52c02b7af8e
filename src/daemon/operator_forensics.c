/* remote: forensics over the operator API (docs/api.md, Forensics) — what
 * an embedded console reads and does in :leaks and the timeline, done by
 * this daemon's engine for an attached console and the CLI: Leftovers,
 * ListIntents, Capture, Search and Reap. The operator scope is checked
 * before any is reached (call.c); each request is read strictly by its own
 * decoder (wire_operator_forensics.c); what acts (a reap) acts in the
 * calling principal's name with the call's audit request id, and is audited.
 *
 * Capture writes on this host, as this daemon's user, where a remote
 * operator names: only below the folder serve --capture-root gave (none: no
 * capture), a new folder (or an empty one) whose parent, with every link
 * resolved, is that root or inside it. */
#include "daemon_priv.h"

#include "wire_operator.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *body_of(const struct call *c, size_t *len)
{
	*len = c->body ? c->body_len : 2;
	return c->body ? c->body : "{}";
}

static void refused(struct call *c, const char *method, const struct wire_status *st)
{
	call_refuse(c, st->code, st->reason, "%s: %s", method, st->msg);
}

/* ---- Leftovers ---- */

static void leftovers(struct call *c)
{
	size_t len;
	const char *body = body_of(c, &len);
	struct wire_status st;
	if (wire_operator_decode_empty_request("Leftovers", body, len, &st) < 0) {
		call_refuse(c, st.code, st.reason, "%s", st.msg);
		return;
	}
	struct wire_operator_leftovers out;
	bh_engine_leftovers(c->srv->e, &out.l);
	call_answer_json(c, wire_operator_encode_leftovers(&out));
}

/* ---- ListIntents ---- */

static int add_intent(void *arg, const struct bh_inflight *row)
{
	/* Past an answer's bound the rest is not listed (the store keeps a
	 * handful: one per session running a call, and the dead engine's). */
	return wire_operator_intents_add(arg, row) ? 0 : 1;
}

static void list_intents(struct call *c)
{
	size_t len;
	const char *body = body_of(c, &len);
	struct wire_operator_intents_request req;
	struct wire_status st;
	if (wire_operator_decode_intents_request(body, len, &req, &st) < 0) {
		refused(c, "ListIntents", &st);
		return;
	}
	struct wire_operator_intents out = {0};
	bh_error *err = NULL;
	if (bh_engine_inflight(c->srv->e, *req.session ? req.session : NULL, add_intent, &out,
			       &err) < 0) {
		call_refuse(c, WIRE_INTERNAL, WIRE_REFUSAL_UNSPECIFIED, "ListIntents: %s", err->msg);
		bh_error_free(err);
	} else {
		snprintf(c->session_fp, sizeof c->session_fp, "%s", req.session);
		call_answer_json(c, wire_operator_encode_intents(&out));
	}
	wire_operator_intents_free(&out);
	wire_operator_intents_request_free(&req);
}

/* ---- Search ---- */

static int add_hit(void *arg, const struct bh_search_hit *h)
{
	wire_operator_hits_add(arg, h);
	return 0;
}

static void search(struct call *c)
{
	size_t len;
	const char *body = body_of(c, &len);
	struct wire_operator_search_request req;
	struct wire_status st;
	if (wire_operator_decode_search_request(body, len, &req, &st) < 0) {
		refused(c, "Search", &st);
		return;
	}
	const char *text = NULL;
	enum bh_search_stream stream = bh_search_parse(req.query, &text);
	struct wire_operator_hits out = {0};
	bh_error *err = NULL;
	if (bh_engine_search(c->srv->e, stream, text, req.limit, add_hit, &out, &err) < 0) {
		call_refuse(c, WIRE_INTERNAL, WIRE_REFUSAL_UNSPECIFIED, "Search: %s", err->msg);
		bh_error_free(err);
	} else {
		call_answer_json(c, wire_operator_encode_hits(&out));
	}
	wire_operator_hits_free(&out);
	wire_operator_search_request_free(&req);
}

/* ---- Reap ---- */

static void reap(struct call *c)
{
	size_t len;
	const char *body = body_of(c, &len);
	struct wire_operator_reap_request req;
	struct wire_status st;
	if (wire_operator_decode_reap_request(body, len, &req, &st) < 0) {
		refused(c, "Reap", &st);
		return;
	}
	struct wire_operator_leaks out = {0};
	struct bh_actor who = call_actor(c);
	out.n = bh_engine_reap_as(c->srv->e, &who, req.findings, req.n, req.dry_run, &out.leaks);
	if (!req.dry_run) {
		c->srv->metrics.leaks_reaped += out.n;
		for (size_t i = 0; i < out.n; i++)
			audit_event(c->srv, "reaped", out.leaks[i].fingerprint,
				    bh_leak_kind_name(out.leaks[i].kind));
	}
	call_answer_json(c, wire_operator_encode_leaks(
				    req.dry_run ? WIRE_LEAKS_WOULD_REAP : WIRE_LEAKS_REAPED, &out));
	free(out.leaks);
	wire_operator_reap_request_free(&req);
}

/* ---- Capture ---- */

/* The folder to make, with its parent's links resolved, when the parent
 * is the capture root or below it; NULL with why[] otherwise. */
static char *capture_dir(const struct server *s, const char *dir, char *why, size_t n)
{
	const char *root = s->cfg->capture_root;
	if (!root || !*root) {
		/* Short: a console's flash shows it whole at 80 columns. */
		snprintf(why, n, "no capture root: serve --capture-root DIR");
		return NULL;
	}
	char real_root[PATH_MAX], real_parent[PATH_MAX];
	if (!realpath(root, real_root)) {
		snprintf(why, n, "the capture root %s: %s", root, strerror(errno));
		return NULL;
	}
	const char *slash = strrchr(dir, '/'); /* dir is absolute and clean (its decoder) */
	cleanup_free char *parent = slash == dir ? xstrdup("/") : xstrndup(dir, (size_t)(slash - dir));
	if (!realpath(parent, real_parent)) {
		snprintf(why, n, "the evidence folder's parent %.400s: %s", parent, strerror(errno));
		return NULL;
	}
	size_t rl = strlen(real_root);
	bool inside = !strcmp(real_parent, real_root) ||
		      (!strncmp(real_parent, real_root, rl) &&
		       (real_parent[rl] == '/' || (rl == 1 && real_root[0] == '/')));
	if (!inside) {
		snprintf(why, n, "%.400s is not below this daemon's capture root %.400s", dir, real_root);
		return NULL;
	}
	return xasprintf("%s/%s", strcmp(real_parent, "/") ? real_parent : "", slash + 1);
}

static void on_captured(void *arg, const struct bh_capture_target *t, const char *dir,
			const char *sha, const bh_error *err)
{
	struct call *c = arg;
	if (!c->gone) {
		if (err) {
			call_answer_bh(c, err, NULL);
		} else {
			struct wire_operator_captured out = {.dir = dir, .target = *t};
			snprintf(out.manifest_sha256, sizeof out.manifest_sha256, "%s", sha);
			call_answer_json(c, wire_operator_encode_captured(&out));
		}
	}
	char what[1200];
	snprintf(what, sizeof what, "%s into %s%s%s", t->sandbox[0] ? t->sandbox : "-", dir,
		 err ? ": " : "", err ? err->msg : "");
	audit_event(c->srv, "captured", t->fingerprint, what);
	call_wake(c);
}

static void capture(struct call *c)
{
	size_t len;
	const char *body = body_of(c, &len);
	struct wire_operator_capture_request req;
	struct wire_status st;
	if (wire_operator_decode_capture_request(body, len, &req, &st) < 0) {
		refused(c, "Capture", &st);
		return;
	}
	char why[1024];
	cleanup_free char *dir = capture_dir(c->srv, req.dir, why, sizeof why);
	if (!dir) {
		call_refuse(c, WIRE_PERMISSION_DENIED, WIRE_REFUSAL_REQUEST, "%s", why);
		wire_operator_capture_request_free(&req);
		return;
	}
	call_pending(c, NULL, NULL);
	bh_error *err = NULL;
	if (bh_engine_capture(c->srv->e, req.target, dir, req.files, req.n_files, on_captured, c,
			      &err) < 0)
		call_not_started(c, err);
	wire_operator_capture_request_free(&req);
}

bool operator_forensics(struct call *c, const char *method)
{
	static const struct {
		const char *name;
		void (*fn)(struct call *c);
	} methods[] = {
		{"Leftovers", leftovers}, {"ListIntents", list_intents}, {"Search", search},
		{"Reap", reap},		  {"Capture", capture},
	};
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if (!strcmp(method, methods[i].name)) {
			methods[i].fn(c);
			return true;
		}
	return false;
}
