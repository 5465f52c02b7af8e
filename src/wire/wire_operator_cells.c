/* FollowCell and ListCells answers (stream): a session's latest cell as it
 * runs, and its stored cells newest first. The scalar fields are tables
 * (wire_fields.c); code and output are bytes, base64 on the wire, since a
 * cell's output is whatever it printed. The decoders are as strict as every
 * operator answer's (wire_operator.h). */
#include "wire_operator_priv.h"

#include <stdio.h>
#include <string.h>

/* ---- FollowCell ---- */

#define FOLLOW(member) WIRE_AT(struct wire_operator_follow, member)
static const struct wire_field follow_fields[] = {
	{"sequence", WIRE_F_U64, FOLLOW(sequence)},
	{"running", WIRE_F_BOOL, FOLLOW(running)},
	{"done", WIRE_F_BOOL, FOLLOW(done)},
	{"answered", WIRE_F_BOOL, FOLLOW(answered)},
	{"language", WIRE_F_STR, FOLLOW(language)},
	{"startedUnixMs", WIRE_F_I64, FOLLOW(started_unix_ms)},
	{"stdoutOffset", WIRE_F_U64, FOLLOW(stdout_offset)},
	{"stderrOffset", WIRE_F_U64, FOLLOW(stderr_offset)},
	{"exitCode", WIRE_F_I32, FOLLOW(exit_code)},
	{"timedOut", WIRE_F_BOOL, FOLLOW(timed_out)},
	{"stdoutTruncated", WIRE_F_BOOL, FOLLOW(stdout_truncated)},
	{"stderrTruncated", WIRE_F_BOOL, FOLLOW(stderr_truncated)},
	{"durationUs", WIRE_F_U64, FOLLOW(duration_us)},
	{"recordSha256", WIRE_F_STR, FOLLOW(record_sha256)},
};
#undef FOLLOW

/* A message's three byte members, by their offsets in its struct. */
struct blobs {
	const char *name;
	size_t data, len;
};

#define BLOB(type, d, l) offsetof(type, d), offsetof(type, l)
static const struct blobs follow_blobs[] = {
	{"code", BLOB(struct wire_operator_follow, code, code_len)},
	{"stdout", BLOB(struct wire_operator_follow, out, out_len)},
	{"stderr", BLOB(struct wire_operator_follow, err, err_len)},
};
static const struct blobs cell_blobs[] = {
	{"code", BLOB(struct wire_operator_cell, code, code_len)},
	{"stdout", BLOB(struct wire_operator_cell, out, out_len)},
	{"stderr", BLOB(struct wire_operator_cell, err, err_len)},
};
#undef BLOB

static void blobs_json(cJSON *o, const struct blobs *b, const void *msg)
{
	for (size_t i = 0; i < 3; i++) {
		const uint8_t *p = *(const uint8_t *const *)((const char *)msg + b[i].data);
		size_t n = *(const size_t *)((const char *)msg + b[i].len);
		jw_bytes(o, b[i].name, p, n);
	}
}

static void blobs_free(const struct blobs *b, void *msg)
{
	for (size_t i = 0; i < 3; i++)
		free(*(uint8_t **)((char *)msg + b[i].data));
}

static int blobs_read(const struct jr *r, const cJSON *obj, const char *path,
		      const struct blobs *b, void *msg)
{
	for (size_t i = 0; i < 3; i++) {
		uint8_t *p = NULL;
		size_t n = 0;
		if (jr_bytes(r, obj, path, b[i].name, &p, &n) < 0) {
			free(p);
			return -1;
		}
		*(uint8_t **)((char *)msg + b[i].data) = p;
		*(size_t *)((char *)msg + b[i].len) = n;
	}
	return 0;
}

struct wire_operator_follow wire_operator_follow_of(const struct bh_cell_output *o)
{
	size_t out_len = o->out_len < WIRE_OPERATOR_FOLLOW_MAX ? o->out_len : WIRE_OPERATOR_FOLLOW_MAX;
	size_t err_len = o->err_len < WIRE_OPERATOR_FOLLOW_MAX ? o->err_len : WIRE_OPERATOR_FOLLOW_MAX;
	/* Done only once everything after the cursor fits this answer. */
	bool all = out_len == o->out_len && err_len == o->err_len;
	return (struct wire_operator_follow){
		.sequence = o->sequence,
		.running = o->running,
		.done = o->sequence && !o->running && all,
		.answered = o->answered,
		.language = o->sequence ? bh_language_name(o->language) : "",
		.started_unix_ms = o->started_unix_ms,
		.stdout_offset = o->out_offset,
		.stderr_offset = o->err_offset,
		.exit_code = o->exit_code,
		.timed_out = o->timed_out,
		.stdout_truncated = o->stdout_truncated,
		.stderr_truncated = o->stderr_truncated,
		.duration_us = o->duration_us,
		.record_sha256 = o->record_sha256,
		.code = (const uint8_t *)o->code,
		.code_len = o->code_len,
		.out = o->out,
		.out_len = out_len,
		.err = o->err,
		.err_len = err_len,
	};
}

char *wire_operator_encode_follow(const struct wire_operator_follow *f)
{
	cJSON *o = jw_object();
	wire_fields_json(o, WIRE_FIELDS(follow_fields), f);
	blobs_json(o, follow_blobs, f);
	return jw_print(o);
}

void wire_operator_follow_free(struct wire_operator_follow *f)
{
	if (!f)
		return;
	blobs_free(follow_blobs, f);
	wire_fields_clear(WIRE_FIELDS(follow_fields), f, sizeof *f);
}

