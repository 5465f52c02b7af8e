/* CELL: code run in the persistent interpreter of its language.
 *
 * The init <-> cell server protocol (fds 3 and 4 of the server, see
 * interp.c; data/interp/python/cell.py and data/interp/javascript/cell.js
 * repeat it):
 *
 *   request, init -> server, fd 3, one line:
 *     {"nonce":"<32 lowercase hex>","code":"<the cell's source>"}\n
 *   reply, server -> init, fd 4, one line, after the cell finished and the
 *   server flushed its stdout and stderr:
 *     {"nonce":"<the request's nonce>","status":"ok"|"error"}\n
 *
 * UTF-8 JSON, exactly one reply per request, nothing else ever on fd 4.
 * "error" means the cell raised (the server printed why to stderr); the
 * interpreter and its state live on. The nonce is fresh for every cell, so
 * a line that code inside the cell writes to fd 4, or a stale one, cannot
 * pass for the reply; the reply parser accepts exactly the two keys above
 * (either order, optional JSON whitespace), string values without escapes,
 * and at most REPLY_LINE_MAX bytes. The server makes fds 3 and 4
 * close-on-exec so subprocesses never see them, and exits when fd 3 reaches
 * EOF.
 *
 * A reply that is not that line, a reply with another nonce, or fd 4
 * closed while the server lives on: the init kills the interpreter and
 * reports the cell as exit_code 1 with INTERP_ENDED and a line of its own
 * on stderr saying why (what the cell did is unknown).
 *
 * The init never trusts what arrives from the interpreter beyond that:
 * output is captured under the cap like EXEC's, the reply line is bounded,
 * and a misbehaving interpreter can only spoil its own cell. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cell_parse.h"
#include "answer.h"
#include "files.h"
#include "init_priv.h"
#include "jsonl.h"
#include "base.h"
#include "walk.h"

/* fd 4 closed while the server still runs: how long to wait for it to
 * exit (its status is the better answer) before killing it. */
#define HUP_GRACE_MS 200
/* Stale output left in an interpreter's pipes since its last cell (a
 * background thread, say) is discarded up to this much per stream. */
#define STALE_MAX (4u * 1024u * 1024u)
/* Final drain after the sweep, in rounds of capture_read(). */
#define FINAL_DRAIN_ROUNDS 64
/* While a cell runs, its stdout and stderr are watched only after this
 * long: a quick cell's output waits in the pipes (64 KiB each) and is taken
 * in one go after the reply, instead of every write waking the init (a
 * wake-up and two reads per print, each tens of microseconds under
 * gVisor). A cell that fills a pipe sooner waits at most this long. */
#define OUTPUT_WATCH_DELAY_MS 5

static struct files_req files_rq;
static char files_tag[17];

static void cell_release(struct init *st)
{
	struct cell *c = &st->cell;

	helper_release(&c->writer);
	capture_free(&c->out);
	capture_free(&c->err);
	jsonl_free(c->wr);
	free(c->payload);
	*c = (struct cell){ .out.fd = -1, .err.fd = -1, .writer.fd = -1 };
}

/* An interpreter that died since its last cell is cleared out of the way,
 * so the next start is a fresh one. Not the one a running cell uses. */
static void forget_dead(struct init *st, int lang)
{
	struct interp *ip = &st->interp[lang];

	if (st->cell.stage != CELL_IDLE && st->cell.lang == lang)
		return;
	if (ip->pid > 0 && ip->exited)
		interp_release(ip);
}

static int check_files(struct init *st, const struct cell_req *rq)
{
	struct proto_cursor c = rq->files;

	for (uint32_t i = 0; i < rq->nfiles; i++) {
		const uint8_t *path, *data;
		uint32_t plen, dlen;
		char shown[512];
		enum proto_path_problem why;
		int ret;

		proto_get_str(&c, &path, &plen);
		proto_get_str(&c, &data, &dlen);
		why = proto_path_check(path, plen, 0);
		if (why == PROTO_PATH_OK)
			continue;
		path_printable(path, plen, shown, sizeof(shown));
		ret = queue_rejected(st, rq->call_id, BH_CHAN_REJECT_FILES, proto_path_errno(why),
				     "invalid path \"%s\": %s", shown,
				     proto_path_problem_text(why));
		return ret < 0 ? ret : 1;
	}
	return 0;
}

