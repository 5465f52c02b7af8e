/* A sandbox's control verbs: pause and resume (the runtime's freezer),
 * hibernate (a checkpoint to an image, gVisor only here), restore (a new
 * sandbox from that image) and re-adopting a hibernated one. Each runs one
 * runtime command and answers through control_finish. */
#include "sandbox_priv.h"
#include "store.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

/* ---- pause, resume, hibernate, restore ---- */

void control_finish(bh_engine *e, struct sandbox *sb, const bh_error *err)
{
	sandbox_done_fn fn = sb->control_fn;
	void *arg = sb->control_arg;
	sb->control_fn = NULL;
	sb->control_arg = NULL;
	if (fn)
		fn(e, arg, sb, err);
}

static void control_failed(bh_engine *e, struct sandbox *sb, const char *what,
			   const struct bh_child_result *r)
{
	bh_error *err = NULL;
	bh_fail(&err, BH_E_RUNTIME, 0, "sandbox %s: %s failed: %s", sb->name, what,
		r->timed_out ? "timed out" : rtrim((char *)r->output));
	control_finish(e, sb, err);
	bh_error_free(err);
}

static int control_spawn(bh_engine *e, struct sandbox *sb, const char *const *args,
			 bh_child_fn fn, bh_error **err)
{
	return spawn_runtime(e, sb, args, -1, BH_CHILD_CAPTURE, BH_CHILD_CAPTURE, fn, err);
}

/* pause and resume differ only in their verb and the states around them. */
struct freeze_verb {
	const char *verb;
	enum sandbox_state from, to;
};
static const struct freeze_verb pause_verb = {"pause", SB_READY, SB_PAUSED};
static const struct freeze_verb resume_verb = {"resume", SB_PAUSED, SB_READY};

static void on_freeze_verb_done(bh_engine *e, void *arg, const struct bh_child_result *r)
{
	struct sandbox *sb = arg;
	const struct freeze_verb *v = sb->control_verb;
	if (sb->state == SB_ENDING || sb->state == SB_ENDED)
		return;
	if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0) {
		control_failed(e, sb, v->verb, r);
		return;
	}
	sandbox_set_state(e, sb, v->to);
	control_finish(e, sb, NULL);
}

static int run_freeze_verb(bh_engine *e, struct sandbox *sb, const struct freeze_verb *v,
			   sandbox_done_fn fn, void *arg, bh_error **err)
{
	if (sb->state != v->from || sb->control_fn)
		return bh_fail(err, BH_E_INVALID, 0, "sandbox %s is %s; %s needs it %s", sb->name,
			       sandbox_state_name(sb->state), v->verb, sandbox_state_name(v->from));
	const char *const args[] = {v->verb, sb->name, NULL};
	/* ---- procs ---- a frozen init answers nothing: the list in flight is lost */
	sandbox_side_abort(e, sb, "the sandbox is being paused");
	sb->control_fn = fn;
	sb->control_arg = arg;
	sb->control_verb = v;
	sb->control_started_us = now_mono_us();
	if (control_spawn(e, sb, args, on_freeze_verb_done, err) < 0) {
		sb->control_fn = NULL;
		return -1;
	}
	return 0;
}

int sandbox_pause(bh_engine *e, struct sandbox *sb, sandbox_done_fn fn, void *arg, bh_error **err)
{
	return run_freeze_verb(e, sb, &pause_verb, fn, arg, err);
}

int sandbox_resume(bh_engine *e, struct sandbox *sb, sandbox_done_fn fn, void *arg, bh_error **err)
{
	return run_freeze_verb(e, sb, &resume_verb, fn, arg, err);
}

bool sandbox_can_hibernate(const struct sandbox *sb)
{
	/* Debian's crun has no CRIU and Debian's CRIU fails on this kernel
	 * (both tried on this host): only gVisor checkpoints here. */
	return sb->rt->ops == &runtime_runsc;
}

