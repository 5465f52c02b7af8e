/* Errors that keep the one distinction a caller retries on: whether
 * anything ran. Only a mark the daemon set on an answer bound to our request
 * (or a failure to reach the daemon at all) says "Nothing ran"; everything
 * else — a transport failure after sending, an unbound answer, a record that
 * does not check — says the code may have run. */
#include "client_priv.h"

#include <stdio.h>
#include <string.h>

#define MAY_HAVE_RUN "The code may have run, and there is no checked answer for it: "

void client_error_reword(struct bh_client_error *e, const char *words)
{
	char *m = e->not_dispatched
			  ? xasprintf("Nothing ran (%s): %s", wire_refusal_name(e->reason), words)
			  : xasprintf(MAY_HAVE_RUN "%s", words);
	free(e->message);
	e->message = m;
}

const char *client_error_words(const struct bh_client_error *e)
{
	const char *m = e->message;
	if (!strncmp(m, MAY_HAVE_RUN, strlen(MAY_HAVE_RUN)))
		return m + strlen(MAY_HAVE_RUN);
	if (!strncmp(m, "Nothing ran (", 13)) {
		const char *p = strstr(m, "): ");
		if (p)
			return p + 3;
	}
	return m;
}

struct bh_client_error *client_verror(enum wire_code code, enum wire_refusal reason,
				      const char *fmt, va_list ap)
{
	struct bh_client_error *e = xzalloc(sizeof *e);
	e->code = code;
	e->not_dispatched = reason != WIRE_REFUSAL_UNSPECIFIED;
	e->reason = reason;
	e->end_detail = xstrdup("");
	cleanup_free char *words = NULL;
	if (vasprintf(&words, fmt, ap) < 0)
		abort();
	client_error_reword(e, words);
	return e;
}

struct bh_client_error *client_error(enum wire_code code, enum wire_refusal reason,
				     const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct bh_client_error *e = client_verror(code, reason, fmt, ap);
	va_end(ap);
	return e;
}

struct bh_client_error *client_data_loss(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct bh_client_error *e = client_verror(WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED, fmt, ap);
	va_end(ap);
	return e;
}

int client_fail(struct bh_client_error **out, struct bh_client_error *err)
{
	if (out)
		*out = err;
	else
		bh_client_error_free(err);
	return -1;
}

void bh_client_error_free(struct bh_client_error *e)
{
	if (!e)
		return;
	free(e->message);
	free(e->end_detail);
	if (e->unanswered)
		wire_record_free(&e->record);
	free(e);
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

struct bh_client_error *bh_client_error_dup(const struct bh_client_error *e)
{
	if (!e)
		return NULL;
	struct bh_client_error *d = xzalloc(sizeof *d);
	*d = *e;
	d->message = xstrdup(e->message);
	d->end_detail = xstrdup(e->end_detail);
	if (e->unanswered) {
		d->record.unanswered = dup_or_null(e->record.unanswered);
		d->record.provider = dup_or_null(e->record.provider);
		d->record.isolation = dup_or_null(e->record.isolation);
		d->record.environment = dup_or_null(e->record.environment);
		d->record.policy = dup_or_null(e->record.policy);
		d->record.software_identity = dup_or_null(e->record.software_identity);
		d->record.software_rule_id = dup_or_null(e->record.software_rule_id);
	}
	return d;
}

/* A Plimsoll-Not-Dispatched header names a reason by its short name. */
static enum wire_refusal refusal_by_name(const char *name)
{
	for (int r = WIRE_REFUSAL_REQUEST; r <= WIRE_REFUSAL_ENVIRONMENT; r++)
		if (!strcmp(name, wire_refusal_name((enum wire_refusal)r)))
			return (enum wire_refusal)r;
	return WIRE_REFUSAL_UNSPECIFIED; /* an unknown name marks nothing */
}

static struct bh_client_error *no_answer(const struct bh_client_http *a)
{
	if (a->unsent)
		return client_error(WIRE_UNAVAILABLE, WIRE_REFUSAL_ENVIRONMENT,
				    "cannot reach the daemon: %s", a->transport_error);
	if (a->too_large)
		return client_error(WIRE_RESOURCE_EXHAUSTED, WIRE_REFUSAL_UNSPECIFIED,
				    "the daemon's answer is larger than %u bytes",
				    BH_CLIENT_MAX_ANSWER);
	if (a->timed_out)
		return client_error(WIRE_DEADLINE_EXCEEDED, WIRE_REFUSAL_UNSPECIFIED,
				    "no whole answer in time: %s", a->transport_error);
	return client_error(WIRE_UNAVAILABLE, WIRE_REFUSAL_UNSPECIFIED,
			    "the exchange broke after the request was sent: %s", a->transport_error);
}

struct bh_client_error *bh_client_error_of(const struct bh_client_http *a)
{
	if (a->status == 0)
		return no_answer(a);
	if (a->status == 200) {
		if (a->bound)
			return NULL;
		return client_data_loss("the answer does not carry this request's id back (a daemon "
					"older than protocol 3, or something in between answered "
					"with another request's answer or dropped the header), so "
					"nothing it says about the call is believed");
	}
	if (a->status >= 300 && a->status < 400)
		return client_error(WIRE_UNKNOWN, WIRE_REFUSAL_UNSPECIFIED,
				    "the call was answered with a redirect (HTTP %ld), which this "
				    "client never follows",
				    a->status);
	struct wire_error we;
	wire_decode_error((int)a->status, a->body, a->len, &we);
	struct bh_client_error *e = xzalloc(sizeof *e);
	e->code = we.code;
	e->http_status = (int)a->status;
	if (!a->bound) {
		/* An error keeps its code and words, and loses everything it said
		 * about the call: its mark, its session end, its record. */
		e->end_detail = xstrdup("");
		cleanup_free char *words = xasprintf(
			"%s (this answer does not carry the request's id back, so what it says "
			"about the call is ignored)",
			we.message);
		client_error_reword(e, words);
		wire_error_free(&we);
		return e;
	}
	e->not_dispatched = we.not_dispatched;
	e->reason = we.reason;
	if (!e->not_dispatched && a->mark[0]) {
		e->reason = refusal_by_name(a->mark);
		e->not_dispatched = e->reason != WIRE_REFUSAL_UNSPECIFIED;
	}
	e->session_ended = we.session_ended;
	e->end = we.end;
	e->end_detail = xstrdup(we.end_detail);
	if (we.unanswered) {
		e->unanswered = true;
		e->record = we.record; /* moved */
		we.unanswered = false;
		memset(&we.record, 0, sizeof we.record);
	}
	client_error_reword(e, we.message);
	wire_error_free(&we);
	return e;
}
