/* ListRecords and ListEvents answers: a page of the store's history in commit
 * order, with the cursors for the pages after and before it. The daemon
 * collects the engine's rows into a page (their strings copied, since the
 * engine's are valid only during its callback) and encodes it. */
#include "wire_operator_priv.h"

#include <stdio.h>
#include <string.h>

/* Room for one more row in a page the constructor grows. */
static void *grow(void *v, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return v;
	*cap = *cap ? *cap * 2 : 16;
	return wire_check_alloc(realloc(v, *cap * size));
}

static void cursors_json(cJSON *o, int64_t next_after_id, int64_t next_before_id)
{
	jw_i64(o, "nextAfterId", next_after_id);
	jw_i64(o, "nextBeforeId", next_before_id);
}

/* A page's cursors: the members of struct wire_operator_records and _events
 * that follow their lists. */
struct cursors {
	int64_t next_after_id, next_before_id;
};

static int read_cursors(const struct jr *r, const cJSON *root, void *out)
{
	struct cursors *c = out;
	if (jr_i64(r, root, "", "nextAfterId", &c->next_after_id) < 0 ||
	    jr_i64(r, root, "", "nextBeforeId", &c->next_before_id) < 0)
		return -1;
	return 0;
}

/* ---- records ---- */

static void row_free(struct wire_operator_record_row *row)
{
	wire_record_free(&row->record);
	free((char *)row->language);
	free((char *)row->flags);
	memset(row, 0, sizeof *row);
}

void wire_operator_records_add(struct wire_operator_records *page, const struct bh_record_row *row)
{
	page->rows = grow(page->rows, page->n, &page->cap, sizeof *page->rows);
	struct wire_operator_record_row *dst = &page->rows[page->n++];
	dst->id = row->id;
	wire_record_copy(&dst->record, row->record);
	dst->language = xstrdup(row->language);
	dst->flags = xstrdup(row->flags);
	dst->exit_code = row->exit_code;
	dst->duration_us = row->duration_us;
}

char *wire_operator_encode_records(const struct wire_operator_records *page)
{
	cJSON *o = jw_object();
	cJSON *list = op_list(o, "records");
	for (size_t i = 0; i < page->n; i++) {
		const struct wire_operator_record_row *row = &page->rows[i];
		cJSON *x = jw_object();
		jw_i64(x, "id", row->id);
		jw_add(x, "record", wire_record_json(&row->record));
		jw_string(x, "language", row->language);
		jw_i32(x, "exitCode", row->exit_code);
		jw_string(x, "flags", row->flags);
		jw_i64(x, "durationUs", row->duration_us);
		cJSON_AddItemToArray(list, x);
	}
	cursors_json(o, page->next_after_id, page->next_before_id);
	return jw_print(o);
}

void wire_operator_records_free(struct wire_operator_records *page)
{
	if (!page)
		return;
	for (size_t i = 0; page->rows && i < page->n; i++)
		row_free(&page->rows[i]);
	free(page->rows);
	memset(page, 0, sizeof *page);
}

/* A row is nothing without its record: one that carries none is refused. */
static int read_row(const struct jr *r, const cJSON *o, const char *path, void *item)
{
	struct wire_operator_record_row *out = item;
	const cJSON *rec;
	char sub[192];
	memset(out, 0, sizeof *out);
	if (jr_object(r, o, path, "record", &rec) < 0)
		return -1;
	if (!rec)
		return jr_fail(r, "%s carries no record", path);
	snprintf(sub, sizeof sub, "%s.record", path);
	if (wire_record_read(r, rec, sub, &out->record) < 0)
		return -1;
	if (jr_i64(r, o, path, "id", &out->id) < 0 ||
	    op_read_str(r, o, path, "language", &out->language) < 0 ||
	    jr_i32(r, o, path, "exitCode", &out->exit_code) < 0 ||
	    op_read_str(r, o, path, "flags", &out->flags) < 0 ||
	    jr_i64(r, o, path, "durationUs", &out->duration_us) < 0) {
		row_free(out);
		return -1;
	}
	return 0;
}

int wire_operator_decode_records(const char *body, size_t len, struct wire_operator_records *out,
				 struct wire_status *st)
{
	void *items = NULL;
	struct cursors c = {0};
	memset(out, 0, sizeof *out);
	int rc = op_decode_list("ListRecords", body, len, "records", sizeof *out->rows, read_row,
				&items, &out->n, read_cursors, &c, st);
	*out = (struct wire_operator_records){items, out->n, out->n, c.next_after_id,
					      c.next_before_id};
	if (rc < 0)
		wire_operator_records_free(out);
	return rc;
}

/* ---- events ---- */

static void event_free(struct bh_event *ev)
{
	free((char *)ev->kind);
	free((char *)ev->session);
	free((char *)ev->sandbox);
	free((char *)ev->detail);
	memset(ev, 0, sizeof *ev);
}

void wire_operator_events_add(struct wire_operator_events *page, const struct bh_event *ev)
{
	page->events = grow(page->events, page->n, &page->cap, sizeof *page->events);
	struct bh_event *dst = &page->events[page->n++];
	dst->id = ev->id;
	dst->at_unix_ms = ev->at_unix_ms;
	dst->kind = xstrdup(ev->kind);
	dst->session = xstrdup(ev->session);
	dst->sandbox = xstrdup(ev->sandbox);
	dst->detail = xstrdup(ev->detail);
}

char *wire_operator_encode_events(const struct wire_operator_events *page)
{
	cJSON *o = jw_object();
	cJSON *list = op_list(o, "events");
	for (size_t i = 0; i < page->n; i++) {
		const struct bh_event *ev = &page->events[i];
		cJSON *x = jw_object();
		jw_i64(x, "id", ev->id);
		jw_i64(x, "atUnixMs", ev->at_unix_ms);
		jw_string(x, "kind", ev->kind);
		jw_string(x, "session", ev->session);
		jw_string(x, "sandbox", ev->sandbox);
		jw_string(x, "detail", ev->detail);
		cJSON_AddItemToArray(list, x);
	}
	cursors_json(o, page->next_after_id, page->next_before_id);
	return jw_print(o);
}

void wire_operator_events_free(struct wire_operator_events *page)
{
	if (!page)
		return;
	for (size_t i = 0; page->events && i < page->n; i++)
		event_free(&page->events[i]);
	free(page->events);
	memset(page, 0, sizeof *page);
}

static int read_event(const struct jr *r, const cJSON *o, const char *path, void *item)
{
	struct bh_event *out = item;
	memset(out, 0, sizeof *out);
	if (jr_i64(r, o, path, "id", &out->id) < 0 ||
	    jr_i64(r, o, path, "atUnixMs", &out->at_unix_ms) < 0 ||
	    op_read_str(r, o, path, "kind", &out->kind) < 0 ||
	    op_read_str(r, o, path, "session", &out->session) < 0 ||
	    op_read_str(r, o, path, "sandbox", &out->sandbox) < 0 ||
	    op_read_str(r, o, path, "detail", &out->detail) < 0) {
		event_free(out);
		return -1;
	}
	return 0;
}

int wire_operator_decode_events(const char *body, size_t len, struct wire_operator_events *out,
				struct wire_status *st)
{
	void *items = NULL;
	struct cursors c = {0};
	memset(out, 0, sizeof *out);
	int rc = op_decode_list("ListEvents", body, len, "events", sizeof *out->events, read_event,
				&items, &out->n, read_cursors, &c, st);
	*out = (struct wire_operator_events){items, out->n, out->n, c.next_after_id,
					     c.next_before_id};
	if (rc < 0)
		wire_operator_events_free(out);
	return rc;
}
