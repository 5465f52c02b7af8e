/* Capture: a paused sandbox's evidence written into a folder with a
 * MANIFEST that verifies, and a folder changed afterwards that does not. */
#include "harness.h"
#include "plant.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static struct harness h;
static bh_session *s;

/* A session whose interpreter listens on 127.0.0.1:4242 (0x1092), then
 * pauses on its idle window: frozen, its init answers nothing. */
static void setup(void)
{
	struct bh_policy p = {.idle_ms = 500, .hibernate_after_ms = 600000};
	harness_open_policy(&h, &p);
	s = harness_session(&h, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
	struct cell_outcome *o = harness_cell(
		&h, s, BH_LANG_PYTHON,
		"import socket\nlistener = socket.socket()\n"
		"listener.bind(('127.0.0.1', 4242))\nlistener.listen()\nprint('listening')",
		0);
	cr_assert(o->answered && strstr(o->out, "listening"), "the cell did not run: %s",
		  o->err_msg ? o->err_msg : o->errout);
	cell_outcome_free(o);
	struct bh_session_info info;
	for (int i = 0; i < 100; i++) {
		bool never = false;
		bh_engine_wait(h.e, &never, 100, NULL);
		bh_session_get_info(s, &info);
		if (info.state == BH_SESSION_PAUSED)
			break;
	}
	cr_assert_eq(info.state, BH_SESSION_PAUSED, "the session did not pause: %s",
		     bh_session_state_name(info.state));
}

static void teardown(void)
{
	harness_close(&h);
}

static char *evidence_dir(const char *name)
{
	char *d = NULL;
	cr_assert_gt(asprintf(&d, "%s/%s", h.state_dir, name), 0);
	return d;
}

static char *file_in(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	char *v = harness_slurp(path);
	cr_assert_not_null(v, "%s was not captured", path);
	return v;
}

Test(capture, a_paused_container_sandbox_is_captured_and_its_manifest_verifies_until_a_file_changes,
     .init = setup, .fini = teardown)
{
	struct bh_session_info info;
	bh_session_get_info(s, &info);
	char prefix[13];
	snprintf(prefix, sizeof prefix, "%.12s", info.fingerprint);
	struct bh_capture_target t;
	bh_error *err = NULL;
	cr_assert_eq(bh_engine_capture_target(h.e, prefix, &t, &err), 0, "%s", err ? err->msg : "");
	cr_assert_str_eq(t.sandbox, info.sandbox);
	cr_assert_str_eq(t.fingerprint, info.fingerprint);
	cr_assert_str_eq(t.runtime, "crun");
	cr_assert(t.held);

	char *dir = evidence_dir("evidence");
	bh_capture *cap = NULL;
	cr_assert_eq(bh_capture_begin(h.e, &t, dir, &cap, &err), 0, "%s", err ? err->msg : "");
	bh_capture_missing(cap, "processes-init.txt", "the sandbox is paused: its init is frozen");
	char sha[65];
	cr_assert_eq(bh_capture_finish(cap, sha, &err), 0, "%s", err ? err->msg : "");
	bh_capture_free(cap);

	/* What a paused sandbox still shows the host. */
	char *procs = file_in(dir, "processes-host.txt");
	cr_assert(strstr(procs, "python"), "no interpreter among the processes:\n%s", procs);
	char *tcp = file_in(dir, "net-tcp.txt");
	cr_assert(strstr(tcp, "0100007F:1092"), "the listener on 4242 is not in net-tcp.txt:\n%s", tcp);
	char *usage = file_in(dir, "usage.txt");
	cr_assert(strstr(usage, "FROZEN"), "the freezer does not say frozen:\n%s", usage);
	char *config = file_in(dir, "config.json");
	cr_assert(strstr(config, "\"ociVersion\""), "%s", config);
	char *rows = file_in(dir, "store-rows.json");
	cr_assert(strstr(rows, info.fingerprint) && strstr(rows, "\"digestVerifies\":\ttrue"),
		  "the store's rows are not there:\n%s", rows);
	char *manifest = file_in(dir, "MANIFEST");
	cr_assert(strstr(manifest, "not-captured: processes-init.txt: the sandbox is paused"), "%s",
		  manifest);
	char pid[32];
	snprintf(pid, sizeof pid, "engine-pid: %d\n", (int)getpid());
	cr_assert(strstr(manifest, pid), "%s", manifest);
	free(procs), free(tcp), free(usage), free(config), free(rows), free(manifest);

	size_t n = 0;
	char again[65];
	char *problems = NULL;
	cr_assert_eq(bh_capture_verify(dir, &n, again, &problems, &err), 0, "%s", err ? err->msg : "");
	cr_assert_null(problems, "a fresh capture does not verify:\n%s", problems);
	cr_assert_str_eq(again, sha);
	cr_assert_geq(n, 5);

	/* One byte of evidence changed, one file slipped in. */
	char path[4096];
	snprintf(path, sizeof path, "%s/config.json", dir);
	FILE *f = fopen(path, "r+");
	cr_assert_not_null(f);
	fputc('X', f);
	fclose(f);
	snprintf(path, sizeof path, "%s/planted.txt", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fclose(f);
	cr_assert_eq(bh_capture_verify(dir, &n, again, &problems, &err), 0);
	cr_assert_not_null(problems, "a tampered folder verifies");
	cr_assert(strstr(problems, "config.json: SHA-256"), "%s", problems);
	cr_assert(strstr(problems, "added: planted.txt"), "%s", problems);
	free(problems);
	free(dir);
}

/* A dead worker's bundle run again as a container nobody registered, then
 * paused: a finding `bulkhead leaks` lists, captured by the CLI before gc
 * reaps it. */
Test(capture, the_cli_captures_a_paused_orphan_before_gc_and_verify_fails_once_a_file_is_changed,
     .fini = teardown)
{
	harness_open(&h, NULL);
	harness_require_tier(&h, BH_TIER_CONTAINER);
	char state[4096], root[4096], cgparent[128];
	snprintf(state, sizeof state, "%s", h.state_dir);
	snprintf(root, sizeof root, "%s", bh_engine_runtime_root(h.e, BH_TIER_CONTAINER));
	snprintf(cgparent, sizeof cgparent, "%s", bh_engine_cgroup_parent(h.e));
	bh_engine_close(h.e);
	h.e = NULL;
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		struct harness c = {0};
		harness_open_at(&c, state, NULL);
		bh_session *w = harness_session(&c, BH_TIER_CONTAINER, 1u << BH_LANG_PYTHON);
		cell_outcome_free(harness_cell(&c, w, BH_LANG_PYTHON, "1", 0));
		struct bh_session_info info;
		bh_session_get_info(w, &info);
		dprintf(p[1], "%s\n", info.sandbox);
		raise(SIGKILL);
	}
	close(p[1]);
	char name[64] = "";
	cr_assert_gt(read(p[0], name, sizeof name - 1), 0);
	close(p[0]);
	*strchr(name, '\n') = '\0';
	waitpid(pid, NULL, 0);
	harness_wait_for_warden(state);
	char config[4200];
	snprintf(config, sizeof config, "%s/orphan.json", state);
	plant_orphan_bundle(state, cgparent, name, "bh-orphan", config);
	harness_sh("crun --root '%s' delete -f %s 2>&1", root, name);
	plant_orphan_start(state, root, "bh-orphan", config, true);

	struct harness view = {.state_dir = state};
	char *dir = NULL;
	cr_assert_gt(asprintf(&dir, "%s/cli-evidence", state), 0);
	char out[16384], args[8192];
	snprintf(args, sizeof args, "capture bh-orphan --out '%s' --file notes.txt", dir);
	int rc = harness_cli(&view, out, sizeof out, args);
	cr_assert_eq(rc, 0, "capture failed: %s", out);
	cr_assert(strstr(out, "captured bh-orphan into ") && strstr(out, dir), "%s", out);
	char *procs = file_in(dir, "processes-host.txt");
	cr_assert(strstr(procs, "/bin/sleep 300"), "%s", procs);
	char *usage = file_in(dir, "usage.txt");
	cr_assert(strstr(usage, "FROZEN"), "%s", usage);
	char *manifest = file_in(dir, "MANIFEST");
	cr_assert(strstr(manifest, "not-captured: /work/notes.txt: no session names this sandbox"),
		  "%s", manifest);
	free(procs), free(usage), free(manifest);

	snprintf(args, sizeof args, "capture --verify '%s'", dir);
	rc = harness_cli(&view, out, sizeof out, args);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "verifies:"), "%s", out);

	/* Then the reap; the evidence stays and still verifies. */
	rc = harness_cli(&view, out, sizeof out, "gc");
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "bh-orphan"), "%s", out);
	rc = harness_cli(&view, out, sizeof out, args);
	cr_assert_eq(rc, 0, "%s", out);

	char path[4096];
	snprintf(path, sizeof path, "%s/processes-host.txt", dir);
	cr_assert_eq(truncate(path, 10), 0);
	rc = harness_cli(&view, out, sizeof out, args);
	cr_assert_eq(rc, 1, "a changed folder verified: %s", out);
	cr_assert(strstr(out, "FAILED processes-host.txt: 10 bytes, the manifest says"), "%s", out);
	cr_assert(strstr(out, "does not verify against its MANIFEST"), "%s", out);

	/* A folder that holds something is never written into. */
	snprintf(args, sizeof args, "capture bh-orphan --out '%s'", dir);
	rc = harness_cli(&view, out, sizeof out, args);
	cr_assert_neq(rc, 0, "%s", out);
	free(dir);
	harness_open_at(&h, state, NULL); /* so teardown closes and removes it */
}
