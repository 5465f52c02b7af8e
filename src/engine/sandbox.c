/* One sandbox: its bundle, its runtime calls, and the channel to its init.
 *
 *   opening -> ready <-> busy -> ending -> ended      (failed: broke on the way)
 *
 * sandbox_set_state() is the only place the state changes, so every
 * transition is logged. Teardown is asynchronous: the init is told to go
 * (its channel closes), the runtime deletes the container, and only then is
 * the sandbox freed; engine close waits for that. */
#include "sandbox_priv.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#define OPEN_DEADLINE_MS 60000u
#define INIT_EXIT_GRACE_MS 3000u

static const char *const state_names[] = {
	[SB_OPENING] = "opening",	  [SB_READY] = "ready",	      [SB_BUSY] = "busy",
	[SB_PAUSED] = "paused",		  [SB_HIBERNATING] = "hibernating", [SB_HIBERNATED] = "hibernated",
	[SB_ENDING] = "ending",		  [SB_ENDED] = "ended",	      [SB_FAILED] = "failed",
};

const char *sandbox_state_name(enum sandbox_state s)
{
	return state_names[s];
}

void sandbox_set_state(bh_engine *e, struct sandbox *sb, enum sandbox_state s)
{
	if (sb->state == s)
		return;
	bh_log(e, BH_LOG_DEBUG, "sandbox %s: %s -> %s", sb->name, state_names[sb->state],
	       state_names[s]);
	sb->state = s;
}

bool sandbox_alive(bh_engine *e, const struct sandbox *sb)
{
	for (struct sandbox *x = e->sandboxes; x; x = x->next)
		if (x == sb)
			return true;
	return false;
}

char *sandbox_cgroup_leaf(const struct sandbox *sb)
{
	return xstrdup(sb->name);
}

/* ---- teardown ---- */

static void finalize(bh_engine *e, struct sandbox *sb)
{
	for (struct sandbox **pp = &e->sandboxes; *pp; pp = &(*pp)->next) {
		if (*pp == sb) {
			*pp = sb->next;
			break;
		}
	}
	if (sb->bundle_dir)
		rm_rf(sb->bundle_dir);
	/* The runtime removes its cgroups; what it cannot (the hidden unified
	 * directory's leftovers) goes here. */
	cgroups_remove_leaf(&e->cg, sb->name);
	if (sb->uid_slot >= 0)
		e->uid_slots[sb->uid_slot] = 0;
	sandbox_set_state(e, sb, SB_ENDED);
	buf_free(&sb->rbuf);
	buf_free(&sb->wbuf);
	buf_free(&sb->diagbuf);
	if (sb->image_dir)
		rm_rf(sb->image_dir);
	free(sb->image_dir);
	if (sb->egress_dir) /* ---- egress ---- */
		rm_rf(sb->egress_dir);
	free(sb->egress_dir);
	free(sb->bundle_dir);
	free(sb->pid_file);
	free(sb);
}

static void on_deleted(bh_engine *e, void *arg, const struct bh_child_result *r)
{
	struct sandbox *sb = arg;
	if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0)
		bh_log(e, BH_LOG_WARN, "sandbox %s: %s delete failed: %s", sb->name, sb->rt->ops->name,
		       rtrim((char *)r->output));
	finalize(e, sb);
}

static void start_delete(bh_engine *e, struct sandbox *sb)
{
	if (sb->deleting)
		return;
	sb->deleting = true;
	loop_timer_cancel(e->loop, sb->close_grace);
	sb->close_grace = NULL;
	const char *const args[] = {"delete", sb->rt->ops->delete_force, sb->name, NULL};
	char **argv = runtime_argv(sb->rt, args);
	struct bh_child_spec spec = {.argv = (const char *const *)argv,
				     .fd_in = -1,
				     .fd_out = BH_CHILD_CAPTURE,
				     .fd_err = BH_CHILD_CAPTURE,
				     .timeout_ms = 30000};
	bh_error *err = NULL;
	if (child_spawn(e, &spec, on_deleted, sb, NULL, &err) < 0) {
		bh_log(e, BH_LOG_ERROR, "sandbox %s: %s", sb->name, err->msg);
		bh_error_free(err);
		finalize(e, sb);
	}
	argv_free(argv);
}

static void on_close_grace(bh_engine *e, void *arg)
{
	struct sandbox *sb = arg;
	sb->close_grace = NULL;
	bh_log(e, BH_LOG_DEBUG, "sandbox %s: init still alive %u ms after its channel closed",
	       sb->name, INIT_EXIT_GRACE_MS);
	start_delete(e, sb); /* delete -f kills what is left */
}

void close_channel(bh_engine *e, struct sandbox *sb)
{
	loop_unwatch(e->loop, sb->w_out);
	loop_unwatch(e->loop, sb->w_in);
	loop_unwatch(e->loop, sb->w_diag);
	sb->w_out = sb->w_in = sb->w_diag = NULL;
	bh_closep(&sb->to_init);
	bh_closep(&sb->from_init);
	bh_closep(&sb->diag);
	sb->to_init = sb->from_init = sb->diag = -1;
}


