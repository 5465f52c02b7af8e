/* ListFiles and ReadFile answers: what a session's sandbox holds below /work,
 * as its own init read it (names and targets are the sandbox's). */
#include "wire_operator_priv.h"

#include <stdio.h>
#include <string.h>

char *wire_operator_encode_files(const struct wire_operator_files *f)
{
	cJSON *o = jw_object();
	cJSON *list = op_list(o, "entries");
	for (size_t i = 0; i < f->n; i++) {
		const struct bh_file_entry *e = &f->entries[i];
		cJSON *x = jw_object();
		char type[2] = {e->type, '\0'};
		jw_string(x, "name", e->name);
		jw_string(x, "type", type);
		jw_u64(x, "size", e->size);
		jw_u64(x, "mtimeUnixMs", e->mtime_ms);
		jw_string(x, "target", e->target);
		cJSON_AddItemToArray(list, x);
	}
	jw_bool(o, "more", f->more);
	return jw_print(o);
}

static void entry_free(struct bh_file_entry *e)
{
	free((char *)e->name);
	free((char *)e->target);
	memset(e, 0, sizeof *e);
}

void wire_operator_files_free(struct wire_operator_files *f)
{
	if (!f)
		return;
	for (size_t i = 0; f->entries && i < f->n; i++)
		entry_free((struct bh_file_entry *)&f->entries[i]);
	free((struct bh_file_entry *)f->entries);
	memset(f, 0, sizeof *f);
}

static int read_entry(const struct jr *r, const cJSON *o, const char *path, void *item)
{
	struct bh_file_entry *out = item;
	cleanup_free char *type = NULL;
	size_t type_len = 0;
	memset(out, 0, sizeof *out);
	if (op_read_str(r, o, path, "name", &out->name) < 0 ||
	    jr_string(r, o, path, "type", &type, &type_len) < 0 ||
	    jr_u64(r, o, path, "size", &out->size) < 0 ||
	    jr_u64(r, o, path, "mtimeUnixMs", &out->mtime_ms) < 0 ||
	    op_read_str(r, o, path, "target", &out->target) < 0)
		goto fail;
	if (type_len > 1) {
		jr_fail(r, "%s.type must be one character (f d l p s c b)", path);
		goto fail;
	}
	out->type = type[0];
	return 0;
fail:
	entry_free(out);
	return -1;
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
	int rc = op_decode_list("ListFiles", body, len, "entries", sizeof *out->entries, read_entry,
				&items, &out->n, read_more, &out->more, st);
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
