/* The checks plimsoll's clients make on every answer, a version-3 record of
 * an unanswered call included, from what this client sent and what it
 * received: nothing the daemon says about a record is taken on trust. Each
 * check returns why the answer does not hold, or NULL. */
#include "client_priv.h"

#include <stdio.h>
#include <string.h>

void sent_init(struct sent *s, const char *kind, enum bh_tier floor, int32_t timeout_ms)
{
	memset(s, 0, sizeof *s);
	if (floor > BH_TIER_NONE)
		snprintf(s->floor_name, sizeof s->floor_name, "%s", bh_tier_name(floor));
	s->req.env.protocol = WIRE_PROTOCOL;
	s->req.env.minimum_isolation = s->floor_name; /* "" when none: as sent, as digested */
	s->req.env.floor = floor > BH_TIER_NONE ? floor : BH_TIER_UNKNOWN;
	s->req.env.timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
	s->req.kind = !strcmp(kind, "cell")      ? WIRE_PAYLOAD_CELL
		      : !strcmp(kind, "project") ? WIRE_PAYLOAD_PROJECT /* ---- project ---- */
						 : WIRE_PAYLOAD_JAVASCRIPT;
	s->req.payloads = s->req.kind;
}

bool client_tier_meets(const char *isolation, enum bh_tier floor)
{
	if (floor <= BH_TIER_NONE)
		return true;
	enum bh_tier have;
	return bh_tier_parse(isolation, &have) == 0 && bh_tier_meets(have, floor);
}

enum bh_tier client_floor(enum bh_tier session, enum bh_tier call)
{
	return call > session ? call : session;
}

static const char *say(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static const char *say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return why;
}

static void request_digest(const struct sent *s, char out[65])
{
	struct bh_request_fields f;
	wire_request_fields(&s->req, &f);
	bh_request_digest(&f, out);
}

const char *check_answered(const struct sent *s, const struct wire_run_response *run,
			   char *why, size_t len)
{
	const struct bh_record *r = &run->record;
	const char *kind = s->req.kind == WIRE_PAYLOAD_CELL      ? "cell"
			   : s->req.kind == WIRE_PAYLOAD_PROJECT ? "project" /* ---- project ---- */
								 : "javascript";
	char want[65];
	if (!run->has_record)
		return say(why, len, "the answer carries no run record");
	if (r->version != 2)
		return say(why, len, "protocol %d requires record version 2, the record is version %d",
			   WIRE_PROTOCOL, r->version);
	if (!run->result.kind || strcmp(run->result.kind, kind))
		return say(why, len, "the answer's result is %s, the request was a %s",
			   run->result.kind ? run->result.kind : "missing", kind);
	request_digest(s, want);
	if (strcmp(r->request_sha256, want))
		return say(why, len, "request digest %s, the request sent digests to %s",
			   r->request_sha256, want);
	bh_result_digest(&run->result, want);
	if (strcmp(r->result_sha256, want))
		return say(why, len, "result digest %s, the result received digests to %s",
			   r->result_sha256, want);
	if (strcmp(r->provider, run->sandbox) || strcmp(r->isolation, run->isolation))
		return say(why, len, "the record names %s at \"%s\", the answer %s at \"%s\"",
			   r->provider, r->isolation, run->sandbox, run->isolation);
	if (strcmp(r->environment, run->environment))
		return say(why, len, "the record's environment differs from the answer's");
	if (strcmp(r->software_identity, run->software_identity) || *r->software_rule_id)
		return say(why, len, "the record's software or admission rule differs from the "
				     "request and the answer");
	if (!bh_record_verify(r))
		return say(why, len, "record digest %s does not match its fields", r->record_sha256);
	if (!client_tier_meets(run->isolation, s->req.env.floor))
		return say(why, len, "the answer's isolation %s is below the requested %s",
			   *run->isolation ? run->isolation : "(none)", s->floor_name);
	return NULL;
}

const char *check_unanswered(const struct sent *s, const struct bh_record *r, char *why,
			     size_t len)
{
	char want[65];
	enum wire_code code;
	if (r->version != 3)
		return say(why, len, "an unanswered call's record is version %d", r->version);
	if (r->result_sha256[0] || !r->unanswered ||
	    wire_code_parse(r->unanswered, &code) < 0 || code == WIRE_OK)
		return say(why, len, "an unanswered call's record states a result or no error code");
	request_digest(s, want);
	if (strcmp(r->request_sha256, want))
		return say(why, len, "request digest %s, the request sent digests to %s",
			   r->request_sha256, want);
	if (*r->software_rule_id)
		return say(why, len, "the record's software rule is not the request's");
	if (!bh_record_verify(r))
		return say(why, len, "record digest %s does not match its fields", r->record_sha256);
	return NULL;
}
