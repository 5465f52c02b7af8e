/* `bulkhead record`'s paths (docs/scenarios.md, "path"): what each hop did
 * in each step, down the pipeline to where the step stopped and back up,
 * written from what the recorder saw happen — the manager's entries before
 * and after, the procedures each client sent (and their bodies, through the
 * client's tap), the answer or the refusal — never from a caption per hop.
 * Session ids are capabilities: they are redacted from every body kept. */
#include "recorder.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the wire, as the clients saw it ---- */

static const char redacted[] = "(a capability: not recorded)";

static void redact(cJSON *j)
{
	cJSON *it;
	cJSON_ArrayForEach(it, j)
	{
		if (it->string && !strcmp(it->string, "sessionId") && cJSON_IsString(it))
			cJSON_SetValuestring(it, redacted);
		else if (cJSON_IsObject(it) || cJSON_IsArray(it))
			redact(it);
	}
}

/* The body with its session ids redacted; a body that is not JSON is kept
 * only when it holds no session id at all. */
static char *redacted_copy(const char *body)
{
	cJSON *j = cJSON_Parse(body ? body : "");
	if (!j)
		return strdup(body && !strstr(body, "sessionId") ? body : "");
	redact(j);
	char *out = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return out ? out : strdup("");
}

void rec_tap_on(void *arg, const char *procedure, const char *request, long status,
		const char *answer)
{
	struct rec_tap *t = arg;
	if (t->n == sizeof t->ex / sizeof t->ex[0])
		return; /* a step sends a handful; more would say nothing new */
	struct rec_exchange *x = &t->ex[t->n++];
	snprintf(x->procedure, sizeof x->procedure, "%s", procedure);
	x->request = redacted_copy(request);
	x->answer = redacted_copy(answer);
	x->status = status;
}

void rec_tap_reset(struct rec_tap *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->ex[i].request);
		free(t->ex[i].answer);
	}
	t->n = 0;
}

const struct rec_exchange *rec_tap_last(const struct rec_tap *t, const char *procedure)
{
	for (size_t i = t->n; i-- > 0;)
		if (!strcmp(t->ex[i].procedure, procedure))
			return &t->ex[i];
	return NULL;
}

const char *rec_answer_message(const struct rec_exchange *x, char *buf, size_t n)
{
	cJSON *j = cJSON_Parse(x && x->answer ? x->answer : "");
	const char *m = rec_str(j, "message", NULL);
	snprintf(buf, n, "%s", m ? m : x && x->answer && *x->answer ? x->answer : "no answer");
	cJSON_Delete(j);
	return buf;
}

/* ---- one hop of a path ---- */

static void vvisit(cJSON *path, enum scenario_hop hop, enum scenario_leg leg, const char *wire_what,
		   const char *wire_text, const char *fmt, va_list ap) __attribute__((format(printf, 6, 0)));
static void vvisit(cJSON *path, enum scenario_hop hop, enum scenario_leg leg, const char *wire_what,
		   const char *wire_text, const char *fmt, va_list ap)
{
	char words[2048];
	vsnprintf(words, sizeof words, fmt, ap);
	cJSON *v = cJSON_CreateObject();
	cJSON_AddStringToObject(v, "hop", scenario_hop_name(hop));
	cJSON_AddStringToObject(v, "leg", scenario_leg_name(leg));
	cJSON_AddStringToObject(v, "narration", words);
	if (wire_what && wire_text) {
		cJSON *w = cJSON_AddObjectToObject(v, "wire");
		cJSON_AddStringToObject(w, "what", wire_what);
		cJSON_AddStringToObject(w, "text", wire_text);
	}
	cJSON_AddItemToArray(path, v);
}

