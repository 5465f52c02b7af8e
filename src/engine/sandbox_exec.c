/* EXEC on a sandbox: one program run to completion through the init, for a
 * fresh call (bh_exec) and for a tier's smoke test. */
#include "sandbox_priv.h"

#include <signal.h>
#include <string.h>

struct exec_op {
	sandbox_exec_fn fn;
	void *arg;
};

static void on_exec_reply(bh_engine *e, void *arg, struct sandbox *sb, const struct sandbox_reply *rep)
{
	struct exec_op op = *(struct exec_op *)arg;
	free(arg);
	bh_error *err = NULL;
	if (!rep->type && rep->oom) {
		/* gVisor's OOM outcome: the whole sandbox goes (measured on this host). */
		struct bh_exec_result res = {
			.tier = sb->tier, .exit_code = 128 + SIGKILL, .term_signal = SIGKILL, .oom = true,
			.sandbox_died = true, .duration_us = rep->elapsed_us, .wall_us = rep->elapsed_us};
		op.fn(e, op.arg, sb, &res, NULL);
		return;
	}
	if (!rep->type) {
		bh_fail(&err, BH_E_SANDBOX, 0, "sandbox %s %s during the call (%s); the code may have run",
			sb->name, rep->breach ? "broke its channel" : "ended", rep->lost);
		op.fn(e, op.arg, sb, NULL, err);
		bh_error_free(err);
		return;
	}
	if (rep->type == BH_CHAN_FAIL) {
		int reason, err_no;
		char msg[512];
		sandbox_decode_refusal(rep, &reason, &err_no, msg, sizeof msg);
		/* The init could not start the program: nothing of the caller's ran. */
		bh_refuse(&err, BH_REFUSAL_ENVIRONMENT, "the sandbox could not start the program: %s", msg);
		err->sys_errno = err_no;
		op.fn(e, op.arg, sb, NULL, err);
		bh_error_free(err);
		return;
	}
	struct done_frame d;
	if (rep->type != BH_CHAN_DONE || sandbox_decode_done(rep, &d) < 0) {
		sandbox_lost(e, sb, "its init answered an EXEC with something else");
		bh_fail(&err, BH_E_SANDBOX, 0, "sandbox %s broke its channel; the code may have run",
			sb->name);
		op.fn(e, op.arg, sb, NULL, err);
		bh_error_free(err);
		return;
	}
	struct bh_exec_result res = {
		.tier = sb->tier,
		.exit_code = d.exit_code,
		.term_signal = (int)d.term_signal,
		.timed_out = d.flags & BH_CHAN_TIMED_OUT,
		.stdout_truncated = d.flags & BH_CHAN_STDOUT_TRUNCATED,
		.stderr_truncated = d.flags & BH_CHAN_STDERR_TRUNCATED,
		.oom = rep->oom,
		.out = d.out,
		.out_len = d.out_len,
		.errout = d.err,
		.errout_len = d.err_len,
		.out_total = d.out_total,
		.errout_total = d.err_total,
		.duration_us = d.duration_us,
		.wall_us = rep->elapsed_us,
	};
	op.fn(e, op.arg, sb, &res, NULL);
}

int sandbox_exec(bh_engine *e, struct sandbox *sb, const struct bh_exec_request *req,
		 sandbox_exec_fn fn, void *arg, bh_error **err)
{
	uint64_t call_id = sandbox_next_call_id();
	size_t argc = 0;
	while (req->argv[argc])
		argc++;
	struct buf body = {0};
	proto_put_u8(&body, BH_CHAN_EXEC);
	proto_put_u64(&body, call_id);
	proto_put_u32(&body, req->timeout_ms);
	proto_put_u32(&body, req->output_cap);
	proto_put_u32(&body, (uint32_t)argc);
	for (size_t i = 0; i < argc; i++)
		proto_put_str(&body, req->argv[i], strlen(req->argv[i]));
	proto_put_str(&body, req->input ? req->input : "", req->input_len);
	struct exec_op *op = xzalloc(sizeof *op);
	op->fn = fn;
	op->arg = arg;
	int ret = sandbox_request(e, sb, call_id, &body, req->timeout_ms + BACKSTOP_GRACE_MS,
				  on_exec_reply, op, err);
	buf_free(&body);
	if (ret < 0)
		free(op);
	return ret;
}
