/* What the sources share. */
#include "source.h"
#include "record.h"
#include "wire_operator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *grow(void *p, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return p;
	*cap = *cap ? 2 * *cap : 64;
	p = realloc(p, *cap * size);
	if (!p)
		abort();
	return p;
}

int ui_collect_record(void *arg, const struct bh_record_row *row)
{
	struct ui_record_rows *x = arg;
	x->r = grow(x->r, x->n, &x->cap, sizeof *x->r);
	ui_record_from(&x->r[x->n++], row->id, row->record, row->language, row->flags, row->exit_code,
		       row->duration_us);
	return 0;
}

int ui_collect_event(void *arg, const struct bh_event *ev)
{
	struct ui_event_rows *x = arg;
	x->r = grow(x->r, x->n, &x->cap, sizeof *x->r);
	struct ui_event *o = &x->r[x->n++];
	*o = (struct ui_event){.id = ev->id, .at_ms = ev->at_unix_ms};
	snprintf(o->kind, sizeof o->kind, "%s", ev->kind ? ev->kind : "");
	snprintf(o->session, sizeof o->session, "%s", ev->session ? ev->session : "");
	snprintf(o->sandbox, sizeof o->sandbox, "%s", ev->sandbox ? ev->sandbox : "");
	snprintf(o->detail, sizeof o->detail, "%s", ev->detail ? ev->detail : "");
	/* ---- ci: attribution ---- */
	snprintf(o->actor, sizeof o->actor, "%s", ev->actor ? ev->actor : "");
	snprintf(o->request_id, sizeof o->request_id, "%s", ev->request_id ? ev->request_id : "");
	return 0;
}

void ui_session_from(struct ui_session *r, const struct wire_operator_session *o)
{
	memset(r, 0, sizeof *r);
	snprintf(r->fp, sizeof r->fp, "%s", o->fingerprint);
	snprintf(r->sandbox, sizeof r->sandbox, "%s", o->sandbox);
	snprintf(r->state, sizeof r->state, "%s", o->state);
	snprintf(r->tier, sizeof r->tier, "%s", o->isolation);
	snprintf(r->floor, sizeof r->floor, "%s", o->floor);
	snprintf(r->principal, sizeof r->principal, "%s", o->principal);
	snprintf(r->owner, sizeof r->owner, "%s", o->owner);
	snprintf(r->run_key, sizeof r->run_key, "%s", o->run_key);
	snprintf(r->last_record, sizeof r->last_record, "%s", o->last_record_sha256);
	snprintf(r->end_reason, sizeof r->end_reason, "%s", o->end_reason);
	r->calls = o->calls;
	r->awake_ms = o->awake_ms;
	r->created_ms = o->created_unix_ms;
	r->last_call_ms = o->last_call_unix_ms;
	r->expires_ms = o->expires_unix_ms;
	/* ---- truth ---- */
	snprintf(r->call_language, sizeof r->call_language, "%s", o->call_language ? o->call_language : "");
	r->call_started_ms = o->call_started_unix_ms;
	r->pauses_ms = o->pauses_unix_ms;
	r->hibernates_ms = o->hibernates_unix_ms;
	snprintf(r->evidence, sizeof r->evidence, "%s", o->evidence ? o->evidence : "");
	snprintf(r->end_detail, sizeof r->end_detail, "%s", o->end_detail ? o->end_detail : "");
	/* ---- egress ---- */
	snprintf(r->egress_profile, sizeof r->egress_profile, "%s", o->egress_profile ? o->egress_profile : "");
	r->egress_requests = o->egress_requests;
	snprintf(r->egress_last, sizeof r->egress_last, "%s", o->egress_last ? o->egress_last : "");
	/* ---- replay: refused calls ---- */
	r->refused = o->refused;
	snprintf(r->last_refusal, sizeof r->last_refusal, "%s", o->last_refusal ? o->last_refusal : "");
}

