/* Run records in plimsoll's encoding (its RunRecord, field by field):
 * every value an 8-byte big-endian length then its bytes; a digest is the
 * lowercase hex SHA-256 over the domain, then each field's name and content.
 * The golden vector 585a1b46…be8fc is a unit test. */
#ifndef BH_RECORD_H
#define BH_RECORD_H

#include "bulkhead.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What was sent. kind: "cell", "javascript", "project" or "" (none). */
struct bh_request_fields {
	uint32_t protocol;
	const char *minimum_isolation; /* "" when no floor was sent */
	int64_t timeout_ms;            /* as sent; 0 when omitted */
	const char *software_mode;     /* "" when no rule */
	const char *const *software_identities;
	size_t n_identities;
	const char *kind;
	const char *language;          /* cell */
	const uint8_t *code;
	size_t code_len;
	const char *grant_profile;     /* javascript */
	const struct bh_file *files; /* cell, project */
	size_t n_files;
	/* ---- project ---- */
	const char *const *steps;
	size_t n_steps;
	const char *const *artifacts;
	size_t n_artifacts;
};

/* What was answered. kind: "cell", "javascript" or "project". */
struct bh_result_fields {
	const char *kind;
	int exit_code;
	bool timed_out;
	const uint8_t *out;
	size_t out_len;
	const uint8_t *err;
	size_t err_len;
	bool stdout_truncated, stderr_truncated;
	bool interpreter_started, interpreter_ended; /* cell only */
	/* ---- project: kind "project" digests these and none of the above ---- */
	int outcome; /* enum bh_project_outcome: the number enters the digest */
	const char *outcome_detail;
	bool artifacts_truncated;
	const struct bh_project_step *steps;
	size_t n_steps;
	const struct bh_artifact *artifacts;
	size_t n_artifacts;
};

void bh_request_digest(const struct bh_request_fields *r, char out[65]);
void bh_result_digest(const struct bh_result_fields *r, char out[65]);

/* The record itself. Strings are owned by whoever fills it. */
struct bh_record {
	int version;               /* 2 answered, 3 may have run but failed */
	char request_sha256[65];
	char result_sha256[65];    /* empty on version 3 */
	const char *unanswered;    /* version 3: the Connect code name */
	const char *provider;
	const char *isolation;
	const char *environment;
	const char *policy;
	const char *software_identity;
	const char *software_rule_id;
	int64_t started_unix_ms, ended_unix_ms;
	char session[65];          /* fingerprint; empty for a single run */
	uint64_t sequence;         /* 1-based in a session; 0 for a single run */
	char previous_sha256[65];
	char record_sha256[65];
};

/* Computes record_sha256 from every other field. */
void bh_record_seal(struct bh_record *rec);
/* Recomputes and compares; true when the stored digest matches. */
bool bh_record_verify(const struct bh_record *rec);
/* ---- capture: a chain walked one record at a time ---- */
/* The one check of `bulkhead verify`, the report and the console: records
 * come in chain order (bh_history_chains: single runs, then each session
 * by sequence), a walk starts zeroed. */
struct bh_chain_walk {
	char session[65];
	uint64_t sequence;
	char previous[65];
};
enum bh_chain_verdict {
	BH_CHAIN_OK,
	BH_CHAIN_DIGEST,  /* record_sha256 is not the digest of its fields */
	BH_CHAIN_LINK,    /* not the next sequence, or previous_sha256 is not the last one's */
};
enum bh_chain_verdict bh_chain_step(struct bh_chain_walk *w, const struct bh_record *rec);
/* ---- fleet (issue 20): a chain adopted from another engine's store goes
 * on here after its record `sequence` (digest previous): the walk takes
 * the next record of session as linked to that one. What came before is
 * in the other store, verified there. ---- */
void bh_chain_begin_after(struct bh_chain_walk *w, const char *session, uint64_t sequence,
			  const char *previous);
/* SHA-256 hex of a session id: its public fingerprint. */
void bh_fingerprint_of(const char *session_id, char out[65]);

#endif
