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

/* A string field, owned ("" when absent), into a const slot. */
int op_read_str(const struct jr *r, const cJSON *obj, const char *path, const char *name,
		const char **dst);
/* A string field into a fixed slot of size bytes: one that does not fit is
 * refused, never cut. */
int op_read_fixed(const struct jr *r, const cJSON *obj, const char *path, const char *name,
		  char *dst, size_t size);
/* A list of objects: *arr (NULL when absent or empty) and its length. */
int op_read_list(const struct jr *r, const cJSON *obj, const char *name, const cJSON **arr,
		 size_t *n);
/* Element i of the list name, which must be an object; its path
 * ("sessions[2]") into path. */
int op_read_element(const struct jr *r, const cJSON *el, const char *name, size_t i, char *path,
		    size_t path_len);

/* A list member, written even when empty (the daemon's answers always
 * carry their lists). */
cJSON *op_list(cJSON *obj, const char *name);

#endif