static void visit(cJSON *path, enum scenario_hop hop, enum scenario_leg leg, const char *wire_what,
		  const char *wire_text, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static void visit(cJSON *path, enum scenario_hop hop, enum scenario_leg leg, const char *wire_what,
		  const char *wire_text, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vvisit(path, hop, leg, wire_what, wire_text, fmt, ap);
	va_end(ap);
}

/* ---- egress and projects: the same, for record_egress.c and record_project.c ---- */
void rec_visit(cJSON *path, enum scenario_hop hop, enum scenario_leg leg, const char *wire_what,
	       const char *wire_text, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vvisit(path, hop, leg, wire_what, wire_text, fmt, ap);
	va_end(ap);
}

/* "plimsoll.v1 SessionRun request" / "... answer (HTTP 200)" for an exchange;
 * with no exchange seen (NULL), the hop's words alone. */
static void exchange_down(cJSON *path, enum scenario_hop hop, const struct rec_exchange *x,
			  const char *words)
{
	if (!x) {
		visit(path, hop, SCENARIO_LEG_DOWN, NULL, NULL, "%s", words);
		return;
	}
	char what[96];
	snprintf(what, sizeof what, "%s %s request",
		 strcmp(x->procedure, "SessionRun") && strcmp(x->procedure, "OpenSession") &&
				 strcmp(x->procedure, "CloseSession") && strcmp(x->procedure, "Run")
			 ? "bulkhead.v1.OperatorService"
			 : "plimsoll.v1",
		 x->procedure);
	visit(path, hop, SCENARIO_LEG_DOWN, what, x->request, "%s", words);
}

static void exchange_up(cJSON *path, enum scenario_hop hop, const struct rec_exchange *x,
			const char *words)
{
	if (!x) {
		visit(path, hop, SCENARIO_LEG_UP, NULL, NULL, "%s", words);
		return;
	}
	char what[96];
	snprintf(what, sizeof what, "%s answer (HTTP %ld)", x->procedure, x->status);
	visit(path, hop, SCENARIO_LEG_UP, what, x->answer, "%s", words);
}

void rec_exchange_down(cJSON *path, enum scenario_hop hop, const struct rec_exchange *x, const char *words)
{
	exchange_down(path, hop, x, words);
}

void rec_exchange_up(cJSON *path, enum scenario_hop hop, const struct rec_exchange *x, const char *words)
{
	exchange_up(path, hop, x, words);
}

static const char *first_line(const char *text, char *buf, size_t n)
{
	const char *t = text ? text : "";
	size_t len = strcspn(t, "\n");
	snprintf(buf, n, "%.*s", (int)(len < n ? len : n - 1), t);
	return buf;
}

/* The last line a stream printed (a traceback ends with its error). */
static const char *last_line(const char *text, char *buf, size_t n)
{
	const char *t = text ? text : "";
	size_t len = strlen(t);
	while (len && t[len - 1] == '\n')
		len--;
	size_t start = len;
	while (start && t[start - 1] != '\n')
		start--;
	snprintf(buf, n, "%.*s", (int)(len - start < n ? len - start : n - 1), t + start);
	return buf;
}

/* ---- a call ---- */

static void call_down_common(cJSON *path, const struct rec_call_seen *c)
{
	size_t lines = 1, bytes = 0;
	for (const char *p = c->code; *p; p++)
		lines += *p == '\n';
	char files[512] = "";
	cJSON *tool = cJSON_CreateObject(), *args = cJSON_CreateObject();
	cJSON_AddStringToObject(tool, "type", "tool-call");
	cJSON_AddStringToObject(tool, "toolName", "executeCode");
	cJSON *input = cJSON_AddObjectToObject(tool, "input");
	cJSON_AddStringToObject(input, "language", c->language);
	cJSON_AddStringToObject(input, "code", c->code);
	cJSON_AddStringToObject(args, "runId", c->key);
	if (c->owner)
		cJSON_AddStringToObject(args, "owner", c->owner);
	cJSON_AddStringToObject(args, "language", c->language);
	cJSON_AddStringToObject(args, "code", c->code);
	if (c->in->n_files) {
		cJSON *tf = cJSON_AddArrayToObject(input, "files"),
		      *af = cJSON_AddArrayToObject(args, "files");
		for (size_t i = 0; i < c->in->n_files; i++) {
			const struct bh_file *f = &c->in->files[i];
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "path", f->path);
			cJSON_AddStringToObject(o, "content", (const char *)f->content);
			cJSON_AddItemToArray(tf, o);
			o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "path", f->path);
			cJSON_AddNumberToObject(o, "bytes", (double)f->len);
			cJSON_AddItemToArray(af, o);
			bytes += f->len;
			size_t used = strlen(files);
			snprintf(files + used, sizeof files - used, "%s%s (%zu bytes)",
				 i ? ", " : "", f->path, f->len);
		}
	}
	char *tool_json = cJSON_PrintUnformatted(tool), *args_json = cJSON_PrintUnformatted(args);
	cJSON_Delete(tool);
	cJSON_Delete(args);
	visit(path, SCENARIO_HOP_MODEL, SCENARIO_LEG_DOWN, "the model's tool call", tool_json,
	      "The model calls executeCode: %s, %zu line%s of code%s%s.", c->language, lines,
	      lines == 1 ? "" : "s", *files ? ", with " : "", files);
	visit(path, SCENARIO_HOP_AGENT, SCENARIO_LEG_DOWN, NULL, NULL,
	      "The agent runs the tool for %s%s%s: the run id is the agent's, not the model's.",
	      c->key, c->owner ? ", owner " : "", c->owner ? c->owner : "");
	char sent[96] = "no files";
	if (c->in->n_files)
		snprintf(sent, sizeof sent, "%zu file%s (%zu bytes) for /work", c->in->n_files,
			 c->in->n_files == 1 ? "" : "s", bytes);
	visit(path, SCENARIO_HOP_EXECUTE_CODE, SCENARIO_LEG_DOWN, "the executeCode arguments",
	      args_json,
	      "executeCode took language %s (python or javascript), %zu bytes of code and %s, and hands the call to "
	      "the manager under %s.",
	      c->language, strlen(c->code), sent, c->key);
	free(tool_json);
	free(args_json);
}

