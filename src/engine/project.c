/* A project run (plimsoll's ProjectRun): the request checked and copied,
 * the plan written for the runner (bulkhead-init --project, one EXEC), the
 * runner's report judged into the typed outcome, the record's fields; and
 * the fresh run itself (bh_run_project), its record committed before the
 * answer as a snippet's is. A session's project is session_project.c. */
#include "project_priv.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

const char *bh_project_outcome_name(enum bh_project_outcome o)
{
	switch (o) {
	case BH_PROJECT_COMPLETED:
		return "completed";
	case BH_PROJECT_SETUP_FAILED:
		return "setup_failed";
	case BH_PROJECT_TIMED_OUT:
		return "timed_out";
	case BH_PROJECT_PROTOCOL_ERROR:
		return "protocol_error";
	case BH_PROJECT_UNSPECIFIED:
		break;
	}
	return "unspecified";
}

/* ---- the request ---- */

static const char *path_problem(const char *p)
{
	enum proto_path_problem why = proto_path_check(p, p ? strlen(p) : 0, PROTO_PATH_STRICT);
	return why == PROTO_PATH_OK ? NULL : proto_path_problem_text(why);
}

int project_check(const struct bh_project *req, bh_error **err)
{
	assert(err);
	if (!req)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "a project run needs a request");
	if (req->n_steps < 1 || req->n_steps > BH_PROJECT_MAX_STEPS)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "a project needs 1 to %u steps (it has %zu)",
				 BH_PROJECT_MAX_STEPS, req->n_steps);
	for (size_t i = 0; i < req->n_steps; i++) {
		size_t n = req->steps[i] ? strlen(req->steps[i]) : 0;
		if (n == 0)
			return bh_refuse(err, BH_REFUSAL_REQUEST, "step %zu is empty", i + 1);
		if (n > BH_PROJECT_MAX_STEP_BYTES)
			return bh_refuse(err, BH_REFUSAL_REQUEST,
					 "step %zu is %zu bytes, more than the %u allowed", i + 1, n,
					 BH_PROJECT_MAX_STEP_BYTES);
	}
	if (req->n_files > BH_MAX_FILES)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "%zu files is more than %u", req->n_files,
				 BH_MAX_FILES);
	size_t total = 0;
	for (size_t i = 0; i < req->n_files; i++) {
		const char *why = path_problem(req->files[i].path);
		if (why)
			return bh_refuse(err, BH_REFUSAL_REQUEST, "file path \"%s\" %s",
					 req->files[i].path ? req->files[i].path : "", why);
		for (size_t k = 0; k < i; k++)
			if (!strcmp(req->files[k].path, req->files[i].path))
				return bh_refuse(err, BH_REFUSAL_REQUEST,
						 "file path \"%s\" is given twice", req->files[i].path);
		total += req->files[i].len;
	}
	if (total > BH_MAX_FILES_BYTES)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "the files hold %zu bytes, above the %u limit",
				 total, BH_MAX_FILES_BYTES);
	if (req->n_artifacts > BH_PROJECT_MAX_ARTIFACTS)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "%zu artifacts is more than %u",
				 req->n_artifacts, BH_PROJECT_MAX_ARTIFACTS);
	for (size_t i = 0; i < req->n_artifacts; i++) {
		const char *why = path_problem(req->artifacts[i]);
		if (why)
			return bh_refuse(err, BH_REFUSAL_REQUEST, "artifact path \"%s\" %s",
					 req->artifacts[i] ? req->artifacts[i] : "", why);
		for (size_t k = 0; k < i; k++)
			if (!strcmp(req->artifacts[k], req->artifacts[i]))
				return bh_refuse(err, BH_REFUSAL_REQUEST,
						 "artifact path \"%s\" is given twice", req->artifacts[i]);
	}
	if (req->timeout_ms > BH_PROJECT_MAX_TIMEOUT_MS)
		return bh_refuse(err, BH_REFUSAL_REQUEST,
				 "a project's budget of %u ms is above the %u ms maximum", req->timeout_ms,
				 BH_PROJECT_MAX_TIMEOUT_MS);
	return 0;
}