void ui_record_from(struct ui_record *o, int64_t id, const struct bh_record *r, const char *language,
		    const char *flags, int exit_code, int64_t duration_us)
{
	*o = (struct ui_record){.id = id, .version = r->version, .started_ms = r->started_unix_ms,
				.ended_ms = r->ended_unix_ms, .sequence = r->sequence,
				.exit_code = exit_code, .duration_us = duration_us};
#define COPY(field, src) snprintf(o->field, sizeof o->field, "%s", (src) ? (src) : "")
	COPY(request, r->request_sha256);
	COPY(result, r->result_sha256);
	COPY(unanswered, r->unanswered);
	COPY(provider, r->provider);
	COPY(isolation, r->isolation);
	COPY(environment, r->environment);
	COPY(policy, r->policy);
	COPY(software_identity, r->software_identity);
	COPY(software_rule_id, r->software_rule_id);
	COPY(session, r->session);
	COPY(previous, r->previous_sha256);
	COPY(record, r->record_sha256);
	COPY(language, language);
	COPY(flags, flags);
#undef COPY
}

int ui_source_no_fds(struct ui_source *s, struct pollfd *fds, int max)
{
	(void)s, (void)fds, (void)max;
	return 0;
}

int ui_source_no_timeout(struct ui_source *s)
{
	(void)s;
	return -1;
}

void ui_source_no_process(struct ui_source *s)
{
	(void)s;
}

int ui_source_no_pending(struct ui_source *s)
{
	(void)s;
	return 0;
}

/* What a history read answers with: NULL when it went through (rc >= 0),
 * else why it did not. */
static const char *read_failure(int rc, const bh_error *err)
{
	if (rc >= 0)
		return NULL;
	return err ? err->msg : "the history could not be read";
}

/* After an answer: the read's error and rows are the answer's to free. */
static void answered(bh_error *err, void *rows)
{
	bh_error_free(err);
	free(rows);
}

void ui_answer_records(ui_records_fn cb, void *arg, int rc, struct ui_record_rows *x, bh_error *err)
{
	cb(arg, rc < 0 ? NULL : x->r, rc < 0 ? 0 : x->n, read_failure(rc, err));
	answered(err, x->r);
	x->r = NULL;
}

void ui_answer_events(ui_events_fn cb, void *arg, int rc, struct ui_event_rows *x, bh_error *err)
{
	cb(arg, rc < 0 ? NULL : x->r, rc < 0 ? 0 : x->n, read_failure(rc, err));
	answered(err, x->r);
	x->r = NULL;
}

/* ---- stream ---- */

static char *copy_bytes(const uint8_t *p, size_t n)
{
	char *c = malloc(n + 1);
	if (!c)
		abort();
	if (n)
		memcpy(c, p, n);
	c[n] = '\0';
	return c;
}

int ui_collect_cell(void *arg, const struct bh_cell_row *row)
{
	struct ui_cell_rows *x = arg;
	if (x->n == x->cap) {
		x->cap = x->cap ? x->cap * 2 : 16;
		x->r = realloc(x->r, x->cap * sizeof *x->r);
		if (!x->r)
			abort();
	}
	struct ui_cell *c = &x->r[x->n++];
	*c = (struct ui_cell){.sequence = row->sequence, .exit_code = row->exit_code,
			      .duration_us = row->duration_us, .started_ms = row->started_unix_ms,
			      .ended_ms = row->ended_unix_ms};
	snprintf(c->language, sizeof c->language, "%s", row->language);
	snprintf(c->flags, sizeof c->flags, "%s", row->flags);
	snprintf(c->unanswered, sizeof c->unanswered, "%s", row->unanswered);
	snprintf(c->record, sizeof c->record, "%s", row->record_sha256);
	c->code = copy_bytes(row->code, row->code_len);
	c->code_len = row->code_len;
	c->out = copy_bytes(row->out, row->out_len);
	c->out_len = row->out_len;
	c->err = copy_bytes(row->err, row->err_len);
	c->err_len = row->err_len;
	return 0;
}

