/* remote (issue 17): forensics over the operator API, against a real
 * daemon and real sandboxes — a daemon restarted on a killed one's state
 * directory tells what it left (Leftovers) and the interrupted call with its
 * code (ListIntents), reaps one chosen finding in the operator's name after
 * a dry run that touches nothing (Reap), captures a live session's evidence
 * on its host below --capture-root and refuses any other folder (Capture),
 * and searches the stored code (Search); `bulkhead capture` and `bulkhead
 * search` do the same through it. */
#include "daemon_leftovers.h"
#include "harness.h"
#include "wire_operator.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define OPS "bulkhead.v1.OperatorService/"

static struct daemon d;
static struct dead_daemon dd;
static char root[4300]; /* the daemon's --capture-root */

static void make_root(void)
{
	const char *base = getenv("BULKHEAD_TEST_ROOT");
	snprintf(root, sizeof root, "%s/evidence-XXXXXX", base && *base ? base : "/tmp");
	cr_assert_not_null(mkdtemp(root));
}

static void start_with(const char *tier)
{
	make_root();
	char extra[4500];
	snprintf(extra, sizeof extra, "--capture-root '%s'%s%s", root, tier ? " --tier " : "",
		 tier ? tier : "");
	daemon_start(&d, extra);
}

static void start(void)
{
	start_with(NULL);
}

static void start_container(void)
{
	start_with("container");
}

static void start_kernel(void)
{
	start_with("kernel");
}

/* A shell command whose output does not matter. */
#define SH(...) ((void)harness_sh(__VA_ARGS__))
/* Its output, kept (harness_sh reuses its buffer). */
#define SH_COPY(...) strdup(harness_sh(__VA_ARGS__))

static void stop(void)
{
	daemon_stop(&d);
	memset(&dd, 0, sizeof dd);
	SH("rm -rf '%s' '%s-outside'", root, root);
}

static struct answer *op(const char *method, const char *body)
{
	char path[128];
	snprintf(path, sizeof path, OPS "%s", method);
	return daemon_call(&d, d.op_token, path, body);
}

/* A daemon killed holding a paused sandbox and a running cell, then
 * started again on its directory (keeping what it left). */
static void kill_and_restart(void)
{
	daemon_kill_with_leftovers(&d, &dd);
	char *left = dead_daemon_host(&dd);
	char extra[4500];
	snprintf(extra, sizeof extra, "--capture-root '%s'", root);
	daemon_restart(&d, extra);
	/* Its kernel tier may still be proving (readyz wants one tier): what the
	 * host holds is compared once its probes are gone. */
	dead_daemon_host_back_to(&dd, left);
	free(left);
}

Test(forensics, a_restarted_daemon_tells_what_the_dead_one_left_and_the_interrupted_call_with_its_code,
     .init = start, .fini = stop)
{
	kill_and_restart();
	struct answer *a = op("Leftovers", "{}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_operator_leftovers l;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_leftovers(a->body, a->len, &l, &st), 0, "%s", st.msg);
	cr_assert(l.l.any, "%s", a->body);
	cr_assert_gt(l.l.engine_pid, 0, "%s", a->body);
	cr_assert_eq(l.l.by_kind[BH_LEAK_INTERRUPTED], 1, "%s", a->body);
	cr_assert_geq(l.l.paused, 1, "%s", a->body);
	char line[512];
	bh_leftovers_text(&l.l, line, sizeof line);
	cr_assert_not_null(strstr(line, "1 paused sandbox"), "%s", line);
	answer_free(a);

	char body[256];
	snprintf(body, sizeof body, "{\"session\":\"%s\"}", dd.running_fp);
	a = op("ListIntents", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_operator_intents in;
	cr_assert_eq(wire_operator_decode_intents(a->body, a->len, &in, &st), 0, "%s", st.msg);
	cr_assert_eq(in.n, 1, "%s", a->body);
	cr_assert(in.intents[0].interrupted, "%s", a->body);
	cr_assert_str_eq(in.intents[0].language, "python");
	cr_assert_str_eq(in.intents[0].principal, "runner");
	cr_assert_eq(in.intents[0].code_len, strlen(DEAD_DAEMON_RUNNING_CODE));
	cr_assert_eq(memcmp(in.intents[0].code, DEAD_DAEMON_RUNNING_CODE, in.intents[0].code_len), 0);
	wire_operator_intents_free(&in);
	answer_free(a);

	/* A request with a member the procedure does not take is refused. */
	a = op("ListIntents", "{\"sesion\":\"x\"}");
	cr_assert_eq(a->status, 400, "%s", a->body);
	cr_assert_not_null(strstr(a->body, "\\\"sesion\\\" is not a member"), "%s", a->body);
	answer_free(a);
	/* The agent's token cannot ask. */
	a = daemon_call(&d, d.run_token, OPS "ListIntents", "{}");
	cr_assert_eq(a->status, 403, "%s", a->body);
	answer_free(a);
}

/* The finding of kind on session, from Leaks, as the request's JSON. */
static char *finding_json(const char *kind, const char *session)
{
	struct answer *a = op("Leaks", "{}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	cJSON *o = cJSON_Parse(a->body);
	answer_free(a);
	const cJSON *f;
	cJSON_ArrayForEach(f, cJSON_GetObjectItem(o, "leaks"))
	{
		if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(f, "kind")), kind) &&
		    !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(f, "session")), session)) {
			char *text = cJSON_PrintUnformatted(f);
			cJSON_Delete(o);
			return text;
		}
	}
	cJSON_Delete(o);
	cr_assert_fail("no %s finding of %s", kind, session);
	return NULL;
}

