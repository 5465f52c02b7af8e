/* One JavaScript snippet in a fresh sandbox, with its run record: the
 * engine's side of plimsoll's single `Run`. The sandbox runs `node -` with
 * the code on stdin and is deleted after the answer; the record (version 2,
 * no session fields) is committed to the store before the answer is given,
 * like every session call's. */
#include "engine_priv.h"
#include "record.h"
#include "store.h"

#include <string.h>


struct snippet_call {
	bh_engine *e;
	bh_snippet_cb cb;
	void *arg;
	char *code;
	size_t code_len;
	enum bh_tier floor;
	char *grant; /* ---- egress: NULL: none ---- */
	int64_t sent_timeout_ms;
	int64_t started_unix_ms;
	struct bh_record rec;
};

static void snippet_free(struct snippet_call *c)
{
	free(c->code);
	free(c->grant);
	free(c);
}

static void on_snippet_done(void *arg, const struct bh_exec_result *res, const bh_error *err)
{
	struct snippet_call *c = arg;
	bh_engine *e = c->e;
	if (!res) {
		c->cb(c->arg, NULL, err);
		snippet_free(c);
		return;
	}
	struct bh_request_fields rq = {
		.protocol = 3,
		.minimum_isolation = c->floor > BH_TIER_NONE ? bh_tier_name(c->floor) : "",
		.timeout_ms = c->sent_timeout_ms,
		.software_mode = "",
		.kind = "javascript",
		.code = (const uint8_t *)c->code,
		.code_len = c->code_len,
		.grant_profile = c->grant ? c->grant : "", /* ---- egress ---- */
	};
	struct bh_result_fields rs = {
		.kind = "javascript",
		.exit_code = res->exit_code,
		.timed_out = res->timed_out,
		.out = res->out,
		.out_len = res->out_len,
		.err = res->errout,
		.err_len = res->errout_len,
		.stdout_truncated = res->stdout_truncated,
		.stderr_truncated = res->stderr_truncated,
	};
	struct bh_record *rec = &c->rec;
	engine_seal_fresh_record(e, res->tier, &rq, &rs, c->started_unix_ms, rec);
	struct store_record_extra x = {
		.language = "javascript",
		.exit_code = res->exit_code,
		.flags = res->timed_out ? "timed_out" : "",
		.duration_us = res->duration_us,
		.code = (const uint8_t *)c->code,
		.code_len = c->code_len,
		.out = res->out,
		.out_len = res->out_len,
		.err = res->errout,
		.err_len = res->errout_len,
	};
	bh_error *serr = NULL;
	if (store_record_commit(e->store, rec, &x, e->keep_content, &serr) < 0) {
		/* Nothing unrecorded is acknowledged. */
		bh_error_wrap(serr, "the code ran but its record could not be stored");
		c->cb(c->arg, NULL, serr);
		bh_error_free(serr);
		snippet_free(c);
		return;
	}
	struct bh_snippet_result r = {
		.tier = res->tier,
		.exit_code = res->exit_code,
		.timed_out = res->timed_out,
		.stdout_truncated = res->stdout_truncated,
		.stderr_truncated = res->stderr_truncated,
		.out = res->out,
		.out_len = res->out_len,
		.errout = res->errout,
		.errout_len = res->errout_len,
		.duration_us = res->duration_us,
		.wall_us = res->wall_us,
		.record = rec,
	};
	c->cb(c->arg, &r, NULL);
	snippet_free(c);
}

int bh_run_javascript(bh_engine *e, const struct bh_snippet *req, bh_snippet_cb cb, void *arg,
		      bh_error **err)
{
	if (!req || !cb || !req->code || !req->code_len)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "a run needs code");
	if (req->code_len > BH_MAX_CODE_BYTES)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "code of %zu bytes is above the %u maximum",
				 req->code_len, BH_MAX_CODE_BYTES);
	if (memchr(req->code, 0, req->code_len))
		return bh_refuse(err, BH_REFUSAL_REQUEST, "code contains a NUL byte");
	/* ---- egress: the engine's own guard (the daemon checked the caller) ---- */
	if (egress_check_profile(e, req->grant_profile, err) < 0)
		return -1;
	struct snippet_call *c = xzalloc(sizeof *c);
	if (req->grant_profile && *req->grant_profile)
		c->grant = xstrdup(req->grant_profile);
	c->e = e;
	c->cb = cb;
	c->arg = arg;
	c->code = xzalloc(req->code_len + 1);
	memcpy(c->code, req->code, req->code_len);
	c->code_len = req->code_len;
	c->floor = req->floor;
	c->sent_timeout_ms = req->has_sent_timeout ? req->sent_timeout_ms : req->timeout_ms;
	c->started_unix_ms = (int64_t)now_real_ms();
	static const char *const argv[] = {"/usr/bin/node", "-", NULL};
	struct bh_exec_request x = {
		.tier = req->tier,
		.floor = req->floor,
		.argv = argv,
		.input = c->code,
		.input_len = c->code_len,
		.timeout_ms = req->timeout_ms,
		.output_cap = req->output_cap,
		.principal = req->principal,
	};
	if (exec_start(e, &x, c->grant, on_snippet_done, c, err) < 0) {
		snippet_free(c);
		return -1;
	}
	return 0;
}