static void on_thawed_for_close(bh_engine *e, void *arg, const struct bh_child_result *r)
{
	struct sandbox *sb = arg;
	(void)r;
	if (sb->init_pid > 0 && !sb->init_exited)
		sb->close_grace = loop_timer(e->loop, INIT_EXIT_GRACE_MS, on_close_grace, sb);
	else
		start_delete(e, sb);
}

static void finish_op(bh_engine *e, struct sandbox *sb, const struct sandbox_reply *r);

/* Whoever waits on a sandbox being closed hears about it: an open, a
 * request in flight, a control operation. Nothing is left hanging. */
static void answer_waiters(bh_engine *e, struct sandbox *sb)
{
	bh_error *err = NULL;
	if (sb->open_fn) {
		sandbox_open_fn fn = sb->open_fn;
		sb->open_fn = NULL;
		bh_fail(&err, BH_E_CLOSED, 0, "sandbox %s was closed before it was ready", sb->name);
		fn(e, sb->open_arg, NULL, err);
		bh_error_free(err);
		err = NULL;
	}
	if (sb->op_fn) {
		struct sandbox_reply r = {.lost = "the sandbox was closed",
					  .elapsed_us = now_mono_us() - sb->op_started_us};
		finish_op(e, sb, &r);
	}
	if (sb->control_fn) {
		bh_fail(&err, BH_E_CLOSED, 0, "sandbox %s was closed", sb->name);
		control_finish(e, sb, err);
		bh_error_free(err);
	}
	sandbox_side_abort(e, sb, "the sandbox was closed");
}

void sandbox_close(bh_engine *e, struct sandbox *sb)
{
	if (sb->state == SB_ENDING || sb->state == SB_ENDED)
		return;
	/* A frozen init cannot see its channel close: delete it at once. */
	sb->state_before_end = sb->state;
	sandbox_set_state(e, sb, SB_ENDING);
	answer_waiters(e, sb);
	loop_timer_cancel(e->loop, sb->open_deadline);
	loop_timer_cancel(e->loop, sb->backstop);
	sb->open_deadline = sb->backstop = NULL;
	/* The init sees end-of-file, sweeps every process and exits. */
	close_channel(e, sb);
	if (sb->state_before_end == SB_PAUSED && sb->init_pid > 0 && !sb->init_exited) {
		/* A frozen init cannot see its channel close, and runsc must not
		 * delete a paused container: thaw it first. */
		const char *const args[] = {"resume", sb->name, NULL};
		bh_error *err = NULL;
		if (spawn_runtime(e, sb, args, -1, BH_CHILD_CAPTURE, BH_CHILD_CAPTURE,
				  on_thawed_for_close, &err) == 0)
			return;
		bh_log(e, BH_LOG_WARN, "sandbox %s: %s", sb->name, err->msg);
		bh_error_free(err);
	}
	if (sb->creating)
		return; /* deleting now would race the create: on_created deletes */
	if (sb->state_before_end == SB_HIBERNATED) {
		finalize(e, sb); /* only its bundle and image exist */
		return;
	}
	if (sb->init_pid > 0 && !sb->init_exited && sb->state_before_end != SB_HIBERNATED)
		sb->close_grace = loop_timer(e->loop, INIT_EXIT_GRACE_MS, on_close_grace, sb);
	else if (sb->init_pid > 0 || !sb->deleting)
		start_delete(e, sb);
}

void sandbox_abandon(bh_engine *e, struct sandbox *sb)
{
	bh_log(e, BH_LOG_WARN, "sandbox %s did not end in time; deleting it now", sb->name);
	close_channel(e, sb);
	loop_timer_cancel(e->loop, sb->close_grace);
	if (sb->init_pid > 0)
		child_forget(e, sb->init_pid);
	runtime_destroy_sync(sb->rt, sb->name);
	finalize(e, sb);
}

/* ---- failure paths ---- */

static void fail_open(bh_engine *e, struct sandbox *sb, bh_error *err)
{
	sandbox_open_fn fn = sb->open_fn;
	sb->open_fn = NULL;
	sandbox_set_state(e, sb, SB_FAILED);
	sandbox_close(e, sb);
	if (fn)
		fn(e, sb->open_arg, NULL, err);
	bh_error_free(err);
}

/* Hands the op in flight its end: a reply, or (type 0) the loss of the
 * sandbox. The op is cleared first, so its callback may start the next. */
static void finish_op(bh_engine *e, struct sandbox *sb, const struct sandbox_reply *r)
{
	sandbox_reply_fn fn = sb->op_fn;
	void *arg = sb->op_arg;
	sb->op_fn = NULL;
	sb->op_arg = NULL;
	sb->output_fn = NULL; /* stream */
	loop_timer_cancel(e->loop, sb->backstop);
	sb->backstop = NULL;
	if (fn)
		fn(e, arg, sb, r);
}

static void lose_op(bh_engine *e, struct sandbox *sb, const char *why)
{
	long long oom_now = cgroups_oom_kills(&e->cg, sb->name);
	struct sandbox_reply r = {
		.lost = why,
		.breach = sb->breached,
		.oom = sb->oom_before >= 0 && oom_now > sb->oom_before,
		.elapsed_us = now_mono_us() - sb->op_started_us,
	};
	/* Taken before the close, which would otherwise answer it as "closed". */
	sandbox_reply_fn fn = sb->op_fn;
	void *arg = sb->op_arg;
	sb->op_fn = NULL;
	sb->op_arg = NULL;
	sb->output_fn = NULL; /* stream */
	sandbox_set_state(e, sb, SB_FAILED);
	sandbox_close(e, sb);
	if (fn)
		fn(e, arg, sb, &r);
}

