/* remote: Leftovers, ListIntents, Capture, Search and Reap over the generic
 * operator call, each answer read by wire's decoder
 * (wire_operator_forensics.c), so the CLI and the console refuse a
 * malformed answer in the same words. */
#include "client_priv.h"

#include <stdlib.h>
#include <string.h>

enum kind { K_LEFTOVERS, K_INTENTS, K_CAPTURED, K_HITS, K_REAP };

union answer {
	struct wire_operator_leftovers leftovers;
	struct wire_operator_intents intents;
	struct wire_operator_captured captured;
	struct wire_operator_hits hits;
	struct wire_operator_leaks leaks;
};

struct fcall {
	enum kind kind;
	bool dry_run; /* K_REAP: which list the answer holds */
	union {
		bh_client_leftovers_cb leftovers;
		bh_client_intents_cb intents;
		bh_client_captured_cb captured;
		bh_client_hits_cb hits;
		bh_client_leaks_cb leaks;
	} cb;
	void *arg;
};

static int decode(const struct fcall *f, const char *json, union answer *a, struct wire_status *st)
{
	size_t n = strlen(json);
	switch (f->kind) {
	case K_LEFTOVERS:
		return wire_operator_decode_leftovers(json, n, &a->leftovers, st);
	case K_INTENTS:
		return wire_operator_decode_intents(json, n, &a->intents, st);
	case K_CAPTURED:
		return wire_operator_decode_captured(json, n, &a->captured, st);
	case K_HITS:
		return wire_operator_decode_hits(json, n, &a->hits, st);
	case K_REAP:
		return wire_operator_decode_reap(json, n, f->dry_run, &a->leaks, st);
	}
	return -1;
}

static void answer_free(enum kind k, union answer *a)
{
	switch (k) {
	case K_LEFTOVERS:
		break;
	case K_INTENTS:
		wire_operator_intents_free(&a->intents);
		break;
	case K_CAPTURED:
		wire_operator_captured_free(&a->captured);
		break;
	case K_HITS:
		wire_operator_hits_free(&a->hits);
		break;
	case K_REAP:
		wire_operator_leaks_free(&a->leaks);
		break;
	}
}

/* The callback, with the answer (NULL with err). */
static void deliver(const struct fcall *f, union answer *a, const struct bh_client_error *err)
{
	switch (f->kind) {
	case K_LEFTOVERS:
		f->cb.leftovers(f->arg, a ? &a->leftovers : NULL, err);
		break;
	case K_INTENTS:
		f->cb.intents(f->arg, a ? &a->intents : NULL, err);
		break;
	case K_CAPTURED:
		f->cb.captured(f->arg, a ? &a->captured : NULL, err);
		break;
	case K_HITS:
		f->cb.hits(f->arg, a ? &a->hits : NULL, err);
		break;
	case K_REAP:
		f->cb.leaks(f->arg, a ? &a->leaks : NULL, err);
		break;
	}
}

static void on_reply(void *arg, const char *json, const struct bh_client_error *err)
{
	struct fcall *f = arg;
	union answer a;
	struct wire_status st;
	if (err) {
		deliver(f, NULL, err);
	} else if (decode(f, json, &a, &st) < 0) {
		struct bh_client_error *e = client_data_loss("%s", st.msg);
		deliver(f, NULL, e);
		bh_client_error_free(e);
	} else {
		deliver(f, &a, NULL);
		answer_free(f->kind, &a);
	}
	free(f);
}

/* Sends method with body (taken); f (allocated) answers through on_reply. */
static int send_call(bh_client *c, const char *method, char *body, struct fcall *f,
		     struct bh_client_error **err)
{
	int rc = bh_client_operator_call_async(c, method, body, on_reply, f, err);
	free(body);
	if (rc < 0)
		free(f);
	return rc;
}

static struct fcall *fcall_new(enum kind k, void *arg)
{
	struct fcall *f = xzalloc(sizeof *f);
	f->kind = k;
	f->arg = arg;
	return f;
}

int bh_client_leftovers_async(bh_client *c, bh_client_leftovers_cb cb, void *arg,
			      struct bh_client_error **err)
{
	struct fcall *f = fcall_new(K_LEFTOVERS, arg);
	f->cb.leftovers = cb;
	return send_call(c, "Leftovers", xstrdup("{}"), f, err);
}

