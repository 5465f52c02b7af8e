/* ---- fleet (issue 20) ----
 * Two engines with their own state directories and one shared images
 * directory: a hibernated conversation of one is adopted by the other and
 * goes on there (its variables, its files, one chain across the two
 * stores); the first engine, reopened, ends its row and touches nothing of
 * the adopter's; two adopters of one image, exactly one wins; a hostile
 * description is refused with nothing changed; the leak finder and gc of
 * one engine leave another's images alone.
 *
 * One engine is open at a time in this process (an engine reaps every
 * child of its process: two would take each other's); the race runs its
 * two adopters in processes of their own. */
#include "harness.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static struct harness h;
static char images[4096];
static char state_a[4096], state_b[4096];

static void setup(void)
{
	harness_scratch_dir("images", images, sizeof images, NULL, 0);
	state_a[0] = state_b[0] = '\0';
}

/* Every engine's directory goes (an engine opened on each reaps what is
 * left of it first), then the shared images. */
static void teardown(void)
{
	harness_close(&h);
	const char *dirs[] = {state_a, state_b};
	for (size_t i = 0; i < 2; i++) {
		if (!dirs[i][0] || access(dirs[i], F_OK) != 0)
			continue;
		h = (struct harness){0};
		h.images_dir = images;
		h.state_dir = strdup(dirs[i]);
		harness_close(&h); /* no engine: one opened to reap, then removed */
	}
	harness_remove_dir(images);
}

static struct cell_outcome *ok(bh_session *s, const char *code)
{
	struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON, code, 0);
	cr_assert(o->answered, "%s: %s\n%s", code, o->err_msg ? o->err_msg : "", h.log);
	cr_assert_eq(o->r.exit_code, 0, "%s: %s", code, o->errout);
	return o;
}

static const char *state_of(bh_session *s)
{
	struct bh_session_info i;
	bh_session_get_info(s, &i);
	return bh_session_state_name(i.state);
}

static void on_done(void *arg, const bh_error *err)
{
	(void)err;
	*(bool *)arg = true;
}

struct made {
	char id[64];
	char last[65];
	struct bh_hibernated hib;
};

/* Engine A: a kernel-tier session that set a variable and wrote a file,
 * hibernated to the shared images; A closed, the image kept. */