Test(forensics, a_reap_of_one_chosen_finding_previews_touching_nothing_then_reaps_it_alone_by_the_operator,
     .init = start, .fini = stop)
{
	kill_and_restart();
	char *host_before = dead_daemon_host(&dd);
	char *paused = finding_json("abandoned", dd.paused_fp);
	char body[4096];
	snprintf(body, sizeof body, "{\"findings\":[%s],\"dryRun\":true}", paused);
	struct answer *a = op("Reap", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_operator_leaks v;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_reap(a->body, a->len, true, &v, &st), 0, "%s", st.msg);
	cr_assert_eq(v.n, 1, "%s", a->body);
	cr_assert_str_eq(v.leaks[0].sandbox, dd.paused_sandbox);
	wire_operator_leaks_free(&v);
	answer_free(a);
	char *host_dry = dead_daemon_host(&dd);
	cr_assert_str_eq(host_dry, host_before, "the dry run changed the host: before\n%s\nafter\n%s",
			 host_before, host_dry);

	snprintf(body, sizeof body, "{\"findings\":[%s]}", paused);
	a = op("Reap", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	cr_assert_eq(wire_operator_decode_reap(a->body, a->len, false, &v, &st), 0, "%s", st.msg);
	cr_assert_eq(v.n, 1, "%s", a->body);
	wire_operator_leaks_free(&v);
	char rid[80];
	snprintf(rid, sizeof rid, "%s", a->request_id);
	answer_free(a);
	char *host_after = dead_daemon_host(&dd);
	cr_assert_null(strstr(host_after, dd.paused_sandbox), "still there:\n%s", host_after);
	/* The interrupted call was not chosen: still a finding. */
	free(finding_json("interrupted", dd.running_fp));

	/* Its event is the operator's, with the call's request id. */
	a = op("ListEvents", "{\"newest\":true}");
	struct wire_operator_events ev;
	cr_assert_eq(wire_operator_decode_events(a->body, a->len, &ev, &st), 0, "%s", st.msg);
	bool seen = false;
	for (size_t i = 0; i < ev.n; i++)
		if (!strcmp(ev.events[i].kind, "leak_reaped") &&
		    !strcmp(ev.events[i].sandbox, dd.paused_sandbox)) {
			cr_assert_str_eq(ev.events[i].actor, "watcher");
			cr_assert_str_eq(ev.events[i].request_id, rid);
			seen = true;
		}
	cr_assert(seen, "no leak_reaped event: %s", a->body);
	wire_operator_events_free(&ev);
	answer_free(a);

	/* No finding named: Gc is the reap of everything, not this. */
	a = op("Reap", "{\"findings\":[]}");
	cr_assert_eq(a->status, 400, "%s", a->body);
	answer_free(a);
	free(paused), free(host_before), free(host_dry), free(host_after);
}

/* One session with a cell that left a file in /work: its fingerprint. */
static void session_with_a_file(struct daemon_session *s)
{
	daemon_open_session(&d, s);
	struct answer *a = daemon_cell(&d, d.run_token, s->id, "python",
				       "open('/work/notes.txt','w').write('the plan'); "
				       "print(open('/etc/passwd').read()[:4])");
	cr_assert_eq(a->status, 200, "%s", a->body);
	answer_free(a);
}

static void captures_a_live_session_with_what_its_init_answers(void)
{
	struct daemon_session s;
	session_with_a_file(&s);
	char dir[4400], body[9000];
	snprintf(dir, sizeof dir, "%s/case-1", root);
	snprintf(body, sizeof body, "{\"target\":\"%s\",\"dir\":\"%s\",\"files\":[\"notes.txt\"]}",
		 s.fp, dir);
	struct answer *a = op("Capture", body);
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_operator_captured c;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_captured(a->body, a->len, &c, &st), 0, "%s", st.msg);
	cr_assert_str_eq(c.dir, dir);
	cr_assert_str_eq(c.target.fingerprint, s.fp);
	cr_assert(c.target.held);
	answer_free(a);
	/* The init answered: its processes, the listing, the picked file. */
	char *listing = SH_COPY("cat '%s/work-listing.txt'", dir);
	cr_assert_not_null(strstr(listing, "notes.txt"), "%s", listing);
	free(listing);
	char *names = SH_COPY("ls '%s'", dir);
	cr_assert_not_null(strstr(names, "processes-init.txt"), "%s", names);
	cr_assert_not_null(strstr(names, "work-00-notes.txt"), "%s", names);
	free(names);
	char *kept = SH_COPY("cat '%s/work-00-notes.txt'", dir);
	cr_assert_str_eq(kept, "the plan");
	free(kept);
	char *manifest = SH_COPY("cat '%s/MANIFEST'", dir);
	cr_assert_null(strstr(manifest, "processes-init.txt, work-listing.txt:"), "%s", manifest);
	free(manifest);
	char *verify = SH_COPY("'%s' capture --verify '%s' 2>&1", BH_TEST_CLI, dir);
	cr_assert_not_null(strstr(verify, "verifies"), "%s", verify);
	cr_assert_not_null(strstr(verify, c.manifest_sha256), "%s", verify);
	free(verify);
	wire_operator_captured_free(&c);
}