struct project_call *project_call_new(const struct bh_project *req)
{
	struct project_call *pc = xzalloc(sizeof *pc);
	pc->files = xzalloc((req->n_files + 1) * sizeof *pc->files);
	for (size_t i = 0; i < req->n_files; i++) {
		uint8_t *c = xzalloc(req->files[i].len + 1);
		if (req->files[i].len)
			memcpy(c, req->files[i].content, req->files[i].len);
		pc->files[i] = (struct bh_file){xstrdup(req->files[i].path), c, req->files[i].len};
	}
	pc->n_files = req->n_files;
	pc->steps = xzalloc((req->n_steps + 1) * sizeof *pc->steps);
	for (size_t i = 0; i < req->n_steps; i++)
		pc->steps[i] = xstrdup(req->steps[i]);
	pc->n_steps = req->n_steps;
	pc->artifacts = xzalloc((req->n_artifacts + 1) * sizeof *pc->artifacts);
	for (size_t i = 0; i < req->n_artifacts; i++)
		pc->artifacts[i] = xstrdup(req->artifacts[i]);
	pc->n_artifacts = req->n_artifacts;
	pc->grant_profile = xstrdup(req->grant_profile ? req->grant_profile : "");
	pc->floor = req->floor;
	pc->budget_ms = req->timeout_ms ? req->timeout_ms : BH_PROJECT_DEFAULT_TIMEOUT_MS;
	pc->sent_timeout_ms = req->has_sent_timeout ? req->sent_timeout_ms : req->timeout_ms;
	/* The nonce opens the report: only the runner, which read it from
	 * its stdin before any step existed, knows it. */
	size_t got = 0;
	while (got < sizeof pc->nonce) {
		ssize_t r = getrandom(pc->nonce + got, sizeof pc->nonce - got, 0);
		if (r < 0 && errno != EINTR)
			abort();
		got += r > 0 ? (size_t)r : 0;
	}
	struct buf *p = &pc->plan;
	buf_append(p, pc->nonce, sizeof pc->nonce);
	proto_put_u32(p, pc->budget_ms);
	proto_put_u32(p, BH_PROJECT_STEP_OUTPUT_CAP);
	proto_put_u32(p, BH_PROJECT_ARTIFACT_BUDGET);
	proto_put_u32(p, (uint32_t)pc->n_files);
	for (size_t i = 0; i < pc->n_files; i++) {
		proto_put_str(p, pc->files[i].path, strlen(pc->files[i].path));
		proto_put_str(p, pc->files[i].content, pc->files[i].len);
	}
	proto_put_u32(p, (uint32_t)pc->n_steps);
	for (size_t i = 0; i < pc->n_steps; i++)
		proto_put_str(p, pc->steps[i], strlen(pc->steps[i]));
	proto_put_u32(p, (uint32_t)pc->n_artifacts);
	for (size_t i = 0; i < pc->n_artifacts; i++)
		proto_put_str(p, pc->artifacts[i], strlen(pc->artifacts[i]));
	struct buf s = {0};
	for (size_t i = 0; i < pc->n_steps; i++) {
		buf_append(&s, "$ ", 2);
		buf_append(&s, pc->steps[i], strlen(pc->steps[i]));
		buf_append(&s, "\n", 1);
	}
	buf_append(&s, "", 1);
	pc->summary = (char *)s.data;
	pc->summary_len = s.len - 1;
	return pc;
}

void project_call_free(struct project_call *pc)
{
	if (!pc)
		return;
	for (size_t i = 0; i < pc->n_files; i++) {
		free((char *)pc->files[i].path);
		free((uint8_t *)pc->files[i].content);
	}
	free(pc->files);
	for (size_t i = 0; i < pc->n_steps; i++)
		free(pc->steps[i]);
	free(pc->steps);
	for (size_t i = 0; i < pc->n_artifacts; i++)
		free(pc->artifacts[i]);
	free(pc->artifacts);
	free(pc->grant_profile);
	buf_free(&pc->plan);
	free(pc->summary);
	free(pc);
}

/* ---- the report ---- */

/* UTF-8 with no control character but tab and newline: the detail is a
 * proto string and reaches logs. */
static bool detail_ok(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint8_t c = p[i];
		if (c < 0x80) {
			if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
				return false;
			i++;
			continue;
		}
		size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
		if (!len || c > 0xf4 || i + len > n)
			return false;
		uint32_t cp = c & (0x3f >> (len - 1));
		for (size_t k = 1; k < len; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
			return false;
		i += len;
	}
	return true;
}

