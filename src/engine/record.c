#include "record.h"
#include "util.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

struct digest {
	EVP_MD_CTX *ctx;
};

static void value(struct digest *d, const void *p, size_t n)
{
	uint8_t len[8];
	for (int i = 0; i < 8; i++)
		len[i] = (uint8_t)((uint64_t)n >> (56 - 8 * i));
	EVP_DigestUpdate(d->ctx, len, 8);
	if (n)
		EVP_DigestUpdate(d->ctx, p, n);
}

static void begin(struct digest *d, const char *domain)
{
	d->ctx = EVP_MD_CTX_new();
	if (!d->ctx)
		abort();
	EVP_DigestInit_ex(d->ctx, EVP_sha256(), NULL);
	value(d, domain, strlen(domain));
}

static void finish(struct digest *d, char out[65])
{
	uint8_t md[32];
	unsigned int n = 0;
	EVP_DigestFinal_ex(d->ctx, md, &n);
	EVP_MD_CTX_free(d->ctx);
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void field_bytes(struct digest *d, const char *name, const void *p, size_t n)
{
	value(d, name, strlen(name));
	value(d, p, n);
}

static void field_str(struct digest *d, const char *name, const char *s)
{
	field_bytes(d, name, s ? s : "", s ? strlen(s) : 0);
}

static void field_int(struct digest *d, const char *name, int64_t v)
{
	char buf[24];
	snprintf(buf, sizeof buf, "%" PRId64, v);
	field_str(d, name, buf);
}

static void field_uint(struct digest *d, const char *name, uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof buf, "%" PRIu64, v);
	field_str(d, name, buf);
}

static void field_bool(struct digest *d, const char *name, bool v)
{
	field_str(d, name, v ? "true" : "false");
}

void bh_request_digest(const struct bh_request_fields *r, char out[65])
{
	struct digest d;
	begin(&d, r->protocol >= 2 ? "plimsoll.run-request.v2" : "plimsoll.run-request.v1");
	field_uint(&d, "protocol", r->protocol);
	field_str(&d, "minimum_isolation", r->minimum_isolation);
	field_int(&d, "timeout_ms", r->timeout_ms);
	if (r->protocol >= 2) {
		field_str(&d, "software_mode", r->software_mode);
		field_uint(&d, "software_identities", r->n_identities);
		for (size_t i = 0; i < r->n_identities; i++)
			field_str(&d, "software_identity", r->software_identities[i]);
	}
	const char *kind = r->kind ? r->kind : "";
	field_str(&d, "kind", kind);
	if (!strcmp(kind, "javascript")) {
		field_bytes(&d, "code", r->code, r->code_len);
		field_str(&d, "grant_profile", r->grant_profile);
	} else if (!strcmp(kind, "cell")) {
		field_str(&d, "language", r->language);
		field_bytes(&d, "code", r->code, r->code_len);
		field_uint(&d, "files", r->n_files);
		for (size_t i = 0; i < r->n_files; i++) {
			field_str(&d, "file_path", r->files[i].path);
			field_bytes(&d, "file_content", r->files[i].content, r->files[i].len);
		}
	} else if (!strcmp(kind, "project")) { /* ---- project (plimsoll.md §5.2) ---- */
		field_str(&d, "grant_profile", r->grant_profile);
		field_uint(&d, "files", r->n_files);
		for (size_t i = 0; i < r->n_files; i++) {
			field_str(&d, "file_path", r->files[i].path);
			field_bytes(&d, "file_content", r->files[i].content, r->files[i].len);
		}
		field_uint(&d, "steps", r->n_steps);
		for (size_t i = 0; i < r->n_steps; i++)
			field_str(&d, "step_command", r->steps[i]);
		field_uint(&d, "artifacts", r->n_artifacts);
		for (size_t i = 0; i < r->n_artifacts; i++)
			field_str(&d, "artifact_path", r->artifacts[i]);
	}
	finish(&d, out);
}

