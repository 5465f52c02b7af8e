/* remote: a whole capture in one call, for every engine that holds
 * sessions (the embedded console, a daemon's Capture): the host's view at
 * once (bh_capture_begin), then — for a session this engine holds — what
 * its init answers, asked one after the other: its processes, the /work
 * listing, and each /work file the operator picked. A paused or busy init's
 * refusal is written into the MANIFEST as the reason that part is missing;
 * the capture still ends with its MANIFEST. */
#include "engine_priv.h"

#include <stdio.h>
#include <string.h>

struct capture_run {
	bh_engine *e;
	bh_capture *cap;
	struct bh_capture_target t;
	char **files;
	size_t n_files, next_file;
	bh_captured_cb cb;
	void *arg;
};

static void run_free(struct capture_run *r)
{
	for (size_t i = 0; i < r->n_files; i++)
		free(r->files[i]);
	free(r->files);
	bh_capture_free(r->cap);
	free(r);
}

static void run_end(struct capture_run *r)
{
	char sha[65] = "";
	bh_error *err = NULL;
	int rc = bh_capture_finish(r->cap, sha, &err);
	r->cb(r->arg, &r->t, bh_capture_dir(r->cap), rc < 0 ? NULL : sha, rc < 0 ? err : NULL);
	bh_error_free(err);
	run_free(r);
}

/* The session again, by fingerprint: it may have ended while its init
 * answered the previous part. */
static bh_session *held_session(struct capture_run *r)
{
	bh_session **list = NULL;
	size_t n = bh_engine_sessions(r->e, &list);
	bh_session *found = NULL;
	for (size_t i = 0; i < n && !found; i++)
		if (!strcmp(bh_session_fingerprint(list[i]), r->t.fingerprint))
			found = list[i];
	free(list);
	return found;
}

static void missing(struct capture_run *r, const char *what, bh_error *err)
{
	bh_capture_missing(r->cap, what, err ? err->msg : "refused");
	bh_error_free(err);
}

static void next_file(struct capture_run *r);

static void on_file(void *arg, const uint8_t *data, size_t len, uint64_t size, bool truncated,
		    const bh_error *err)
{
	struct capture_run *r = arg;
	size_t i = r->next_file++;
	cleanup_free char *what = xasprintf("/work/%s", r->files[i]);
	if (err) {
		bh_capture_missing(r->cap, what, err->msg);
	} else {
		cleanup_free char *name = bh_capture_file_name(i, r->files[i]);
		cleanup_free char *note = xasprintf("%s (%llu bytes in the sandbox)", what,
						    (unsigned long long)size);
		bh_error *e2 = NULL;
		if (bh_capture_add(r->cap, name, data, len, truncated, note, &e2) < 0)
			missing(r, what, e2);
	}
	next_file(r);
}

static void next_file(struct capture_run *r)
{
	while (r->next_file < r->n_files) {
		const char *path = r->files[r->next_file];
		cleanup_free char *what = xasprintf("/work/%s", path);
		bh_session *s = held_session(r);
		bh_error *err = NULL;
		if (!s) {
			bh_capture_missing(r->cap, what, "the session ended meanwhile");
		} else if (bh_session_read_file(s, path, BH_CAPTURE_FILE_CAP, on_file, r, &err) == 0) {
			return;
		} else {
			missing(r, what, err);
		}
		r->next_file++;
	}
	run_end(r);
}

static void on_listing(void *arg, const struct bh_file_entry *rows, size_t n, bool more,
		       const bh_error *err)
{
	struct capture_run *r = arg;
	bh_error *e2 = NULL;
	if (err)
		bh_capture_missing(r->cap, "work-listing.txt", err->msg);
	else if (bh_capture_add_listing(r->cap, "", rows, n, more, &e2) < 0)
		missing(r, "work-listing.txt", e2);
	next_file(r);
}

static void listing(struct capture_run *r)
{
	bh_session *s = held_session(r);
	bh_error *err = NULL;
	if (!s)
		bh_capture_missing(r->cap, "work-listing.txt", "the session ended meanwhile");
	else if (bh_session_list_files(s, "", on_listing, r, &err) == 0)
		return;
	else
		missing(r, "work-listing.txt", err);
	next_file(r);
}

static void on_processes(void *arg, const struct bh_process *rows, size_t n, bool more,
			 const bh_error *err)
{
	struct capture_run *r = arg;
	bh_error *e2 = NULL;
	if (err)
		bh_capture_missing(r->cap, "processes-init.txt", err->msg);
	else if (bh_capture_add_processes(r->cap, rows, n, more, &e2) < 0)
		missing(r, "processes-init.txt", e2);
	listing(r);
}

int bh_engine_capture(bh_engine *e, const char *name, const char *out_dir,
		      const char *const *files, size_t n_files, bh_captured_cb cb, void *arg,
		      bh_error **err)
{
	if (n_files > BH_CAPTURE_PICKED_MAX)
		return bh_fail(err, BH_E_INVALID, 0,
			       "%zu files picked: a capture takes at most %u", n_files,
			       BH_CAPTURE_PICKED_MAX);
	struct bh_capture_target t;
	bh_capture *cap = NULL;
	if (bh_engine_capture_target(e, name, &t, err) < 0 ||
	    bh_capture_begin(e, &t, out_dir, &cap, err) < 0)
		return -1;
	struct capture_run *r = xzalloc(sizeof *r);
	*r = (struct capture_run){.e = e, .cap = cap, .t = t, .cb = cb, .arg = arg};
	r->files = xzalloc((n_files ? n_files : 1) * sizeof *r->files);
	for (size_t i = 0; i < n_files; i++)
		r->files[r->n_files++] = xstrdup(files[i]);
	bh_session *s = t.held ? held_session(r) : NULL;
	if (!s) {
		const char *why = t.fingerprint[0] ? "this engine does not hold the session: no init "
						     "it can ask (its engine is gone)"
						   : "no session names this sandbox: no init to ask";
		bh_capture_missing(cap, "processes-init.txt, work-listing.txt", why);
		for (size_t i = 0; i < r->n_files; i++) {
			cleanup_free char *what = xasprintf("/work/%s", r->files[i]);
			bh_capture_missing(cap, what, why);
		}
		r->next_file = r->n_files;
		run_end(r);
		return 0;
	}
	bh_error *perr = NULL;
	if (bh_session_processes(s, on_processes, r, &perr) < 0) {
		missing(r, "processes-init.txt", perr);
		listing(r);
	}
	return 0;
}