static void outcome_set(struct project_outcome *o, enum bh_project_outcome what, const char *fmt,
			...) __attribute__((format(printf, 3, 4)));
static void outcome_set(struct project_outcome *o, enum bh_project_outcome what, const char *fmt,
			...)
{
	o->outcome = what;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(o->detail, sizeof o->detail, fmt, ap);
	va_end(ap);
}

/* What the report must be to be believed; false leaves o's lists as far as
 * they were read (the caller empties them). Every rule is one the runner
 * keeps: a report that breaks one is not the runner's account of this plan. */
static bool read_report(const struct project_call *pc, struct proto_cursor *c,
			struct project_outcome *o)
{
	uint8_t setup_failed, truncated, flags;
	const uint8_t *detail;
	uint32_t detail_len, n;
	if (proto_get_u8(c, &setup_failed) < 0 || setup_failed > 1 ||
	    proto_get_str(c, &detail, &detail_len) < 0 || detail_len > BH_PROJECT_DETAIL_MAX ||
	    !detail_ok(detail, detail_len) || proto_get_u32(c, &n) < 0 || n > pc->n_steps ||
	    (setup_failed && n != 0) || (!setup_failed && n == 0))
		return false;
	for (uint32_t i = 0; i < n; i++) {
		struct bh_project_step *st = &o->steps[i];
		uint32_t exit_code, out_len, err_len;
		const uint8_t *out, *err;
		if (proto_get_u32(c, &exit_code) < 0 || proto_get_u8(c, &flags) < 0 ||
		    (flags & ~7u) || proto_get_u64(c, &st->duration_us) < 0 ||
		    proto_get_str(c, &out, &out_len) < 0 || out_len > BH_PROJECT_STEP_OUTPUT_CAP ||
		    proto_get_str(c, &err, &err_len) < 0 || err_len > BH_PROJECT_STEP_OUTPUT_CAP)
			return false;
		st->command = pc->steps[i];
		st->exit_code = (int32_t)exit_code;
		st->timed_out = flags & BH_PROJECT_STEP_TIMED_OUT;
		st->stdout_truncated = flags & BH_PROJECT_STEP_STDOUT_TRUNCATED;
		st->stderr_truncated = flags & BH_PROJECT_STEP_STDERR_TRUNCATED;
		st->out = out;
		st->out_len = out_len;
		st->errout = err;
		st->errout_len = err_len;
		o->n_steps++;
		/* Steps stop at the first failure, and only there; a timed-out
		 * step is one that exited 124. */
		bool last = i + 1 == n;
		if ((!last && st->exit_code != 0) || (last && n < pc->n_steps && st->exit_code == 0) ||
		    (st->timed_out && st->exit_code != 124))
			return false;
	}
	if (proto_get_u8(c, &truncated) < 0 || truncated > 1 || proto_get_u32(c, &n) < 0 ||
	    n > pc->n_artifacts || (setup_failed && (n || truncated)))
		return false;
	uint64_t total = 0;
	int64_t prev = -1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t index, len;
		const uint8_t *content;
		if (proto_get_u32(c, &index) < 0 || (int64_t)index <= prev || index >= pc->n_artifacts ||
		    proto_get_str(c, &content, &len) < 0)
			return false;
		total += len;
		if (total > BH_PROJECT_ARTIFACT_BUDGET)
			return false;
		prev = index;
		o->artifacts[i] = (struct bh_artifact){pc->artifacts[index], content, len};
		o->n_artifacts++;
	}
	if (c->left != 0)
		return false;
	o->artifacts_truncated = truncated;
	if (setup_failed)
		outcome_set(o, BH_PROJECT_SETUP_FAILED, "%.*s", (int)detail_len, (const char *)detail);
	return true;
}