static void make_image(struct made *m)
{
	harness_open_images(&h, NULL, images);
	harness_require_tier(&h, BH_TIER_KERNEL);
	snprintf(state_a, sizeof state_a, "%s", h.state_dir);
	bh_session *s = harness_session(&h, BH_TIER_KERNEL, 1u << BH_LANG_PYTHON);
	struct cell_outcome *o = ok(s, "x = 41\nopen('/work/kept', 'w').write('yes')");
	snprintf(m->last, sizeof m->last, "%s", o->record_sha256);
	cell_outcome_free(o);
	snprintf(m->id, sizeof m->id, "%s", bh_session_id(s));
	bool done = false;
	bh_error *err = NULL;
	cr_assert_eq(bh_session_hibernate(s, on_done, &done, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(bh_engine_wait(h.e, &done, 60000, NULL), 0);
	cr_assert_str_eq(state_of(s), "hibernated", "%s", h.log);
	cr_assert_eq(bh_session_hibernated(s, &m->hib, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(m->hib.calls, 1);
	cr_assert_str_eq(m->hib.last_record_sha256, m->last);
	cr_assert_str_eq(m->hib.principal, "test");
	cr_assert_eq(m->hib.tier, BH_TIER_KERNEL);
	bh_engine_close(h.e); /* a hibernated session's image outlives its engine */
	h.e = NULL;
	free(h.state_dir);
	h.state_dir = NULL;
	struct stat st;
	char img[4300];
	snprintf(img, sizeof img, "%s/%s", images, m->hib.sandbox);
	cr_assert_eq(stat(img, &st), 0, "A's image is in the shared directory: %s", img);
}

static void open_b(void)
{
	harness_open_images(&h, NULL, images);
	snprintf(state_b, sizeof state_b, "%s", h.state_dir);
}

/* Closes the engine in h, keeping its directory (teardown removes it). */
static void close_keep(void)
{
	bh_engine_close(h.e);
	h.e = NULL;
	free(h.state_dir);
	h.state_dir = NULL;
}

static void reopen(const char *dir)
{
	h = (struct harness){.images_dir = images};
	harness_open_at(&h, dir, NULL);
}

static char *sql(const char *dir, const char *query)
{
	return harness_sh("sqlite3 '%s/bulkhead.db' \"%s\"", dir, query);
}

Test(fleet_adopt, a_hibernated_conversation_goes_on_in_another_engine_with_one_chain,
     .init = setup, .fini = teardown, .timeout = 240)
{
	struct made m;
	make_image(&m);
	open_b();
	bh_session *s = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_engine_adopt_hibernated(h.e, &m.hib, "host-a", &s, &err), 0, "%s\n%s",
		     err ? err->msg : "", h.log);
	cr_assert_not_null(s);
	cr_assert_str_eq(state_of(s), "hibernated");
	struct bh_session_info info;
	bh_session_get_info(s, &info);
	cr_assert_str_neq(info.sandbox, m.hib.sandbox, "the image was renamed to a sandbox of B's");
	char bsandbox[64];
	snprintf(bsandbox, sizeof bsandbox, "%s", info.sandbox);
	cr_assert_eq(bh_engine_find_session(h.e, m.id, "test"), s, "found by its id, as at A");
	char *ev = sql(state_b, "SELECT kind, detail FROM events WHERE kind = 'adopted'");
	cr_assert_not_null(strstr(ev, "host-a"), "the adopted event names the origin host: %s", ev);
	char *row = sql(state_b, "SELECT state, calls, last_record_sha256, principal FROM sessions");
	char want[256];
	snprintf(want, sizeof want, "hibernated|1|%s|test\n", m.last);
	cr_assert_str_eq(row, want);
	close_keep(); /* B restarts later and re-adopts it as its own */

	/* A, reopened on its own directory: its row ends, B's image stays. */
	reopen(state_a);
	row = sql(state_a, "SELECT state, end_reason, end_detail FROM sessions");
	cr_assert_str_eq(row, "ended|reaped|its hibernation image is gone\n", "%s", h.log);
	struct bh_leak *leaks = NULL;
	size_t n = bh_engine_leaks(h.e, &leaks);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_neq(leaks[i].sandbox, bsandbox, "A lists B's image as its leak");
	free(leaks);
	struct bh_leak *reaped = NULL;
	bh_engine_gc(h.e, &reaped);
	free(reaped);
	char img[4300];
	snprintf(img, sizeof img, "%s/%s/checkpoint.img", images, bsandbox);
	struct stat st;
	cr_assert_eq(stat(img, &st), 0, "B's image was touched by A: %s", img);
	close_keep();

	/* B again: its store re-adopts the session, whose next call restores
	 * A's variables and files and continues A's chain. */
	reopen(state_b);
	s = bh_engine_find_session(h.e, m.id, "test");
	cr_assert_not_null(s, "B re-adopts the adopted session at its restart\n%s", h.log);
	struct cell_outcome *o = ok(s, "print(x + 1, open('/work/kept').read())");
	cr_assert_str_eq(o->out, "42 yes\n", "%s", h.log);
	cr_assert_not(o->r.interpreter_started, "restored, not restarted");
	cr_assert_eq(o->sequence, 2, "the sequence follows A's");
	cell_outcome_free(o);
	snprintf(want, sizeof want, "2|%s\n", m.last);
	char q[300];
	snprintf(q, sizeof q, "SELECT sequence, previous_sha256 FROM records WHERE session = '%s'",
		 m.hib.fingerprint);
	cr_assert_str_eq(sql(state_b, q), want, "B's first record's prev is A's last digest");
	/* B's store alone verifies: the chain goes on from A's record 1, which
	 * A's store holds (and verifies there). */
	char out[4096];
	cr_assert_eq(harness_cli(&h, out, sizeof out, "verify"), 0, "%s", out);
	cr_assert_not_null(strstr(out, "adopted from host host-a"), "%s", out);
	cr_assert_not_null(strstr(out, "goes on here from record 1"), "%s", out);
	cr_assert_not_null(strstr(out, "1 records verified"), "%s", out);
	char *origin = sql(state_b, "SELECT origin_host, adopted_after, adopted_after_sha256 FROM sessions");
	snprintf(want, sizeof want, "host-a|1|%s\n", m.last);
	cr_assert_str_eq(origin, want, "the row says where its chain began");
}

/* One adopter in a process of its own: opens its engine on dir, waits for
 * the go (a byte on go), adopts, exits 0 (adopted), 1 (refused, not
 * dispatched), 2 (anything else); its engine closed, keeping the image. */
static pid_t adopter(const char *dir, const struct bh_hibernated *hib, int go)
{
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid)
		return pid;
	harness_child_signals_default();
	char evidence[4200];
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	snprintf(evidence, sizeof evidence, "%s/evidence", root && *root ? root : "/tmp/bulkhead-tests");
	struct bh_config cfg = {.state_dir = dir, .init_path = BH_TEST_INIT,
				.interp_dir = BH_TEST_INTERP, .evidence_dir = evidence,
				.images_dir = images};
	bh_engine *e = NULL;
	if (bh_engine_open(&cfg, &e, NULL) < 0)
		_exit(3);
	bool never = false;
	while (!bh_engine_proven(e))
		bh_engine_wait(e, &never, 50, NULL);
	char c;
	if (read(go, &c, 1) != 1)
		_exit(4);
	bh_error *err = NULL;
	int r = bh_engine_adopt_hibernated(e, hib, "host-a", NULL, &err);
	int code = r == 0 ? 0 : err && err->code == BH_E_NOT_DISPATCHED ? 1 : 2;
	if (err)
		fprintf(stderr, "adopter %d: %s\n", (int)getpid(), err->msg);
	bh_error_free(err);
	bh_engine_close(e);
	_exit(code);
}

Test(fleet_adopt, of_two_engines_adopting_one_image_exactly_one_wins, .init = setup,
     .fini = teardown, .timeout = 240)
{
	struct made m;
	make_image(&m);
	char b[4096], c[4096];
	harness_scratch_dir("state", b, sizeof b, NULL, 0);
	harness_scratch_dir("state", c, sizeof c, NULL, 0);
	chmod(b, 0711);
	chmod(c, 0711);
	snprintf(state_b, sizeof state_b, "%s", b);
	int go[2];
	cr_assert_eq(pipe(go), 0);
	pid_t p1 = adopter(b, &m.hib, go[0]), p2 = adopter(c, &m.hib, go[0]);
	cr_assert_eq(write(go[1], "ab", 2), 2);
	close(go[1]);
	int s1 = 0, s2 = 0;
	waitpid(p1, &s1, 0);
	waitpid(p2, &s2, 0);
	cr_assert(WIFEXITED(s1) && WIFEXITED(s2));
	int c1 = WEXITSTATUS(s1), c2 = WEXITSTATUS(s2);
	cr_assert((c1 == 0 && c2 == 1) || (c1 == 1 && c2 == 0),
		  "exactly one adopts, the other is refused (exit codes %d and %d)", c1, c2);
	const char *winner = c1 == 0 ? b : c, *loser = c1 == 0 ? c : b;
	cr_assert_str_eq(sql(winner, "SELECT state, calls FROM sessions"), "hibernated|1\n");
	cr_assert_str_empty(sql(loser, "SELECT * FROM sessions"), "the loser wrote no row");
	cr_assert_str_empty(harness_sh("ls '%s/bundles'", loser), "the loser made no bundle");
	/* One image, under the winner's name. */
	char *list = harness_sh("ls '%s'", images);
	char *won = sql(winner, "SELECT sandbox FROM sessions");
	cr_assert_str_eq(list, won, "the images directory holds the winner's image only");
	/* The second directory is removed by this test's teardown too. */
	h = (struct harness){.images_dir = images, .state_dir = strdup(loser)};
	harness_close(&h);
	snprintf(state_b, sizeof state_b, "%s", winner);
}

/* What B holds (its rows, bundles and the images) before and after. */
static char *snapshot(void)
{
	return strdup(harness_sh("sqlite3 '%s/bulkhead.db' 'SELECT count(*) FROM sessions'; "
				 "ls -l '%s/bundles' '%s' | grep -v '^total'",
				 state_b, state_b, images));
}

static void refused(const struct bh_hibernated *hib, enum bh_refusal want, const char *words)
{
	char *before = snapshot();
	bh_session *s = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_engine_adopt_hibernated(h.e, hib, "host-a", &s, &err), -1, "adopted: %s",
		     words);
	cr_assert_null(s);
	cr_assert_eq(err->code, BH_E_NOT_DISPATCHED, "%s: %s", words, err->msg);
	cr_assert_eq(err->refusal, want, "%s: %s", words, err->msg);
	cr_assert_not_null(strstr(err->msg, words), "the sentence says why: %s", err->msg);
	char *after = snapshot();
	cr_assert_str_eq(after, before, "a refusal changed nothing");
	free(before);
	free(after);
	bh_error_free(err);
}

Test(fleet_adopt, a_hostile_description_is_refused_and_nothing_changes, .init = setup,
     .fini = teardown, .timeout = 240)
{
	struct made m;
	make_image(&m);
	open_b();
	struct bh_hibernated x = m.hib;
	snprintf(x.sandbox, sizeof x.sandbox, "../x");
	refused(&x, BH_REFUSAL_REQUEST, "not a name bulkhead makes");
	x = m.hib;
	memcpy(x.fingerprint, "ZZ", 2);
	refused(&x, BH_REFUSAL_REQUEST, "fingerprint");
	x = m.hib;
	x.fingerprint[10] = 'A'; /* hex, but not lowercase */
	refused(&x, BH_REFUSAL_REQUEST, "fingerprint");
	x = m.hib;
	snprintf(x.last_record_sha256, sizeof x.last_record_sha256, "not-a-digest");
	refused(&x, BH_REFUSAL_REQUEST, "chain head");
	x = m.hib;
	memset(x.principal, 'p', sizeof x.principal); /* no terminating NUL */
	refused(&x, BH_REFUSAL_REQUEST, "principal");
	x = m.hib;
	snprintf(x.run_key, sizeof x.run_key, "line\nbreak");
	refused(&x, BH_REFUSAL_REQUEST, "run key");
	x = m.hib;
	x.tier = BH_TIER_CONTAINER;
	refused(&x, BH_REFUSAL_UNSUPPORTED, "container-tier session cannot be adopted");
	/* An image that is a link to the real one. */
	x = m.hib;
	snprintf(x.sandbox, sizeof x.sandbox, "bh-00000000000000ee");
	char link[4300], target[4300];
	snprintf(link, sizeof link, "%s/%s", images, x.sandbox);
	snprintf(target, sizeof target, "%s/%s", images, m.hib.sandbox);
	cr_assert_eq(symlink(target, link), 0);
	refused(&x, BH_REFUSAL_REQUEST, "symbolic link");
	unlink(link);
	x = m.hib;
	snprintf(x.sandbox, sizeof x.sandbox, "bh-00000000000000ef");
	refused(&x, BH_REFUSAL_REQUEST, "not there");
	/* The real one adopts; the same fingerprint again is refused. */
	bh_session *s = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_engine_adopt_hibernated(h.e, &m.hib, "host-a", &s, &err), 0, "%s",
		     err ? err->msg : "");
	refused(&m.hib, BH_REFUSAL_REQUEST, "already this engine's");
}

