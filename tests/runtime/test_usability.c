/* What a new operator meets first: a state directory the sandboxes cannot
 * reach, the first proof of the tiers, a warning that meant nothing, and a
 * leak finding that named a live session's image. Each case as the operator
 * types it, or as the console's leaks view sees it. */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *test_root(void)
{
	const char *r = getenv("BULKHEAD_TEST_ROOT");
	return r && *r ? r : "/tmp/bulkhead-tests";
}

/* ---- a state directory below a directory the sandboxes cannot pass ---- */

static char closed_parent[512];

static void closed_parent_setup(void)
{
	mkdir(test_root(), 0711);
	/* What `mktemp -d` makes: a directory only its owner may enter. */
	snprintf(closed_parent, sizeof closed_parent, "%s/cli-XXXXXX", test_root());
	cr_assert_not_null(mkdtemp(closed_parent));
	cr_assert_eq(chmod(closed_parent, 0700), 0);
}

static void closed_parent_teardown(void)
{
	char out[256];
	harness_sh_into(out, sizeof out, "rm -rf '%s'", closed_parent);
}

Test(usability, every_command_refuses_a_state_directory_below_an_untraversable_parent_naming_it,
     .init = closed_parent_setup, .fini = closed_parent_teardown)
{
	char script[700];
	snprintf(script, sizeof script, "%s/script", closed_parent);
	FILE *f = fopen(script, "w");
	cr_assert_not_null(f);
	fputs(":quit\n", f);
	fclose(f);
	/* The daemon is given 20 s: before the check it listened and stayed
	 * "not ready" forever, and `timeout` ended it (status 124). */
	const char *const commands[] = {
		"doctor",
		"run --tier container 'print(1)'",
		"shell --no-attach </dev/null",
		"timeout 20 %s serve --open --socket '%s/sock'",
		"console --script '%s/script'",
	};
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		char cmd[1024], line[2048];
		const char *c = commands[i];
		if (!strncmp(c, "timeout", 7))
			snprintf(line, sizeof line, c, BH_TEST_CLI, closed_parent);
		else if (strstr(c, "%s"))
			snprintf(cmd, sizeof cmd, c, closed_parent),
				snprintf(line, sizeof line, "%s %s", BH_TEST_CLI, cmd);
		else
			snprintf(line, sizeof line, "%s %s", BH_TEST_CLI, c);
		static char out[16384];
		int rc = harness_sh_into(out, sizeof out, "BULKHEAD_INTERP='%s' %s --state '%s/state' 2>&1",
			    BH_TEST_INTERP, line, closed_parent);
		cr_assert(rc != 0 && rc != 124, "`%s` went on (status %d): %s", line, rc, out);
		char want[700];
		snprintf(want, sizeof want, "%s (mode 0700", closed_parent);
		cr_assert_not_null(strstr(out, want), "`%s` does not name the parent and its mode: %s",
				   line, out);
		snprintf(want, sizeof want, "chmod o+x %s", closed_parent);
		cr_assert_not_null(strstr(out, want), "`%s` does not say the fix: %s", line, out);
		cr_assert_null(strstr(out, "smoke test"), "`%s` tried a proof first: %s", line, out);
	}
	/* Nothing was created below the parent it refused. */
	char state[600];
	snprintf(state, sizeof state, "%s/state", closed_parent);
	struct stat st;
	cr_assert_neq(stat(state, &st), 0, "the refused state directory was created");
	/* With the fix the message names, the same directory works. */
	cr_assert_eq(chmod(closed_parent, 0711), 0);
	static char out[16384];
	int rc = harness_sh_into(out, sizeof out, "BULKHEAD_INTERP='%s' %s run --tier container --state '%s' 'print(6*7)' 2>&1",
		    BH_TEST_INTERP, BH_TEST_CLI, state);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_eq(strncmp(out, "42\n", 3), 0, "%s", out);
}

/* ---- leak findings never name what a live session holds ---- */

static struct harness h;
static void close_harness(void) { harness_close(&h); }

static void on_action(void *arg, const bh_error *err)
{
	(void)err;
	*(bool *)arg = true;
}

static void act(bh_session *s, int (*fn)(bh_session *, bh_action_cb, void *, bh_error **),
		const char *what)
{
	bool done = false;
	bh_error *err = NULL;
	cr_assert_eq(fn(s, on_action, &done, &err), 0, "%s: %s", what, err ? err->msg : "");
	cr_assert_eq(bh_engine_wait(h.e, &done, 60000, &err), 0, "%s: %s", what, err ? err->msg : "");
}