static void call_manager(cJSON *path, const struct rec_call_seen *c)
{
	char words[1024];
	const char *fp = *c->fp_after ? c->fp_after : c->fp_before;
	if (c->had_entry && c->was_opening)
		snprintf(
			words, sizeof words,
			"%s's sandbox was still opening from the turn's warm-up: the manager waited for it, "
			"then sent the call to it.",
			c->key);
	else if (c->had_entry && c->out && c->out->retried)
		snprintf(
			words, sizeof words,
			"The manager holds %s's sandbox and sends the call there. The daemon refused it: that "
			"session had ended. Nothing ran, so the manager opened a new sandbox and sent the call once more.",
			c->key);
	else if (c->had_entry && c->opened == 0)
		snprintf(words, sizeof words,
			 "The manager holds %s's sandbox, open and ready: it sends the call there.",
			 c->key);
	else if (c->stopped == SCENARIO_HOP_MANAGER)
		snprintf(words, sizeof words,
			 "The manager refused the call before any request left it: %s",
			 c->err ? c->err->message : "");
	else if (*fp)
		snprintf(
			words, sizeof words,
			"The manager held no sandbox for %s: it opened one (OpenSession, floor %s) and sent the "
			"call to the new session.",
			c->key, c->floor);
	else
		snprintf(
			words, sizeof words,
			"The manager held no sandbox for %s: it asked the daemon to open one (OpenSession, floor %s).",
			c->key, c->floor);
	if (c->out && c->out->retried && !c->had_entry) {
		size_t used = strlen(words);
		snprintf(
			words + used, sizeof words - used,
			" The daemon refused it as ended: the manager opened a new sandbox and ran the call once more.");
	}
	if (c->closed > 0) {
		size_t used = strlen(words);
		snprintf(words + used, sizeof words - used,
			 " It also sent CloseSession for a sandbox it let go (%lld).", c->closed);
	}
	const struct rec_exchange *open =
		c->opened > 0 ? rec_tap_last(c->tap, "OpenSession") : NULL;
	/* The open is the manager's own request when a SessionRun followed it;
	 * a refused open is shown at the daemon that refused it. */
	bool shown =
		open && c->stopped != SCENARIO_HOP_MANAGER && rec_tap_last(c->tap, "SessionRun");
	exchange_down(path, SCENARIO_HOP_MANAGER, shown ? open : NULL, words);
}

