/* ListProcesses answers: the processes inside a session's sandbox, as its own
 * init read them from the sandbox's /proc (every field is the sandbox's
 * word). A command is any bytes but NUL; JSON carries UTF-8, so the encoder
 * writes each byte that is not part of valid UTF-8 as U+FFFD rather than
 * let one hostile name make the whole answer undecodable. */
#include "wire_operator_priv.h"

#include <stdlib.h>
#include <string.h>

/* A ListProcesses entry in wire order. */
#define PROC(member) WIRE_AT(struct bh_process, member)
static const struct wire_field process_fields[] = {
	{"pid", WIRE_F_U32, PROC(pid)},
	{"ppid", WIRE_F_U32, PROC(ppid)},
	{"uid", WIRE_F_U32, PROC(uid)},
	{"state", WIRE_F_CHAR, PROC(state)}, /* one character: /proc's letter */
	{"cpuUs", WIRE_F_U64, PROC(cpu_us)},
	{"rssBytes", WIRE_F_U64, PROC(rss_bytes)},
	{"ageUs", WIRE_F_U64, PROC(age_us)},
	{"command", WIRE_F_STR, PROC(command)},
};
#undef PROC

static const struct op_items process_list =
	OP_FIELD_ITEMS("processes", struct bh_process, process_fields);

/* The length of the UTF-8 sequence a lead byte starts (1 for a byte that
 * starts none: it becomes U+FFFD). */
static size_t seq_len(uint8_t b)
{
	return b < 0xc0 ? 1 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
}

char *wire_utf8_lossy(const char *s)
{
	size_t n = strlen(s);
	char *out = xzalloc(3 * n + 1), *w = out;
	for (size_t i = 0; i < n;) {
		size_t k = seq_len((uint8_t)s[i]);
		if (k <= n - i && wire_utf8_valid(s + i, k)) {
			memcpy(w, s + i, k);
			w += k;
			i += k;
		} else {
			memcpy(w, "\xef\xbf\xbd", 3);
			w += 3;
			i++;
		}
	}
	*w = '\0';
	return out;
}

char *wire_operator_encode_processes(const struct wire_operator_processes *p)
{
	cJSON *o = jw_object();
	struct bh_process *safe = xzalloc((p->n + 1) * sizeof *safe);
	for (size_t i = 0; i < p->n; i++) {
		safe[i] = p->procs[i];
		safe[i].command = wire_utf8_lossy(p->procs[i].command ? p->procs[i].command : "");
	}
	op_items_json(o, &process_list, safe, p->n);
	op_items_free(&process_list, safe, p->n);
	jw_bool(o, "more", p->more);
	return jw_print(o);
}

void wire_operator_processes_free(struct wire_operator_processes *p)
{
	if (!p)
		return;
	op_items_free(&process_list, (struct bh_process *)p->procs, p->n);
	memset(p, 0, sizeof *p);
}

static int read_more(const struct jr *r, const cJSON *root, void *out)
{
	return jr_bool(r, root, "", "more", out);
}

int wire_operator_decode_processes(const char *body, size_t len,
				   struct wire_operator_processes *out, struct wire_status *st)
{
	void *items = NULL;
	memset(out, 0, sizeof *out);
	int rc = op_decode_list("ListProcesses", body, len, &process_list, &items, &out->n,
				read_more, &out->more, st);
	out->procs = items;
	if (rc == 0 && out->n > BH_PROCESSES_MAX) {
		rc = wire_fail(st, WIRE_DATA_LOSS, WIRE_REFUSAL_UNSPECIFIED,
			       "ListProcesses: %zu processes; at most %u are sent", out->n,
			       BH_PROCESSES_MAX);
	}
	if (rc < 0)
		wire_operator_processes_free(out);
	return rc;
}
