/* Saving a sandbox's file on the operator's machine from the files view:
 * where to (./NAME by default, shown as an absolute path), whether to
 * replace a file already there ([y/N]: Enter is No), then the file read
 * through the sandbox's init and written whole under a temporary name
 * before it takes its name (bh_save_file). One save at a time: its state
 * lives here, so a prompt left with esc leaves nothing behind. */
#include "files_view.h"
#include "ui_text.h"
#include "wire_operator.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct {
	bool busy; /* a read is in flight */
	char fp[65];
	char path[BH_MAX_PATH_BYTES + 1];
	char dest[PATH_MAX];
	bool overwrite;
} save;

static void fmt_size(char *buf, size_t n, uint64_t b)
{
	if (b >= 1024u * 1024u)
		snprintf(buf, n, "%.1f MiB", (double)b / (1024.0 * 1024.0));
	else
		snprintf(buf, n, "%llu bytes", (unsigned long long)b);
}

static void on_content(void *arg, const uint8_t *data, size_t len, uint64_t size,
		       bool truncated, const char *err)
{
	struct app *a = arg;
	char cap[32], total[32];
	save.busy = false;
	app_busy(a, "");
	fmt_size(cap, sizeof cap, WIRE_OPERATOR_READ_MAX);
	fmt_size(total, sizeof total, size);
	if (err) {
		app_flash(a, C_BAD, "not saved: %s", err);
		return;
	}
	if (truncated || size > WIRE_OPERATOR_READ_MAX) {
		app_flash(a, C_BAD, "not saved: the file is %s now; at most %s are saved", total, cap);
		return;
	}
	int rc = bh_save_file(save.dest, data, len, save.overwrite);
	if (rc == -EEXIST)
		app_flash(a, C_BAD, "not saved: %s exists (it appeared meanwhile; not overwritten)",
			  save.dest);
	else if (rc < 0)
		app_flash(a, C_BAD, "not saved: %s: %s", save.dest, strerror(-rc));
	else
		app_flash(a, C_GOOD, "saved %zu bytes to %s", len, save.dest);
}

static void fetch(struct app *a)
{
	char what[64];
	snprintf(what, sizeof what, "reading the file from %.12s", save.fp);
	save.busy = true;
	app_busy(a, what);
	a->src->ops->read_file(a->src, save.fp, save.path, WIRE_OPERATOR_READ_MAX, on_content, a);
}

static void on_overwrite(struct app *a, const char *text, void *arg)
{
	(void)arg;
	if (strcmp(text, "y") && strcmp(text, "Y") && strcmp(text, "yes")) {
		app_flash(a, C_INFO, "kept as it is: %s", save.dest); /* short: the path is long */
		return;
	}
	save.overwrite = true;
	fetch(a);
}

static void on_dest(struct app *a, const char *text, void *arg)
{
	(void)arg;
	char cwd[PATH_MAX];
	struct stat sb;
	if (!*text) {
		app_flash(a, C_INFO, "not saved: no path");
		return;
	}
	if (text[0] == '/') {
		snprintf(save.dest, sizeof save.dest, "%s", text);
	} else if (!getcwd(cwd, sizeof cwd)) {
		app_flash(a, C_BAD, "not saved: the current directory: %s", strerror(errno));
		return;
	} else {
		const char *rel = !strncmp(text, "./", 2) ? text + 2 : text;
		if (snprintf(save.dest, sizeof save.dest, "%s/%s", strcmp(cwd, "/") ? cwd : "",
			     rel) >= (int)sizeof save.dest) {
			app_flash(a, C_BAD, "not saved: the path is too long");
			return;
		}
	}
	save.overwrite = false;
	if (lstat(save.dest, &sb) == 0) {
		/* The question stays short (a prompt's label is cut); the
		 * path is on the line below it. */
		app_flash(a, C_WARN, "%s exists%s", save.dest,
			  S_ISREG(sb.st_mode) ? "" : " (and is not a regular file)");
		prompt_text(a, "replace it? [y/N] ", "", on_overwrite, NULL);
		return;
	}
	fetch(a);
}

void files_save_ask(struct app *a, const char *fp, const char *path, const char *name,
		    uint64_t size)
{
	char cap[32], total[32], initial[300];
	if (save.busy) {
		app_flash(a, C_WARN, "a file is being saved already");
		return;
	}
	fmt_size(cap, sizeof cap, WIRE_OPERATOR_READ_MAX);
	fmt_size(total, sizeof total, size);
	if (size > WIRE_OPERATOR_READ_MAX) {
		app_flash(a, C_BAD, "not saved: the file is %s; at most %s are saved", total, cap);
		return;
	}
	snprintf(save.fp, sizeof save.fp, "%s", fp);
	snprintf(save.path, sizeof save.path, "%s", path);
	/* The default name is the file's, made harmless: no control bytes
	 * or bytes outside UTF-8 in a name on this machine. */
	size_t o = 2;
	memcpy(initial, "./", 2);
	for (const unsigned char *c = (const unsigned char *)name; *c && o + 1 < sizeof initial; c++)
		initial[o++] = *c < 0x20 || *c >= 0x7f ? '_' : (char)*c;
	initial[o] = '\0';
	prompt_text(a, "save to: ", initial, on_dest, NULL);
}