/* Back up from the hop below `from` to the model, a refusal or an answer. */
static void call_up(cJSON *path, const struct rec_call_seen *c, enum scenario_hop from)
{
	char line[512];
	const struct rec_exchange *run = rec_tap_last(c->tap, "SessionRun");
	if (c->out) {
		char *answer = bh_exec_output_json(c->out);
		if (from > SCENARIO_HOP_DAEMON) {
			char words[512];
			snprintf(
				words, sizeof words,
				"The daemon wrote the call's run record, the next link in the session's chain, and "
				"answered SessionRun with it: the receipt (enter opens it, verified).");
			exchange_up(path, SCENARIO_HOP_DAEMON, run, words);
		}
		visit(path, SCENARIO_HOP_MANAGER, SCENARIO_LEG_UP, NULL, NULL,
		      "The manager makes the tool's answer of it: stateKept %s, freshSandbox %s%s.",
		      c->out->state_kept ? "true" : "false",
		      c->out->fresh_sandbox ? "true" : "false",
		      c->out->retried ? ", retried once" : "");
		visit(path, SCENARIO_HOP_EXECUTE_CODE, SCENARIO_LEG_UP, "the executeCode answer",
		      answer, "executeCode returns exit code %d%s to the agent.", c->out->exit_code,
		      c->out->timed_out ? " (timed out)" : "");
		free(answer);
		visit(path, SCENARIO_HOP_AGENT, SCENARIO_LEG_UP, NULL, NULL,
		      "The agent hands the tool's result to the model's next step.");
		const char *said =
			c->out->exit_code == 0 && c->out->stdout_text && *c->out->stdout_text
				? first_line(c->out->stdout_text, line, sizeof line)
			: c->out->stderr_text && *c->out->stderr_text
				? last_line(c->out->stderr_text, line, sizeof line)
				: first_line(c->out->stdout_text, line, sizeof line);
		visit(path, SCENARIO_HOP_MODEL, SCENARIO_LEG_UP, NULL, NULL,
		      "The model reads the answer: %s", *said ? said : "(nothing printed)");
		return;
	}
	const char *msg = c->err ? c->err->message : "";
	bool refused = c->stopped != SCENARIO_HOP_NONE;
	if (from > SCENARIO_HOP_DAEMON)
		visit(path, SCENARIO_HOP_DAEMON, SCENARIO_LEG_UP, NULL, NULL,
		      "No checked answer comes back from the sandbox: %s", msg);
	/* The refusal's own answer, as the daemon sent it. */
	const struct rec_exchange *no = NULL;
	if (refused && from == SCENARIO_HOP_DAEMON) {
		no = run ? run : rec_tap_last(c->tap, "OpenSession");
		if (no && no->status == 200)
			no = NULL;
	}
	if (from > SCENARIO_HOP_MANAGER)
		exchange_up(
			path, SCENARIO_HOP_MANAGER, no,
			refused ? "The refusal comes back through the manager: nothing ran, so the call is safe to retry."
				: "The manager cannot say whether the cell ran: it does not retry it.");
	visit(path, SCENARIO_HOP_EXECUTE_CODE, SCENARIO_LEG_UP, NULL, NULL,
	      "executeCode returns the %s, not an answer.", refused ? "refusal" : "error");
	visit(path, SCENARIO_HOP_AGENT, SCENARIO_LEG_UP, NULL, NULL,
	      "The agent hands the %s to the model as the tool's error.",
	      refused ? "refusal" : "error");
	visit(path, SCENARIO_HOP_MODEL, SCENARIO_LEG_UP, NULL, NULL, "The model reads: %s", msg);
}

