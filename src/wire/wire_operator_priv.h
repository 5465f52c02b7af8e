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
/* The list name (in obj, at path) as an array of items of size bytes, each
 * element an object read by read: *items (never NULL once the list's type is
 * right) and *n, the items read whole, on a failure too (for the caller's
 * free). Element i is named "path.name[i]" in a refusal. */
int op_read_items(const struct jr *r, const cJSON *obj, const char *path, const char *name,
		  size_t size, op_item_fn read, void **items, size_t *n);

/* The fields of an answer beside its list (cursors, a flag), read into out. */
typedef int (*op_rest_fn)(const struct jr *r, const cJSON *root, void *out);
/* An answer to method that is a list name (op_read_items) and, read by rest
 * when not NULL, the fields beside it. -1 with st ("METHOD: ...") and what
 * was read left in *items, *n and out for the caller's free. */
int op_decode_list(const char *method, const char *body, size_t len, const char *name, size_t size,
		   op_item_fn read, void **items, size_t *n, op_rest_fn rest, void *out,
		   struct wire_status *st);

/* A list member, written even when empty (the daemon's answers always
 * carry their lists). */
cJSON *op_list(cJSON *obj, const char *name);

#endif
