/* `v` in :leaks — capture a finding's evidence before anything reaps it
 * (capture_view.h). One capture at a time: its state lives here, so a
 * prompt left with esc leaves nothing behind. */
#include "capture_view.h"
#include "report_view.h"

#include <errno.h>
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
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	char stamp[32], initial[128];
	strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
	/* The default folder's name is made of the sandbox's, made harmless. */
	size_t o = (size_t)snprintf(initial, sizeof initial, "./bulkhead-evidence-");
	for (const unsigned char *c = (const unsigned char *)sandbox; *c && o + 24 < sizeof initial;
	     c++)
		initial[o++] = (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
					       (*c >= 'A' && *c <= 'Z') || *c == '-'
				       ? (char)*c
				       : '_';
	snprintf(initial + o, sizeof initial - o, "-%s", stamp);
	prompt_text(a, "evidence folder: ", initial, on_folder, NULL);
}

void capture_ask(struct app *a, const char *target, const char *sandbox)
{
	capture_then(a, target, sandbox, NULL, NULL);
}