cJSON *rec_call_path(const struct rec_call_seen *c)
{
	cJSON *path = cJSON_CreateArray();
	call_down_common(path, c);
	call_manager(path, c);
	if (c->stopped == SCENARIO_HOP_MANAGER) {
		call_up(path, c, SCENARIO_HOP_MANAGER);
		return path;
	}
	const struct rec_exchange *run = rec_tap_last(c->tap, "SessionRun");
	const struct rec_exchange *open = rec_tap_last(c->tap, "OpenSession");
	char words[1024];
	if (c->stopped == SCENARIO_HOP_DAEMON) {
		/* The refusal came on the open when no session ever answered. */
		bool on_open = !run && open;
		snprintf(words, sizeof words, "The daemon refused %s: %s%s",
			 on_open ? "OpenSession" : "SessionRun", c->err ? c->err->message : "",
			 on_open ? ". No session opened, so no sandbox exists." : "");
		const struct rec_exchange *x = on_open ? open : run;
		exchange_down(path, SCENARIO_HOP_DAEMON, x, words);
		call_up(path, c, SCENARIO_HOP_DAEMON);
		return path;
	}
	if (c->out && c->out->retried)
		snprintf(
			words, sizeof words,
			"The daemon refused the first SessionRun (its session had ended: nothing ran), then took the "
			"second, on the new session, at the %s tier (the floor is %s); it passes the cell to the sandbox's "
			"init.",
			c->tier, c->floor);
	else
		snprintf(
			words, sizeof words,
			"The daemon took SessionRun: a live session of its own, at the %s tier (the floor is %s), with "
			"no other call running on it; it passes the cell to the sandbox's init.",
			c->tier, c->floor);
	exchange_down(path, SCENARIO_HOP_DAEMON, run, words);
	if (c->out) {
		size_t out = c->out->stdout_text ? strlen(c->out->stdout_text) : 0;
		size_t err = c->out->stderr_text ? strlen(c->out->stderr_text) : 0;
		visit(path, SCENARIO_HOP_SANDBOX, SCENARIO_LEG_DOWN, NULL, NULL,
		      "The init ran the %s cell in %s%s: exit %d%s, %zu bytes of stdout and %zu of stderr%s.",
		      c->language,
		      c->out->fresh_interpreter ? "an interpreter started for it"
						: "the interpreter kept from earlier calls",
		      c->out->fresh_sandbox ? ", in a sandbox new to this run" : "",
		      c->out->exit_code, c->out->timed_out ? " (timed out)" : "", out, err,
		      c->out->files_persist ? "; /work stays for the next call" : "");
	} else {
		visit(path, SCENARIO_HOP_SANDBOX, SCENARIO_LEG_DOWN, NULL, NULL,
		      "Whether the cell ran here is not known: no checked answer came back.");
	}
	call_up(path, c, SCENARIO_HOP_SANDBOX);
	return path;
}

/* ---- a lifecycle hook ---- */

static void add_hop(cJSON *lit, enum scenario_hop h)
{
	cJSON_AddItemToArray(lit, cJSON_CreateString(scenario_hop_name(h)));
}