int bh_client_intents_async(bh_client *c, const char *fingerprint, bh_client_intents_cb cb,
			    void *arg, struct bh_client_error **err)
{
	struct wire_operator_intents_request req = {.session = fingerprint ? fingerprint : ""};
	struct fcall *f = fcall_new(K_INTENTS, arg);
	f->cb.intents = cb;
	return send_call(c, "ListIntents", wire_operator_encode_intents_request(&req), f, err);
}

int bh_client_capture_async(bh_client *c, const struct wire_operator_capture_request *req,
			    bh_client_captured_cb cb, void *arg, struct bh_client_error **err)
{
	struct fcall *f = fcall_new(K_CAPTURED, arg);
	f->cb.captured = cb;
	return send_call(c, "Capture", wire_operator_encode_capture_request(req), f, err);
}

int bh_client_search_async(bh_client *c, const char *query, uint32_t limit,
			   bh_client_hits_cb cb, void *arg, struct bh_client_error **err)
{
	struct wire_operator_search_request req = {.query = query, .limit = limit};
	struct fcall *f = fcall_new(K_HITS, arg);
	f->cb.hits = cb;
	return send_call(c, "Search", wire_operator_encode_search_request(&req), f, err);
}

int bh_client_reap_async(bh_client *c, const struct bh_leak *chosen, size_t n, bool dry_run,
			 bh_client_leaks_cb cb, void *arg, struct bh_client_error **err)
{
	struct wire_operator_reap_request req = {.findings = (struct bh_leak *)chosen, .n = n,
						 .dry_run = dry_run};
	struct fcall *f = fcall_new(K_REAP, arg);
	f->cb.leaks = cb;
	f->dry_run = dry_run;
	return send_call(c, "Reap", wire_operator_encode_reap_request(&req), f, err);
}

/* ---- the blocking forms: the answer moved out of the callback ---- */

struct wait {
	bool done;
	void *out;
	size_t size;
	struct bh_client_error *err;
};

static void keep(struct wait *w, const void *res, const struct bh_client_error *err)
{
	w->done = true;
	if (err)
		w->err = bh_client_error_dup(err);
	else {
		memcpy(w->out, res, w->size);
		memset((void *)res, 0, w->size); /* moved: the library frees nothing of it */
	}
}

static void kept_intents(void *arg, const struct wire_operator_intents *res,
			 const struct bh_client_error *err)
{
	keep(arg, res, err);
}

static void kept_captured(void *arg, const struct wire_operator_captured *res,
			  const struct bh_client_error *err)
{
	keep(arg, res, err);
}

static void kept_hits(void *arg, const struct wire_operator_hits *res,
		      const struct bh_client_error *err)
{
	keep(arg, res, err);
}

static void kept_leaks(void *arg, struct wire_operator_leaks *res,
		       const struct bh_client_error *err)
{
	keep(arg, res, err);
}

static int wait_for(bh_client *c, int started, struct wait *w, struct bh_client_error **err)
{
	if (started < 0)
		return -1;
	if (bh_client_wait(c, &w->done, -1) < 0 && !w->done)
		return client_fail(err, client_error(WIRE_UNKNOWN, WIRE_REFUSAL_UNSPECIFIED,
						     "the client's loop stopped before the answer"));
	if (w->err)
		return client_fail(err, w->err);
	return 0;
}

int bh_client_intents(bh_client *c, const char *fingerprint, struct wire_operator_intents *out,
		      struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	struct wait w = {.out = out, .size = sizeof *out};
	return wait_for(c, bh_client_intents_async(c, fingerprint, kept_intents, &w, err), &w, err);
}

int bh_client_capture(bh_client *c, const struct wire_operator_capture_request *req,
		      struct wire_operator_captured *out, struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	struct wait w = {.out = out, .size = sizeof *out};
	return wait_for(c, bh_client_capture_async(c, req, kept_captured, &w, err), &w, err);
}

int bh_client_search(bh_client *c, const char *query, uint32_t limit,
		     struct wire_operator_hits *out, struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	struct wait w = {.out = out, .size = sizeof *out};
	return wait_for(c, bh_client_search_async(c, query, limit, kept_hits, &w, err), &w, err);
}

int bh_client_reap(bh_client *c, const struct bh_leak *chosen, size_t n, bool dry_run,
		   struct wire_operator_leaks *out, struct bh_client_error **err)
{
	memset(out, 0, sizeof *out);
	struct wait w = {.out = out, .size = sizeof *out};
	return wait_for(c, bh_client_reap_async(c, chosen, n, dry_run, kept_leaks, &w, err), &w,
			err);
}