static char *python_out(bh_session *s, const char *code)
{
	struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON, code, 0);
	cr_assert(o->answered, "%s: %s\n%s", code, o->err_msg ? o->err_msg : "", h.log);
	cr_assert_eq(o->r.exit_code, 0, "%s: %s", code, o->errout);
	char *out = strdup(o->out);
	cell_outcome_free(o);
	return out;
}

/* Every finding, one per line, for an assertion message. */
static char *findings_text(const struct bh_leak *l, size_t n)
{
	static char text[8192];
	text[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t at = strlen(text);
		snprintf(text + at, sizeof text - at, "%s %s: %s (%s)\n", bh_leak_kind_name(l[i].kind),
			 l[i].sandbox, l[i].reason, l[i].holder);
	}
	return text;
}

static void assert_no_findings(const char *when)
{
	struct bh_leak *l = NULL;
	size_t n = bh_engine_leaks(h.e, &l);
	cr_assert_eq(n, 0, "%s, leaks finds: %s", when, findings_text(l, n));
	free(l);
}

Test(usability, a_restored_kernel_session_is_no_leak_and_reaping_everything_leaves_it_working,
     .fini = close_harness)
{
	harness_open(&h, NULL);
	harness_require_tier(&h, BH_TIER_KERNEL);
	bh_session *s = harness_session(&h, BH_TIER_KERNEL, 1u << BH_LANG_PYTHON);
	free(python_out(s, "x = 41"));
	act(s, bh_session_pause, "pause");
	act(s, bh_session_hibernate, "hibernate");
	assert_no_findings("hibernated");
	char *out = python_out(s, "x + 1");
	cr_assert_str_eq(out, "42\n", "the restore lost the state");
	free(out);
	/* The image was restored from and nothing will restore it again: its
	 * disk goes back at once (and out of the images budget's view). */
	struct bh_session_info info;
	bh_session_get_info(s, &info);
	char image[4600];
	snprintf(image, sizeof image, "%s/images/%s", h.state_dir, info.sandbox);
	struct stat st;
	cr_assert_neq(stat(image, &st), 0, "the restored session's image %s is still on disk", image);
	assert_no_findings("restored and ready");
	struct bh_leak *l = NULL;
	size_t n = bh_engine_gc(h.e, &l);
	cr_assert_eq(n, 0, "gc reaped: %s", findings_text(l, n));
	free(l);
	out = python_out(s, "x + 2");
	cr_assert_str_eq(out, "43\n", "the session does not answer after gc");
	free(out);
	/* It hibernates and restores again, as often as it idles. */
	act(s, bh_session_hibernate, "hibernate again");
	out = python_out(s, "x + 3");
	cr_assert_str_eq(out, "44\n");
	free(out);
	assert_no_findings("restored twice");
}

/* The same rule for a state directory whose engine is gone: a hibernated
 * session's image is what the next engine restores it from. */
Test(usability, leaks_on_a_stopped_engines_directory_does_not_name_a_hibernated_sessions_image,
     .fini = close_harness)
{
	struct bh_policy p = {.shutdown_hibernate = true};
	harness_open_policy(&h, &p);
	harness_require_tier(&h, BH_TIER_KERNEL);
	bh_session *s = harness_session(&h, BH_TIER_KERNEL, 1u << BH_LANG_PYTHON);
	free(python_out(s, "x = 7"));
	char id[40];
	snprintf(id, sizeof id, "%s", bh_session_id(s));
	bh_engine_close(h.e); /* hibernates it */
	h.e = NULL;
	static char out[16384];
	int rc = harness_cli(&h, out, sizeof out, "leaks --no-attach");
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_null(strstr(out, "stale-image"), "a hibernated session's image is a finding: %s", out);
	rc = harness_cli(&h, out, sizeof out, "gc --dry-run --no-attach");
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_null(strstr(out, "stale-image"), "gc would reap a hibernated session's image: %s",
		       out);
	/* And the next engine still continues the session from it. */
	h.policy = (struct bh_policy){0};
	harness_open_at(&h, h.state_dir, NULL);
	bh_session *again = bh_engine_find_session(h.e, id, "test");
	cr_assert_not_null(again, "not re-adopted\n%s", h.log);
	char *o = python_out(again, "x * 6");
	cr_assert_str_eq(o, "42\n");
	free(o);
}

/* The other side of the same rule: what no session holds is found, on both
 * runtimes. A runsc container planted under the engine's root (as a dead
 * engine would leave one) is an orphan, and gc deletes it. */