void bh_result_digest(const struct bh_result_fields *r, char out[65])
{
	struct digest d;
	begin(&d, "plimsoll.run-result.v1");
	field_str(&d, "kind", r->kind);
	if (r->kind && !strcmp(r->kind, "project")) { /* ---- project (plimsoll.md §5.2) ---- */
		field_int(&d, "outcome", r->outcome);
		field_str(&d, "outcome_detail", r->outcome_detail);
		field_bool(&d, "artifacts_truncated", r->artifacts_truncated);
		field_uint(&d, "steps", r->n_steps);
		for (size_t i = 0; i < r->n_steps; i++) {
			const struct bh_project_step *st = &r->steps[i];
			field_str(&d, "step_command", st->command);
			field_int(&d, "step_exit_code", st->exit_code);
			field_bool(&d, "step_timed_out", st->timed_out);
			field_bytes(&d, "step_stdout", st->out, st->out_len);
			field_bytes(&d, "step_stderr", st->errout, st->errout_len);
			field_bool(&d, "step_stdout_truncated", st->stdout_truncated);
			field_bool(&d, "step_stderr_truncated", st->stderr_truncated);
		}
		field_uint(&d, "artifacts", r->n_artifacts);
		for (size_t i = 0; i < r->n_artifacts; i++) {
			field_str(&d, "artifact_path", r->artifacts[i].path);
			field_bytes(&d, "artifact_content", r->artifacts[i].content,
				    r->artifacts[i].len);
		}
		finish(&d, out);
		return;
	}
	field_int(&d, "exit_code", r->exit_code);
	field_bool(&d, "timed_out", r->timed_out);
	field_bytes(&d, "stdout", r->out, r->out_len);
	field_bytes(&d, "stderr", r->err, r->err_len);
	field_bool(&d, "stdout_truncated", r->stdout_truncated);
	field_bool(&d, "stderr_truncated", r->stderr_truncated);
	if (r->kind && !strcmp(r->kind, "cell")) {
		field_bool(&d, "interpreter_started", r->interpreter_started);
		field_bool(&d, "interpreter_ended", r->interpreter_ended);
	}
	finish(&d, out);
}

static void record_digest(const struct bh_record *rec, char out[65])
{
	char domain[48];
	snprintf(domain, sizeof domain, "plimsoll.run-record.v%d", rec->version);
	struct digest d;
	begin(&d, domain);
	field_str(&d, "request_sha256", rec->request_sha256);
	field_str(&d, "result_sha256", rec->result_sha256);
	if (rec->version == 3)
		field_str(&d, "unanswered", rec->unanswered);
	field_str(&d, "provider", rec->provider);
	field_str(&d, "isolation", rec->isolation);
	field_str(&d, "environment", rec->environment);
	field_str(&d, "policy", rec->policy);
	if (rec->version >= 2) {
		field_str(&d, "software_identity", rec->software_identity);
		field_str(&d, "software_rule_id", rec->software_rule_id);
	}
	field_int(&d, "started_unix_ms", rec->started_unix_ms);
	field_int(&d, "ended_unix_ms", rec->ended_unix_ms);
	field_str(&d, "session", rec->session);
	field_uint(&d, "sequence", rec->sequence);
	field_str(&d, "previous_sha256", rec->previous_sha256);
	finish(&d, out);
}

void bh_record_seal(struct bh_record *rec)
{
	record_digest(rec, rec->record_sha256);
}

bool bh_record_verify(const struct bh_record *rec)
{
	char want[65];
	record_digest(rec, want);
	return !strcmp(want, rec->record_sha256);
}

void bh_fingerprint_of(const char *session_id, char out[65])
{
	sha256_hex(session_id, strlen(session_id), out);
}

/* ---- capture ---- */
enum bh_chain_verdict bh_chain_step(struct bh_chain_walk *w, const struct bh_record *rec)
{
	if (!bh_record_verify(rec))
		return BH_CHAIN_DIGEST;
	if (!rec->session[0])
		return BH_CHAIN_OK;
	if (strcmp(w->session, rec->session)) {
		snprintf(w->session, sizeof w->session, "%s", rec->session);
		w->sequence = 0;
		w->previous[0] = '\0';
	}
	if (rec->sequence != w->sequence + 1 || strcmp(rec->previous_sha256, w->previous))
		return BH_CHAIN_LINK;
	w->sequence = rec->sequence;
	snprintf(w->previous, sizeof w->previous, "%s", rec->record_sha256);
	return BH_CHAIN_OK;
}

void bh_chain_begin_after(struct bh_chain_walk *w, const char *session, uint64_t sequence,
			  const char *previous)
{
	snprintf(w->session, sizeof w->session, "%s", session ? session : "");
	w->sequence = sequence;
	snprintf(w->previous, sizeof w->previous, "%s", previous ? previous : "");
}