cJSON *rec_hook_path(const struct rec_hook_seen *h, cJSON *lit, enum scenario_hop *stopped)
{
	cJSON *path = cJSON_CreateArray();
	*stopped = SCENARIO_HOP_NONE;
	bool warm = !strcmp(h->hook, "turn_start");
	add_hop(lit, SCENARIO_HOP_AGENT);
	add_hop(lit, SCENARIO_HOP_MANAGER);
	if (warm)
		visit(path, SCENARIO_HOP_AGENT, SCENARIO_LEG_DOWN, NULL, NULL,
		      "onTurnStart: the agent asks the manager to warm %s's sandbox and does not wait for it.",
		      h->key);
	else if (!strcmp(h->hook, "suspend"))
		visit(path, SCENARIO_HOP_AGENT, SCENARIO_LEG_DOWN, NULL, NULL,
		      "The run stayed idle past its idle window: onChatSuspend asks the manager to dispose of %s's "
		      "sandbox.",
		      h->key);
	else
		visit(path, SCENARIO_HOP_AGENT, SCENARIO_LEG_DOWN, NULL, NULL,
		      "onComplete: the run is over; the agent asks the manager to dispose of %s's sandbox.",
		      h->key);
	const struct rec_exchange *x = rec_tap_last(h->tap, warm ? "OpenSession" : "CloseSession");
	char words[1024], msg[512];
	if (!x) {
		if (warm)
			visit(path, SCENARIO_HOP_MANAGER, SCENARIO_LEG_DOWN, NULL, NULL,
			      "The manager already holds %s's sandbox: nothing opens.", h->key);
		else
			visit(path, SCENARIO_HOP_MANAGER, SCENARIO_LEG_DOWN, NULL, NULL,
			      "The manager holds no sandbox for %s: there is nothing to close.",
			      h->key);
		visit(path, SCENARIO_HOP_AGENT, SCENARIO_LEG_UP, NULL, NULL,
		      "The agent goes on: nothing was sent.");
		return path;
	}
	add_hop(lit, SCENARIO_HOP_DAEMON);
	if (warm)
		visit(path, SCENARIO_HOP_MANAGER, SCENARIO_LEG_DOWN, NULL, NULL,
		      "The manager holds no sandbox for %s: it sends OpenSession (floor %s, the owner as a keyed "
		      "digest) and lets the turn go on.",
		      h->key, h->floor);
	else
		visit(path, SCENARIO_HOP_MANAGER, SCENARIO_LEG_DOWN, NULL, NULL,
		      "The manager closes %s's sandbox: CloseSession.", h->key);
	if (x->status != 200) {
		*stopped = SCENARIO_HOP_DAEMON;
		snprintf(words, sizeof words, "The daemon refused %s: %s%s", x->procedure,
			 rec_answer_message(x, msg, sizeof msg),
			 warm ? ". No session opened, so no sandbox exists." : "");
		exchange_down(path, SCENARIO_HOP_DAEMON, x, words);
		exchange_up(
			path, SCENARIO_HOP_MANAGER, x,
			warm ? "The warm-up failed: the manager holds no sandbox for the run."
			     : "The close failed: the manager forgets the sandbox all the same.");
		visit(path, SCENARIO_HOP_AGENT, SCENARIO_LEG_UP, NULL, NULL,
		      warm ? "The turn goes on without a sandbox: its first call will ask again."
			   : "The agent goes on.");
		return path;
	}
	add_hop(lit, SCENARIO_HOP_SANDBOX);
	if (warm) {
		snprintf(words, sizeof words,
			 "The daemon checked the floor %s against its tier and opened a session.",
			 h->floor);
		exchange_down(path, SCENARIO_HOP_DAEMON, x, words);
		visit(path, SCENARIO_HOP_SANDBOX, SCENARIO_LEG_DOWN, NULL, NULL,
		      "A sandbox started for the session: its init is up, waiting for the first cell.");
		exchange_up(path, SCENARIO_HOP_DAEMON, x,
			    "The daemon answers OpenSession with the new session.");
		visit(path, SCENARIO_HOP_MANAGER, SCENARIO_LEG_UP, NULL, NULL,
		      "%s holds the new session now.", h->key);
		visit(path, SCENARIO_HOP_AGENT, SCENARIO_LEG_UP, NULL, NULL,
		      "The turn had not waited: it is already going on.");
	} else {
		snprintf(words, sizeof words, "The daemon ends the session.");
		exchange_down(path, SCENARIO_HOP_DAEMON, x, words);
		visit(path, SCENARIO_HOP_SANDBOX, SCENARIO_LEG_DOWN, NULL, NULL,
		      "The session's sandbox is stopped and removed: its interpreters and /work are gone.");
		exchange_up(path, SCENARIO_HOP_DAEMON, x, "The daemon answers CloseSession.");
		visit(path, SCENARIO_HOP_MANAGER, SCENARIO_LEG_UP, NULL, NULL,
		      "%s holds no sandbox now.", h->key);
		visit(path, SCENARIO_HOP_AGENT, SCENARIO_LEG_UP, NULL, NULL,
		      "The agent goes on: the run pays for no sandbox.");
	}
	return path;
}

