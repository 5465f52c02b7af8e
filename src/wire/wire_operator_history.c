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

/* A page's cursors: the members of struct wire_operator_records and _events
 * that follow their lists. */
struct cursors {
	int64_t next_after_id, next_before_id;
};

static const struct wire_field cursor_fields[] = {
	{"nextAfterId", WIRE_F_I64, WIRE_AT(struct cursors, next_after_id)},
	{"nextBeforeId", WIRE_F_I64, WIRE_AT(struct cursors, next_before_id)},
};

static void cursors_json(cJSON *o, int64_t next_after_id, int64_t next_before_id)
{
	struct cursors c = {next_after_id, next_before_id};
	wire_fields_json(o, WIRE_FIELDS(cursor_fields), &c);
}

static int read_cursors(const struct jr *r, const cJSON *root, void *out)
{
	return wire_fields_read(r, root, "", WIRE_FIELDS(cursor_fields), out);
}

/* ---- records ---- */

/* A row's fields in wire order, around its record: the id before it, the
 * rest after. Its record is read first (a row without one is refused before
 * anything else is judged), so the two tables keep both orders. */
#define ROW(member) WIRE_AT(struct wire_operator_record_row, member)
static const struct wire_field row_head[] = {
	{"id", WIRE_F_I64, ROW(id)},
};
static const struct wire_field row_tail[] = {
	{"language", WIRE_F_STR, ROW(language)},
	{"exitCode", WIRE_F_I32, ROW(exit_code)},
	{"flags", WIRE_F_STR, ROW(flags)},
	{"durationUs", WIRE_F_I64, ROW(duration_us)},
};
#undef ROW

static void row_free(struct wire_operator_record_row *row)
{
	wire_record_free(&row->record);
	wire_fields_clear(WIRE_FIELDS(row_tail), row, sizeof *row);
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
		wire_fields_json(x, WIRE_FIELDS(row_head), row);
		jw_add(x, "record", wire_record_json(&row->record));
		wire_fields_json(x, WIRE_FIELDS(row_tail), row);
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
	if (wire_fields_read(r, o, path, WIRE_FIELDS(row_head), out) < 0 ||
	    wire_fields_read(r, o, path, WIRE_FIELDS(row_tail), out) < 0) {
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
	static const struct op_items rows = {.name = "records",
					     .size = sizeof *out->rows,
					     .read = read_row};
	int rc = op_decode_list("ListRecords", body, len, &rows, &items, &out->n, read_cursors, &c,
				st);
	*out = (struct wire_operator_records){items, out->n, out->n, c.next_after_id,
					      c.next_before_id};
	if (rc < 0)
		wire_operator_records_free(out);
	return rc;
}

/* ---- events ---- */

/* An event's fields in wire order: all of struct bh_event. */
#define EVENT(member) WIRE_AT(struct bh_event, member)
static const struct wire_field event_fields[] = {
	{"id", WIRE_F_I64, EVENT(id)}, /* commit order: the page's cursors */
	{"atUnixMs", WIRE_F_I64, EVENT(at_unix_ms)},
	{"kind", WIRE_F_STR, EVENT(kind)},
	{"session", WIRE_F_STR, EVENT(session)},
	{"sandbox", WIRE_F_STR, EVENT(sandbox)},
	{"detail", WIRE_F_STR, EVENT(detail)},
	/* ---- ci: attribution: "" when absent (a daemon before them) ---- */
	{"actor", WIRE_F_STR, EVENT(actor)},
	{"requestId", WIRE_F_STR, EVENT(request_id)},
};
#undef EVENT

static const struct op_items event_list = OP_FIELD_ITEMS("events", struct bh_event, event_fields);

void wire_operator_events_add(struct wire_operator_events *page, const struct bh_event *ev)
{
	page->events = grow(page->events, page->n, &page->cap, sizeof *page->events);
	wire_fields_copy(WIRE_FIELDS(event_fields), &page->events[page->n++], ev);
}

char *wire_operator_encode_events(const struct wire_operator_events *page)
{
	cJSON *o = jw_object();
	op_items_json(o, &event_list, page->events, page->n);
	cursors_json(o, page->next_after_id, page->next_before_id);
	return jw_print(o);
}

void wire_operator_events_free(struct wire_operator_events *page)
{
	if (!page)
		return;
	op_items_free(&event_list, page->events, page->n);
	memset(page, 0, sizeof *page);
}

int wire_operator_decode_events(const char *body, size_t len, struct wire_operator_events *out,
				struct wire_status *st)
{
	void *items = NULL;
	struct cursors c = {0};
	memset(out, 0, sizeof *out);
	int rc = op_decode_list("ListEvents", body, len, &event_list, &items, &out->n, read_cursors,
				&c, st);
	*out = (struct wire_operator_events){items, out->n, out->n, c.next_after_id,
					     c.next_before_id};
	if (rc < 0)
		wire_operator_events_free(out);
	return rc;
}