void project_judge(const struct project_call *pc, const uint8_t *out, size_t out_len,
		   bool out_truncated, bool exec_timed_out, int exit_code,
		   struct project_outcome *o)
{
	memset(o, 0, sizeof *o);
	o->last_exit = -1;
	o->outcome = BH_PROJECT_COMPLETED;
	/* The words are bulkhead's (plimsoll's), never the sandbox's stderr. */
	if (exec_timed_out) {
		outcome_set(o, BH_PROJECT_TIMED_OUT, "run exceeded the time budget");
		return;
	}
	struct proto_cursor c = proto_cursor(out, out_len);
	const uint8_t *nonce;
	if (out_len == 0) {
		outcome_set(o, BH_PROJECT_PROTOCOL_ERROR, "the runner did not report (it exited %d)",
			    exit_code);
		return;
	}
	if (out_truncated) {
		outcome_set(o, BH_PROJECT_PROTOCOL_ERROR,
			    "the runner's report was longer than a report can be");
		return;
	}
	if (proto_take(&c, BH_PROJECT_NONCE, &nonce) < 0 ||
	    memcmp(nonce, pc->nonce, BH_PROJECT_NONCE) != 0) {
		outcome_set(o, BH_PROJECT_PROTOCOL_ERROR, "no authenticated runner report");
		return;
	}
	if (!read_report(pc, &c, o)) {
		o->n_steps = o->n_artifacts = 0;
		o->artifacts_truncated = false;
		outcome_set(o, BH_PROJECT_PROTOCOL_ERROR, "could not parse sandbox result");
		return;
	}
	for (size_t i = 0; i < o->n_steps; i++) {
		const struct bh_project_step *st = &o->steps[i];
		buf_append(&o->out, st->out, st->out_len);
		buf_append(&o->err, st->errout, st->errout_len);
		o->last_exit = st->exit_code;
		if (st->timed_out && o->outcome == BH_PROJECT_COMPLETED)
			outcome_set(o, BH_PROJECT_TIMED_OUT, "step %zu exceeded the time budget", i + 1);
	}
}

void project_outcome_free(struct project_outcome *o)
{
	buf_free(&o->out);
	buf_free(&o->err);
}

/* ---- the record ---- */

void project_request_fields(const struct project_call *pc, struct bh_request_fields *rf)
{
	*rf = (struct bh_request_fields){
		.protocol = 3,
		.minimum_isolation = pc->floor > BH_TIER_NONE ? bh_tier_name(pc->floor) : "",
		.timeout_ms = pc->sent_timeout_ms,
		.software_mode = "",
		.kind = "project",
		.grant_profile = pc->grant_profile,
		.files = pc->files,
		.n_files = pc->n_files,
		.steps = (const char *const *)pc->steps,
		.n_steps = pc->n_steps,
		.artifacts = (const char *const *)pc->artifacts,
		.n_artifacts = pc->n_artifacts,
	};
}

/* ---- egress: the same fields over the caller's request, borrowed (no
 * copy, no nonce: a digest only) ---- */
void bh_project_request_digest(const struct bh_project *req, char out[65])
{
	struct project_call pc = {
		.files = (struct bh_file *)req->files,
		.n_files = req->n_files,
		.steps = (char **)req->steps,
		.n_steps = req->n_steps,
		.artifacts = (char **)req->artifacts,
		.n_artifacts = req->n_artifacts,
		.grant_profile = (char *)(req->grant_profile ? req->grant_profile : ""),
		.floor = req->floor,
		.sent_timeout_ms = req->has_sent_timeout ? req->sent_timeout_ms : req->timeout_ms,
	};
	struct bh_request_fields rf;
	project_request_fields(&pc, &rf);
	bh_request_digest(&rf, out);
}

void project_result_fields(const struct project_outcome *o, struct bh_result_fields *rf)
{
	*rf = (struct bh_result_fields){
		.kind = "project",
		.outcome = (int)o->outcome,
		.outcome_detail = o->detail,
		.artifacts_truncated = o->artifacts_truncated,
		.steps = o->steps,
		.n_steps = o->n_steps,
		.artifacts = o->artifacts,
		.n_artifacts = o->n_artifacts,
	};
}

void project_result_of(const struct project_outcome *o, enum bh_tier tier,
		       const struct bh_record *rec, struct bh_project_result *r)
{
	*r = (struct bh_project_result){
		.tier = tier,
		.outcome = o->outcome,
		.detail = o->detail,
		.steps = o->steps,
		.n_steps = o->n_steps,
		.artifacts = o->artifacts,
		.n_artifacts = o->n_artifacts,
		.artifacts_truncated = o->artifacts_truncated,
		.record = rec,
	};
}

