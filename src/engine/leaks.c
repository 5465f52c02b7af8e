/* Leaks: sandboxes alive in a runtime that nothing should hold, registry
 * rows whose sandbox is gone, images nothing will restore, cgroups with no
 * container. Found by comparing four views: the sessions this engine holds,
 * the registry, the runtimes' lists under our roots, and our cgroup tree. */
#include "engine_priv.h"
#include "store.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#define OVERDUE_MARGIN_MS (5 * 60 * 1000)

struct findings {
	struct bh_leak *v;
	size_t n;
};

static struct bh_leak *add(struct findings *f, enum bh_leak_kind kind)
{
	f->v = realloc(f->v, (f->n + 1) * sizeof *f->v);
	if (!f->v)
		abort();
	struct bh_leak *l = &f->v[f->n++];
	memset(l, 0, sizeof *l);
	l->kind = kind;
	l->first_seen_ms = (int64_t)now_real_ms();
	return l;
}

/* A finding the reap takes by its name (a container, an image, a cgroup):
 * a name longer than the field is none bulkhead made, and cut to fit it
 * would name something else, which the reap would then take (images/ABC
 * for images/ABCDEF). Left alone, and said; NULL. */
static struct bh_leak *add_named(bh_engine *e, struct findings *f, enum bh_leak_kind kind,
				 const char *name)
{
	size_t len = strlen(name);
	if (len >= sizeof f->v->sandbox) {
		bh_log(e, BH_LOG_WARN,
		       "%s \"%.64s...\" (%zu bytes) left alone: longer than any name bulkhead makes",
		       bh_leak_kind_name(kind), name, len);
		return NULL;
	}
	struct bh_leak *l = add(f, kind);
	memcpy(l->sandbox, name, len + 1);
	return l;
}

static struct sandbox *held(bh_engine *e, const char *name)
{
	for (struct sandbox *sb = e->sandboxes; sb; sb = sb->next)
		if (!strcmp(sb->name, name))
			return sb;
	return NULL;
}

/* An image a live session holds, which no finding may name: that of any
 * sandbox this engine holds, whatever its state (an image being written,
 * one a restore is reading, one waiting for the session's next call), and
 * one a hibernated row names (the next engine on this directory restores
 * the session from it: `leaks` on a stopped engine's directory). */
static bool image_held(bh_engine *e, const char *name)
{
	return held(e, name) || sessions_keeps_bundle(e, name);
}