/* ---- an operator's action ---- */

cJSON *rec_operator_path(const char *action, const char *fp, const char *said, bool daemon_dead,
			 const struct rec_tap *tap, cJSON *lit)
{
	cJSON *path = cJSON_CreateArray();
	if (!strcmp(action, "leaks") || !strcmp(action, "gc")) {
		/* `bulkhead leaks|gc --state` reads the state directory and the
		 * runtime: no daemon answers it. A finding is a sandbox nothing holds. */
		size_t found = 0, reaped = 0;
		for (const char *l = said; l && *l;) {
			const char *nl = strchr(l, '\n');
			char line[1024];
			snprintf(line, sizeof line, "%.*s",
				 (int)(nl ? (size_t)(nl - l) : strlen(l)), l);
			bool tally = strstr(line, " reaped") != NULL;
			if (*line && strncmp(line, "KIND ", 5) && strncmp(line, "no leaks", 8) &&
			    !tally)
				found++;
			if (tally)
				reaped = (size_t)strtoul(line, NULL, 10);
			l = nl ? nl + 1 : NULL;
		}
		if (!found)
			return path;
		add_hop(lit, SCENARIO_HOP_SANDBOX);
		char gone[256] = "";
		if (daemon_dead)
			snprintf(
				gone, sizeof gone,
				"Gone: the daemon that held %s (killed), so no call can reach %s. ",
				found == 1 ? "it" : "them",
				found == 1 ? "this sandbox" : "these sandboxes");
		if (!strcmp(action, "gc"))
			visit(path, SCENARIO_HOP_SANDBOX, SCENARIO_LEG_DOWN, NULL, NULL,
			      "%sgc, from the state directory with no daemon asked, found %zu and reaped %zu: %s.",
			      gone, found, reaped,
			      reaped == 1
				      ? "the sandbox, its cgroup and its registry row are gone"
				      : "the sandboxes, their cgroups and their registry rows are gone");
		else
			visit(path, SCENARIO_HOP_SANDBOX, SCENARIO_LEG_DOWN, NULL, NULL,
			      "%sLeft: %zu sandbox%s that nothing holds, found from the state directory and the runtime "
			      "(no daemon asked).",
			      gone, found, found == 1 ? "" : "es");
		return path;
	}
	if (!strcmp(action, "restart_daemon")) {
		add_hop(lit, SCENARIO_HOP_DAEMON);
		visit(path, SCENARIO_HOP_DAEMON, SCENARIO_LEG_DOWN, NULL, NULL,
		      "%s, on the same state directory.", said);
		return path;
	}
	if (!strcmp(action, "kill_daemon"))
		return path; /* nothing answers a kill -9: no hop acts */
	/* pause, resume, hibernate, inspect: the operator's client asks the daemon. */
	add_hop(lit, SCENARIO_HOP_DAEMON);
	add_hop(lit, SCENARIO_HOP_SANDBOX);
	const struct rec_exchange *act = NULL, *get = rec_tap_last(tap, "GetSession");
	for (size_t i = 0; i < tap->n; i++)
		if (strcmp(tap->ex[i].procedure, "GetSession"))
			act = &tap->ex[i];
	char words[512];
	snprintf(words, sizeof words,
		 "The operator's %s for the run's session reaches the daemon's operator service.",
		 act ? act->procedure : "GetSession");
	exchange_down(path, SCENARIO_HOP_DAEMON, act ? act : get, words);
	visit(path, SCENARIO_HOP_SANDBOX, SCENARIO_LEG_DOWN, NULL, NULL,
	      "The sandbox as the daemon then saw it: %s", said);
	if (get)
		exchange_up(path, SCENARIO_HOP_DAEMON, get,
			    "The daemon answers the operator (GetSession).");
	return path;
}