void ui_answer_cells(ui_cells_fn cb, void *arg, int rc, struct ui_cell_rows *x, bh_error *err)
{
	cb(arg, rc < 0 ? NULL : x->r, rc < 0 ? 0 : x->n,
	   rc < 0 ? (err ? err->msg : "the store could not be read") : NULL);
	for (size_t i = 0; i < x->n; i++) {
		free((char *)x->r[i].code);
		free((char *)x->r[i].out);
		free((char *)x->r[i].err);
	}
	free(x->r);
	bh_error_free(err);
}

void ui_follow_from(struct ui_follow *out, const struct bh_cell_output *o)
{
	*out = (struct ui_follow){
		.sequence = o->sequence,
		.running = o->running,
		.done = o->sequence && !o->running,
		.answered = o->answered,
		.started_ms = o->started_unix_ms,
		.out_offset = o->out_offset,
		.err_offset = o->err_offset,
		.code = o->code,
		.code_len = o->code_len,
		.out = (const char *)o->out,
		.out_len = o->out_len,
		.err = (const char *)o->err,
		.err_len = o->err_len,
		.exit_code = o->exit_code,
		.timed_out = o->timed_out,
		.stdout_truncated = o->stdout_truncated,
		.stderr_truncated = o->stderr_truncated,
		.duration_us = o->duration_us,
	};
	snprintf(out->language, sizeof out->language, "%s",
		 o->sequence ? bh_language_name(o->language) : "");
	snprintf(out->record, sizeof out->record, "%s", o->record_sha256);
}

/* ---- capture ---- */
void ui_source_no_capture(struct ui_source *s, const char *target, const char *dir,
			  ui_captured_fn cb, void *arg)
{
	(void)s, (void)target;
	cb(arg, dir, NULL, UI_NO_CAPTURE);
}

void ui_source_no_search(struct ui_source *s, const char *query, ui_search_fn cb, void *arg)
{
	(void)s, (void)query;
	cb(arg, NULL, 0, UI_NO_SEARCH);
}

int ui_collect_search_hit(void *arg, const struct bh_search_hit *h)
{
	struct ui_search_rows *x = arg;
	x->r = grow(x->r, x->n, &x->cap, sizeof *x->r);
	struct ui_search_hit *o = &x->r[x->n++];
	memset(o, 0, sizeof *o);
	o->id = h->id;
	o->sequence = h->sequence;
	o->started_ms = h->started_unix_ms;
	snprintf(o->session, sizeof o->session, "%s", h->session ? h->session : "");
	snprintf(o->stream, sizeof o->stream, "%s", h->stream);
	size_t n = h->snippet_len < sizeof o->snippet ? h->snippet_len : sizeof o->snippet;
	memcpy(o->snippet, h->snippet, n);
	o->snippet_len = n;
	o->match_at = h->match_at < n ? h->match_at : n;
	o->match_len = o->match_at + h->match_len <= n ? h->match_len : n - o->match_at;
	o->cut_before = h->cut_before;
	o->cut_after = h->cut_after;
	return 0;
}

void ui_record_to_bh(const struct ui_record *u, struct bh_record *r)
{
	*r = (struct bh_record){.version = u->version, .unanswered = u->unanswered,
				.provider = u->provider, .isolation = u->isolation,
				.environment = u->environment, .policy = u->policy,
				.software_identity = u->software_identity,
				.software_rule_id = u->software_rule_id,
				.started_unix_ms = u->started_ms, .ended_unix_ms = u->ended_ms,
				.sequence = u->sequence};
	snprintf(r->request_sha256, sizeof r->request_sha256, "%s", u->request);
	snprintf(r->result_sha256, sizeof r->result_sha256, "%s", u->result);
	snprintf(r->session, sizeof r->session, "%s", u->session);
	snprintf(r->previous_sha256, sizeof r->previous_sha256, "%s", u->previous);
	snprintf(r->record_sha256, sizeof r->record_sha256, "%s", u->record);
}

/* ---- fleet: a source used without the console (bulkhead fleet leaks) ---- */
void ui_source_free(struct ui_source *s)
{
	if (s)
		s->ops->free(s);
}