static void on_image_deleted(bh_engine *e, void *arg, const struct bh_child_result *r)
{
	struct sandbox *sb = arg;
	if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0)
		bh_log(e, BH_LOG_WARN, "sandbox %s: delete after checkpoint: %s", sb->name,
		       rtrim((char *)r->output));
	if (sb->state != SB_HIBERNATING)
		return;
	sandbox_set_state(e, sb, SB_HIBERNATED);
	control_finish(e, sb, NULL);
}

static void on_checkpointed(bh_engine *e, void *arg, const struct bh_child_result *r)
{
	struct sandbox *sb = arg;
	if (sb->state != SB_HIBERNATING)
		return;
	if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0) {
		/* The sandbox may be half-stopped: it is of no further use. */
		sandbox_set_state(e, sb, SB_READY);
		control_failed(e, sb, "checkpoint", r);
		return;
	}
	/* Its processes are gone; the old pipes lead nowhere now. */
	close_channel(e, sb);
	buf_free(&sb->rbuf);
	buf_free(&sb->wbuf);
	const char *const args[] = {"delete", sb->rt->ops->delete_force, sb->name, NULL};
	bh_error *err = NULL;
	if (control_spawn(e, sb, args, on_image_deleted, &err) < 0) {
		control_finish(e, sb, err);
		bh_error_free(err);
	}
}

static void start_checkpoint(bh_engine *e, struct sandbox *sb)
{
	sandbox_set_state(e, sb, SB_HIBERNATING);
	sandbox_side_abort(e, sb, "the sandbox is hibernating"); /* ---- procs ---- */
	const char *const args[] = {"checkpoint", "--image-path", sb->image_dir, sb->name, NULL};
	bh_error *err = NULL;
	if (control_spawn(e, sb, args, on_checkpointed, &err) < 0) {
		sandbox_set_state(e, sb, SB_READY);
		control_finish(e, sb, err);
		bh_error_free(err);
	}
}

static void on_resumed_for_checkpoint(bh_engine *e, void *arg, const struct bh_child_result *r)
{
	struct sandbox *sb = arg;
	if (sb->state != SB_PAUSED)
		return;
	if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0) {
		control_failed(e, sb, "resume before checkpoint", r);
		return;
	}
	sandbox_set_state(e, sb, SB_READY);
	start_checkpoint(e, sb);
}

int sandbox_hibernate(bh_engine *e, struct sandbox *sb, const char *image_dir, sandbox_done_fn fn,
		      void *arg, bh_error **err)
{
	if (!sandbox_can_hibernate(sb))
		return bh_fail(err, BH_E_INVALID, 0, "the %s tier cannot hibernate on this host",
			       bh_tier_name(sb->tier));
	if ((sb->state != SB_READY && sb->state != SB_PAUSED) || sb->control_fn)
		return bh_fail(err, BH_E_INVALID, 0, "sandbox %s is %s, not idle", sb->name,
			       sandbox_state_name(sb->state));
	free(sb->image_dir);
	sb->image_dir = xstrdup(image_dir);
	rm_rf(sb->image_dir);
	if (mkdir_p(sb->image_dir, 0700) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "create %s", sb->image_dir);
	sb->control_fn = fn;
	sb->control_arg = arg;
	sb->control_started_us = now_mono_us();
	if (sb->state == SB_PAUSED) {
		/* runsc cannot checkpoint a paused container (runsc says so when asked). */
		const char *const args[] = {"resume", sb->name, NULL};
		if (control_spawn(e, sb, args, on_resumed_for_checkpoint, err) < 0) {
			sb->control_fn = NULL;
			return -1;
		}
		return 0;
	}
	start_checkpoint(e, sb);
	return 0;
}

