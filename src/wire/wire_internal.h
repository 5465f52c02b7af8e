/* What the wire's files share and nobody else needs: refusals, and the
 * proto3 JSON field readers and writers. */
#ifndef BH_WIRE_INTERNAL_H
#define BH_WIRE_INTERNAL_H

#include "base.h"
#include "wire.h"

#include <stdarg.h>
#include <stdlib.h>

/* ---- memory: base.h's cleanup and allocation, wire.h's cleanup_cjson ---- */

void *wire_check_alloc(void *p);            /* aborts on NULL (cJSON's constructors) */

/* ---- refusals ---- */

/* Fills st and returns -1. */
int wire_fail(struct wire_status *st, enum wire_code code, enum wire_refusal reason,
	      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* A value quoted for a message: printable ASCII only, at most 40 bytes shown,
 * so a refusal never carries a caller's bytes into a log unfiltered. */
const char *wire_quote(char out[64], const char *s, size_t n);

/* ---- checks shared by requests and answers ---- */

bool wire_name_ok(const char *s);             /* [A-Za-z0-9._:-]{1,64} */
/* NULL when p is a safe relative path; else what is wrong with it. */
const char *wire_path_problem(const char *p, size_t n);
/* NULL when the identity is 1..256 bytes of [A-Za-z0-9._:/@+-]. */
const char *wire_identity_problem(const char *s);

/* ---- reading proto3 JSON ---- */

/* How a message being read refuses what it cannot accept. */
struct jr {
	struct wire_status *st;
	enum wire_code code;
	enum wire_refusal reason;
};

int jr_fail(const struct jr *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Each reader looks `name` (lowerCamelCase) up in obj, also under its
 * snake_case proto name; path prefixes it in messages ("cell.files[2]").
 * Absent and null read as the zero value; the wrong JSON type, or the field
 * given under both names, is refused naming the field. */
int jr_field(const struct jr *r, const cJSON *obj, const char *path, const char *name,
	     const cJSON **out);
int jr_string(const struct jr *r, const cJSON *obj, const char *path, const char *name,
	      char **out, size_t *len);
int jr_bool(const struct jr *r, const cJSON *obj, const char *path, const char *name, bool *out);
int jr_i32(const struct jr *r, const cJSON *obj, const char *path, const char *name, int32_t *out);
int jr_u32(const struct jr *r, const cJSON *obj, const char *path, const char *name,
	   uint32_t *out);
int jr_i64(const struct jr *r, const cJSON *obj, const char *path, const char *name, int64_t *out);
int jr_u64(const struct jr *r, const cJSON *obj, const char *path, const char *name,
	   uint64_t *out);
int jr_double(const struct jr *r, const cJSON *obj, const char *path, const char *name,
	      double *out);
int jr_bytes(const struct jr *r, const cJSON *obj, const char *path, const char *name,
	     uint8_t **out, size_t *len);
/* An object (*out NULL when absent) or an array (*out NULL when absent). */
int jr_object(const struct jr *r, const cJSON *obj, const char *path, const char *name,
	      const cJSON **out);
int jr_array(const struct jr *r, const cJSON *obj, const char *path, const char *name,
	     const cJSON **out);
int jr_strings(const struct jr *r, const cJSON *obj, const char *path, const char *name,
	       char ***out, size_t *n);
void wire_strings_free(char **v, size_t n);

/* ---- writing proto3 JSON: each omits the zero value ---- */

cJSON *jw_object(void);
void jw_string(cJSON *obj, const char *name, const char *s);
void jw_string_n(cJSON *obj, const char *name, const char *s, size_t n);
void jw_bool(cJSON *obj, const char *name, bool v);
void jw_i32(cJSON *obj, const char *name, int32_t v);
void jw_u32(cJSON *obj, const char *name, uint32_t v);
void jw_i64(cJSON *obj, const char *name, int64_t v);  /* as a decimal string */
void jw_u64(cJSON *obj, const char *name, uint64_t v); /* as a decimal string */
void jw_double(cJSON *obj, const char *name, double v);
void jw_bytes(cJSON *obj, const char *name, const void *p, size_t n); /* padded base64 */
void jw_strings(cJSON *obj, const char *name, const char *const *v, size_t n);
/* Adds child under name, or deletes it when it is NULL. */
void jw_add(cJSON *obj, const char *name, cJSON *child);
char *jw_print(cJSON *obj); /* prints and deletes obj */

/* ---- a message's plain fields, listed once ---- */

/* A message whose fields are scalars and strings is a table of them, in wire
 * order: one walker writes them, one reads them and one frees them, so a
 * field is named once and its three uses cannot drift apart. Each kind keeps
 * the jw_ and jr_ rules above (zero values omitted, 64-bit integers as
 * decimal strings, a wrong type refused naming the field). */
enum wire_field_kind {
	WIRE_F_STR,    /* const char *: owned once read ("" when absent) */
	WIRE_F_FIXED,  /* char[size]: a string that does not fit is refused, never cut */
	WIRE_F_DIGEST, /* char[65]: as FIXED, refused as "longer than a SHA-256 hex digest" */
	WIRE_F_CHAR,   /* char: a string of at most one character (a file's type) */
	WIRE_F_BOOL,
	WIRE_F_I32,
	WIRE_F_U32,
	WIRE_F_I64,
	WIRE_F_U64,
	WIRE_F_VERSION, /* int: a uint32 in 0..INT32_MAX, written only when positive */
};

struct wire_field {
	const char *name; /* lowerCamelCase; read under its snake_case name too */
	enum wire_field_kind kind;
	size_t offset, size; /* of the member in the message's struct */
};

/* Where a member sits in its struct: an entry's offset and size. */
#define WIRE_AT(type, member) offsetof(type, member), sizeof(((type *)0)->member)
/* A table and its length, as the walkers take them. */
#define WIRE_FIELDS(table) table, ARRAY_SIZE(table)

void wire_fields_json(cJSON *obj, const struct wire_field *f, size_t n, const void *msg);
/* Reads the fields in order into msg, stopping at the first refusal. A
 * string read replaces (and frees) what its slot held. Two checks wait for
 * every other field, as the hand-written readers always judged them last: a
 * CHAR longer than one character and a VERSION above INT32_MAX. On a failure
 * what was read stays in msg for the caller's free. */
int wire_fields_read(const struct jr *r, const cJSON *obj, const char *path,
		     const struct wire_field *f, size_t n, void *msg);
/* Frees the STR fields (the caller clears the struct). */
void wire_fields_free(const struct wire_field *f, size_t n, void *msg);
/* Frees them and clears msg, a struct of size bytes; NULL is nothing. */
void wire_fields_clear(const struct wire_field *f, size_t n, void *msg, size_t size);
/* The JSON text of a message that is its table and nothing more. */
char *wire_fields_print(const struct wire_field *f, size_t n, const void *msg);
/* Copies every field of src into dst, the strings as owned copies (NULL as ""). */
void wire_fields_copy(const struct wire_field *f, size_t n, void *dst, const void *src);

/* ---- shared message pieces ---- */

cJSON *wire_record_json(const struct bh_record *rec);
int wire_record_read(const struct jr *r, const cJSON *obj, const char *path, struct bh_record *out);
void wire_record_copy(struct bh_record *dst, const struct bh_record *src); /* owned strings */
void wire_record_init(struct bh_record *rec); /* owned "" strings */

/* ---- project (wire_project.c) ---- */
/* A payload's files ({path, content} each), at most 200, 4 MiB of content,
 * paths strict and none twice; `owner` names them in messages ("cell"). */
int wire_read_files(const struct jr *r, const cJSON *obj, const char *owner, struct bh_file **files,
		    size_t *n_files);
void wire_files_free(struct bh_file *files, size_t n);
int wire_read_project(const struct jr *r, const cJSON *obj, struct wire_project_run *out);
cJSON *wire_project_run_json(const struct wire_project_run *p);
void wire_project_request_fields(const struct wire_project_run *p, struct bh_request_fields *out);
cJSON *wire_project_result_json(const struct bh_result_fields *res);
int wire_read_project_result(const struct jr *r, const cJSON *obj, const char *path,
			     struct bh_result_fields *out);
void wire_project_result_free(struct bh_result_fields *res);

#endif