/* A shared images directory holds other engines' images: one engine's leak
 * finder lists only the images its own store names, and its gc deletes
 * nothing else. */
Test(fleet_adopt, an_engine_lists_and_reaps_only_its_own_images_in_a_shared_directory,
     .init = setup, .fini = teardown, .timeout = 240)
{
	struct made m;
	make_image(&m);
	/* Another host's image nobody here names, and one A's store names
	 * whose session is gone (A's own leak). */
	char other[4300], mine[4300];
	snprintf(other, sizeof other, "%s/bh-0123456789abcdef", images);
	cr_assert_eq(mkdir(other, 0700), 0);
	reopen(state_a);
	bh_session *s = bh_engine_find_session(h.e, m.id, "test");
	cr_assert_not_null(s, "%s", h.log);
	bh_session_kill(s);
	bool never = false;
	bh_engine_wait(h.e, &never, 500, NULL);
	snprintf(mine, sizeof mine, "%s/%s", images, m.hib.sandbox);
	if (access(mine, F_OK) != 0)
		cr_assert_eq(mkdir(mine, 0700), 0); /* its image left behind, as a crash would */
	struct bh_leak *leaks = NULL;
	size_t n = bh_engine_leaks(h.e, &leaks);
	bool listed_mine = false;
	for (size_t i = 0; i < n; i++) {
		cr_assert_str_neq(leaks[i].sandbox, "bh-0123456789abcdef",
				  "another host's image is listed as this engine's leak");
		listed_mine |= leaks[i].kind == BH_LEAK_STALE_IMAGE &&
			       !strcmp(leaks[i].sandbox, m.hib.sandbox);
	}
	free(leaks);
	cr_assert(listed_mine, "the image this engine's store names is its leak");
	struct bh_leak *reaped = NULL;
	bh_engine_gc(h.e, &reaped);
	free(reaped);
	cr_assert_eq(access(other, F_OK), 0, "gc deleted another host's image");
	cr_assert_neq(access(mine, F_OK), 0, "gc left this engine's own stale image");
	close_keep();
	/* Nor does the sweep at open delete it. */
	reopen(state_a);
	cr_assert_eq(access(other, F_OK), 0, "the open's sweep deleted another host's image");
}