Test(usability, a_runsc_container_no_session_holds_is_found_and_reaped, .fini = close_harness)
{
	harness_open(&h, NULL);
	harness_require_tier(&h, BH_TIER_KERNEL);
	const char *root = bh_engine_runtime_root(h.e, BH_TIER_KERNEL);
	char bundle[4200];
	snprintf(bundle, sizeof bundle, "%s-orphan", h.state_dir);
	char *r = harness_sh(
		"mkdir -p '%s' && cd '%s' && runsc spec -- /usr/bin/sleep 600 && python3 -c \""
		"import json; c = json.load(open('config.json')); "
		"c['root'] = {'path': '%s/rootfs', 'readonly': True}; c['process']['terminal'] = False; "
		"c['mounts'].append({'destination': '/usr', 'type': 'bind', 'source': '/usr', "
		"'options': ['rbind', 'ro']}); json.dump(c, open('config.json', 'w'))\" && "
		"runsc --root '%s' --network=none run --bundle . -detach bh-orphan </dev/null "
		">/dev/null 2>err && echo started || cat err",
		bundle, bundle, h.state_dir, root);
	cr_assert_str_eq(r, "started\n", "could not plant the orphan: %s", r);
	struct bh_leak *l = NULL;
	size_t n = bh_engine_leaks(h.e, &l);
	bool found = false;
	for (size_t i = 0; i < n; i++)
		found |= l[i].kind == BH_LEAK_ORPHAN && !strcmp(l[i].sandbox, "bh-orphan") &&
			 !strcmp(l[i].runtime, "runsc");
	char *text = findings_text(l, n);
	free(l);
	if (!found) /* leave nothing behind for the next test */
		harness_sh("runsc --root '%s' kill bh-orphan KILL; runsc --root '%s' delete -force "
			   "bh-orphan; rm -rf '%s'",
			   root, root, bundle);
	cr_assert(found, "the runsc orphan is not a finding: %s", text);
	n = bh_engine_gc(h.e, &l);
	free(l);
	r = harness_sh("runsc --root '%s' list --quiet; rm -rf '%s'", root, bundle);
	cr_assert_str_empty(r, "gc left it running: %s", r);
}

/* ---- a warning means something, or it is not printed ---- */

static char fresh[512];

static void fresh_setup(void)
{
	mkdir(test_root(), 0711);
	snprintf(fresh, sizeof fresh, "%s/cli-XXXXXX", test_root());
	cr_assert_not_null(mkdtemp(fresh));
	chmod(fresh, 0711);
}

static void fresh_teardown(void)
{
	char out[256];
	harness_sh_into(out, sizeof out, "rm -rf '%s'", fresh);
}

/* On a new state directory (its own evidence cache, so every proof runs),
 * one tier after the other: neither command warns, both run on their tier.
 * The first used to cut the kernel tier's proof short as it closed and warn
 * "smoke test could not run ... closed before it was ready". */
Test(usability, run_on_one_tier_then_the_other_warns_of_nothing, .init = fresh_setup,
     .fini = fresh_teardown)
{
	const char *const tiers[] = {"container", "kernel", "container"};
	for (size_t i = 0; i < sizeof tiers / sizeof tiers[0]; i++) {
		static char out[16384];
		int rc = harness_sh_into(out, sizeof out,
			    "env -u BULKHEAD_EVIDENCE BULKHEAD_INTERP='%s' %s run --state '%s/state' "
			    "--tier %s 'print(%zu)' 2>&1",
			    BH_TEST_INTERP, BH_TEST_CLI, fresh, tiers[i], i);
		cr_assert_eq(rc, 0, "run --tier %s: %s", tiers[i], out);
		char want[64];
		snprintf(want, sizeof want, "%zu\n", i);
		cr_assert_eq(strncmp(out, want, strlen(want)), 0, "run --tier %s: %s", tiers[i], out);
		snprintf(want, sizeof want, "tier=%s ", tiers[i]);
		cr_assert_not_null(strstr(out, want), "run --tier %s: %s", tiers[i], out);
		cr_assert_null(strstr(out, "warning"), "run --tier %s warned: %s", tiers[i], out);
		cr_assert_null(strstr(out, "smoke test"), "run --tier %s: %s", tiers[i], out);
	}
	/* What each proved stays proven: doctor re-proves and offers both. */
	static char out[65536];
	int rc = harness_sh_into(out, sizeof out, "env -u BULKHEAD_EVIDENCE BULKHEAD_INTERP='%s' %s doctor --state '%s/state' 2>&1",
		    BH_TEST_INTERP, BH_TEST_CLI, fresh);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert_not_null(strstr(out, "kernel    offered"), "%s", out);
}

/* ---- the first proof: what it waits for, and who need not wait ---- */

static void keep_log(void *arg, enum bh_log_level level, const char *msg)
{
	(void)level;
	char *log = arg;
	size_t used = strlen(log);
	snprintf(log + used, 65536 - used, "%s\n", msg);
}

static char proof_log[65536];

/* An engine on a new state directory that proves both tiers itself (its
 * own evidence cache), not yet proven when this returns. */
