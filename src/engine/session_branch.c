/* ---- density (issue 21): branching a live conversation ----
 * (bulkhead.h, bh_session_branch.) The installed gVisor's `checkpoint
 * -leave-running` kills the sandbox (host-facts §5), so a branch is built
 * from what works here: the parent hibernates (checkpoint, its image on
 * disk; its next call restores it and it goes on), then each child gets
 * the image under a sandbox name of its own — hard links to the parent's
 * files, no copy: a restore only reads them — a bundle of its own (paths,
 * host uid range, egress mount) and a hibernated row of its own naming the
 * parent, as an adopted session would (session_adopt.c). Each child's first
 * call restores it. The parent's pause is the checkpoint; what a child
 * costs until it wakes is its directory entry and its row. */
#include "session_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct branch {
	bh_session *parent;
	unsigned n;
	bh_branch_cb cb;
	void *arg;
	uint64_t t0_us;
	struct bh_timer *hold; /* a hibernated parent's branch, on the loop's next turn */
	bool from_image;       /* and so no pause of the parent's */
};

/* images/<from> as images/<to>: a directory of hard links. Only regular
 * files are linked (an image holds nothing else); anything else refuses. */
static int link_image(bh_engine *e, const char *from, const char *to, bh_error **err)
{
	cleanup_close int at = open(e->images_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (at < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "images directory %s", e->images_dir);
	cleanup_close int src = openat(at, from, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (src < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "the parent's image %s/%s", e->images_dir, from);
	if (mkdirat(at, to, 0700) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "make the image %s/%s", e->images_dir, to);
	cleanup_close int dst = openat(at, to, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int dup_src = dup(src);
	DIR *d = dst >= 0 && dup_src >= 0 ? fdopendir(dup_src) : NULL;
	if (!d) {
		if (dup_src >= 0)
			close(dup_src);
		return bh_fail(err, BH_E_SYSTEM, errno, "read the parent's image %s/%s", e->images_dir,
			       from);
	}
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(src, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			rc = bh_fail(err, BH_E_SYSTEM, 0,
				     "the parent's image %s/%s holds %s, which is not a regular file",
				     e->images_dir, from, de->d_name);
		else if (linkat(src, de->d_name, dst, de->d_name, 0) < 0)
			rc = bh_fail(err, BH_E_SYSTEM, errno, "link %s/%s/%s", e->images_dir, from,
				     de->d_name);
	}
	closedir(d);
	return rc;
}

/* One child, hibernated on the parent's image. 0, or -1 with err and
 * nothing of it left. */
static int make_child(bh_session *p, struct bh_branch_child *c, bh_error **err)
{
	bh_engine *e = p->e;
	if (sandbox_new_name(c->sandbox) < 0 || random_hex(16, c->session_id) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "getrandom");
	bh_fingerprint_of(c->session_id, c->fingerprint);
	if (link_image(e, p->sandbox_name, c->sandbox, err) < 0) {
		cleanup_free char *img = engine_image_path(e, c->sandbox);
		rm_rf(img);
		return -1;
	}
	enum egress_mount em = !e->egress ? EGRESS_NONE : p->egress_profile ? EGRESS_PROXY : EGRESS_SOCKET;
	struct sandbox *sb = sandbox_adopt_image(e, p->tier, c->sandbox, em, err);
	if (!sb) {
		cleanup_free char *img = engine_image_path(e, c->sandbox);
		rm_rf(img);
		return -1;
	}
	char floor[16];
	snprintf(floor, sizeof floor, "%s", p->floor > BH_TIER_NONE ? bh_tier_name(p->floor) : "");
	int64_t now = (int64_t)now_real_ms();
	struct store_hibernated_row row = {
		.fingerprint = c->fingerprint,
		.sandbox = c->sandbox,
		.runtime = sb->rt->ops->name,
		.tier = bh_tier_name(p->tier),
		.floor = floor,
		.principal = p->principal,
		.owner = p->owner,
		.run_key = "",
		.created_ms = now,
		.last_call_ms = 0,
		.awake_ms = 0,
		.lifetime_ms = p->lifetime_ms,
		.hibernated_ms = now,
		.calls = p->calls,
		.last_record_sha256 = p->last_record,
		.egress_profile = p->egress_profile ? p->egress_profile : "",
		.branched_from = p->fp,
	};
	char detail[300];
	snprintf(detail, sizeof detail, "branched from session %.12s after its record %llu %.64s",
		 p->fp, (unsigned long long)p->calls, p->calls ? p->last_record : "(none)");
	if (store_session_branched(e->store, &row, getpid(), detail, err) < 0) {
		rm_rf(sb->image_dir);
		rm_rf(sb->bundle_dir);
		if (sb->egress_dir)
			rm_rf(sb->egress_dir);
		sandbox_detach(e, sb);
		return -1;
	}
	bh_session *s = session_register_hibernated(e, sb, p->tier, &row);
	s->languages = p->languages;
	snprintf(s->id, sizeof s->id, "%s", c->session_id);
	snprintf(s->branched_from, sizeof s->branched_from, "%s", p->fp);
	s->branched_after = p->calls;
	return 0;
}

static void on_parent_hibernated(void *arg, const bh_error *err)
{
	struct branch *b = arg;
	bh_session *p = b->parent;
	if (err) {
		b->cb(b->arg, NULL, err);
		free(b);
		return;
	}
	uint64_t paused_us = b->from_image ? 0 : now_mono_us() - b->t0_us;
	struct bh_branch_child *kids = xzalloc(b->n * sizeof *kids);
	bh_error *why = NULL;
	unsigned made = 0;
	while (made < b->n && make_child(p, &kids[made], &why) == 0)
		made++;
	if (made < b->n) {
		/* All or none: the children made so far end with the reason. */
		for (unsigned i = 0; i < made; i++) {
			bh_session *c = bh_engine_find_session(p->e, kids[i].session_id, p->principal);
			if (c)
				end_session(c, BH_END_CLOSED, "its branch failed before it was handed out");
		}
		bh_log(p->e, BH_LOG_WARN, "session %.12s: branch: %s", p->fp, why->msg);
		b->cb(b->arg, NULL, why);
		bh_error_free(why);
	} else {
		char detail[200];
		snprintf(detail, sizeof detail, "into %u children (%.12s%s) after its record %llu", b->n,
			 kids[0].fingerprint, b->n > 1 ? " ..." : "", (unsigned long long)p->calls);
		session_event(p, "branch", detail);
		bh_log(p->e, BH_LOG_INFO, "session %.12s: branched %s", p->fp, detail);
		struct bh_branch_result r = {.n = b->n,
					     .children = kids,
					     .parent_paused_us = paused_us,
					     .after = p->calls,
					     .after_sha256 = p->last_record};
		b->cb(b->arg, &r, NULL);
	}
	free(kids);
	free(b);
}

/* A hibernated parent's branch holds the session's action slot from the
 * ask to the children (so no wake, hibernate or second branch starts in
 * between); an end of the session in between answers through it. */
static void branch_from_image(void *arg, const bh_error *err)
{
	struct branch *b = arg;
	loop_timer_cancel(b->parent->e->loop, b->hold);
	b->hold = NULL;
	on_parent_hibernated(b, err);
}

static void on_branch_now(bh_engine *e, void *arg)
{
	(void)e;
	struct branch *b = arg;
	b->hold = NULL;
	bh_session *p = b->parent;
	p->act_cb = NULL;
	on_parent_hibernated(b, NULL); /* its events in the actor's name */
	if (!p->queue) /* ---- ci: attribution: the action's steps are done ---- */
		session_acting_done(p);
	if (p->state == BH_SESSION_HIBERNATED)
		session_dispatch(p); /* a call that came meanwhile restores it now */
}

int bh_session_branch(bh_session *s, unsigned n, bh_branch_cb cb, void *arg, bh_error **err)
{
	cleanup_error bh_error *unasked = NULL;
	err = err ? err : &unasked;
	bh_engine *e = s->e;
	if (s->state == BH_SESSION_ENDED) {
		session_ended_error(s, err);
		return -1;
	}
	if (!s->sb || !sandbox_can_hibernate(s->sb))
		return bh_refuse(err, BH_REFUSAL_UNSUPPORTED,
				 "the %s tier cannot branch on this host: a branch is a checkpoint, and "
				 "the container tier has no working one here (crun is built without "
				 "CRIU); open the session on the kernel tier to branch it",
				 bh_tier_name(s->tier));
	if (n < 1 || n > BH_BRANCH_MAX)
		return bh_refuse(err, BH_REFUSAL_REQUEST,
				 "a branch makes 1 to %u children; %u were asked", BH_BRANCH_MAX, n);
	if (s->state == BH_SESSION_HIBERNATING || s->state == BH_SESSION_WAKING || s->act_cb)
		return bh_refuse(err, BH_REFUSAL_CAPACITY,
				 "the session is %s: branch it once that is done",
				 s->act_cb ? "in the middle of an action" : bh_session_state_name(s->state));
	if (admit_branch(e, s->principal, s->owner, n, err) < 0)
		return -1;
	struct branch *b = xzalloc(sizeof *b);
	*b = (struct branch){.parent = s, .n = n, .cb = cb, .arg = arg, .t0_us = now_mono_us()};
	if (s->state == BH_SESSION_HIBERNATED && !s->queue) {
		/* Its image is complete already: no pause, the children are made
		 * on the loop's next turn (the caller is answered after it
		 * returns, as always). */
		s->act_cb = branch_from_image;
		s->act_arg = b;
		b->from_image = true;
		b->hold = loop_timer(e->loop, 0, on_branch_now, b);
		return 0;
	}
	if (bh_session_hibernate(s, on_parent_hibernated, b, err) < 0) {
		free(b);
		return -1;
	}
	return 0;
}