int wire_operator_decode_follow(const char *body, size_t len, struct wire_operator_follow *out,
				struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = op_reader(st);
	memset(out, 0, sizeof *out);
	if (op_parse("FollowCell", body, len, &root, st) < 0)
		return -1;
	if (wire_fields_read(&r, root, "", WIRE_FIELDS(follow_fields), out) < 0 ||
	    blobs_read(&r, root, "", follow_blobs, out) < 0) {
		wire_operator_follow_free(out);
		return op_refused("FollowCell", st);
	}
	/* What a follower relies on: a cursor that moves forward only, and a
	 * cell that is not both running and done. */
	if (out->running && out->done) {
		wire_operator_follow_free(out);
		jr_fail(&r, "running and done at once");
		return op_refused("FollowCell", st);
	}
	if (out->stdout_offset > UINT64_MAX - out->out_len ||
	    out->stderr_offset > UINT64_MAX - out->err_len) {
		wire_operator_follow_free(out);
		jr_fail(&r, "an offset past the end of any stream");
		return op_refused("FollowCell", st);
	}
	return 0;
}

/* ---- ListCells ---- */

#define CELL(member) WIRE_AT(struct wire_operator_cell, member)
static const struct wire_field cell_fields[] = {
	{"sequence", WIRE_F_U64, CELL(sequence)},
	{"language", WIRE_F_STR, CELL(language)},
	{"flags", WIRE_F_STR, CELL(flags)},
	{"unanswered", WIRE_F_STR, CELL(unanswered)},
	{"recordSha256", WIRE_F_STR, CELL(record_sha256)},
	{"exitCode", WIRE_F_I32, CELL(exit_code)},
	{"durationUs", WIRE_F_I64, CELL(duration_us)},
	{"startedUnixMs", WIRE_F_I64, CELL(started_unix_ms)},
	{"endedUnixMs", WIRE_F_I64, CELL(ended_unix_ms)},
};
#undef CELL

static int read_cell(const struct jr *r, const cJSON *obj, const char *path, void *out)
{
	struct wire_operator_cell *c = out;
	memset(c, 0, sizeof *c);
	if (wire_fields_read(r, obj, path, WIRE_FIELDS(cell_fields), c) < 0 ||
	    blobs_read(r, obj, path, cell_blobs, c) < 0) {
		wire_fields_free(WIRE_FIELDS(cell_fields), c);
		blobs_free(cell_blobs, c);
		memset(c, 0, sizeof *c);
		return -1;
	}
	return 0;
}

static const struct op_items cell_list = {
	.name = "cells", .size = sizeof(struct wire_operator_cell), .read = read_cell,
};

static uint8_t *copy_bytes(const uint8_t *p, size_t n)
{
	uint8_t *c = wire_check_alloc(malloc(n ? n : 1));
	if (n)
		memcpy(c, p, n);
	return c;
}

void wire_operator_cells_add(struct wire_operator_cells *page, const struct bh_cell_row *row)
{
	if (page->n == page->cap) {
		page->cap = page->cap ? page->cap * 2 : 16;
		page->cells = wire_check_alloc(realloc(page->cells, page->cap * sizeof *page->cells));
	}
	page->cells[page->n++] = (struct wire_operator_cell){
		.sequence = row->sequence,
		.language = xstrdup(row->language),
		.flags = xstrdup(row->flags),
		.unanswered = xstrdup(row->unanswered),
		.record_sha256 = xstrdup(row->record_sha256),
		.exit_code = row->exit_code,
		.duration_us = row->duration_us,
		.started_unix_ms = row->started_unix_ms,
		.ended_unix_ms = row->ended_unix_ms,
		.code = copy_bytes(row->code, row->code_len),
		.code_len = row->code_len,
		.out = copy_bytes(row->out, row->out_len),
		.out_len = row->out_len,
		.err = copy_bytes(row->err, row->err_len),
		.err_len = row->err_len,
	};
}

char *wire_operator_encode_cells(const struct wire_operator_cells *page)
{
	cJSON *o = jw_object();
	cJSON *list = op_list(o, "cells");
	for (size_t i = 0; i < page->n; i++) {
		cJSON *c = jw_object();
		wire_fields_json(c, WIRE_FIELDS(cell_fields), &page->cells[i]);
		blobs_json(c, cell_blobs, &page->cells[i]);
		cJSON_AddItemToArray(list, c);
	}
	jw_u64(o, "nextBeforeSequence", page->next_before_sequence);
	return jw_print(o);
}

void wire_operator_cells_free(struct wire_operator_cells *page)
{
	if (!page)
		return;
	for (size_t i = 0; i < page->n; i++) {
		wire_fields_free(WIRE_FIELDS(cell_fields), &page->cells[i]);
		blobs_free(cell_blobs, &page->cells[i]);
	}
	free(page->cells);
	memset(page, 0, sizeof *page);
}

static int read_next(const struct jr *r, const cJSON *root, void *out)
{
	return jr_u64(r, root, "", "nextBeforeSequence", out);
}

int wire_operator_decode_cells(const char *body, size_t len, struct wire_operator_cells *out,
			       struct wire_status *st)
{
	void *items = NULL;
	memset(out, 0, sizeof *out);
	int rc = op_decode_list("ListCells", body, len, &cell_list, &items, &out->n, read_next,
				&out->next_before_sequence, st);
	out->cells = items;
	out->cap = out->n;
	if (rc < 0)
		wire_operator_cells_free(out);
	return rc;
}