/* The images directory is held to the state directory's rule. */
Test(fleet_adopt, an_images_directory_others_can_write_or_a_link_is_refused_at_open,
     .init = setup, .fini = teardown)
{
	char evidence[4200];
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	snprintf(evidence, sizeof evidence, "%s/evidence", root && *root ? root : "/tmp/bulkhead-tests");
	char dir[4096];
	harness_scratch_dir("state", dir, sizeof dir, NULL, 0);
	chmod(dir, 0711);
	snprintf(state_a, sizeof state_a, "%s", dir);
	chmod(images, 0777);
	struct bh_config cfg = {.state_dir = dir, .init_path = BH_TEST_INIT,
				.interp_dir = BH_TEST_INTERP, .evidence_dir = evidence,
				.images_dir = images, .skip_proofs = true};
	bh_engine *e = NULL;
	bh_error *err = NULL;
	cr_assert_eq(bh_engine_open(&cfg, &e, &err), -1);
	cr_assert_not_null(strstr(err->msg, "images directory"), "%s", err->msg);
	cr_assert_not_null(strstr(err->msg, "chmod go-w"), "%s", err->msg);
	bh_error_free(err);
	err = NULL;
	chmod(images, 0700);
	char link[4300];
	snprintf(link, sizeof link, "%s/link", dir);
	cr_assert_eq(symlink(images, link), 0);
	cfg.images_dir = link;
	cr_assert_eq(bh_engine_open(&cfg, &e, &err), -1);
	cr_assert_not_null(strstr(err->msg, "images directory"), "%s", err->msg);
	cr_assert_not_null(strstr(err->msg, "symbolic link"), "%s", err->msg);
	bh_error_free(err);
	unlink(link);
}