static void on_restored(bh_engine *e, void *arg, const struct bh_child_result *r)
{
	struct sandbox *sb = arg;
	if (sb->state != SB_HIBERNATED)
		return;
	if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0) {
		char diag[1024];
		diag_text(sb, diag, sizeof diag);
		bh_error *err = NULL;
		bh_fail(&err, BH_E_RUNTIME, 0, "sandbox %s: restore failed: %s", sb->name,
			*diag ? diag : rtrim((char *)r->output));
		control_finish(e, sb, err);
		bh_error_free(err);
		return;
	}
	cleanup_free char *pid = read_file(sb->pid_file, 64, NULL);
	sb->init_pid = pid ? (pid_t)strtol(pid, NULL, 10) : 0;
	sb->init_exited = false;
	bh_error *err = NULL;
	if (sb->init_pid <= 0 || child_adopt(e, sb->init_pid, on_init_exit, sb, &err) < 0) {
		if (!err)
			bh_fail(&err, BH_E_RUNTIME, 0, "sandbox %s: restore wrote no pid file", sb->name);
		control_finish(e, sb, err);
		bh_error_free(err);
		return;
	}
	/* The image was a moment of the past: the sandbox runs on from it, and
	 * restoring it again would roll its state back, so nothing will. Its
	 * disk goes back now (the restored Sentry holds what it still reads
	 * open); the next hibernation writes a new one. */
	rm_rf(sb->image_dir);
	sandbox_set_state(e, sb, SB_READY);
	control_finish(e, sb, NULL);
}

int sandbox_restore(bh_engine *e, struct sandbox *sb, sandbox_done_fn fn, void *arg, bh_error **err)
{
	if (sb->state != SB_HIBERNATED || sb->control_fn)
		return bh_fail(err, BH_E_INVALID, 0, "sandbox %s is %s, not hibernated", sb->name,
			       sandbox_state_name(sb->state));
	struct channel_pipes p;
	if (pipes_open(&p) < 0) {
		pipes_close(&p);
		return bh_fail(err, BH_E_SYSTEM, errno, "pipes to restore %s", sb->name);
	}
	/* The restored guest's stdio is re-bound to restore's: fresh pipes. */
	unlink(sb->pid_file);
	const char *const args[] = {"restore",   "--image-path", sb->image_dir, "--bundle", sb->bundle_dir,
				    "-detach",   "--pid-file",	 sb->pid_file,	sb->name,   NULL};
	sb->control_fn = fn;
	sb->control_arg = arg;
	sb->control_started_us = now_mono_us();
	buf_free(&sb->diagbuf);
	if (spawn_runtime(e, sb, args, p.to[0], p.from[1], p.dg[1], on_restored, err) < 0) {
		sb->control_fn = NULL;
		pipes_close(&p);
		return -1;
	}
	channel_attach(e, sb, &p);
	return 0;
}

/* A hibernated sandbox's struct, linked in (what readopt and adoption
 * share); NULL when the runtime is missing or no uid slot is free. */
static bool slot_in_use(bh_engine *e, int slot)
{
	for (struct sandbox *sb = e->sandboxes; sb; sb = sb->next)
		if (sb->uid_slot == slot)
			return true;
	return false;
}

/* want: the slot its bundle maps (-1: any free one, for a new bundle). A
 * re-adopted sandbox runs as its bundle says: its slot is that one, so no
 * new sandbox is given the same uids (held at open by the leftovers'
 * survey counts as free here: that hold was for this very bundle). */
static struct sandbox *hibernated_new(bh_engine *e, enum bh_tier tier, const char *name, int want)
{
	struct runtime *rt = tier >= 0 && tier < BH_TIER_COUNT ? &e->runtimes[tier] : NULL;
	if (!rt || !rt->ops || !rt->path || !sandbox_name_valid(name))
		return NULL;
	int slot = want >= 0 && want < UID_REGION_SLOTS && !slot_in_use(e, want) ? want : uid_slot_take(e);
	if (slot < 0)
		return NULL;
	e->uid_slots[slot] = 1;
	struct sandbox *sb = xzalloc(sizeof *sb);
	snprintf(sb->name, sizeof sb->name, "%s", name);
	sb->uid_slot = slot;
	sb->tier = tier;
	sb->rt = rt;
	sb->state = SB_HIBERNATED;
	sb->to_init = sb->from_init = sb->diag = -1;
	sb->opened_us = now_mono_us();
	sb->bundle_dir = xasprintf("%s/%s", e->bundles_dir, name);
	sb->pid_file = xasprintf("%s/init.pid", sb->bundle_dir);
	sb->image_dir = engine_image_path(e, name);
	sb->started = sb->ready_seen = true;
	sb->next = e->sandboxes;
	e->sandboxes = sb;
	return sb;
}

