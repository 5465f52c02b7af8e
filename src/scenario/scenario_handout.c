/* A scenario as a handout (Markdown), for a class to keep after the replay:
 * what it teaches, where it was recorded, then each step as the player shows
 * it — the narration, the call's code and files, the answer or the refusal,
 * what the operator saw. A scenario file is input like any other (it may
 * come from anyone): its prose is escaped so it reads as text, never as a
 * link, an image or HTML, and code and output go in fences longer than any
 * run of backticks they hold, so nothing closes them early. */
#include "scenario.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Prose: Markdown's punctuation backslash-escaped, line breaks kept as
 * breaks, control bytes as \xHH. */
static void prose(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '\n')
			fputs("  \n", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%02X", *p);
		else if (strchr("\\`*_[]<>#!|~&", *p))
			fprintf(f, "\\%c", *p);
		else
			fputc(*p, f);
	}
}

/* A fenced block of text exactly as recorded (tabs kept; control bytes
 * other than newline and tab as \xHH), in a fence one backtick longer than
 * the longest run inside it (at least three). */
static void fenced(FILE *f, const char *info, const char *text)
{
	size_t run = 0, longest = 0;
	for (const char *p = text; *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		longest = run > longest ? run : longest;
	}
	size_t fence = longest >= 3 ? longest + 1 : 3;
	for (size_t i = 0; i < fence; i++)
		fputc('`', f);
	fprintf(f, "%s\n", info);
	size_t n = strlen(text);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)text[i];
		if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
			fprintf(f, "\\x%02X", c);
		else
			fputc(c, f);
	}
	if (!n || text[n - 1] != '\n')
		fputc('\n', f);
	for (size_t i = 0; i < fence; i++)
		fputc('`', f);
	fputs("\n\n", f);
}

static void hops_line(FILE *f, const struct scenario_step *st)
{
	fputs("Hops: ", f);
	if (!st->n_hops)
		fputs("none (time passes)", f);
	for (size_t i = 0; i < st->n_hops; i++)
		fprintf(f, "%s%s", i ? " → " : "", scenario_hop_name(st->hops[i]));
	if (st->stopped_at != SCENARIO_HOP_NONE)
		fprintf(f, " (stopped at %s)", scenario_hop_name(st->stopped_at));
	if (st->t_ms >= 0)
		fprintf(f, ", at +%lld ms", st->t_ms);
	fputs(".\n\n", f);
	/* The path a class followed, a line a hop: down, then back up. */
	for (size_t i = 0; i < st->n_path; i++) {
		const struct scenario_visit *vi = &st->path[i];
		fprintf(f, "%zu. %s (%s): ", i + 1, scenario_hop_name(vi->hop), scenario_leg_name(vi->leg));
		prose(f, vi->narration);
		fputc('\n', f);
	}
	if (st->n_path)
		fputc('\n', f);
}

static void call_part(FILE *f, const struct scenario_step *st)
{
	fprintf(f, "The call (%s):\n\n", st->language);
	fenced(f, st->language, st->code);
	for (size_t i = 0; i < st->n_files; i++) {
		fputs("File sent with it, `", f);
		prose(f, st->files[i].path); /* escaped: a path is the file's words */
		fputs("`:\n\n", f);
		fenced(f, "", st->files[i].content);
	}
	if (st->approval) {
		fputs("What the operator saw while the daemon held the call:\n\n", f);
		fenced(f, "", st->approval);
	}
	if (st->outcome != SCENARIO_ANSWERED) {
		fprintf(f, "%s:\n\n",
			st->outcome == SCENARIO_REFUSED ? "Refused, nothing ran"
							: "May have run: no checked answer");
		fenced(f, "", st->error ? st->error : "");
		return;
	}
	fprintf(f, "The answer%s:\n\n", st->retried ? " (retried once in a new sandbox)" : "");
	for (size_t i = 0; i < st->n_answer; i++) {
		const struct scenario_value *v = &st->answer[i];
		bool output = (!strcmp(v->key, "stdout") || !strcmp(v->key, "stderr")) && v->text;
		if (output)
			continue;
		fputs("- ", f);
		prose(f, v->key);
		fputs(": `", f);
		/* compact JSON with no newline; a backtick in it is escaped away */
		for (const char *p = v->json; *p; p++)
			fputc(*p == '`' ? '\'' : *p, f);
		fputs("`\n", f);
	}
	fputc('\n', f);
	for (size_t i = 0; i < st->n_answer; i++) {
		const struct scenario_value *v = &st->answer[i];
		if ((strcmp(v->key, "stdout") && strcmp(v->key, "stderr")) || !v->text || !*v->text)
			continue;
		fprintf(f, "%s:\n\n", v->key);
		fenced(f, "", v->text);
	}
}

int scenario_handout(const struct scenario *s, FILE *f)
{
	fputs("# ", f);
	prose(f, s->title);
	fputs("\n\n", f);
	prose(f, s->teaches);
	fputs("\n\n", f);
	fprintf(f, "Scenario `%s`, tier %s", s->name, s->tier);
	if (s->floor)
		fprintf(f, ", floor %s", s->floor);
	fprintf(f, ", %zu steps. Recorded by ", s->n_steps);
	prose(f, s->source.recorder);
	fputs(" at ", f);
	prose(f, s->source.recorded_at);
	if (s->source.daemon) {
		fputs(" against ", f);
		prose(f, s->source.daemon);
	}
	fputs(". A replay executes nothing: every answer below is the one recorded.\n\n", f);
	int turn = -1;
	for (size_t i = 0; i < s->n_steps; i++) {
		const struct scenario_step *st = &s->steps[i];
		if (st->turn != turn && st->turn) {
			fprintf(f, "## Turn %d\n\n", st->turn);
			if (st->user_message) {
				fputs("The user: ", f);
				prose(f, st->user_message);
				fputs("\n\n", f);
			}
		}
		turn = st->turn;
		fprintf(f, "### Step %zu: %s", i + 1, scenario_kind_name(st->kind));
		if (st->kind == SCENARIO_HOOK)
			fprintf(f, " %s", st->hook);
		else if (st->kind == SCENARIO_OPERATOR)
			fprintf(f, " %s", st->action);
		else if (st->kind == SCENARIO_WAIT)
			fprintf(f, " %lld ms", st->ms);
		fputs("\n\n", f);
		prose(f, st->narration);
		fputs("\n\n", f);
		hops_line(f, st);
		if (st->kind == SCENARIO_CALL)
			call_part(f, st);
		else if (st->kind == SCENARIO_OPERATOR && st->output && *st->output) {
			fputs("What the operator saw:\n\n", f);
			fenced(f, "", st->output);
		}
	}
	return ferror(f) ? -1 : 0;
}

int scenario_handout_save(const struct scenario *s, const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", e == EEXIST ? "not overwritten, it exists" : strerror(e),
			 path);
		return -1;
	}
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int e = errno;
		close(fd);
		unlink(path);
		snprintf(err, errlen, "%s: %s", strerror(e), path);
		return -1;
	}
	int rc = scenario_handout(s, f);
	int e = errno;
	if (fclose(f) != 0 && rc == 0) {
		rc = -1;
		e = errno;
	}
	if (rc < 0) {
		unlink(path);
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(e));
		return -1;
	}
	return 0;
}
