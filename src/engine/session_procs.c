/* A session's processes: a PS sent to its sandbox's init beside the call
 * in flight (sandbox_side_request), not through the session's queue, so a
 * cell that is still running can be looked into. The reply was judged
 * against the request before it reaches here (chan_check.c); it is copied
 * out into plain rows and handed over. */
#include "session_priv.h"

#include <string.h>

/* How long the init may take: its helper is killed after 10 s (init's
 * HELPER_TIMEOUT_MS) and a FAIL sent, so past this the init is not
 * answering at all. */
#define PS_BACKSTOP_MS 30000u

_Static_assert(BH_PROCESSES_MAX == BH_CHAN_PS_MAX_ENTRIES, "one limit, said twice");

struct ps_wait {
	bh_processes_cb cb;
	void *arg;
};

const char *bh_sandbox_user_name(uint32_t uid)
{
	/* The sandbox's /etc/passwd (bundle.c). */
	switch (uid) {
	case 0:
		return "root";
	case 1000:
		return "sandbox";
	case 65534:
		return "nobody";
	default:
		return NULL;
	}
}

static void deliver(const struct ps_wait *w, const struct sandbox_reply *rep)
{
	struct proto_cursor r = proto_cursor(rep->payload, rep->len);
	uint32_t n = 0;
	proto_get_u32(&r, &n);
	bool more = n & 0x80000000u;
	n &= 0x7fffffffu;
	/* n was held to BH_CHAN_PS_MAX_ENTRIES and to the frame's bytes. */
	struct bh_process *procs = xzalloc((n + 1) * sizeof *procs);
	char **commands = xzalloc((n + 1) * sizeof *commands);
	for (uint32_t i = 0; i < n && !r.bad; i++) {
		const uint8_t *command = NULL;
		uint32_t len = 0;
		uint8_t state = 0;
		proto_get_u32(&r, &procs[i].pid);
		proto_get_u32(&r, &procs[i].ppid);
		proto_get_u32(&r, &procs[i].uid);
		proto_get_u8(&r, &state);
		proto_get_u64(&r, &procs[i].cpu_us);
		proto_get_u64(&r, &procs[i].rss_bytes);
		proto_get_u64(&r, &procs[i].age_us);
		proto_get_str(&r, &command, &len);
		procs[i].state = (char)state;
		commands[i] = xzalloc((size_t)len + 1);
		if (len)
			memcpy(commands[i], command, len);
		procs[i].command = commands[i];
	}
	if (r.bad) {
		bh_error *err = NULL;
		bh_fail(&err, BH_E_SANDBOX, 0, "the sandbox sent a malformed list of processes");
		w->cb(w->arg, NULL, 0, false, err);
		bh_error_free(err);
	} else {
		w->cb(w->arg, procs, n, more, NULL);
	}
	for (uint32_t i = 0; i < n; i++)
		free(commands[i]);
	free(commands);
	free(procs);
}

static void on_procs_reply(bh_engine *e, void *arg, struct sandbox *sb,
			   const struct sandbox_reply *rep)
{
	(void)e;
	(void)sb;
	struct ps_wait *w = arg;
	bh_error *err = NULL;
	if (!rep->type) {
		bh_fail(&err, BH_E_SANDBOX, 0, "the sandbox's processes could not be listed: %s",
			rep->lost);
	} else if (rep->type == BH_CHAN_FAIL) {
		int reason, err_no;
		char msg[512];
		sandbox_decode_refusal(rep, &reason, &err_no, msg, sizeof msg);
		bh_fail(&err, BH_E_SANDBOX, err_no, "the sandbox's init could not list its processes: %s",
			msg);
	} else {
		deliver(w, rep);
	}
	if (err) {
		w->cb(w->arg, NULL, 0, false, err);
		bh_error_free(err);
	}
	free(w);
}

int bh_session_processes(bh_session *s, bh_processes_cb cb, void *arg, bh_error **err)
{
	cleanup_error bh_error *unasked = NULL;
	err = err ? err : &unasked;
	if (!cb)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "listing processes needs a callback");
	if (s->state == BH_SESSION_ENDED) {
		session_ended_error(s, err);
		return -1;
	}
	if ((s->state != BH_SESSION_READY && s->state != BH_SESSION_BUSY) || !s->sb)
		return bh_refuse(err, BH_REFUSAL_CAPACITY,
				 "session %.12s is %s: its processes can be listed while it is ready "
				 "or running a call",
				 s->fp, bh_session_state_name(s->state));
	struct buf f = {0};
	uint8_t type = BH_CHAN_PS;
	buf_append(&f, &type, 1);
	uint64_t call_id = sandbox_next_call_id();
	proto_put_u64(&f, call_id);
	proto_put_u32(&f, BH_CHAN_PS_MAX_ENTRIES);
	struct ps_wait *w = xzalloc(sizeof *w);
	w->cb = cb;
	w->arg = arg;
	int ret = sandbox_side_request(s->e, s->sb, call_id, &f, PS_BACKSTOP_MS, on_procs_reply, w,
				       err);
	buf_free(&f);
	if (ret < 0)
		free(w);
	return ret;
}