void project_store_extra(const struct project_call *pc, const struct project_outcome *o,
			 uint64_t duration_us, char *flags, size_t flags_len,
			 struct store_record_extra *x)
{
	snprintf(flags, flags_len, "%s%s", bh_project_outcome_name(o->outcome),
		 o->artifacts_truncated ? ",artifacts_truncated" : "");
	*x = (struct store_record_extra){
		.language = "project",
		.exit_code = o->last_exit,
		.flags = flags,
		.duration_us = duration_us,
		.code = (const uint8_t *)pc->summary,
		.code_len = pc->summary_len,
		.out = o->out.data,
		.out_len = o->out.len,
		.err = o->err.data,
		.err_len = o->err.len,
	};
}

/* ---- a fresh run ---- */

struct fresh_project {
	bh_engine *e;
	struct project_call *pc;
	int64_t started_unix_ms;
	struct bh_record rec;
};

static void on_project_done(void *arg, const struct bh_exec_result *res, const bh_error *err)
{
	struct fresh_project *f = arg;
	bh_engine *e = f->e;
	struct project_call *pc = f->pc;
	if (!res) {
		pc->cb(pc->arg, NULL, err);
		goto out;
	}
	struct project_outcome o;
	project_judge(pc, res->out, res->out_len, res->stdout_truncated, res->timed_out,
		      res->exit_code, &o);
	if (res->oom && o.outcome == BH_PROJECT_PROTOCOL_ERROR)
		outcome_set(&o, BH_PROJECT_PROTOCOL_ERROR,
			    "the runner did not report (the sandbox's memory limit killed it)");
	struct bh_request_fields rq;
	struct bh_result_fields rs;
	project_request_fields(pc, &rq);
	project_result_fields(&o, &rs);
	struct bh_record *rec = &f->rec;
	engine_seal_fresh_record(e, res->tier, &rq, &rs, f->started_unix_ms, rec);
	char flags[64];
	struct store_record_extra x;
	project_store_extra(pc, &o, res->duration_us, flags, sizeof flags, &x);
	bh_error *serr = NULL;
	if (store_record_commit(e->store, rec, &x, e->keep_content, &serr) < 0) {
		bh_error_wrap(serr, "the project ran but its record could not be stored");
		pc->cb(pc->arg, NULL, serr);
		bh_error_free(serr);
		project_outcome_free(&o);
		goto out;
	}
	struct bh_project_result r;
	project_result_of(&o, res->tier, rec, &r);
	r.duration_us = res->duration_us;
	r.wall_us = res->wall_us;
	pc->cb(pc->arg, &r, NULL);
	project_outcome_free(&o);
out:
	project_call_free(pc);
	free(f);
}

int bh_run_project(bh_engine *e, const struct bh_project *req, bh_project_cb cb, void *arg,
		   bh_error **err)
{
	bh_error *unasked = NULL;
	/* ---- pgrant: the engine's own guard on a grant (the daemon checked
	 * the caller may use it); without a broker, refused permission ---- */
	if (!cb || project_check(req, err ? err : &unasked) < 0 ||
	    egress_check_profile(e, req->grant_profile, err ? err : &unasked) < 0) {
		if (!cb)
			bh_refuse(err ? err : &unasked, BH_REFUSAL_REQUEST,
				  "a project run needs a callback");
		bh_error_free(unasked);
		return -1;
	}
	struct fresh_project *f = xzalloc(sizeof *f);
	f->e = e;
	f->pc = project_call_new(req);
	f->pc->cb = cb;
	f->pc->arg = arg;
	f->started_unix_ms = (int64_t)now_real_ms();
	static const char *const argv[] = {BH_INIT_SANDBOX_PATH, BH_INIT_PROJECT, NULL};
	struct bh_exec_request x = {
		.tier = req->tier,
		.floor = req->floor,
		.argv = argv,
		.input = f->pc->plan.data,
		.input_len = f->pc->plan.len,
		.timeout_ms = f->pc->budget_ms + BH_PROJECT_RUNNER_GRACE_MS,
		.output_cap = BH_PROJECT_REPORT_CAP,
		.principal = req->principal,
	};
	/* ---- pgrant: a granted project is a granted fresh run: the socket
	 * mounted, the proxy and CA variables in the sandbox (so in every
	 * step's environment), held from before the EXEC until the runner's
	 * report is in, released before the answer (exec.c) ---- */
	const char *grant = *f->pc->grant_profile ? f->pc->grant_profile : NULL;
	if (exec_start(e, &x, grant, on_project_done, f, err) < 0) {
		project_call_free(f->pc);
		free(f);
		return -1;
	}
	return 0;
}