/* Makes sure the interpreter runs. 0, 1 when a reply was queued instead,
 * or <0 when even that failed. */
static int ensure_interp(struct init *st, uint64_t call_id, int lang)
{
	const char *why = "";
	int ret;

	if (interp_live(&st->interp[lang]))
		return 0;
	if (st->interp[lang].pid > 0)
		interp_release(&st->interp[lang]);
	ret = interp_start(st, lang, &why);
	if (ret == 0)
		return 0;
	/* The init's own resources running out is a failure of the call;
	 * anything about the interpreter itself means there is none here. */
	if (!strcmp(why, "fork") || !strcmp(why, "pipe"))
		ret = queue_fail(st, call_id, -ret, "%s interpreter: %s: %s",
				 interp_name(lang), why, strerror(-ret));
	else
		ret = queue_rejected(st, call_id, BH_CHAN_REJECT_LANGUAGE, -ret,
				     "no %s interpreter here: %s: %s", interp_name(lang),
				     why, strerror(-ret));
	return ret < 0 ? ret : 1;
}

static int begin_run(struct init *st)
{
	struct cell *c = &st->cell;
	struct interp *ip;
	int ret;

	/* It may have died while the files were written. */
	ret = ensure_interp(st, c->call_id, c->lang);
	if (ret != 0) {
		cell_release(st);
		return ret < 0 ? ret : 0;
	}
	ip = &st->interp[c->lang];
	{
		/* What a fresh server printed at startup (a crash, say)
		 * belongs to its first cell; otherwise anything left in its
		 * pipes since the last cell is stale. */
		int stale[3] = { ip->rep_fd, ip->fresh ? -1 : ip->out_fd,
				 ip->fresh ? -1 : ip->err_fd };

		c->fresh = ip->fresh;
		discard_pending_all(stale, 3, STALE_MAX);
	}
	ip->line_len = 0;
	ip->fresh = false;
	capture_init(&c->out, ip->out_fd, c->output_cap, true);
	capture_init(&c->err, ip->err_fd, c->output_cap, true);
	c->wr = jsonl_request(c->nonce, c->code, c->code_len);
	if (!c->wr) {
		ret = queue_fail(st, c->call_id, ENOMEM, "cell request: %s",
				 strerror(ENOMEM));
		cell_release(st);
		return ret;
	}
	c->t_start = now_mono_ns();
	if (c->timeout_ms)
		c->deadline = c->t_start + (uint64_t)c->timeout_ms * 1000000u;
	c->stage = CELL_RUN;
	return 0;
}

int handle_cell(struct init *st, uint8_t **payload, size_t len)
{
	struct cell *c = &st->cell;
	struct cell_req rq;
	int ret;

	if (bh_parse_cell(*payload, len, &rq) < 0)
		return -EPROTO;
	if (init_busy(st))
		return queue_fail(st, rq.call_id, EBUSY, "a%s is already running (call %llu)",
				  st->job.active ? "n EXEC" : " CELL",
				  (unsigned long long)(st->job.active ? st->job.call_id
								      : c->call_id));
	if (rq.lang >= NLANG)
		return queue_rejected(st, rq.call_id, BH_CHAN_REJECT_MALFORMED, EINVAL,
				      "unknown language %u", rq.lang);
	/* The servers speak JSON, which has no form for invalid UTF-8. */
	if (!utf8_valid(rq.code, rq.code_len))
		return queue_rejected(st, rq.call_id, BH_CHAN_REJECT_MALFORMED, EILSEQ,
				      "the code is not valid UTF-8");
	ret = check_files(st, &rq);
	if (ret != 0)
		return ret < 0 ? ret : 0;
	/* Started before the files are written, so a missing interpreter is
	 * refused with nothing left behind in /work. With a signalfd, an
	 * interpreter that died before this request was reaped when its
	 * SIGCHLD woke the loop (before requests are read); a death since
	 * then is caught like one during the cell. Without it, look now. */
	if (st->sig_fd < 0)
		reap(st);
	forget_dead(st, rq.lang);
	ret = ensure_interp(st, rq.call_id, rq.lang);
	if (ret != 0)
		return ret < 0 ? ret : 0;
	*c = (struct cell){
		.stage = CELL_FILES,
		.call_id = rq.call_id,
		.lang = rq.lang,
		.timeout_ms = rq.timeout_ms,
		.output_cap = rq.output_cap,
		.payload = steal_ptr(*payload),
		.code = rq.code,
		.code_len = rq.code_len,
		.out.fd = -1,
		.err.fd = -1,
		.writer.fd = -1,
		.relay_ms = rq.relay_ms && rq.relay_ms < BH_CHAN_RELAY_MIN_MS ? BH_CHAN_RELAY_MIN_MS
									     : rq.relay_ms,
	};
	pool_random_hex(16, c->nonce);
	if (rq.nfiles == 0)
		return begin_run(st);
	pool_random_hex(8, files_tag);
	files_rq = (struct files_req){
		.call_id = rq.call_id,
		.files = rq.files,
		.nfiles = rq.nfiles,
		.tag = files_tag,
	};
	ret = helper_start(&c->writer, HK_FILES, rq.call_id, files_body, &files_rq);
	if (ret < 0) {
		ret = queue_fail(st, rq.call_id, -ret, "fork: %s", strerror(-ret));
		cell_release(st);
	}
	return ret;
}

