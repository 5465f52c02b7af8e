/* bulkhead follow SESSION [--once] [--attach SOCKET|URL] [--token-file FILE]
 * [--state DIR]: the running cell's output as it arrives (`tail -f` for a
 * sandbox), then each next cell's, until interrupted; --once ends after the
 * current cell (or the next one, when none runs). SESSION is a fingerprint
 * or a prefix of one that names a single session (as `ls` shows them). Live
 * sessions belong to the daemon that runs them, so follow asks it (named
 * with --attach, or found holding the state directory) through FollowCell's
 * long poll. The cell's stdout goes to stdout and its stderr to stderr,
 * escaped on a terminal as all cell output is (cli_out.h); what follow says
 * itself (a cell starting, ending) goes to stderr. */
#include "cli.h"
#include "cli_out.h"

#include <string.h>

/* How long one FollowCell waits before asking again (with nothing new). */
#define FOLLOW_WAIT_MS 10000u

/* The one session whose fingerprint starts with prefix. */
static int resolve(bh_client *c, const char *prefix, char fp[65])
{
	struct wire_operator_sessions list;
	struct bh_client_error *err = NULL;
	size_t len = strlen(prefix);
	if (len == 0 || len > 64 || strspn(prefix, "0123456789abcdef") != len) {
		cli_error("follow: SESSION is a session's fingerprint, or the start of one (hex "
			  "digits, as `bulkhead ls` shows)");
		return -1;
	}
	if (bh_client_list_sessions(c, NULL, &list, &err) < 0) {
		cli_client_error(err);
		bh_client_error_free(err);
		return -1;
	}
	size_t found = 0;
	for (size_t i = 0; i < list.n; i++)
		if (!strncmp(list.sessions[i].fingerprint, prefix, len) && found++ == 0)
			snprintf(fp, 65, "%s", list.sessions[i].fingerprint);
	wire_operator_sessions_free(&list);
	if (found == 1)
		return 0;
	if (found)
		cli_error("follow: %zu sessions start with %s; give more of the fingerprint", found,
			  cli_out_field(stderr, prefix));
	else
		cli_error("follow: no session of the daemon starts with %s",
			  cli_out_field(stderr, prefix));
	return -1;
}

/* "" while live; else why it ended (the session's end reason). */
static int ended(bh_client *c, const char *fp, char *why, size_t n)
{
	struct wire_operator_session s;
	struct bh_client_error *err = NULL;
	if (bh_client_get_session(c, fp, &s, &err) < 0) {
		snprintf(why, n, "%s", err && err->message ? err->message : "gone");
		bh_client_error_free(err);
		return 1;
	}
	snprintf(why, n, "%s", s.end_reason);
	wire_operator_session_free(&s);
	return *why != '\0';
}

static void said(const struct wire_operator_follow *f, bool begun)
{
	if (!begun)
		fprintf(stderr, "bulkhead: cell %llu (%s) %s\n", (unsigned long long)f->sequence,
			cli_out_field(stderr, f->language), f->running ? "running" : "ran");
	if (f->out_len) {
		cli_out_cell(stdout, f->out, f->out_len);
		fflush(stdout);
	}
	if (f->err_len)
		cli_out_cell(stderr, f->err, f->err_len);
	if (!f->done)
		return;
	if (f->answered)
		fprintf(stderr, "bulkhead: cell %llu ended: exit %d%s%s%s, record %.16s\n",
			(unsigned long long)f->sequence, f->exit_code, f->timed_out ? ", timed out" : "",
			f->stdout_truncated ? ", stdout truncated" : "",
			f->stderr_truncated ? ", stderr truncated" : "",
			cli_out_field(stderr, f->record_sha256));
	else
		fprintf(stderr, "bulkhead: cell %llu ended without an answer\n",
			(unsigned long long)f->sequence);
}

static int follow(bh_client *c, const char *fp, bool once)
{
	struct bh_client_follow_cursor cur = {0};
	uint64_t begun = 0; /* the cell whose start was said */
	bool first = true;
	for (;;) {
		struct wire_operator_follow f;
		struct bh_client_error *err = NULL;
		if (bh_client_follow_cell(c, fp, &cur, first ? 0 : FOLLOW_WAIT_MS, &f, &err) < 0) {
			cli_client_error(err);
			bh_client_error_free(err);
			return CLI_EXIT_BULKHEAD;
		}
		bool news = f.sequence >= cur.sequence && f.sequence &&
			    (f.sequence != cur.sequence || f.out_len || f.err_len || f.done);
		if (first && f.sequence && !f.running) {
			/* The latest cell ended before we came: wait for the next. */
			fprintf(stderr, "bulkhead: following session %.12s; no cell is running, "
					"waiting for the next\n", fp);
			cur = (struct bh_client_follow_cursor){.sequence = f.sequence + 1};
			news = false;
		} else if (first && !f.sequence) {
			fprintf(stderr, "bulkhead: following session %.12s; no cell yet\n", fp);
			cur = (struct bh_client_follow_cursor){.sequence = 1};
		}
		first = false;
		if (news) {
			said(&f, begun == f.sequence);
			begun = f.sequence;
			bh_client_follow_advance(&cur, &f);
		}
		bool done = news && f.done;
		wire_operator_follow_free(&f);
		if (done && once)
			return 0;
		char why[256];
		if (!news && ended(c, fp, why, sizeof why)) {
			fprintf(stderr, "bulkhead: session %.12s ended: %s\n", fp,
				cli_out_field(stderr, why));
			return 0;
		}
	}
}

static const char usage[] =
	"usage: bulkhead follow SESSION [--once] [--state DIR] [-v]\n"
	CLI_ATTACH_SYNOPSIS("                       ")
	"\n"
	"The running cell's output as it arrives, then each next cell's, until\n"
	"interrupted. SESSION is a fingerprint or the start of one (bulkhead ls); the\n"
	"daemon running it is asked (--attach, else the one holding the state directory).\n"
	"  --once              end after the current cell (or the next, when none runs)\n"
	CLI_HELP_COMMON CLI_HELP_ATTACH;

int cmd_follow(int argc, char **argv)
{
	if (cli_wants_help(argc, argv))
		return cli_help(usage);
	struct cli_common c = {0};
	struct cli_attach at = {0};
	const char *session = NULL;
	bool once = false;
	for (int i = 1; i < argc; i++) {
		int r = cli_shared_opt(&c, &at, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		if (!strcmp(argv[i], "--once")) {
			once = true;
		} else if (argv[i][0] != '-' && !session) {
			session = argv[i];
		} else {
			return cli_usage_error(usage, "follow: unknown argument \"%s\"", argv[i]);
		}
	}
	if (!session) {
		cli_error("follow: name the session (its fingerprint, or the start of it: bulkhead ls)");
		return CLI_EXIT_USAGE;
	}
	bh_client *client = NULL;
	if (cli_attach(&at, &c, CLI_ATTACH_AUTO, &client) < 0)
		return CLI_EXIT_BULKHEAD;
	if (!client) {
		cli_error("follow: no daemon holds the state directory: a live session belongs to the "
			  "daemon that runs it; attach to it with --attach SOCKET");
		return CLI_EXIT_BULKHEAD;
	}
	char fp[65];
	int rc = resolve(client, session, fp) < 0 ? CLI_EXIT_BULKHEAD : follow(client, fp, once);
	bh_client_free(client);
	return rc;
}