Test(forensics, capture_of_a_live_container_session_keeps_what_its_init_answers_and_verifies,
     .init = start_container, .fini = stop)
{
	captures_a_live_session_with_what_its_init_answers();
	/* The container tier's sockets are read from the host. */
	char *names = SH_COPY("ls '%s/case-1'", root);
	cr_assert_not_null(strstr(names, "net-tcp.txt"), "%s", names);
	free(names);
}

Test(forensics, capture_of_a_live_kernel_session_keeps_what_its_init_answers_and_verifies,
     .init = start_kernel, .fini = stop)
{
	captures_a_live_session_with_what_its_init_answers();
	/* gVisor's sockets are not the host's to read: the MANIFEST says so. */
	char *manifest = SH_COPY("cat '%s/case-1/MANIFEST'", root);
	cr_assert_not_null(strstr(manifest, "gVisor's netstack"), "%s", manifest);
	free(manifest);
}

static void refused(const char *body, long status, const char *says)
{
	struct answer *a = op("Capture", body);
	cr_assert_eq(a->status, status, "%s -> %s", body, a->body);
	cr_assert_not_null(strstr(a->body, says), "%s -> %s", body, a->body);
	answer_free(a);
}

Test(forensics, capture_refuses_a_relative_folder_one_outside_its_root_a_link_out_and_a_full_one,
     .init = start, .fini = stop)
{
	struct daemon_session s;
	session_with_a_file(&s);
	char body[9000];
	snprintf(body, sizeof body, "{\"target\":\"%s\",\"dir\":\"case\"}", s.fp);
	refused(body, 400, "absolute path");
	snprintf(body, sizeof body, "{\"target\":\"%s\",\"dir\":\"%s/../escape\"}", s.fp, root);
	refused(body, 400, "'..' part");
	char outside[4400];
	snprintf(outside, sizeof outside, "%s-outside", root);
	cr_assert_eq(mkdir(outside, 0700), 0);
	snprintf(body, sizeof body, "{\"target\":\"%s\",\"dir\":\"%s/case\"}", s.fp, outside);
	refused(body, 403, "not below this daemon's capture root");
	/* A link inside the root to a folder outside it is followed, then refused. */
	SH("ln -s '%s' '%s/out'", outside, root);
	snprintf(body, sizeof body, "{\"target\":\"%s\",\"dir\":\"%s/out/case\"}", s.fp, root);
	refused(body, 403, "not below this daemon's capture root");
	SH("mkdir '%s/full' && echo old > '%s/full/x'", root, root);
	snprintf(body, sizeof body, "{\"target\":\"%s\",\"dir\":\"%s/full\"}", s.fp, root);
	refused(body, 400, "not empty");
	snprintf(body, sizeof body, "{\"target\":\"%s\",\"dir\":\"%s/c\",\"files\":[\"/etc/shadow\"]}",
		 s.fp, root);
	refused(body, 400, "is absolute");
	char *left = SH_COPY("ls -A '%s'; cat '%s/full/x'", outside, root);
	cr_assert_str_eq(left, "old\n", "something was written outside the root: %s", left);
	free(left);
}