/* ---- calls at once on one session ---- */

cJSON *rec_concurrent_path(size_t i, size_t n, const char *code, const struct rec_exchange *x,
			   enum scenario_outcome outcome, const char *msg)
{
	cJSON *path = cJSON_CreateArray();
	cJSON *tool = cJSON_CreateObject();
	cJSON_AddStringToObject(tool, "type", "tool-call");
	cJSON_AddStringToObject(tool, "toolName", "executeCode");
	cJSON *input = cJSON_AddObjectToObject(tool, "input");
	cJSON_AddStringToObject(input, "language", "python");
	cJSON_AddStringToObject(input, "code", code);
	char *tool_json = cJSON_PrintUnformatted(tool);
	cJSON_Delete(tool);
	visit(path, SCENARIO_HOP_MODEL, SCENARIO_LEG_DOWN, "the model's tool call", tool_json,
	      "Call %zu of %zu, %s.", i + 1, n,
	      i ? "sent while the ones before it are still in flight"
		: "sent first; the others follow before it ends");
	free(tool_json);
	visit(path, SCENARIO_HOP_AGENT, SCENARIO_LEG_DOWN, NULL, NULL,
	      "The agent does not wait for the earlier calls: all %zu are for the same session.",
	      n);
	visit(path, SCENARIO_HOP_EXECUTE_CODE, SCENARIO_LEG_DOWN, NULL, NULL,
	      "executeCode took language python and %zu bytes of code.", strlen(code));
	visit(path, SCENARIO_HOP_MANAGER, SCENARIO_LEG_DOWN, NULL, NULL,
	      "Nothing queues them here: the recorder's client sends each SessionRun on the one open session, so "
	      "the daemon's turn rule decides.");
	bool refused = outcome == SCENARIO_REFUSED;
	char words[1024];
	if (refused)
		snprintf(words, sizeof words, "The daemon refused it: %s", msg);
	else if (i == 0)
		snprintf(words, sizeof words,
			 "The daemon took it at once: no other call was on the session yet.");
	else
		snprintf(
			words, sizeof words,
			"The daemon took it on the session, whose turn rule runs one call at a time: it ran once no "
			"other was running.");
	exchange_down(path, SCENARIO_HOP_DAEMON, x, words);
	if (!refused) {
		visit(path, SCENARIO_HOP_SANDBOX, SCENARIO_LEG_DOWN, NULL, NULL,
		      outcome == SCENARIO_ANSWERED
			      ? "The init ran the cell: one cell at a time in the session's interpreter."
			      : "Whether the cell ran is not known: no checked answer came back.");
		exchange_up(
			path, SCENARIO_HOP_DAEMON, x,
			outcome == SCENARIO_ANSWERED
				? "The daemon answers SessionRun with the cell's output and its record."
				: "No checked answer came back.");
	}
	visit(path, SCENARIO_HOP_MANAGER, SCENARIO_LEG_UP, NULL, NULL, "%s",
	      refused ? "The refusal comes back: nothing ran, safe to retry later."
		      : "The answer comes back.");
	visit(path, SCENARIO_HOP_EXECUTE_CODE, SCENARIO_LEG_UP, NULL, NULL,
	      "executeCode returns the %s.",
	      refused                        ? "refusal"
	      : outcome == SCENARIO_ANSWERED ? "answer"
					     : "error");
	visit(path, SCENARIO_HOP_AGENT, SCENARIO_LEG_UP, NULL, NULL,
	      "The agent hands it to the model.");
	visit(path, SCENARIO_HOP_MODEL, SCENARIO_LEG_UP, NULL, NULL, "The model reads %s",
	      refused                        ? "the refusal: the session was busy."
	      : outcome == SCENARIO_ANSWERED ? "the answer."
					     : "the error.");
	return path;
}
