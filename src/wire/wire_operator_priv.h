/* What the operator codec's files share: how an answer is read and refused
 * (DATA_LOSS, unmarked, the method named first) and how its lists are
 * walked and written. */
#ifndef BH_WIRE_OPERATOR_PRIV_H
#define BH_WIRE_OPERATOR_PRIV_H

#include "wire_internal.h"
#include "wire_operator.h"

/* The reader of an answer to method ("ListSessions"). */
struct jr op_reader(struct wire_status *st);
/* Parses an answer's body (one JSON object); -1 with st filled. */
int op_parse(const char *method, const char *body, size_t len, cJSON **root,
	     struct wire_status *st);
/* Puts "METHOD: " before the refusal already in st; returns -1. */
int op_refused(const char *method, struct wire_status *st);

/* An answer to method that is one message of fields (f, n) into out, a
 * struct of size bytes: -1 with st ("METHOD: ...") and out cleared. */
int op_decode_fields(const char *method, const char *body, size_t len, const struct wire_field *f,
		     size_t n, void *out, size_t size, struct wire_status *st);
/* Reads one element of a list (an object) into out, an item of the caller's
 * type; on failure it leaves nothing owned in out. */
typedef int (*op_item_fn)(const struct jr *r, const cJSON *obj, const char *path, void *out);

/* A list and its items: each an object read by read or, when read is NULL,
 * nothing but its table of fields (which then also writes and frees it). */
struct op_items {
	const char *name; /* the list's member ("sessions") */
	size_t size;      /* an item's */
	op_item_fn read;
	const struct wire_field *fields;
	size_t n_fields;
};

/* A list of type's items, each nothing but its table. */
#define OP_FIELD_ITEMS(list, type, table)                                                          \
	{                                                                                          \
		.name = list, .size = sizeof(type), .fields = table, .n_fields = ARRAY_SIZE(table) \
	}

/* The list l->name (in obj, at path) as an array of items: *items (never
 * NULL once the list's type is right) and *n, the items read whole, on a
 * failure too (for the caller's free). Element i is named "path.name[i]" in
 * a refusal. */
int op_read_items(const struct jr *r, const cJSON *obj, const char *path, const struct op_items *l,
		  void **items, size_t *n);

/* The fields of an answer beside its list (cursors, a flag), read into out. */
typedef int (*op_rest_fn)(const struct jr *r, const cJSON *root, void *out);
/* An answer to method that is a list (op_read_items) and, read by rest when
 * not NULL, the fields beside it. -1 with st ("METHOD: ...") and what was
 * read left in *items, *n and out for the caller's free. */
int op_decode_list(const char *method, const char *body, size_t len, const struct op_items *l,
		   void **items, size_t *n, op_rest_fn rest, void *out, struct wire_status *st);

/* Writes a list of items that are their table, even when empty. */
void op_items_json(cJSON *obj, const struct op_items *l, const void *items, size_t n);
/* Frees each item's strings, then the array. */
void op_items_free(const struct op_items *l, void *items, size_t n);

/* A list member, written even when empty (the daemon's answers always
 * carry their lists). */
cJSON *op_list(cJSON *obj, const char *name);

/* ---- remote: a message of only these members (any other is refused,
 * named: a change the two ends disagree on is seen, not dropped) ---- */
int op_only_members(const struct jr *r, const cJSON *root, const char *const *names, size_t n);

#endif
