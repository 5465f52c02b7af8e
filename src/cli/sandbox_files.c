#include "sandbox_files.h"

#include <string.h>

static bool prefix_of(const char *prefix, const char *fp)
{
	return *prefix && !strncmp(fp, prefix, strlen(prefix));
}

static int not_found(const char *cmd, const char *session, size_t matches, bool attached)
{
	if (matches > 1)
		cli_error("%s: %zu sessions start with \"%s\": give more of the fingerprint", cmd,
			  matches, session);
	else if (attached)
		cli_error("%s: the daemon holds no session \"%s\" (bulkhead ls lists them)", cmd,
			  session);
	else
		cli_error("%s: no session \"%s\" here: an engine of this process holds only the "
			  "hibernated sessions a previous engine left; a daemon's live sessions are "
			  "reached with --attach SOCKET",
			  cmd, session);
	return CLI_EXIT_BULKHEAD;
}

static int open_attached(struct sandbox_files *x, const char *session, const char *cmd)
{
	if (strlen(session) == 64) {
		snprintf(x->fp, sizeof x->fp, "%s", session);
		return 0;
	}
	struct wire_operator_sessions list;
	struct bh_client_error *err = NULL;
	if (bh_client_list_sessions(x->client, NULL, &list, &err) < 0) {
		cli_client_error(err);
		bh_client_error_free(err);
		return CLI_EXIT_BULKHEAD;
	}
	size_t matches = 0;
	for (size_t i = 0; i < list.n; i++)
		if (prefix_of(session, list.sessions[i].fingerprint) && ++matches == 1)
			snprintf(x->fp, sizeof x->fp, "%s", list.sessions[i].fingerprint);
	wire_operator_sessions_free(&list);
	return matches == 1 ? 0 : not_found(cmd, session, matches, true);
}

static int open_embedded(struct sandbox_files *x, const struct cli_common *c, const char *session,
			 const char *cmd)
{
	/* Looking at a session's files must not end it: at close the engine
	 * puts it back to disk, as it found it. */
	struct bh_config cfg;
	bh_error *err = NULL;
	if (cli_engine_config(c, &cfg) < 0)
		return CLI_EXIT_BULKHEAD;
	cfg.prove_tiers = c->prove_tiers;
	cfg.policy.shutdown_hibernate = true;
	if (bh_engine_open(&cfg, &x->e, &err) < 0) {
		cli_error("%s: %s", cmd, err->msg);
		bh_error_free(err);
		return CLI_EXIT_BULKHEAD;
	}
	if (cli_wait_proven(x->e) < 0)
		return CLI_EXIT_BULKHEAD;
	bh_session **list = NULL;
	size_t n = bh_engine_sessions(x->e, &list), matches = 0;
	for (size_t i = 0; i < n; i++)
		if (prefix_of(session, bh_session_fingerprint(list[i])) && ++matches == 1)
			x->s = list[i];
	free(list);
	if (matches != 1)
		return not_found(cmd, session, matches, false);
	snprintf(x->fp, sizeof x->fp, "%s", bh_session_fingerprint(x->s));
	return 0;
}

int sandbox_files_open(struct sandbox_files *x, const struct cli_common *c,
		       const struct cli_attach *at, const char *session, const char *cmd)
{
	memset(x, 0, sizeof *x);
	if (cli_attach(at, c, CLI_ATTACH_AUTO, &x->client) < 0)
		return CLI_EXIT_BULKHEAD;
	return x->client ? open_attached(x, session, cmd) : open_embedded(x, c, session, cmd);
}

static int client_failed(struct bh_client_error *err, char **why)
{
	*why = xstrdup(err ? err->message : "the call failed");
	bh_client_error_free(err);
	return -1;
}

/* ---- embedded: the engine's callbacks, copied into the API's shape ---- */

struct wait {
	bool done;
	char *why;
	struct wire_operator_files *files;
	struct wire_operator_file *file;
};

static void on_list(void *arg, const struct bh_file_entry *entries, size_t n, bool more,
		    const bh_error *err)
{
	struct wait *w = arg;
	w->done = true;
	if (err) {
		w->why = xstrdup(err->msg);
		return;
	}
	struct bh_file_entry *copy = xzalloc((n + 1) * sizeof *copy);
	for (size_t i = 0; i < n; i++) {
		copy[i] = entries[i];
		copy[i].name = xstrdup(entries[i].name);
		copy[i].target = xstrdup(entries[i].target ? entries[i].target : "");
	}
	*w->files = (struct wire_operator_files){.entries = copy, .n = n, .more = more};
}

static void on_read(void *arg, const uint8_t *data, size_t len, uint64_t size, bool truncated,
		    const bh_error *err)
{
	struct wait *w = arg;
	w->done = true;
	if (err) {
		w->why = xstrdup(err->msg);
		return;
	}
	uint8_t *copy = xzalloc(len + 1);
	if (len)
		memcpy(copy, data, len);
	*w->file = (struct wire_operator_file){.content = copy, .len = len, .size = size,
					       .truncated = truncated};
}

static int wait_engine(struct sandbox_files *x, struct wait *w, int rc, bh_error *err, char **why)
{
	if (rc < 0) {
		*why = xstrdup(err ? err->msg : "the call failed");
		bh_error_free(err);
		return -1;
	}
	if (bh_engine_wait(x->e, &w->done, 120000, &err) < 0) {
		*why = xstrdup(err ? err->msg : "no answer");
		bh_error_free(err);
		return -1;
	}
	if (w->why) {
		*why = w->why;
		return -1;
	}
	return 0;
}

int sandbox_files_list(struct sandbox_files *x, const char *path, struct wire_operator_files *out,
		       char **why)
{
	memset(out, 0, sizeof *out);
	if (x->client) {
		struct bh_client_error *err = NULL;
		return bh_client_list_files(x->client, x->fp, path, out, &err) < 0
			       ? client_failed(err, why)
			       : 0;
	}
	struct wait w = {.files = out};
	bh_error *err = NULL;
	int rc = bh_session_list_files(x->s, path, on_list, &w, &err);
	return wait_engine(x, &w, rc, err, why);
}

int sandbox_files_read(struct sandbox_files *x, const char *path, uint32_t max,
		       struct wire_operator_file *out, char **why)
{
	memset(out, 0, sizeof *out);
	if (x->client) {
		struct bh_client_error *err = NULL;
		return bh_client_read_file(x->client, x->fp, path, max, out, &err) < 0
			       ? client_failed(err, why)
			       : 0;
	}
	struct wait w = {.file = out};
	bh_error *err = NULL;
	int rc = bh_session_read_file(x->s, path, max, on_read, &w, &err);
	return wait_engine(x, &w, rc, err, why);
}

void sandbox_files_close(struct sandbox_files *x)
{
	if (x->client)
		bh_client_free(x->client);
	if (x->e)
		bh_engine_close(x->e);
	memset(x, 0, sizeof *x);
}