static bh_error *make_err(enum bh_error_code code, const char *fmt, const char *name,
			  const char *detail)
{
	bh_error *err = NULL;
	bh_fail(&err, code, 0, fmt, name, detail);
	return err;
}

/* The sandbox died or broke its channel: tell whoever waits. A call in
 * flight may have run, and if the memory cgroup counted an OOM kill that is
 * the outcome (gVisor's: the whole sandbox goes, as measured on this host). */
/* What the runtime or the init wrote on the diagnostics pipe, as one line. */
const char *diag_text(struct sandbox *sb, char *out, size_t n)
{
	size_t len = sb->diagbuf.len < n - 1 ? sb->diagbuf.len : n - 1;
	memcpy(out, sb->diagbuf.data ? (const char *)sb->diagbuf.data : "", len);
	out[len] = '\0';
	for (char *p = out; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	return rtrim(out);
}

static void sandbox_lost_call(bh_engine *e, struct sandbox *sb, const char *why);

/* ---- procs ---- */
/* The side request is answered after the call and the owner heard of the
 * loss, with the sandbox's own words (its callback sees no sandbox). */
void sandbox_lost(bh_engine *e, struct sandbox *sb, const char *why)
{
	sandbox_reply_fn side = sb->side_fn;
	void *side_arg = sb->side_arg;
	bool breach = sb->breached;
	char saved[256];
	snprintf(saved, sizeof saved, "%s", why);
	sb->side_fn = NULL;
	sb->side_arg = NULL;
	loop_timer_cancel(e->loop, sb->side_backstop);
	sb->side_backstop = NULL;
	sandbox_lost_call(e, sb, why);
	if (side) {
		struct sandbox_reply r = {.lost = saved, .breach = breach};
		side(e, side_arg, NULL, &r);
	}
}

static void sandbox_lost_call(bh_engine *e, struct sandbox *sb, const char *why)
{
	if (sb->state == SB_OPENING) {
		char diag[1024];
		diag_text(sb, diag, sizeof diag);
		fail_open(e, sb,
			  make_err(BH_E_SANDBOX, "sandbox %s ended while opening: %s", sb->name,
				   *diag ? diag : why));
		return;
	}
	if (sb->state == SB_BUSY) {
		lose_op(e, sb, why);
		return;
	}
	bh_log(e, BH_LOG_WARN, "sandbox %s ended: %s", sb->name, why);
	sandbox_set_state(e, sb, SB_FAILED);
	/* Lost while idle: its owner would otherwise keep a sandbox that is
	 * being freed and hand it the next call. */
	void (*lost)(bh_engine *, void *, struct sandbox *, const char *) = sb->lost_fn;
	void *arg = sb->lost_arg;
	sb->lost_fn = NULL;
	sb->lost_arg = NULL;
	sandbox_close(e, sb);
	if (lost)
		lost(e, arg, sb, why);
}

/* The init broke the channel's contract (a frame of the wrong kind, for a
 * call nobody made, or with a count or length beyond what was asked or
 * what the frame holds): nothing it says can be believed any more, so the
 * sandbox ends, and its owner learns it as a breach (a session ends
 * boundary_failed). The event says what the init sent. */
static void sandbox_breached(bh_engine *e, struct sandbox *sb, const char *why)
{
	if (sb->state == SB_ENDING || sb->state == SB_FAILED || sb->state == SB_ENDED)
		return;
	sb->breached = true;
	bh_log(e, BH_LOG_WARN, "sandbox %s broke its channel: %s", sb->name, why);
	if (e->store)
		store_event(e->store, "channel_broken", "", sb->name, why);
	sandbox_lost(e, sb, why);
}

/* ---- the channel ---- */

static void on_writable(bh_engine *e, void *arg, uint32_t events);

static void flush_writes(bh_engine *e, struct sandbox *sb)
{
	while (sb->wbuf.len > 0 && sb->to_init >= 0) {
		ssize_t w = write(sb->to_init, sb->wbuf.data, sb->wbuf.len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		if (w < 0) {
			sandbox_lost(e, sb, "its channel refused a write");
			return;
		}
		buf_consume(&sb->wbuf, (size_t)w);
	}
	if (sb->to_init < 0)
		return;
	if (sb->wbuf.len > 0 && !sb->w_in)
		sb->w_in = loop_watch(e->loop, sb->to_init, EPOLLOUT, on_writable, sb);
	else if (sb->wbuf.len == 0 && sb->w_in) {
		loop_unwatch(e->loop, sb->w_in);
		sb->w_in = NULL;
	}
}

static void on_writable(bh_engine *e, void *arg, uint32_t events)
{
	(void)events;
	flush_writes(e, arg);
}

static void maybe_ready(bh_engine *e, struct sandbox *sb, bool started, bool ready)
{
	/* Both the runtime's start and the init's READY are needed; either may
	 * come first. */
	sb->started |= started;
	sb->ready_seen |= ready;
	if (!sb->started || !sb->ready_seen || sb->state != SB_OPENING)
		return;
	loop_timer_cancel(e->loop, sb->open_deadline);
	sb->open_deadline = NULL;
	/* Seen from the host before anything uses it; a sandbox that fails is
	 * deleted and its open refused. Not the tier's proof sandbox: its smoke
	 * test checks the same walls from inside and out and names each one
	 * it finds missing in the evidence, which says more than a refusal;
	 * nothing else opens on a tier while it is being proven. */
	bh_error *perr = NULL;
	if (!e->tiers[sb->tier].proving && posture_check(e, sb, &perr) < 0) {
		bh_log(e, BH_LOG_WARN, "%s", perr->msg);
		fail_open(e, sb, perr);
		return;
	}
	sandbox_set_state(e, sb, SB_READY);
	bh_log(e, BH_LOG_DEBUG, "sandbox %s ready in %.1f ms", sb->name,
	       (now_mono_us() - sb->opened_us) / 1000.0);
	sandbox_open_fn fn = sb->open_fn;
	sb->open_fn = NULL;
	if (fn)
		fn(e, sb->open_arg, sb, NULL);
}

/* Every reply to a request starts with its call id, and is held to what
 * the request asked for (chan_check.c) before anyone reads it; anything
 * else, or a reply nobody is waiting for, means the channel cannot be
 * trusted. */
static void on_reply_frame(bh_engine *e, struct sandbox *sb, uint8_t type,
			   struct proto_cursor *r)
{
	char why[256];
	uint64_t call_id;
	if (proto_get_u64(r, &call_id) < 0) {
		snprintf(why, sizeof why, "its init sent a %s without a call id", chan_frame_name(type));
		sandbox_breached(e, sb, why);
		return;
	}
	if (type == BH_CHAN_FAIL && call_id == 0) {
		/* The init's own word that a request of ours made no sense:
		 * the engine's fault, and the init exits after it. */
		struct sandbox_reply rep = {.type = type, .payload = r->p, .len = r->left};
		int reason, err_no;
		char msg[160];
		sandbox_decode_refusal(&rep, &reason, &err_no, msg, sizeof msg);
		for (char *p = msg; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
		snprintf(why, sizeof why, "its init refused a request of the engine: %s", msg);
		sandbox_lost(e, sb, why);
		return;
	}
	if (sb->side_fn && call_id == sb->side_call_id) { /* ---- procs ---- */
		if (chan_check_reply(&sb->side_ask, type, r->p, r->left, why, sizeof why)) {
			sandbox_breached(e, sb, why);
			return;
		}
		struct sandbox_reply rep = {.type = type, .payload = r->p, .len = r->left};
		sandbox_reply_fn fn = sb->side_fn;
		void *arg = sb->side_arg;
		sb->side_fn = NULL;
		sb->side_arg = NULL;
		loop_timer_cancel(e->loop, sb->side_backstop);
		sb->side_backstop = NULL;
		fn(e, arg, sb, &rep);
		return;
	}
	if (sb->state != SB_BUSY || call_id != sb->call_id) {
		snprintf(why, sizeof why, "its init sent a %s for call %llu, which nobody asked for",
			 chan_frame_name(type), (unsigned long long)call_id);
		sandbox_breached(e, sb, why);
		return;
	}
	if (chan_check_reply(&sb->ask, type, r->p, r->left, why, sizeof why)) {
		sandbox_breached(e, sb, why);
		return;
	}
	long long oom_now = cgroups_oom_kills(&e->cg, sb->name);
	struct sandbox_reply rep = {
		.type = type,
		.payload = r->p,
		.len = r->left,
		.oom = sb->oom_before >= 0 && oom_now > sb->oom_before,
		.elapsed_us = now_mono_us() - sb->op_started_us,
	};
	sandbox_set_state(e, sb, SB_READY);
	finish_op(e, sb, &rep);
}

/* ---- stream: OUTPUT, the cell in flight's output as it is produced ---- */

void sandbox_take_output(struct sandbox *sb, sandbox_output_fn fn)
{
	sb->output_fn = fn;
}

/* Judged like every reply (chan_check_output): for the call in flight,
 * contiguous, within its cap; a broken rule is a breach. */
static void on_output_frame(bh_engine *e, struct sandbox *sb, struct proto_cursor *r)
{
	char why[256];
	uint64_t call_id, offset;
	uint8_t stream;
	const uint8_t *data;
	uint32_t n;
	if (proto_get_u64(r, &call_id) < 0) {
		sandbox_breached(e, sb, "its init sent an OUTPUT without a call id");
		return;
	}
	if (sb->state != SB_BUSY || call_id != sb->call_id) {
		snprintf(why, sizeof why, "its init sent an OUTPUT for call %llu, which nobody asked for",
			 (unsigned long long)call_id);
		sandbox_breached(e, sb, why);
		return;
	}
	if (chan_check_output(&sb->ask, sb->relayed, r->p, r->left, &stream, &offset, &data, &n, why,
			      sizeof why)) {
		sandbox_breached(e, sb, why);
		return;
	}
	sb->relayed[stream - 1] += n;
	if (sb->output_fn)
		sb->output_fn(e, sb->op_arg, stream, offset, data, n);
}

static void dispatch_frames(bh_engine *e, struct sandbox *sb)
{
	char why[256];
	while (sb->rbuf.len >= BH_CHAN_HEADER && sb->state != SB_ENDING && sb->state != SB_FAILED) {
		uint32_t len;
		if (proto_frame_length(sb->rbuf.data, &len) < 0) {
			snprintf(why, sizeof why, "its init sent a frame of impossible length (%u)", len);
			sandbox_breached(e, sb, why);
			return;
		}
		if (sb->rbuf.len < 4u + len)
			return;
		uint8_t type = sb->rbuf.data[4];
		struct proto_cursor r = proto_cursor(sb->rbuf.data + BH_CHAN_HEADER, len - 1);
		size_t frame_len = 4u + len;
		switch (type) {
		case BH_CHAN_READY:
			if (chan_check_ready(r.p, r.left, why, sizeof why)) {
				sandbox_breached(e, sb, why);
				return;
			}
			if (sb->ready_seen) {
				sandbox_breached(e, sb, "its init sent a second READY");
				return;
			}
			maybe_ready(e, sb, false, true);
			break;
		case BH_CHAN_DONE:
		case BH_CHAN_FAIL:
		case BH_CHAN_REJECTED:
		case BH_CHAN_LISTING:
		case BH_CHAN_CONTENT:
		case BH_CHAN_PROCS: /* ---- procs ---- */
			on_reply_frame(e, sb, type, &r);
			break;
		case BH_CHAN_OUTPUT: /* stream */
			on_output_frame(e, sb, &r);
			break;
		default:
			snprintf(why, sizeof why, "its init sent an unknown frame (type 0x%02x)", type);
			sandbox_breached(e, sb, why);
			return;
		}
		if (sb->state == SB_ENDING || sb->state == SB_FAILED)
			return; /* the callback closed it; its buffers are gone with it */
		buf_consume(&sb->rbuf, frame_len);
	}
}

static void on_readable(bh_engine *e, void *arg, uint32_t events)
{
	(void)events;
	struct sandbox *sb = arg;
	uint8_t chunk[65536];
	for (;;) {
		ssize_t r = read(sb->from_init, chunk, sizeof chunk);
		if (r > 0) {
			if (sb->rbuf.len + (size_t)r > BH_CHAN_MAX_FRAME + 64u) {
				sandbox_breached(e, sb, "its init sent more than a frame's worth");
				return;
			}
			buf_append(&sb->rbuf, chunk, (size_t)r);
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			break;
		dispatch_frames(e, sb);
		if (sb->state == SB_HIBERNATING || sb->state == SB_HIBERNATED) {
			/* The checkpoint stopped the init, as it should. */
			loop_unwatch(e->loop, sb->w_out);
			sb->w_out = NULL;
			return;
		}
		if (sb->state != SB_ENDING && sb->state != SB_FAILED && sb->state != SB_ENDED)
			sandbox_lost(e, sb, "its init closed the channel");
		return;
	}
	dispatch_frames(e, sb);
}

static void on_diag(bh_engine *e, void *arg, uint32_t events)
{
	(void)events;
	struct sandbox *sb = arg;
	char chunk[4096];
	ssize_t r = read(sb->diag, chunk, sizeof chunk);
	if (r <= 0) {
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		loop_unwatch(e->loop, sb->w_diag);
		sb->w_diag = NULL;
		return;
	}
	/* Keep the start of what the runtime or init said: it explains failures. */
	if (sb->diagbuf.len < 2048) {
		size_t room = 2048 - sb->diagbuf.len;
		buf_append(&sb->diagbuf, chunk, (size_t)r < room ? (size_t)r : room);
	}
	bh_log(e, BH_LOG_DEBUG, "sandbox %s says: %.*s", sb->name, (int)r, chunk);
}

/* ---- runtime steps ---- */

void on_init_exit(bh_engine *e, void *arg, const struct bh_child_result *r)
{
	struct sandbox *sb = arg;
	sb->init_exited = true;
	bh_log(e, BH_LOG_DEBUG, "sandbox %s: init %d exited (status %d)", sb->name, (int)r->pid,
	       r->status);
	if (sb->state == SB_ENDING)
		start_delete(e, sb);
	else if (sb->state == SB_HIBERNATING || sb->state == SB_HIBERNATED)
		return; /* the checkpoint stopped it, as it should */
	else if (sb->state != SB_ENDED)
		sandbox_lost(e, sb, "its init exited");
}

static void on_started(bh_engine *e, void *arg, const struct bh_child_result *r)
{
	struct sandbox *sb = arg;
	if (sb->state != SB_OPENING)
		return;
	if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0) {
		fail_open(e, sb,
			  make_err(BH_E_RUNTIME, "sandbox %s: start failed: %s", sb->name,
				   r->timed_out ? "timed out" : rtrim((char *)r->output)));
		return;
	}
	maybe_ready(e, sb, true, false);
}

int spawn_runtime(bh_engine *e, struct sandbox *sb, const char *const *args, int in,
		  int out, int err_fd, bh_child_fn fn, bh_error **err)
{
	char **argv = runtime_argv(sb->rt, args);
	struct bh_child_spec spec = {.argv = (const char *const *)argv,
				     .fd_in = in,
				     .fd_out = out,
				     .fd_err = err_fd,
				     .timeout_ms = 30000};
	int ret = child_spawn(e, &spec, fn, sb, NULL, err);
	argv_free(argv);
	return ret;
}

static void on_created(bh_engine *e, void *arg, const struct bh_child_result *r)
{
	struct sandbox *sb = arg;
	sb->creating = false;
	if (sb->state == SB_ENDING) {
		/* Closed while the runtime was creating it: delete what it made. */
		start_delete(e, sb);
		return;
	}
	if (sb->state != SB_OPENING)
		return;
	if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0) {
		char diag[1024];
		diag_text(sb, diag, sizeof diag);
		fail_open(e, sb,
			  make_err(BH_E_RUNTIME, "sandbox %s: create failed: %s", sb->name,
				   r->timed_out ? "timed out" : (*diag ? diag : rtrim((char *)r->output))));
		return;
	}
	cleanup_free char *pid = read_file(sb->pid_file, 64, NULL);
	sb->init_pid = pid ? (pid_t)strtol(pid, NULL, 10) : 0;
	bh_error *err = NULL;
	if (sb->init_pid <= 0 || child_adopt(e, sb->init_pid, on_init_exit, sb, &err) < 0) {
		fail_open(e, sb,
			  err ? err
			      : make_err(BH_E_RUNTIME, "sandbox %s: create wrote no pid file%s",
					 sb->name, ""));
		return;
	}
	const char *const args[] = {"start", sb->name, NULL};
	if (spawn_runtime(e, sb, args, -1, BH_CHILD_CAPTURE, BH_CHILD_CAPTURE, on_started, &err) < 0)
		fail_open(e, sb, err);
}

static void on_open_deadline(bh_engine *e, void *arg)
{
	struct sandbox *sb = arg;
	sb->open_deadline = NULL;
	fail_open(e, sb,
		  make_err(BH_E_TIMEOUT, "sandbox %s did not become ready in time%s", sb->name, ""));
}

void sandbox_bundle_spec(bh_engine *e, enum bh_tier tier, struct bundle_spec *spec)
{
	const struct runtime_ops *ops = e->runtimes[tier].ops;
	uint32_t pids = e->pids_limit ? e->pids_limit : ops->default_pids;
	/* runsc's ptrace platform spends host pids of its own (measured on this host). */
	if (pids < ops->default_pids && tier == BH_TIER_KERNEL)
		pids = ops->default_pids;
	*spec = (struct bundle_spec){
		.name = "",
		.rootfs = e->view.rootfs ? e->view.rootfs : e->rootfs,
		.init_path = e->view.init ? e->view.init : e->init_path,
		.interp_dir = e->view.interp ? e->view.interp : e->interp_dir,
		.cgroup_path = "",
		.memory_mb = e->memory_limit_mb,
		.pids = pids,
		.nproc = ops->nproc,
		.cpu_millis = 1000,
		.tmp_mb = 256,
		.work_mb = 256,
		.shm_mb = 64,
		.userns = ops->userns,
		.seccomp_errno_ret = ops->seccomp_errno_ret,
		.drop_wall = e->drop_wall,
		/* ---- egress: the walls the proof keys include the mount
		 * (each sandbox binds its own directory) ---- */
		.egress_dir = e->egress ? "STATE/egress/SANDBOX" : NULL,
	};
}

/* The three pipes between the engine and a sandbox's init: its stdin (our
 * requests), its stdout (its replies) and its stderr (diagnostics). The
 * runtime gets the child ends; channel_attach keeps ours and watches them. */
int pipes_open(struct channel_pipes *p)
{
	*p = (struct channel_pipes){{-1, -1}, {-1, -1}, {-1, -1}};
	if (pipe2(p->to, O_CLOEXEC) < 0 || pipe2(p->from, O_CLOEXEC) < 0 ||
	    pipe2(p->dg, O_CLOEXEC) < 0)
		return -1;
	return 0;
}

void pipes_close(struct channel_pipes *p)
{
	int saved = errno;
	for (int i = 0; i < 2; i++) {
		bh_closep(&p->to[i]);
		bh_closep(&p->from[i]);
		bh_closep(&p->dg[i]);
	}
	errno = saved;
}

void channel_attach(bh_engine *e, struct sandbox *sb, struct channel_pipes *p)
{
	close(p->to[0]);
	close(p->from[1]);
	close(p->dg[1]);
	sb->to_init = p->to[1];
	sb->from_init = p->from[0];
	sb->diag = p->dg[0];
	fcntl(sb->to_init, F_SETFL, O_NONBLOCK);
	fcntl(sb->from_init, F_SETFL, O_NONBLOCK);
	fcntl(sb->diag, F_SETFL, O_NONBLOCK);
	sb->w_out = loop_watch(e->loop, sb->from_init, EPOLLIN, on_readable, sb);
	sb->w_diag = loop_watch(e->loop, sb->diag, EPOLLIN, on_diag, sb);
}

#define NAME_PREFIX "bh-"
#define NAME_HEX 16 /* random_hex(8) */

int sandbox_new_name(char out[40])
{
	char rnd[NAME_HEX + 1];
	if (random_hex(NAME_HEX / 2, rnd) < 0)
		return -1;
	snprintf(out, 40, NAME_PREFIX "%s", rnd);
	return 0;
}

bool sandbox_name_valid(const char *name)
{
	if (!name || strncmp(name, NAME_PREFIX, strlen(NAME_PREFIX)))
		return false;
	const char *hex = name + strlen(NAME_PREFIX);
	if (strlen(hex) != NAME_HEX)
		return false;
	for (const char *c = hex; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
			return false;
	return true;
}

int sandbox_open(bh_engine *e, enum bh_tier tier, const char *name, sandbox_open_fn fn, void *arg,
		 bh_error **err)
{
	return sandbox_open_egress(e, tier, name, EGRESS_NONE, fn, arg, err);
}

int sandbox_open_egress(bh_engine *e, enum bh_tier tier, const char *name, enum egress_mount em,
			sandbox_open_fn fn, void *arg, bh_error **err)
{
	struct runtime *rt = tier >= 0 && tier < BH_TIER_COUNT ? &e->runtimes[tier] : NULL;
	if (!rt || !rt->ops || !rt->path)
		return bh_refuse(err, BH_REFUSAL_UNSUPPORTED, "no runtime provides the %s tier",
				 bh_tier_name(tier));
	if (name && !sandbox_name_valid(name))
		return bh_fail(err, BH_E_INVALID, 0, "\"%.64s\" is not a sandbox name bulkhead makes",
			       name);
	int slot = uid_slot_take(e);
	if (slot < 0)
		return bh_refuse(err, BH_REFUSAL_CAPACITY,
				 "this engine already holds %d sandboxes (one host uid range each)",
				 UID_REGION_SLOTS);
	struct sandbox *sb = xzalloc(sizeof *sb);
	sb->uid_slot = slot;
	sb->tier = tier;
	sb->rt = rt;
	sb->state = SB_OPENING;
	sb->to_init = sb->from_init = sb->diag = -1;
	sb->opened_us = now_mono_us();
	sb->open_fn = fn;
	sb->open_arg = arg;
	if (name)
		snprintf(sb->name, sizeof sb->name, "%s", name);
	else if (sandbox_new_name(sb->name) < 0) {
		e->uid_slots[slot] = 0;
		free(sb);
		return bh_fail(err, BH_E_SYSTEM, errno, "getrandom");
	}
	sb->bundle_dir = xasprintf("%s/%s", e->bundles_dir, sb->name);
	sb->pid_file = xasprintf("%s/init.pid", sb->bundle_dir);
	sb->next = e->sandboxes;
	e->sandboxes = sb;

	cleanup_free char *cgpath = xasprintf("%s/%s", e->cg.parent, sb->name);
	struct bundle_spec spec;
	sandbox_bundle_spec(e, tier, &spec);
	spec.name = sb->name;
	spec.cgroup_path = cgpath;
	spec.host_uid_base = sandbox_uid_base(e, slot);
	/* Test hook: a sandbox built without a wall after its tier was proven. */
	if (e->drop_wall_after_proof && !e->tiers[tier].proving)
		spec.drop_wall = e->drop_wall_after_proof;
	struct channel_pipes p = {{-1, -1}, {-1, -1}, {-1, -1}};
	/* ---- egress ---- */
	sb->host_uid_base = spec.host_uid_base;
	spec.egress_dir = NULL;
	if (e->egress && em != EGRESS_NONE) {
		if (egress_sandbox_prepare(e, sb->name, spec.host_uid_base, &sb->egress_dir, err) < 0)
			goto fail;
		spec.egress_dir = sb->egress_dir;
		spec.egress_proxy = sb->egress_proxy = em == EGRESS_PROXY;
	}
	if (bundle_write(sb->bundle_dir, &spec, err) < 0)
		goto fail;
	if (pipes_open(&p) < 0) {
		bh_fail(err, BH_E_SYSTEM, errno, "pipes for sandbox %s", sb->name);
		goto fail;
	}
	const char *const args[] = {"create", "--bundle", sb->bundle_dir, "--pid-file", sb->pid_file,
				    sb->name, NULL};
	if (spawn_runtime(e, sb, args, p.to[0], p.from[1], p.dg[1], on_created, err) < 0)
		goto fail;
	sb->creating = true;
	channel_attach(e, sb, &p);
	sb->open_deadline = loop_timer(e->loop, OPEN_DEADLINE_MS, on_open_deadline, sb);
	bh_log(e, BH_LOG_DEBUG, "sandbox %s: opening (%s)", sb->name, rt->ops->name);
	return 0;
fail:
	pipes_close(&p);
	sb->open_fn = NULL;
	sb->deleting = true; /* nothing was created: nothing to delete */
	finalize(e, sb);
	return -1;
}

static void on_backstop(bh_engine *e, void *arg)
{
	struct sandbox *sb = arg;
	sb->backstop = NULL;
	bh_log(e, BH_LOG_WARN, "sandbox %s did not answer within its deadline and grace; killing it",
	       sb->name);
	lose_op(e, sb, "it did not answer within its deadline and grace, and was killed");
}

uint64_t sandbox_next_call_id(void)
{
	static uint64_t next = 1;
	return next++;
}

int sandbox_request(bh_engine *e, struct sandbox *sb, uint64_t call_id, const struct buf *frame,
		    uint32_t backstop_ms, sandbox_reply_fn fn, void *arg, bh_error **err)
{
	if (sb->state != SB_READY)
		return bh_refuse(err, BH_REFUSAL_CAPACITY, "sandbox %s is %s, not ready", sb->name,
				 state_names[sb->state]);
	/* The reply is held to the limits as they go out on the wire. */
	if (chan_ask_of(frame->data, frame->len, &sb->ask) < 0)
		return bh_fail(err, BH_E_INVALID, 0, "not a request frame (type 0x%02x)",
			       frame->len ? frame->data[0] : 0);
	sb->call_id = call_id;
	proto_put_u32(&sb->wbuf, (uint32_t)frame->len);
	buf_append(&sb->wbuf, frame->data, frame->len);
	sb->op_fn = fn;
	sb->op_arg = arg;
	sb->output_fn = NULL; /* stream: sandbox_take_output, if it takes any */
	sb->relayed[0] = sb->relayed[1] = 0;
	sb->op_started_us = now_mono_us();
	sb->oom_before = cgroups_oom_kills(&e->cg, sb->name);
	sb->backstop = loop_timer(e->loop, backstop_ms, on_backstop, sb);
	sandbox_set_state(e, sb, SB_BUSY);
	flush_writes(e, sb);
	return 0;
}

/* ---- procs ---- */
static void on_side_backstop(bh_engine *e, void *arg)
{
	struct sandbox *sb = arg;
	sb->side_backstop = NULL;
	bh_log(e, BH_LOG_WARN, "sandbox %s did not answer a PS in time; killing it", sb->name);
	sandbox_lost(e, sb, "its init did not answer a PS within its deadline, and was killed");
}

int sandbox_side_request(bh_engine *e, struct sandbox *sb, uint64_t call_id,
			 const struct buf *frame, uint32_t backstop_ms, sandbox_reply_fn fn,
			 void *arg, bh_error **err)
{
	if (sb->state != SB_READY && sb->state != SB_BUSY)
		return bh_refuse(err, BH_REFUSAL_CAPACITY, "sandbox %s is %s, not running", sb->name,
				 state_names[sb->state]);
	if (sb->control_fn)
		return bh_refuse(err, BH_REFUSAL_CAPACITY, "sandbox %s is being paused or resumed",
				 sb->name);
	if (sb->side_fn)
		return bh_refuse(err, BH_REFUSAL_CAPACITY,
				 "sandbox %s is already answering a list of its processes", sb->name);
	if (chan_ask_of(frame->data, frame->len, &sb->side_ask) < 0)
		return bh_fail(err, BH_E_INVALID, 0, "not a request frame (type 0x%02x)",
			       frame->len ? frame->data[0] : 0);
	sb->side_call_id = call_id;
	sb->side_fn = fn;
	sb->side_arg = arg;
	sb->side_backstop = loop_timer(e->loop, backstop_ms, on_side_backstop, sb);
	proto_put_u32(&sb->wbuf, (uint32_t)frame->len);
	buf_append(&sb->wbuf, frame->data, frame->len);
	flush_writes(e, sb);
	return 0;
}

void sandbox_side_abort(bh_engine *e, struct sandbox *sb, const char *why)
{
	sandbox_reply_fn fn = sb->side_fn;
	void *arg = sb->side_arg;
	if (!fn)
		return;
	sb->side_fn = NULL;
	sb->side_arg = NULL;
	loop_timer_cancel(e->loop, sb->side_backstop);
	sb->side_backstop = NULL;
	struct sandbox_reply r = {.lost = why};
	fn(e, arg, NULL, &r);
}

void sandbox_send(bh_engine *e, struct sandbox *sb, const struct buf *frame)
{
	proto_put_u32(&sb->wbuf, (uint32_t)frame->len);
	buf_append(&sb->wbuf, frame->data, frame->len);
	flush_writes(e, sb);
}

int sandbox_decode_done(const struct sandbox_reply *rep, struct done_frame *d)
{
	struct proto_cursor r = proto_cursor(rep->payload, rep->len);
	uint32_t exit_code, out_len, err_len;
	proto_get_u32(&r, &exit_code);
	proto_get_u32(&r, &d->term_signal);
	proto_get_u32(&r, &d->flags);
	proto_get_u64(&r, &d->duration_us);
	proto_get_u64(&r, &d->out_total);
	proto_get_u64(&r, &d->err_total);
	proto_get_str(&r, &d->out, &out_len);
	proto_get_str(&r, &d->err, &err_len);
	proto_get_u64(&r, &d->disk_used);
	d->exit_code = (int32_t)exit_code;
	d->out_len = out_len;
	d->err_len = err_len;
	return r.bad ? -1 : 0;
}

/* REJECTED and FAIL: u32 reason (REJECTED only) | i32 errno | string message */
void sandbox_decode_refusal(const struct sandbox_reply *rep, int *reason, int *err_no, char *msg,
			    size_t msglen)
{
	struct proto_cursor r = proto_cursor(rep->payload, rep->len);
	uint32_t why = 0, err = 0, n = 0;
	const uint8_t *m;
	if (rep->type == BH_CHAN_REJECTED)
		proto_get_u32(&r, &why);
	proto_get_u32(&r, &err);
	proto_get_str(&r, &m, &n);
	*reason = (int)why;
	*err_no = (int32_t)err;
	snprintf(msg, msglen, "%.*s", (int)(n < msglen ? n : msglen - 1), m ? (const char *)m : "");
}