/* An engine opened on a state directory without its images directory (a
 * command run while the daemon is stopped) uses the one it was last opened
 * with: its hibernated sessions are not taken for gone. */
Test(fleet_adopt, a_state_directory_remembers_its_images_directory, .init = setup,
     .fini = teardown, .timeout = 240)
{
	struct made m;
	make_image(&m);
	h = (struct harness){0};
	harness_open_at(&h, state_a, NULL);
	bh_session *s = bh_engine_find_session(h.e, m.id, "test");
	cr_assert_not_null(s, "the hibernated session was not re-adopted\n%s", h.log);
	cr_assert_str_eq(state_of(s), "hibernated", "%s", h.log);
	struct cell_outcome *o = ok(s, "print(x + 1)");
	cr_assert_str_eq(o->out, "42\n");
	cell_outcome_free(o);
	h.images_dir = images; /* teardown's sweep names it anyway */
}

static long bundle_host_uid(const char *state, const char *sandbox)
{
	char *v = harness_sh("python3 -c \"import json,sys; print(json.load(open(sys.argv[1]))"
			     "['linux']['uidMappings'][0]['hostID'])\" '%s/bundles/%s/config.json'",
			     state, sandbox);
	return strtol(v, NULL, 10);
}

/* A hibernated sandbox re-adopted at a restart runs with the uid range its
 * bundle maps: a sandbox opened after it is given another one (an adopted
 * session's bundle is re-adopted so at the adopter's restart). */
Test(fleet_adopt, a_re_adopted_sandbox_keeps_its_uid_range_and_no_new_one_shares_it, .init = setup,
     .fini = teardown, .timeout = 240)
{
	harness_open_images(&h, NULL, images);
	harness_require_tier(&h, BH_TIER_KERNEL);
	snprintf(state_a, sizeof state_a, "%s", h.state_dir);
	bh_session *first = harness_session(&h, BH_TIER_KERNEL, 0); /* the first uid range */
	bh_session *s = harness_session(&h, BH_TIER_KERNEL, 1u << BH_LANG_PYTHON);
	cell_outcome_free(ok(s, "x = 1"));
	char id[64], sandbox[64];
	snprintf(id, sizeof id, "%s", bh_session_id(s));
	struct bh_session_info info;
	bh_session_get_info(s, &info);
	snprintf(sandbox, sizeof sandbox, "%s", info.sandbox);
	long mapped = bundle_host_uid(state_a, sandbox);
	bool done = false;
	cr_assert_eq(bh_session_hibernate(s, on_done, &done, NULL), 0);
	cr_assert_eq(bh_engine_wait(h.e, &done, 60000, NULL), 0);
	(void)first; /* ends with the engine */
	close_keep();
	reopen(state_a);
	cr_assert_not_null(bh_engine_find_session(h.e, id, "test"), "%s", h.log);
	bh_session *fresh = harness_session(&h, BH_TIER_KERNEL, 0);
	bh_session_get_info(fresh, &info);
	long mine = bundle_host_uid(state_a, info.sandbox);
	cr_assert_neq(mine, mapped, "a new sandbox shares the uids of the re-adopted one (%ld)", mine);
	cr_assert_eq(bundle_host_uid(state_a, sandbox), mapped);
}
