/* What the sources share. */
#include "source.h"
#include "record.h"

#include <stdio.h>

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