static bool in_list(char **names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

struct ghost_ctx {
	bh_engine *e;
	struct findings *f;
	char **running;
	size_t n_running;
};

static void check_row(void *arg, const char *fp, const char *sandbox, const char *runtime,
		      const char *state, int64_t engine_pid)
{
	struct ghost_ctx *c = arg;
	if (held(c->e, sandbox) || !strcmp(state, "hibernated"))
		return;
	if (in_list(c->running, c->n_running, sandbox))
		return; /* reported as abandoned with the runtime's view */
	/* Reaped by its fingerprint alone: the name is only shown, cut to fit. */
	struct bh_leak *l = add(c->f, BH_LEAK_GHOST);
	snprintf(l->sandbox, sizeof l->sandbox, "%.63s", sandbox);
	snprintf(l->fingerprint, sizeof l->fingerprint, "%s", fp);
	snprintf(l->runtime, sizeof l->runtime, "%s", runtime);
	if (!sandbox_name_valid(sandbox))
		snprintf(l->reason, sizeof l->reason,
			 "the registry row names sandbox \"%.64s\", which is not a name bulkhead "
			 "makes (a tampered store?)", sandbox);
	else
		snprintf(l->reason, sizeof l->reason,
			 "the registry says %s, but %s has no such container", state, runtime);
	snprintf(l->holder, sizeof l->holder, "registry row of engine pid %lld", (long long)engine_pid);
}

size_t bh_engine_leaks(bh_engine *e, struct bh_leak **out)
{
	struct findings f = {0};
	char **running = NULL;
	size_t n_running = 0;
	for (int t = 0; t < BH_TIER_COUNT; t++) {
		struct runtime *rt = &e->runtimes[t];
		if (!rt->ops || !rt->path)
			continue;
		char **names = NULL;
		size_t n = runtime_list_sync(rt, &names);
		for (size_t i = 0; i < n; i++) {
			running = realloc(running, (n_running + 1) * sizeof *running);
			if (!running)
				abort();
			running[n_running++] = names[i];
			if (held(e, names[i]))
				continue;
			char fp[65] = "";
			int64_t created = 0, pid = 0;
			bool row = e->store && store_live_row(e->store, names[i], fp, &created, &pid);
			struct bh_leak *l =
				add_named(e, &f, row ? BH_LEAK_ABANDONED : BH_LEAK_ORPHAN, names[i]);
			if (!l)
				continue;
			snprintf(l->runtime, sizeof l->runtime, "%s", rt->ops->name);
			snprintf(l->fingerprint, sizeof l->fingerprint, "%s", fp);
			if (row) {
				l->first_seen_ms = created;
				snprintf(l->reason, sizeof l->reason,
					 "its registry row is live but engine %lld no longer holds it",
					 (long long)pid);
			} else {
				snprintf(l->reason, sizeof l->reason,
					 "%s runs it under bulkhead's root, and no live registry row names it",
					 rt->ops->name);
			}
			snprintf(l->holder, sizeof l->holder, "%s --root %.400s", rt->ops->name, rt->root);
		}
		free(names);
	}
	if (e->store) {
		struct ghost_ctx c = {.e = e, .f = &f, .running = running, .n_running = n_running};
		store_live_sessions(e->store, check_row, &c, NULL);
	}
	/* Sessions this engine holds past their lifetime and a margin. */
	bh_session **list = NULL;
	size_t ns = bh_engine_sessions(e, &list);
	int64_t now = (int64_t)now_real_ms();
	for (size_t i = 0; i < ns; i++) {
		struct bh_session_info info;
		bh_session_get_info(list[i], &info);
		if (info.end_reason != BH_END_NONE ||
		    info.expires_unix_ms + OVERDUE_MARGIN_MS > now)
			continue;
		struct bh_leak *l = add_named(e, &f, BH_LEAK_OVERDUE, info.sandbox);
		if (!l)
			continue;
		snprintf(l->fingerprint, sizeof l->fingerprint, "%s", info.fingerprint);
		l->first_seen_ms = info.created_unix_ms;
		snprintf(l->reason, sizeof l->reason, "%s past its lifetime by %lld s",
			 bh_session_state_name(info.state),
			 (long long)((now - info.expires_unix_ms) / 1000));
		snprintf(l->holder, sizeof l->holder, "this engine");
	}
	free(list);
	/* Images no held session will restore. */
	const char *images = e->images_dir;
	cleanup_dir DIR *d = opendir_nofollow(images);
	if (!d && errno == ELOOP)
		bh_log(e, BH_LOG_WARN, "%s is reached through a symbolic link: not listed", images);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		/* ---- fleet: in a shared images directory, another host's
		 * image is not this engine's leak ---- */
		if (image_held(e, de->d_name) || !engine_image_ours(e, de->d_name))
			continue;
		struct bh_leak *l = add_named(e, &f, BH_LEAK_STALE_IMAGE, de->d_name);
		if (!l)
			continue;
		snprintf(l->reason, sizeof l->reason, "a hibernation image no held session will restore");
		snprintf(l->holder, sizeof l->holder, "%.300s/%.100s", images, de->d_name);
	}
	/* Cgroups with no container behind them. */
	char **cgs = NULL;
	size_t ncg = cgroups_list(&e->cg, &cgs);
	for (size_t i = 0; i < ncg; i++) {
		if (!in_list(running, n_running, cgs[i]) && !held(e, cgs[i])) {
			struct bh_leak *l = add_named(e, &f, BH_LEAK_STRAY_CGROUP, cgs[i]);
			if (l) {
				snprintf(l->reason, sizeof l->reason,
					 "a cgroup below %s with no container", e->cg.parent);
				snprintf(l->holder, sizeof l->holder, "/sys/fs/cgroup/*%s/%.100s",
					 e->cg.parent, cgs[i]);
			}
		}
		free(cgs[i]);
	}
	free(cgs);
	for (size_t i = 0; i < n_running; i++)
		free(running[i]);
	free(running);
	/* inflight: calls a dead engine was running. */
	leftovers_interrupted(e, &f.v, &f.n);
	*out = f.v;
	return f.n;
}