int handle_warm(struct init *st, const uint8_t *payload, size_t len)
{
	struct proto_cursor c = proto_cursor(payload, len);
	uint32_t mask;

	if (proto_get_u32(&c, &mask) < 0 || c.left != 0)
		return -EPROTO;
	reap(st);
	for (int lang = 0; lang < NLANG; lang++) {
		const char *why = "";
		int ret;

		if (!(mask & (1u << lang)))
			continue;
		/* A running cell owns its interpreter, dying or not. */
		if (st->cell.stage != CELL_IDLE && st->cell.lang == lang)
			continue;
		forget_dead(st, lang);
		if (st->interp[lang].pid > 0)
			continue;
		/* No reply to WARM: the next CELL reports any failure. */
		ret = interp_start(st, lang, &why);
		if (ret < 0)
			diag("warm %s: %s: %s", interp_name(lang), why, strerror(-ret));
	}
	return 0;
}

/* ---- the running cell -------------------------------------------------- */

static void set_result(struct cell *c, enum cell_result r, const char *note)
{
	if (c->result != CR_NONE)
		return;
	c->result = r;
	c->note = note;
	c->t_end = now_mono_ns();
}

static void on_reply_line(struct cell *c, const char *line, size_t n)
{
	switch (jsonl_parse_reply(line, n, c->nonce)) {
	case JSONL_OK:
		set_result(c, CR_OK, NULL);
		break;
	case JSONL_ERROR:
		set_result(c, CR_ERROR, NULL);
		break;
	case JSONL_STRANGER:
		set_result(c, CR_BADREPLY, "replied with another cell's nonce");
		break;
	default:
		set_result(c, CR_BADREPLY, "sent a malformed reply");
		break;
	}
}

/* Bytes after the first newline are ignored: exactly one reply per
 * request, and anything else is discarded before the next cell. */
static void read_reply(struct init *st)
{
	struct cell *c = &st->cell;
	struct interp *ip = &st->interp[c->lang];

	while (c->result == CR_NONE && ip->rep_fd >= 0 && !c->hup_at) {
		size_t room = sizeof(ip->line) - ip->line_len;
		ssize_t n;
		char *nl;

		if (room == 0) {
			set_result(c, CR_BADREPLY, "sent an overlong reply");
			return;
		}
		n = read(ip->rep_fd, ip->line + ip->line_len, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			c->hup_at = now_mono_ns();
			return;
		}
		nl = memchr(ip->line + ip->line_len, '\n', (size_t)n);
		ip->line_len += (size_t)n;
		if (nl)
			on_reply_line(c, ip->line, (size_t)(nl - ip->line));
	}
}

static void send_request(struct init *st)
{
	struct cell *c = &st->cell;
	int ret;

	if (!c->wr)
		return;
	ret = jsonl_write(c->wr, st->interp[c->lang].req_fd);
	if (ret == 1)
		return;
	/* Written, or the server is gone (EPIPE): either way nothing more
	 * to send; a gone server shows up as EOF on fd 4 and an exit. */
	jsonl_free(c->wr);
	c->wr = NULL;
	if (ret < 0 && !c->hup_at)
		c->hup_at = now_mono_ns();
}