struct sandbox *sandbox_adopt_hibernated(bh_engine *e, enum bh_tier tier, const char *name)
{
	struct sandbox *sb = hibernated_new(e, tier, name, bundle_uid_slot(e, name));
	if (!sb)
		return NULL;
	/* ---- egress: its bundle binds its directory, owned by the uids its
	 * bundle maps (the restore reopens the broker's socket there) ---- */
	struct stat est;
	char *edir = egress_sandbox_dir(e, name);
	if (e->egress && lstat(edir, &est) == 0 && S_ISDIR(est.st_mode)) {
		sb->egress_dir = edir;
		sb->host_uid_base = est.st_uid;
	} else {
		free(edir);
	}
	bh_log(e, BH_LOG_INFO, "sandbox %s: re-adopted from its hibernation image", name);
	return sb;
}

/* ---- fleet (issue 20) ---- */
struct sandbox *sandbox_adopt_image(bh_engine *e, enum bh_tier tier, const char *name,
				    enum egress_mount em, bh_error **err)
{
	struct sandbox *sb = hibernated_new(e, tier, name, -1);
	if (!sb) {
		bh_fail(err, BH_E_RUNTIME, 0,
			"no %s runtime or no free uid range here to restore sandbox %s",
			bh_tier_name(tier), name);
		return NULL;
	}
	cleanup_free char *cgpath = xasprintf("%s/%s", e->cg.parent, sb->name);
	struct bundle_spec spec;
	sandbox_bundle_spec(e, tier, &spec);
	spec.name = sb->name;
	spec.cgroup_path = cgpath;
	spec.host_uid_base = sb->host_uid_base = sandbox_uid_base(e, sb->uid_slot);
	spec.egress_dir = NULL;
	if (e->egress && em != EGRESS_NONE) {
		if (egress_sandbox_prepare(e, sb->name, spec.host_uid_base, &sb->egress_dir, err) < 0)
			goto fail;
		spec.egress_dir = sb->egress_dir;
		spec.egress_proxy = sb->egress_proxy = em == EGRESS_PROXY;
	}
	if (bundle_write(sb->bundle_dir, &spec, err) < 0)
		goto fail;
	bh_log(e, BH_LOG_INFO, "sandbox %s: adopted from another engine's hibernation image", name);
	return sb;
fail:
	/* Nothing of it is the runtime's yet: its directories go, the image
	 * (the caller's to give back) stays. */
	rm_rf(sb->bundle_dir);
	if (sb->egress_dir)
		rm_rf(sb->egress_dir);
	sandbox_detach(e, sb);
	return NULL;
}

void sandbox_detach(bh_engine *e, struct sandbox *sb)
{
	for (struct sandbox **pp = &e->sandboxes; *pp; pp = &(*pp)->next) {
		if (*pp == sb) {
			*pp = sb->next;
			break;
		}
	}
	close_channel(e, sb);
	if (sb->uid_slot >= 0)
		e->uid_slots[sb->uid_slot] = 0;
	buf_free(&sb->rbuf);
	buf_free(&sb->wbuf);
	buf_free(&sb->diagbuf);
	free(sb->image_dir);
	free(sb->egress_dir); /* ---- egress: kept on disk with the bundle ---- */
	free(sb->bundle_dir);
	free(sb->pid_file);
	free(sb);
}