static struct runtime *runtime_named(bh_engine *e, const char *name)
{
	for (int t = 0; t < BH_TIER_COUNT; t++)
		if (e->runtimes[t].ops && !strcmp(e->runtimes[t].ops->name, name))
			return &e->runtimes[t];
	return NULL;
}

/* Asked again as each finding is reaped: a finding is a claim about a
 * moment, and what a live session holds at reap time is never touched. */
static bool still_unheld(bh_engine *e, const struct bh_leak *l)
{
	switch (l->kind) {
	case BH_LEAK_STALE_IMAGE:
		return !image_held(e, l->sandbox) && engine_image_ours(e, l->sandbox);
	case BH_LEAK_OVERDUE:
		return true; /* held on purpose: past its lifetime, this engine ends it */
	default:
		return !held(e, l->sandbox);
	}
}

void bh_leak_removal(const struct bh_leak *l, char *buf, size_t n)
{
	switch (l->kind) {
	case BH_LEAK_ORPHAN:
	case BH_LEAK_ABANDONED:
		snprintf(buf, n, "%s kill + delete %.64s, its bundle%s", l->runtime, l->sandbox,
			 l->fingerprint[0] ? ", its row ended (reaped)" : "");
		return;
	case BH_LEAK_GHOST:
		snprintf(buf, n, "its registry row ended (reaped); nothing on the host");
		return;
	case BH_LEAK_OVERDUE:
		snprintf(buf, n, "the session killed (its sandbox closed)");
		return;
	case BH_LEAK_STALE_IMAGE:
		snprintf(buf, n, "images/%.64s deleted", l->sandbox);
		return;
	case BH_LEAK_STRAY_CGROUP:
		snprintf(buf, n, "the empty cgroup %.64s removed", l->sandbox);
		return;
	case BH_LEAK_INTERRUPTED:
		snprintf(buf, n, "nothing deleted: the intent is marked reaped, kept for the timeline");
		return;
	}
	snprintf(buf, n, "?");
}

/* Whether the operator named this finding: the same kind, thing and session. */
static bool chosen_one(const struct bh_leak *l, const struct bh_leak *chosen, size_t n_chosen)
{
	if (!chosen)
		return true;
	for (size_t i = 0; i < n_chosen; i++)
		if (chosen[i].kind == l->kind && !strcmp(chosen[i].sandbox, l->sandbox) &&
		    !strcmp(chosen[i].fingerprint, l->fingerprint))
			return true;
	return false;
}

size_t bh_engine_gc(bh_engine *e, struct bh_leak **reaped)
{
	return bh_engine_reap(e, NULL, 0, reaped);
}

size_t bh_engine_reap(bh_engine *e, const struct bh_leak *chosen, size_t n_chosen,
		      struct bh_leak **reaped)
{
	return bh_engine_reap_as(e, NULL, chosen, n_chosen, false, reaped);
}