void cell_pollfds(struct init *st, struct pollset *ps)
{
	struct cell *c = &st->cell;
	struct interp *ip = &st->interp[c->lang];

	switch (c->stage) {
	case CELL_FILES:
		ps_add(ps, c->writer.fd, POLLIN, T_HELPER, &c->writer);
		break;
	case CELL_RUN:
		if (c->wr)
			ps_add(ps, ip->req_fd, POLLOUT, T_CELL_REQ, NULL);
		if (!c->hup_at)
			ps_add(ps, ip->rep_fd, POLLIN, T_CELL_REP, NULL);
		/* A server that died or broke its reply pipe is no quick cell:
		 * its pipes are watched at once. */
		if (!c->hup_at && !ip->exited &&
		    now_mono_ns() < c->t_start + OUTPUT_WATCH_DELAY_MS * 1000000ull)
			break;
		/* fall through */
	case CELL_SWEEP:
		ps_add(ps, c->out.fd, POLLIN, T_CELL_OUT, NULL);
		ps_add(ps, c->err.fd, POLLIN, T_CELL_ERR, NULL);
		break;
	default:
		break;
	}
}

void cell_ready(struct init *st, int tag)
{
	struct cell *c = &st->cell;

	if (tag == T_CELL_OUT)
		capture_read(&c->out);
	else if (tag == T_CELL_ERR)
		capture_read(&c->err);
	else if (tag == T_CELL_REP && c->stage == CELL_RUN)
		read_reply(st);
	else if (tag == T_CELL_REQ && c->stage == CELL_RUN)
		send_request(st);
}

static void decide(struct init *st, uint64_t now)
{
	struct cell *c = &st->cell;
	struct interp *ip = &st->interp[c->lang];

	if (c->result == CR_NONE && ip->exited) {
		/* A reply already in the pipe still counts. */
		read_reply(st);
		set_result(c, CR_DIED, NULL);
	}
	if (c->result == CR_NONE && c->hup_at &&
	    now - c->hup_at >= HUP_GRACE_MS * 1000000ull)
		set_result(c, CR_BADREPLY, "closed its reply pipe");
	if (c->result == CR_NONE && c->deadline && now >= c->deadline) {
		set_result(c, CR_TIMEOUT, NULL);
		c->t_end = c->deadline;
	}
	if (c->result == CR_NONE)
		return;
	if (c->result == CR_TIMEOUT || c->result == CR_BADREPLY)
		interp_kill(ip);
	jsonl_free(c->wr);
	c->wr = NULL;
	c->stage = CELL_SWEEP;
	c->sweep_start = now;
	sweep_begin(st);
}

static void exit_code_of(const struct cell *c, const struct interp *ip,
			 struct done_info *d)
{
	switch (c->result) {
	case CR_OK:
		d->code = 0;
		break;
	case CR_TIMEOUT:
		/* The deadline's SIGKILL stays visible, as for EXEC. */
		d->code = 124;
		d->sig = SIGKILL;
		d->flags |= BH_CHAN_TIMED_OUT;
		break;
	case CR_DIED:
		if (WIFSIGNALED(ip->status)) {
			d->sig = (uint32_t)WTERMSIG(ip->status);
			d->code = 128 + WTERMSIG(ip->status);
		} else {
			d->code = WIFEXITED(ip->status) ? WEXITSTATUS(ip->status) : 1;
		}
		break;
	default: /* CR_ERROR; CR_BADREPLY: what the cell did is unknown */
		d->code = 1;
		break;
	}
}

