/* ListFiles and ReadFile answers: what a session's sandbox holds below /work,
 * as its own init read it (names and targets are the sandbox's). */
#include "wire_operator_priv.h"

#include <stdio.h>
#include <string.h>

/* A ListFiles entry in wire order. */
#define ENTRY(member) WIRE_AT(struct bh_file_entry, member)
static const struct wire_field entry_fields[] = {
	{"name", WIRE_F_STR, ENTRY(name)},
	{"type", WIRE_F_CHAR, ENTRY(type)}, /* one character: f d l p s c b */
	{"size", WIRE_F_U64, ENTRY(size)},
	{"mtimeUnixMs", WIRE_F_U64, ENTRY(mtime_ms)},
	{"target", WIRE_F_STR, ENTRY(target)}, /* a symlink's */
};
#undef ENTRY

static const struct op_items entry_list =
	OP_FIELD_ITEMS("entries", struct bh_file_entry, entry_fields);

char *wire_operator_encode_files(const struct wire_operator_files *f)
{
	cJSON *o = jw_object();
	op_items_json(o, &entry_list, f->entries, f->n);
	jw_bool(o, "more", f->more);
	return jw_print(o);
}

void wire_operator_files_free(struct wire_operator_files *f)
{
	if (!f)
		return;
	op_items_free(&entry_list, (struct bh_file_entry *)f->entries, f->n);
	memset(f, 0, sizeof *f);
}

static int read_more(const struct jr *r, const cJSON *root, void *out)
{
	return jr_bool(r, root, "", "more", out);
}

int wire_operator_decode_files(const char *body, size_t len, struct wire_operator_files *out,
			       struct wire_status *st)
{
	void *items = NULL;
	memset(out, 0, sizeof *out);
	int rc = op_decode_list("ListFiles", body, len, &entry_list, &items, &out->n, read_more,
				&out->more, st);
	out->entries = items;
	if (rc < 0)
		wire_operator_files_free(out);
	return rc;
}

char *wire_operator_encode_file(const struct wire_operator_file *f)
{
	cJSON *o = jw_object();
	jw_bytes(o, "content", f->content, f->len);
	jw_u64(o, "size", f->size);
	jw_bool(o, "truncated", f->truncated);
	return jw_print(o);
}

void wire_operator_file_free(struct wire_operator_file *f)
{
	if (!f)
		return;
	free((uint8_t *)f->content);
	memset(f, 0, sizeof *f);
}

int wire_operator_decode_file(const char *body, size_t len, struct wire_operator_file *out,
			      struct wire_status *st)
{
	cleanup_cjson cJSON *root = NULL;
	struct jr r = op_reader(st);
	uint8_t *content = NULL;
	memset(out, 0, sizeof *out);
	if (op_parse("ReadFile", body, len, &root, st) < 0)
		return -1;
	if (jr_bytes(&r, root, "", "content", &content, &out->len) < 0) {
		free(content);
		return op_refused("ReadFile", st);
	}
	out->content = content;
	if (jr_u64(&r, root, "", "size", &out->size) < 0 ||
	    jr_bool(&r, root, "", "truncated", &out->truncated) < 0) {
		wire_operator_file_free(out);
		return op_refused("ReadFile", st);
	}
	return 0;
}