/* ---- remote: the reap in someone's name, and its dry run ---- */
size_t bh_engine_reap_as(bh_engine *e, const struct bh_actor *who, const struct bh_leak *chosen,
			 size_t n_chosen, bool dry_run, struct bh_leak **reaped)
{
	if (reaped)
		*reaped = NULL;
	if (e->read_only && !dry_run) {
		bh_log(e, BH_LOG_ERROR, "this engine opened %s read-only: nothing reaped",
		       e->state_dir);
		return 0;
	}
	struct bh_leak *v = NULL;
	size_t found = bh_engine_leaks(e, &v), n = 0;
	for (size_t i = 0; i < found; i++) {
		if (!chosen_one(&v[i], chosen, n_chosen))
			continue;
		if (!still_unheld(e, &v[i])) {
			bh_log(e, BH_LOG_INFO, "not reaping %s %s: a live session holds it now",
			       bh_leak_kind_name(v[i].kind), v[i].sandbox);
			continue;
		}
		v[n++] = v[i];
		struct bh_leak *l = &v[n - 1];
		if (dry_run) /* found again and unheld: what the reap would take */
			continue;
		switch (l->kind) {
		case BH_LEAK_ORPHAN:
		case BH_LEAK_ABANDONED: {
			struct runtime *rt = runtime_named(e, l->runtime);
			if (rt)
				runtime_destroy_sync(rt, l->sandbox);
			if (l->fingerprint[0] && e->store)
				store_session_end(e->store, l->fingerprint, BH_END_REAPED, l->reason,
						  NULL);
			/* A name the runtime listed becomes a path only if it is one
			 * bulkhead makes. */
			if (sandbox_name_valid(l->sandbox)) {
				cleanup_free char *bundle = xasprintf("%s/%s", e->bundles_dir, l->sandbox);
				rm_rf(bundle);
				if (chosen) /* its own leaf; the others stay unchosen */
					cgroups_remove_leaf(&e->cg, l->sandbox);
			}
			break;
		}
		case BH_LEAK_GHOST:
			if (e->store)
				store_session_end(e->store, l->fingerprint, BH_END_REAPED, l->reason,
						  NULL);
			break;
		case BH_LEAK_OVERDUE: {
			bh_session **list = NULL;
			size_t ns = bh_engine_sessions(e, &list);
			for (size_t j = 0; j < ns; j++)
				if (!strcmp(bh_session_fingerprint(list[j]), l->fingerprint))
					bh_session_kill(list[j]);
			free(list);
			break;
		}
		case BH_LEAK_STALE_IMAGE: {
			/* The path again from its parts: holder is a display string,
			 * cut to fit, and never a path to delete. */
			cleanup_free char *image = engine_image_path(e, l->sandbox);
			rm_rf(image);
			break;
		}
		case BH_LEAK_STRAY_CGROUP:
			/* Below, with the tree's other empty leaves when every
			 * finding is reaped; alone when it was chosen. */
			if (chosen)
				cgroups_remove_leaf(&e->cg, l->sandbox);
			break;
		case BH_LEAK_INTERRUPTED: {
			/* The intent stays, marked: the timeline still shows the
			 * call that was running. */
			const char *seq = l->sandbox[0] == '#' ? l->sandbox + 1 : "";
			if (e->store && *seq)
				store_inflight_reaped(e->store, l->fingerprint,
						      strtoull(seq, NULL, 10), (int64_t)now_real_ms());
			break;
		}
		}
		if (e->store)
			store_event_by(e->store, "leak_reaped", l->fingerprint, l->sandbox,
				       bh_leak_kind_name(l->kind), who);
		bh_log(e, BH_LOG_INFO, "reaped %s %s: %s", bh_leak_kind_name(l->kind), l->sandbox,
		       l->reason);
	}
	if (dry_run) {
		if (reaped)
			*reaped = v;
		else
			free(v);
		return n;
	}
	/* Empty leaves of our cgroup tree, except those a held sandbox uses
	 * (and, when the operator chose findings, those not chosen). */
	char **cgs = NULL;
	size_t ncg = cgroups_list(&e->cg, &cgs);
	for (size_t i = 0; i < ncg; i++) {
		if (!chosen && !held(e, cgs[i]))
			cgroups_remove_leaf(&e->cg, cgs[i]);
		free(cgs[i]);
	}
	free(cgs);
	/* Every finding reaped and no sandbox of ours: the tree's parent goes
	 * too (a gc of a dead engine's directory leaves no cgroup). */
	if (!chosen && !e->sandboxes && e->lock_fd >= 0)
		cgroups_cleanup(&e->cg);
	/* What is still there of the dead engine (the header's line). */
	if (e->leftovers.any) {
		int64_t pid = e->leftovers.engine_pid, last = e->leftovers.last_sign_ms;
		leftovers_survey(e, false);
		e->leftovers.engine_pid = pid;
		e->leftovers.last_sign_ms = last;
	}
	if (reaped)
		*reaped = v;
	else
		free(v);
	return n;
}