static void final_drain(struct cell *c)
{
	struct capture *caps[2] = { &c->out, &c->err };
	struct pollfd p[2];
	int n = 0, idx[2];

	for (int i = 0; i < 2; i++)
		if (caps[i]->fd >= 0) {
			p[n] = (struct pollfd){ .fd = caps[i]->fd, .events = POLLIN };
			idx[n++] = i;
		}
	if (n == 0 || poll(p, (nfds_t)n, 0) <= 0)
		return;
	for (int j = 0; j < n; j++) {
		if (!(p[j].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		for (int i = 0; i < FINAL_DRAIN_ROUNDS && capture_read(caps[idx[j]]); i++)
			;
	}
}

static int finish(struct init *st)
{
	struct cell *c = &st->cell;
	struct interp *ip = &st->interp[c->lang];
	bool ended = ip->doomed || ip->exited;
	struct done_info d = {
		.call_id = c->call_id,
		.duration_us = (c->t_end - c->t_start) / 1000u,
		.out = &c->out,
		.err = &c->err,
	};
	int ret;

	/* Bytes written before the reply are in the pipes already; one
	 * poll finds which of them hold any. */
	final_drain(c);
	exit_code_of(c, ip, &d);
	if (c->fresh)
		d.flags |= BH_CHAN_INTERP_STARTED;
	if (ended)
		d.flags |= BH_CHAN_INTERP_ENDED;
	if (!c->note && ended && st->sweep_note)
		c->note = st->sweep_note;
	if (c->note) {
		char line[160];

		snprintf(line, sizeof(line),
			 "\nbulkhead: the %s interpreter %s; it was stopped and the "
			 "next cell starts a fresh one\n",
			 interp_name(c->lang), c->note);
		capture_note(&c->err, line);
	}
	ret = queue_done(st, &d);
	if (ret < 0)
		ret = queue_fail(st, c->call_id, -ret, "DONE: %s", strerror(-ret));
	if (ended)
		interp_release(ip);
	cell_release(st);
	return ret;
}

static int files_progress(struct init *st, uint64_t now)
{
	struct cell *c = &st->cell;
	int ret;

	if (helper_expired(&c->writer, now)) {
		ret = queue_rejected(st, c->call_id, BH_CHAN_REJECT_FILES, ETIMEDOUT,
				     "the files were not written within %d ms",
				     HELPER_TIMEOUT_MS);
		cell_release(st);
		return ret;
	}
	if (!helper_done(&c->writer))
		return 0;
	ret = answer_relay(st, &c->writer, "KJ");
	helper_release(&c->writer);
	if (ret == ANSWER_PLAIN)
		return begin_run(st);
	if (ret == ANSWER_INVALID)
		ret = queue_rejected(st, c->call_id, BH_CHAN_REJECT_FILES, EIO,
				     "the file writer died or answered nonsense");
	cell_release(st);
	return ret < 0 ? ret : 0;
}

int cell_progress(struct init *st)
{
	struct cell *c = &st->cell;
	struct interp *ip = &st->interp[c->lang];
	uint64_t now = now_mono_ns();
	bool settled;

	if (c->stage == CELL_FILES)
		return files_progress(st, now);
	if (c->stage == CELL_RUN) {
		/* Start writing at once: most requests fit the pipe. */
		if (c->wr)
			send_request(st);
		/* stream: what the cell printed so far, before it is decided,
		 * while the stage still says it runs */
		if (relay_output(st, now) < 0)
			return -1;
		decide(st, now);
	}
	if (c->stage != CELL_SWEEP)
		return 0;
	settled = sweep_pass(st);
	/* A dying interpreter is settled once reaped and every holder of
	 * its output pipes is gone (EOF); a live one keeps its pipes. */
	if (ip->doomed || ip->exited)
		settled = settled && ip->exited && c->out.fd < 0 && c->err.fd < 0;
	if (!settled && now - c->sweep_start < SWEEP_GRACE_MS * 1000000ull)
		return 0;
	if (!settled)
		diag("call %llu: leftovers did not die within %d ms",
		     (unsigned long long)c->call_id, SWEEP_GRACE_MS);
	return finish(st);
}

int cell_timeout(const struct init *st)
{
	const struct cell *c = &st->cell;
	uint64_t now = now_mono_ns();
	int t = -1;

	switch (c->stage) {
	case CELL_FILES:
		return ms_until(now, c->writer.deadline);
	case CELL_RUN:
		if (c->deadline)
			t = ms_until(now, c->deadline);
		if (now < c->t_start + OUTPUT_WATCH_DELAY_MS * 1000000ull)
			t = min_timeout(t, ms_until(now, c->t_start +
							    OUTPUT_WATCH_DELAY_MS * 1000000ull));
		if (c->hup_at)
			t = min_timeout(t, ms_until(now, c->hup_at + HUP_GRACE_MS * 1000000ull));
		t = min_timeout(t, relay_timeout(st, now));
		/* Not reaped yet but already dead: reap() runs on SIGCHLD. */
		return t;
	case CELL_SWEEP:
		return SWEEP_TICK_MS;
	default:
		return -1;
	}
}