static void open_unproven(void)
{
	mkdir(test_root(), 0711);
	char dir[512];
	snprintf(dir, sizeof dir, "%s/state-XXXXXX", test_root());
	cr_assert_not_null(mkdtemp(dir));
	h.state_dir = strdup(dir);
	proof_log[0] = '\0';
	struct bh_config cfg = {
		.state_dir = h.state_dir,
		.init_path = BH_TEST_INIT,
		.interp_dir = BH_TEST_INTERP,
		.log = keep_log,
		.log_arg = proof_log,
		.reprove = true,
	};
	bh_error *err = NULL;
	cr_assert_eq(bh_engine_open(&cfg, &h.e, &err), 0, "engine open: %s", err ? err->msg : "?");
}

struct pinned_open {
	bool done;
	char err[512];
	bool all_proven_then;
	char proving_then[512];
};

static void on_pinned_open(void *arg, bh_session *s, const bh_error *err)
{
	(void)s;
	struct pinned_open *o = arg;
	o->done = true;
	snprintf(o->err, sizeof o->err, "%s", err ? err->msg : "");
	o->all_proven_then = bh_engine_proven(h.e);
	bh_engine_proving(h.e, o->proving_then, sizeof o->proving_then);
}

/* A session that names the container tier needs only that tier's proof:
 * it opens while the kernel tier (a gVisor boot, the long one) is still
 * being proven, where it used to wait for both. The kernel proof takes
 * several times the container proof plus a crun open here, so the ordering
 * holds on any host this runs on; the old code failed it every time. */
Test(usability, a_session_pinned_to_the_container_tier_opens_before_the_kernel_tier_is_proven,
     .fini = close_harness)
{
	open_unproven();
	struct bh_session_opts o = {.tier = BH_TIER_CONTAINER, .floor = BH_TIER_UNKNOWN,
				    .principal = "test"};
	struct pinned_open w = {0};
	bh_session *s = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_session_open(h.e, &o, on_pinned_open, &w, &s, &err), 0, "%s",
		     err ? err->msg : "");
	cr_assert_eq(bh_engine_wait(h.e, &w.done, 120000, &err), 0, "%s", err ? err->msg : "");
	cr_assert_str_empty(w.err, "the pinned session did not open: %s\n%s", w.err, proof_log);
	cr_assert_not(w.all_proven_then, "it waited for every tier's proof:\n%s", proof_log);
	cr_assert_not_null(strstr(w.proving_then, "the kernel tier (waiting for "), "%s",
			   w.proving_then);
	struct cell_outcome *c = harness_cell(&h, s, BH_LANG_PYTHON, "print(6 * 7)", 0);
	cr_assert(c->answered, "%s", c->err_msg ? c->err_msg : "");
	cr_assert_str_eq(c->out, "42\n");
	cell_outcome_free(c);
	while (!bh_engine_proven(h.e)) {
		bool never = false;
		bh_engine_wait(h.e, &never, 50, NULL);
	}
}

/* The log says what the start is waiting for: each proof as it starts, the
 * step it waits on when asked, and how long it took. */
Test(usability, the_first_proof_says_what_it_waits_for_and_how_long_it_took, .fini = close_harness)
{
	open_unproven();
	char proving[1024];
	size_t n = bh_engine_proving(h.e, proving, sizeof proving);
	cr_assert_eq(n, 2, "both tiers are proven on a new state directory: %s", proving);
	cr_assert_not_null(strstr(proving, "the kernel tier (waiting for its runsc smoke sandbox"),
			   "%s", proving);
	cr_assert_not_null(strstr(proving, "the container tier (waiting for its crun smoke sandbox"),
			   "%s", proving);
	bh_error *err = NULL;
	cr_assert_lt(bh_engine_preflight(h.e, &err), 0, "ready before anything was proven");
	cr_assert_not_null(strstr(err->msg, "still being proven: the kernel tier (waiting for "),
			   "readiness does not say what it waits for: %s", err->msg);
	bh_error_free(err);
	while (!bh_engine_proven(h.e)) {
		bool never = false;
		bh_engine_wait(h.e, &never, 50, NULL);
	}
	cr_assert_eq(bh_engine_proving(h.e, proving, sizeof proving), 0);
	const char *const lines[] = {
		"proving the kernel tier: a runsc smoke sandbox proves its walls from inside",
		"proving the container tier: a crun smoke sandbox proves its walls from inside",
		"tier container (crun): offered (smoke test of ",
		"tier kernel (runsc): offered (smoke test of ",
	};
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		cr_assert_not_null(strstr(proof_log, lines[i]), "the log lacks \"%s\":\n%s", lines[i],
				   proof_log);
}
