/* `v` in :leaks — capture a finding's evidence before anything reaps it
 * (capture_view.h). One capture at a time: its state lives here, so a
 * prompt left with esc leaves nothing behind. */
#include "capture_view.h"
#include "report_view.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct {
	bool busy;
	char target[65];
	char dir[PATH_MAX];
	capture_then_fn then;
	void *arg;
} cap;

bool capture_folder(const char *typed, char *out, size_t n)
{
	char cwd[PATH_MAX];
	if (!*typed) {
		snprintf(out, n, "no folder named");
		return false;
	}
	if (typed[0] == '/') {
		if (snprintf(out, n, "%s", typed) >= (int)n) {
			snprintf(out, n, "the path is too long");
			return false;
		}
		return true;
	}
	if (!getcwd(cwd, sizeof cwd)) {
		snprintf(out, n, "the current directory: %s", strerror(errno));
		return false;
	}
	const char *rel = !strncmp(typed, "./", 2) ? typed + 2 : typed;
	if (snprintf(out, n, "%s/%s", strcmp(cwd, "/") ? cwd : "", rel) >= (int)n) {
		snprintf(out, n, "the path is too long");
		return false;
	}
	return true;
}

void capture_stamp(char out[32])
{
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(out, 32, "%Y%m%dT%H%M%SZ", &tm);
}

void capture_safe_name(const char *name, char *out, size_t n)
{
	size_t o = 0;
	for (const unsigned char *c = (const unsigned char *)name; *c && o + 1 < n; c++)
		out[o++] = (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
					   (*c >= 'A' && *c <= 'Z') || *c == '-'
				   ? (char)*c
				   : '_';
	out[o] = '\0';
}

static void captured(void *arg, const char *dir, const char *sha, const char *err)
{
	struct app *a = arg;
	cap.busy = false;
	app_busy(a, "");
	if (err)
		app_flash(a, C_BAD, "not captured: %s", err);
	else {
		capture_remember(cap.target, dir); /* for the report */
		app_flash(a, C_GOOD, "captured into %s (MANIFEST %.12s)", dir, sha);
	}
	capture_then_fn then = cap.then;
	cap.then = NULL;
	if (then)
		then(a, err == NULL, dir, cap.arg);
}

static void on_folder(struct app *a, const char *text, void *arg)
{
	(void)arg;
	char why[PATH_MAX];
	if (!text || !capture_folder(text, cap.dir, sizeof cap.dir)) {
		snprintf(why, sizeof why, "%s", text ? cap.dir : "cancelled");
		app_flash(a, C_INFO, "not captured: %s", why);
		capture_then_fn then = cap.then;
		cap.then = NULL;
		if (then)
			then(a, false, "", cap.arg);
		return;
	}
	cap.busy = true;
	app_busy(a, "capturing");
	a->src->ops->capture(a->src, cap.target, cap.dir, captured, a);
}

void capture_then(struct app *a, const char *target, const char *sandbox, capture_then_fn then,
		  void *arg)
{
	if (cap.busy) {
		app_flash(a, C_WARN, "a capture is running already");
		if (then)
			then(a, false, "", arg);
		return;
	}
	snprintf(cap.target, sizeof cap.target, "%s", target);
	cap.then = then;
	cap.arg = arg;
	char stamp[32], safe[80], initial[160];
	capture_stamp(stamp);
	capture_safe_name(sandbox, safe, sizeof safe);
	snprintf(initial, sizeof initial, "./bulkhead-evidence-%s-%s", safe, stamp);
	prompt_text(a, "evidence folder: ", initial, on_folder, NULL);
}

void capture_ask(struct app *a, const char *target, const char *sandbox)
{
	capture_then(a, target, sandbox, NULL, NULL);
}

/* ---- every chosen finding, before a reap ---- */

static struct {
	bool busy;
	struct bh_leak *l;
	size_t n, at;
	char parent[PATH_MAX], dir[PATH_MAX + 128];
	capture_then_fn then;
	void *arg;
} all;

static void all_end(struct app *a, bool ok)
{
	capture_then_fn then = all.then;
	void *arg = all.arg;
	free(all.l);
	all.l = NULL;
	all.busy = false;
	app_busy(a, "");
	if (then)
		then(a, ok, all.parent, arg);
}

static void all_next(struct app *a);

static void all_captured(void *arg, const char *dir, const char *sha, const char *err)
{
	struct app *a = arg;
	(void)sha;
	const struct bh_leak *l = &all.l[all.at];
	if (err) {
		app_flash(a, C_BAD, "not captured, nothing reaped: %s: %s", l->sandbox, err);
		all_end(a, false);
		return;
	}
	capture_remember(*l->sandbox ? l->sandbox : l->fingerprint, dir);
	all.at++;
	all_next(a);
}

static void all_next(struct app *a)
{
	if (all.at == all.n) {
		app_flash(a, C_GOOD, "captured %zu finding%s into %s", all.n, all.n == 1 ? "" : "s",
			  all.parent);
		all_end(a, true);
		return;
	}
	const struct bh_leak *l = &all.l[all.at];
	const char *name = *l->sandbox ? l->sandbox : l->fingerprint;
	char safe[80];
	capture_safe_name(name, safe, sizeof safe);
	snprintf(all.dir, sizeof all.dir, "%s/%02zu-%s", all.parent, all.at + 1, *safe ? safe : "_");
	a->src->ops->capture(a->src, name, all.dir, all_captured, a);
}

static void on_parent(struct app *a, const char *text, void *arg)
{
	(void)arg;
	if (!text || !capture_folder(text, all.parent, sizeof all.parent)) {
		app_flash(a, C_INFO, "not captured, nothing reaped: %s", text ? all.parent : "cancelled");
		all_end(a, false);
		return;
	}
	if (mkdir(all.parent, 0700) < 0 && errno != EEXIST) {
		app_flash(a, C_BAD, "not captured, nothing reaped: %s: %s", all.parent, strerror(errno));
		all_end(a, false);
		return;
	}
	all.busy = true;
	app_busy(a, "capturing before the reap");
	all_next(a);
}

void capture_all_then(struct app *a, const struct bh_leak *findings, size_t n,
		      capture_then_fn then, void *arg)
{
	if (all.busy || cap.busy) {
		app_flash(a, C_WARN, "a capture is running already");
		if (then)
			then(a, false, "", arg);
		return;
	}
	all.l = calloc(n ? n : 1, sizeof *findings);
	if (!all.l)
		abort();
	if (n)
		memcpy(all.l, findings, n * sizeof *findings);
	all.n = n;
	all.at = 0;
	all.then = then;
	all.arg = arg;
	/* Busy from the answer on: a prompt left with esc leaves nothing set. */
	char stamp[32], initial[64];
	capture_stamp(stamp);
	snprintf(initial, sizeof initial, "./bulkhead-evidence-%s", stamp);
	prompt_text(a, "capture before the reap, into: ", initial, on_parent, NULL);
}