Test(forensics, a_daemon_without_a_capture_root_takes_no_capture, .fini = stop)
{
	make_root();
	daemon_start(&d, NULL);
	struct daemon_session s;
	daemon_open_session(&d, &s);
	char body[9000];
	snprintf(body, sizeof body, "{\"target\":\"%s\",\"dir\":\"%s/case\"}", s.fp, root);
	refused(body, 403, "no capture root: serve --capture-root DIR");
}

Test(forensics, search_finds_the_cell_that_read_etc_passwd_and_refuses_an_empty_query, .init = start,
     .fini = stop)
{
	struct daemon_session s;
	session_with_a_file(&s);
	struct answer *a = op("Search", "{\"query\":\"code:/etc/passwd\"}");
	cr_assert_eq(a->status, 200, "%s", a->body);
	struct wire_operator_hits h;
	struct wire_status st;
	cr_assert_eq(wire_operator_decode_hits(a->body, a->len, &h, &st), 0, "%s", st.msg);
	cr_assert_eq(h.n, 1, "%s", a->body);
	cr_assert_str_eq(h.hits[0].session, s.fp);
	cr_assert_str_eq(h.hits[0].stream, "code");
	cr_assert_eq(h.hits[0].sequence, 1);
	cr_assert_eq(memcmp(h.hits[0].snippet + h.hits[0].match_at, "/etc/passwd", 11), 0);
	wire_operator_hits_free(&h);
	answer_free(a);
	a = op("Search", "{\"query\":\"stdout:\"}");
	cr_assert_eq(a->status, 400, "%s", a->body);
	cr_assert_not_null(strstr(a->body, "what text?"), "%s", a->body);
	answer_free(a);
}

static char *cli(int *status, const char *args)
{
	char *out = SH_COPY("BULKHEAD_TOKEN='%s' '%s' %s 2>&1; echo \"exit $?\"", d.op_token,
			       BH_TEST_CLI, args);
	char *e = strrchr(out, 'e');
	*status = e && !strncmp(e, "exit ", 5) ? atoi(e + 5) : -1;
	return out;
}

Test(forensics, bulkhead_capture_and_search_beside_a_live_daemon_go_through_it, .init = start,
     .fini = stop)
{
	struct daemon_session s;
	session_with_a_file(&s);
	int status;
	char args[9000];
	/* Named with --attach. */
	snprintf(args, sizeof args, "capture --attach '%s' %.12s --out '%s/by-name' --file notes.txt",
		 d.sock, s.fp, root);
	char *out = cli(&status, args);
	cr_assert_eq(status, 0, "%s", out);
	cr_assert_not_null(strstr(out, "by the daemon"), "%s", out);
	free(out);
	char *kept = SH_COPY("cat '%s/by-name/work-00-notes.txt'", root);
	cr_assert_str_eq(kept, "the plan");
	free(kept);
	/* Found as the daemon holding the state directory (its lock). */
	snprintf(args, sizeof args, "capture --state '%s/state' %.12s --out '%s/by-state'", d.dir, s.fp,
		 root);
	out = cli(&status, args);
	cr_assert_eq(status, 0, "%s", out);
	cr_assert_not_null(strstr(out, "by the daemon"), "%s", out);
	free(out);
	snprintf(args, sizeof args, "capture --verify '%s/by-state'", root);
	out = cli(&status, args);
	cr_assert_eq(status, 0, "%s", out);
	free(out);

	snprintf(args, sizeof args, "search --attach '%s' code:/etc/passwd", d.sock);
	out = cli(&status, args);
	cr_assert_eq(status, 0, "%s", out);
	char fp12[13];
	snprintf(fp12, sizeof fp12, "%.12s", s.fp);
	cr_assert_not_null(strstr(out, fp12), "%s", out);
	cr_assert_not_null(strstr(out, ">>/etc/passwd<<"), "%s", out);
	free(out);
}
