/* The engine: one state directory, one loop, the tiers it proved, and the
 * sandboxes it holds. */
#include "engine_priv.h"
#include "testhook.h"
#include "state_dir.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#define TICK_MS 1000u
/* The WAL is checkpointed every CHECKPOINT_MS while commits come, and as
 * soon as one leaves CHECKPOINT_PAGES frames (1 MiB of 4 KiB pages): its
 * file stays under about twice that however steady the load (docs/api.md).
 * After CHECKPOINT_IDLE_US without a commit it is truncated. */
#define CHECKPOINT_MS 2000u
#define CHECKPOINT_PAGES 256
#define CHECKPOINT_IDLE_US 1000000u
#define PRUNE_MS (3600u * 1000u)
#define CLOSE_BUDGET_MS 30000

void bh_log(bh_engine *e, enum bh_log_level level, const char *fmt, ...)
{
	if (!e->log)
		return;
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	e->log(e->log_arg, level, msg);
}

/* ---- the state directory ---- */

#define LOCK_WAIT_MS 3000

/* The file names its holder: an engine's pid, or "warden PID" while a dead
 * engine's warden stops its sandboxes. */
static bool held_by_warden(int fd)
{
	char holder[32] = "";
	ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
	holder[n > 0 ? n : 0] = '\0';
	return !strncmp(holder, "warden", 6);
}

/* A full engine holds the lock exclusively (made if missing, its pid
 * written in it). A read-only one only makes sure no engine holds it, with
 * a shared lock on a lock file that exists: it creates and writes nothing. */
static int lock_state(bh_engine *e, bh_error **err)
{
	bool shared = e->read_only;
	if (shared && e->state_fd < 0)
		return 0; /* no directory: no engine holds it */
	int fd = shared ? openat(e->state_fd, "lock", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
			: openat(e->state_fd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
				 0600);
	if (fd < 0 && shared && (errno == ENOENT || errno == ELOOP))
		return 0; /* never locked, or a link (reported, not followed) */
	if (fd < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "open %s/lock", e->state_dir);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		if (shared)
			return 0;
		return bh_fail(err, BH_E_INVALID, 0, "state directory %s: lock is not a regular file",
			       e->state_dir);
	}
	int op = shared ? LOCK_SH : LOCK_EX;
	/* A dead engine's warden holds the lock for the moment it takes to
	 * stop that engine's sandboxes: wait for it, briefly. The first
	 * tenth of a second covers a warden that has the lock but has not
	 * written its name yet. */
	int r;
	for (int tries = 0; (r = flock(fd, op | LOCK_NB)) < 0 && errno == EWOULDBLOCK &&
			    (tries < 5 || (tries < LOCK_WAIT_MS / 20 && held_by_warden(fd)));
	     tries++)
		usleep(20 * 1000);
	if (r < 0) {
		int saved = errno;
		char holder[32] = "";
		ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
		holder[n > 0 ? n : 0] = '\0';
		close(fd);
		if (saved == EWOULDBLOCK)
			return bh_fail(err, BH_E_LOCKED, 0,
				       "state directory %s is held by another engine (pid %s)",
				       e->state_dir, *rtrim(holder) ? holder : "unknown");
		return bh_fail(err, BH_E_SYSTEM, saved, "lock %s/lock", e->state_dir);
	}
	e->lock_fd = fd;
	if (shared)
		return 0;
	char pid[32];
	int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) < 0)
		bh_log(e, BH_LOG_WARN, "cannot record our pid in %s/lock", e->state_dir);
	return 0;
}

static int install_init(bh_engine *e, const char *src, bh_error **err)
{
	if (!src || !*src)
		return bh_fail(err, BH_E_INVALID, 0, "no bulkhead-init given (set BULKHEAD_INIT)");
	char src_hash[65];
	if (sha256_file_hex(src, src_hash) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "read bulkhead-init at %s", src);
	cleanup_free char *dir = xasprintf("%s/lib", e->state_dir);
	if (mkdir_p(dir, 0755) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "create %s", dir);
	e->init_path = xasprintf("%s/bulkhead-init", dir);
	char have[65];
	if (sha256_file_hex(e->init_path, have) == 0 && !strcmp(have, src_hash)) {
		memcpy(e->init_hash, src_hash, sizeof have);
		return 0;
	}
	/* A copy, not the build tree's file: sandboxes bind it read-only, and a
	 * rebuild while they run must not change what they see. */
	size_t len = 0;
	cleanup_free char *data = read_file(src, 64u << 20, &len);
	if (!data)
		return bh_fail(err, BH_E_SYSTEM, errno, "read %s", src);
	if (write_file_atomic(e->init_path, data, len, 0755) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "install %s", e->init_path);
	memcpy(e->init_hash, src_hash, sizeof have);
	return 0;
}

/* The cell servers, copied like the init (a sandbox binds the copy), and
 * folded into the hash that keys the tier evidence. */
static const char *const interp_files[] = {"python/cell.py", "javascript/cell.js",
					   /* ---- egress: Node's fetch through the relay ---- */
					   "javascript/egress_fetch.js"};

static int install_interp(bh_engine *e, const char *src, bh_error **err)
{
	if (!src || !*src)
		return bh_fail(err, BH_E_INVALID, 0,
			       "no cell servers given (set BULKHEAD_INTERP to bulkhead's data/interp)");
	e->interp_dir = xasprintf("%s/lib/interp", e->state_dir);
	cleanup_free char *material = xstrdup(e->init_hash);
	for (size_t i = 0; i < sizeof interp_files / sizeof interp_files[0]; i++) {
		cleanup_free char *from = xasprintf("%s/%s", src, interp_files[i]);
		cleanup_free char *to = xasprintf("%s/%s", e->interp_dir, interp_files[i]);
		cleanup_free char *dir = xstrdup(to);
		*strrchr(dir, '/') = '\0';
		size_t len = 0;
		cleanup_free char *data = read_file(from, 16u << 20, &len);
		if (!data)
			return bh_fail(err, BH_E_SYSTEM, errno, "read the cell server %s", from);
		if (mkdir_p(dir, 0755) < 0 || write_file_atomic(to, data, len, 0644) < 0)
			return bh_fail(err, BH_E_SYSTEM, errno, "install %s", to);
		char h[65];
		sha256_hex(data, len, h);
		char *next = xasprintf("%s %s", material, h);
		free(material);
		material = next;
	}
	sha256_hex(material, strlen(material), e->init_hash);
	return 0;
}

/* Sandboxes die with their engine; whatever a dead engine left under this
 * state directory is deleted before we start (we hold the lock: nobody else
 * can own them). */
/* Kills every process that belongs to this state directory: anything in
 * our cgroups, and any runtime process working under our runtime roots
 * (runsc's gofer lives outside the sandbox's cgroup). */
static size_t kill_our_processes(bh_engine *e)
{
	size_t killed = 0;
	cleanup_free char *needle = xasprintf("%s/run/", e->state_dir);
	cleanup_dir DIR *proc = opendir("/proc");
	struct dirent *de;
	pid_t self = getpid();
	while (proc && (de = readdir(proc))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 1 || pid == self)
			continue;
		char path[64];
		snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
		size_t len = 0;
		cleanup_free char *cmd = read_file(path, 16384, &len);
		bool ours = false;
		/* Only runtime processes (crun, runsc and its re-executed helpers)
		 * are matched by their arguments: an operator's `tail` of a file in
		 * the state directory is not ours to kill. */
		const char *base = cmd && len ? strrchr(cmd, '/') : NULL;
		base = base ? base + 1 : cmd;
		bool runtime = base && (!strncmp(base, "crun", 4) || !strncmp(base, "runsc", 5) ||
					!strcmp(base, "exe"));
		for (size_t i = 0; runtime && i < len; i += strlen(cmd + i) + 1)
			ours |= strstr(cmd + i, needle) != NULL;
		snprintf(path, sizeof path, "/proc/%ld/cgroup", pid);
		/* (With no cgroup parent yet, ":/" would mark every process.) */
		cleanup_free char *cg = ours || !e->cg.parent[0] ? NULL : read_file(path, 16384, NULL);
		if (cg) {
			cleanup_free char *mark = xasprintf(":%s/", e->cg.parent);
			ours = strstr(cg, mark) != NULL;
		}
		if (ours && kill((pid_t)pid, SIGKILL) == 0)
			killed++;
	}
	return killed;
}

/* Deletes every container a dead engine left under one runtime's root, in
 * passes until the runtime lists none: a container the killed processes
 * were still letting go of, or one whose delete the runtime refused the
 * first time (CI once saw a runsc container outlive the sweep and reach
 * the leak report), gets another try a moment later. What still resists
 * is said, and stays for `bulkhead leaks` and gc. */
#define SWEEP_PASSES 5
#define SWEEP_PASS_WAIT_US 200000

static void sweep_runtime(bh_engine *e, struct runtime *rt)
{
	for (int pass = 0; pass < SWEEP_PASSES; pass++) {
		char **names = NULL;
		size_t n = runtime_list_sync(rt, &names);
		if (!n)
			return;
		if (pass)
			usleep(SWEEP_PASS_WAIT_US);
		for (size_t i = 0; i < n; i++) {
			bool known = e->store && store_knows_sandbox(e->store, names[i]);
			if (!pass) {
				bh_log(e, BH_LOG_WARN, "deleting %s container %s left by a dead engine%s",
				       rt->ops->name, names[i],
				       known ? "" : " (an orphan: no registry row)");
				if (e->store)
					store_event(e->store, known ? "leftover_deleted" : "orphan_reaped",
						    "", names[i], rt->ops->name);
			} else {
				bh_log(e, BH_LOG_WARN, "%s container %s is still listed after %d "
						       "delete%s: deleting it again",
				       rt->ops->name, names[i], pass, pass == 1 ? "" : "s");
			}
			runtime_destroy_sync(rt, names[i]);
			free(names[i]);
		}
		free(names);
	}
	char **names = NULL;
	size_t n = runtime_list_sync(rt, &names);
	for (size_t i = 0; i < n; i++) {
		bh_log(e, BH_LOG_ERROR, "%s container %s left by a dead engine resisted %d deletes: "
					"`bulkhead leaks` lists it, `bulkhead gc` tries again",
		       rt->ops->name, names[i], SWEEP_PASSES);
		free(names[i]);
	}
	free(names);
}

static void sweep_leftovers(bh_engine *e)
{
	cgroups_thaw_all(&e->cg);
	size_t killed = kill_our_processes(e);
	if (killed)
		bh_log(e, BH_LOG_WARN, "killed %zu processes a dead engine left in %s", killed,
		       e->state_dir);
	/* A runtime asked to delete a container whose processes are still
	 * dying can refuse: wait (half a second at most) for them to be gone. */
	for (int i = 0; killed && i < 25; i++) {
		usleep(20000);
		children_reap(e);
		killed = kill_our_processes(e);
	}
	for (int t = 0; t < BH_TIER_COUNT; t++) {
		struct runtime *rt = &e->runtimes[t];
		if (rt->ops && rt->path)
			sweep_runtime(e, rt);
	}
	/* Bundles go, but for hibernated sessions': their next call restores
	 * from bundle and image. */
	cleanup_dir DIR *d = opendir_nofollow(e->bundles_dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.' || sessions_keeps_bundle(e, de->d_name))
			continue;
		cleanup_free char *p = xasprintf("%s/%s", e->bundles_dir, de->d_name);
		rm_rf(p);
	}
	mkdir_p(e->bundles_dir, 0700);
	/* Images likewise: one whose checkpoint a dead engine never finished
	 * (its row never said hibernated) will never be restored. In a shared
	 * images directory only those this store names are ours to judge. */
	cleanup_dir DIR *di = opendir_nofollow(e->images_dir);
	while (di && (de = readdir(di))) {
		if (de->d_name[0] == '.' || sessions_keeps_bundle(e, de->d_name) ||
		    !engine_image_ours(e, de->d_name))
			continue;
		cleanup_free char *p = engine_image_path(e, de->d_name);
		rm_rf(p);
	}
	/* Killed processes leave their cgroups a moment later. */
	for (int i = 0; i < 50; i++) {
		children_reap(e);
		cgroups_cleanup(&e->cg);
		char **left = NULL;
		size_t n = cgroups_list(&e->cg, &left);
		for (size_t j = 0; j < n; j++)
			free(left[j]);
		free(left);
		if (!n)
			break;
		usleep(20000);
	}
}

/* ---- fleet (issue 20): the images directory ---- */

char *engine_image_path(bh_engine *e, const char *name)
{
	return xasprintf("%s/%s", e->images_dir, name);
}

bool engine_image_ours(bh_engine *e, const char *name)
{
	/* Another host's image in a shared directory is its, or the next
	 * adopter's: never reaped, budgeted or listed here. */
	return !e->images_shared || (e->store && store_knows_sandbox(e->store, name));
}

/* The images directory a state directory was last opened with, kept in
 * STATE/images-dir: an engine opened on it without one (a command run
 * while its daemon is stopped) must not take the shared images for gone
 * and end the sessions hibernated there. NULL when there is none. */
#define IMAGES_NOTE "images-dir"

static char *images_note_read(bh_engine *e)
{
	if (e->state_fd < 0)
		return NULL;
	cleanup_close int fd = openat(e->state_fd, IMAGES_NOTE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char buf[PATH_MAX + 1];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	rtrim(buf);
	return *buf == '/' ? xstrdup(buf) : NULL;
}

static void images_note_write(bh_engine *e)
{
	cleanup_free char *have = images_note_read(e);
	if (have && !strcmp(have, e->images_dir))
		return;
	cleanup_free char *path = xasprintf("%s/" IMAGES_NOTE, e->state_dir);
	cleanup_free char *text = xasprintf("%s\n", e->images_dir);
	if (write_file_atomic(path, text, strlen(text), 0644) < 0)
		bh_log(e, BH_LOG_WARN, "cannot note the images directory in %s: %s", path,
		       strerror(errno));
}

/* STATE/images (made when the first image is written), or the operator's
 * shared directory (or the one the state directory was last opened with):
 * made if missing (not by a read-only engine), then held to the state
 * directory's rule, where it really is. */
static int images_dir_open(bh_engine *e, const struct bh_config *cfg, bh_error **err)
{
	cleanup_free char *noted = NULL;
	if (!cfg->images_dir || !*cfg->images_dir)
		noted = images_note_read(e);
	if ((!cfg->images_dir || !*cfg->images_dir) && !noted) {
		e->images_dir = xasprintf("%s/images", e->state_dir);
		return 0;
	}
	const char *dir = noted ? noted : cfg->images_dir;
	if (noted)
		bh_log(e, BH_LOG_INFO, "hibernation images in %s, as when %s was last opened "
		       "(%s/" IMAGES_NOTE ")", dir, e->state_dir, e->state_dir);
	e->images_shared = true;
	struct stat st;
	if (!e->read_only && lstat(dir, &st) < 0 && errno == ENOENT && mkdir_p_named(dir, 0700) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "create images directory %s", dir);
	if (e->read_only && lstat(dir, &st) < 0 && errno == ENOENT) {
		e->images_dir = xstrdup(dir); /* nothing in it to read */
		return 0;
	}
	if (images_dir_check(dir, err) < 0)
		return -1;
	char real[PATH_MAX];
	if (!realpath(dir, real))
		return bh_fail(err, BH_E_SYSTEM, errno, "resolve images directory %s", dir);
	if (strcmp(real, dir) && images_dir_check(real, err) < 0)
		return -1;
	e->images_dir = xstrdup(real);
	if (!e->read_only)
		images_note_write(e);
	return 0;
}

/* History retention: the same job at start and every hour. */
static void on_prune(bh_engine *e, void *arg)
{
	(void)arg;
	int64_t cutoff = (int64_t)now_real_ms() - (int64_t)e->policy.history_days * 86400000;
	bh_error *err = NULL;
	long long n = store_prune(e->store, cutoff, &err);
	if (n < 0) {
		bh_log(e, BH_LOG_WARN, "%s", err->msg);
		bh_error_free(err);
	} else if (n > 0) {
		bh_log(e, BH_LOG_INFO, "pruned %lld records older than %u days", n, e->policy.history_days);
	}
	e->prune = loop_timer(e->loop, PRUNE_MS, on_prune, NULL);
}

/* WAL checkpoints run from the loop, never inside a cell's commit: on a
 * timer whether or not commits keep coming (a steady trickle must not
 * grow the WAL for ever), and in the round after a commit that filled it
 * (the round after its answer was handed over). */
static void on_checkpoint(bh_engine *e, void *arg)
{
	(void)arg;
	store_checkpoint(e->store, CHECKPOINT_IDLE_US);
	e->checkpoint = loop_timer(e->loop, CHECKPOINT_MS, on_checkpoint, NULL);
}

static void on_checkpoint_soon(bh_engine *e, void *arg)
{
	(void)arg;
	e->checkpoint_soon = NULL;
	store_checkpoint(e->store, CHECKPOINT_IDLE_US);
}

static void on_wal_full(void *arg)
{
	bh_engine *e = arg;
	if (!e->checkpoint_soon && e->loop)
		e->checkpoint_soon = loop_timer(e->loop, 0, on_checkpoint_soon, NULL);
}

static void on_tick(bh_engine *e, void *arg)
{
	(void)arg;
	children_reap(e); /* strays (runsc's helpers) have no pidfd of ours */
	usage_tick(e);
	reclaim_tick(e); /* ---- density ---- */
	e->tick = loop_timer(e->loop, TICK_MS, on_tick, NULL);
}

int bh_engine_open(const struct bh_config *cfg, bh_engine **out, bh_error **err)
{
	return engine_open(cfg, NULL, out, err);
}

int engine_open(const struct bh_config *cfg, const struct bh_test_hooks *hooks, bh_engine **out,
		bh_error **err)
{
	*out = NULL;
	const struct bh_test_hooks no_hooks = {0};
	if (!hooks)
		hooks = &no_hooks;
	struct bh_config none = {0};
	if (!cfg)
		cfg = &none;
	bool ro = cfg->read_only;
	const char *dir = bh_state_dir_name(cfg->state_dir);
	/* An engine that runs sandboxes needs every directory above the state
	 * directory open to them; refused before anything is created. */
	bool runs_sandboxes = !ro && !cfg->inspect_only && !cfg->skip_proofs;
	if (runs_sandboxes && state_dir_parents_check(dir, err) < 0)
		return -1;
	if (!ro && mkdir_p_named(dir, 0711) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "create state directory %s", dir);
	/* Reading a state directory that does not exist finds nothing in it. */
	struct stat named;
	bool absent = ro && lstat(dir, &named) < 0 && errno == ENOENT;
	if (!absent && bh_state_dir_check(dir, err) < 0)
		return -1;
	char real[PATH_MAX];
	if (absent)
		snprintf(real, sizeof real, "%s", dir);
	else if (!realpath(dir, real))
		return bh_fail(err, BH_E_SYSTEM, errno, "resolve state directory %s", dir);
	/* Again where it really is: a symbolic link, or parents mkdir_p made
	 * under a strict umask. */
	if (runs_sandboxes && state_dir_parents_check(real, err) < 0)
		return -1;

	bh_engine *e = xzalloc(sizeof *e);
	e->lock_fd = -1;
	e->uid_region_fd = -1;
	e->state_fd = -1;
	e->warden_pidfd = -1;
	e->log = cfg->log;
	e->log_arg = cfg->log_arg;
	e->state_dir = xstrdup(real);
	e->reprove = cfg->reprove;
	e->prove_tiers = cfg->prove_tiers;
	e->read_only = ro;
	e->inspect_only = cfg->inspect_only || ro;
	/* The checks again on the descriptor everything else is opened from:
	 * realpath's answer cannot have been swapped under us. */
	e->state_fd = absent ? -1 : open(real, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (!absent && e->state_fd < 0) {
		bh_fail(err, BH_E_SYSTEM, errno, "open state directory %s", real);
		goto fail;
	}
	if (!absent && (state_dir_check_fd(e->state_fd, real, err) < 0 ||
			state_dir_entries_check(e, e->state_fd, real, !ro, err) < 0))
		goto fail;
	/* Sandboxes run as unprivileged host uids and must be able to traverse
	 * to the shared rootfs and the init. Only the traverse bits are added,
	 * to a directory that passed the checks: nothing is taken away. */
	struct stat sd;
	if (!ro && fstat(e->state_fd, &sd) == 0 && (sd.st_mode & 0011) != 0011 &&
	    fchmod(e->state_fd, (sd.st_mode & 07777) | 0011) < 0) {
		bh_fail(err, BH_E_SYSTEM, errno, "let sandboxes traverse %s (chmod go+x)", real);
		goto fail;
	}
	const char *evidence = cfg->evidence_dir && *cfg->evidence_dir ? cfg->evidence_dir : real;
	if (!ro && mkdir_p_named(evidence, 0700) < 0) {
		bh_fail(err, BH_E_SYSTEM, errno, "create evidence directory %s", evidence);
		goto fail;
	}
	/* Resolved once, so the cache is written with no link followed. */
	char evidence_real[PATH_MAX];
	e->evidence_dir = xstrdup(realpath(evidence, evidence_real) ? evidence_real : evidence);
	e->drop_wall = hooks->drop_wall ? xstrdup(hooks->drop_wall) : NULL;
	e->drop_wall_after_proof =
		hooks->drop_wall_after_proof ? xstrdup(hooks->drop_wall_after_proof) : NULL;
	e->memory_limit_mb = cfg->memory_limit_mb ? cfg->memory_limit_mb : 512;
	e->pids_limit = cfg->pids_limit;
	e->keep_content = !cfg->store_digests_only;
	e->crash_at = hooks->crash_at ? xstrdup(hooks->crash_at) : NULL;
	e->uid_region_dir = hooks->uid_region_dir ? xstrdup(hooks->uid_region_dir) : NULL;
	e->usage_off = hooks->usage_off;
	e->started_unix_ms = (int64_t)now_real_ms();
	e->relay_ms = hooks->no_output_relay ? 0 : BH_CHAN_RELAY_DEFAULT_MS; /* stream */
	e->policy = cfg->policy;
	struct bh_policy *pol = &e->policy;
	pol->idle_ms = pol->idle_ms ? pol->idle_ms : 5u * 60u * 1000u;
	pol->hibernate_after_ms = pol->hibernate_after_ms ? pol->hibernate_after_ms : 15u * 60u * 1000u;
	pol->lifetime_ms = pol->lifetime_ms ? pol->lifetime_ms : 30u * 60u * 1000u;
	pol->retention_ms = pol->retention_ms ? pol->retention_ms : 24ull * 3600u * 1000u;
	pol->max_sessions = pol->max_sessions ? pol->max_sessions : 64;
	pol->max_per_owner = pol->max_per_owner ? pol->max_per_owner : 4;
	pol->memory_budget_mb = pol->memory_budget_mb ? pol->memory_budget_mb : 16384;
	pol->max_per_principal = pol->max_per_principal == BH_FAIR_SHARE
					 ? admission_fair_share(pol->max_sessions,
								(uint32_t)((uint64_t)pol->memory_budget_mb *
									   (pol->memory_overcommit_pct > 100
										    ? pol->memory_overcommit_pct
										    : 100) /
									   100u),
								e->memory_limit_mb)
				 : pol->max_per_principal ? pol->max_per_principal
							  : pol->max_sessions;
	pol->history_days = pol->history_days ? pol->history_days : 30;
	pol->disk_budget_mb = pol->disk_budget_mb ? pol->disk_budget_mb : 256;
	pol->images_budget_mb = pol->images_budget_mb ? pol->images_budget_mb : 10240;
	pol->pool_max_age_ms = pol->pool_max_age_ms ? pol->pool_max_age_ms : 10u * 60u * 1000u;
	pol->state_min_free_mb = pol->state_min_free_mb ? pol->state_min_free_mb : 16;
	char key[65];
	sha256_hex(real, strlen(real), key);
	memcpy(e->state_key, key, 12);
	e->state_key[12] = '\0';
	e->loop = loop_new();
	e->children = children_new();
	e->rootfs = xasprintf("%s/rootfs", real);
	e->bundles_dir = xasprintf("%s/bundles", real);
	if (images_dir_open(e, cfg, err) < 0)
		goto fail;
	if (!e->loop) {
		bh_fail(err, BH_E_SYSTEM, errno, "epoll_create1");
		goto fail;
	}
	if (lock_state(e, err) < 0)
		goto fail;
	/* ---- density: this engine's host uids, before any sandbox or
	 * survey of a dead engine's names them ---- */
	if (uid_region_claim(e, runs_sandboxes && !e->inspect_only, err) < 0)
		goto fail;
	/* Container inits are reparented to us when their runtime exits. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		bh_fail(err, BH_E_SYSTEM, errno, "become a child subreaper");
		goto fail;
	}
	/* With SIGCHLD ignored the kernel reaps our children itself and no
	 * runtime command's status would ever reach us. */
	struct sigaction sa;
	if (sigaction(SIGCHLD, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN) {
		bh_log(e, BH_LOG_WARN, "SIGCHLD was ignored by whoever started us; restored the default");
		signal(SIGCHLD, SIG_DFL);
	}
	if (cgroups_setup(&e->cg, e->state_key, err) < 0)
		goto fail;
	if (ro) {
		/* Named, never installed: a read-only engine starts no sandbox. */
		e->init_path = xasprintf("%s/lib/bulkhead-init", real);
		e->interp_dir = xasprintf("%s/lib/interp", real);
	} else {
		if (rootfs_prepare(e->rootfs, err) < 0)
			goto fail;
		const char *init =
			cfg->init_path && *cfg->init_path ? cfg->init_path : getenv("BULKHEAD_INIT");
		if (install_init(e, init, err) < 0)
			goto fail;
		const char *interp =
			cfg->interp_dir && *cfg->interp_dir ? cfg->interp_dir : getenv("BULKHEAD_INTERP");
		if (install_interp(e, interp, err) < 0)
			goto fail;
		if (!e->inspect_only)
			view_open(e);
	}
	e->runtimes[BH_TIER_CONTAINER].ops = &runtime_crun;
	e->runtimes[BH_TIER_KERNEL].ops = &runtime_runsc;
	/* ---- egress: before the proofs, which run with its runtime flag ---- */
	if (!ro && !e->inspect_only && egress_engine_start(e, cfg, err) < 0)
		goto fail;
	for (int t = 0; t < BH_TIER_COUNT; t++) {
		struct runtime *rt = &e->runtimes[t];
		if (rt->ops)
			runtime_preflight(rt, e->state_dir, !ro, rt->why, sizeof rt->why);
	}
	e->store_path = xasprintf("%s/bulkhead.db", real);
	struct stat db;
	if (ro && (absent || (fstatat(e->state_fd, "bulkhead.db", &db, AT_SYMLINK_NOFOLLOW) < 0 &&
			      errno == ENOENT)))
		bh_log(e, BH_LOG_INFO, "%s has no store yet: nothing recorded to read", real);
	else if (store_open(e->store_path, ro, cfg->store_sync_full, &e->store, err) < 0)
		goto fail;
	if (e->store && !ro)
		store_watch_wal(e->store, CHECKPOINT_PAGES, on_wal_full, e);
	if (!e->inspect_only && !cfg->skip_proofs)
		warden_start(e);
	/* ---- inflight: what a dead engine left is looked at before anything
	 * touches it; kept as evidence when asked (the console, serve without
	 * --reap-leftovers), else reaped as the engine takes over. ---- */
	e->keep_leftovers = cfg->keep_leftovers;
	leftovers_survey(e, true);
	if (!e->inspect_only && e->keep_leftovers) {
		leftovers_bound(e); /* ---- report: a crash loop's, bounded ---- */
		leftovers_hold_uids(e);
		sessions_readopt(e);
		on_prune(e, NULL);
	} else if (!e->inspect_only) {
		e->leftovers.reaped_at_open = e->leftovers.any;
		sweep_leftovers(e);
		egress_sweep_stale(e); /* ---- egress ---- */
		sessions_reconcile(e);
		leftovers_reap_interrupted(e);
		on_prune(e, NULL);
	}
	if (!ro)
		e->checkpoint = loop_timer(e->loop, CHECKPOINT_MS, on_checkpoint, NULL);
	e->tick = loop_timer(e->loop, TICK_MS, on_tick, NULL);
	bh_log(e, BH_LOG_INFO, "engine open on %s%s (cgroups %s)", e->state_dir,
	       ro ? " read-only" : "", e->cg.parent);
	*out = e;
	if (cfg->skip_proofs || ro)
		evidence_skip(e);
	else
		evidence_start(e);
	return 0;
fail:
	bh_engine_close(e);
	return -1;
}

/* ---- the loop, for the host ---- */

int bh_engine_fd(bh_engine *e)
{
	return loop_fd(e->loop);
}

int bh_engine_timeout_ms(bh_engine *e)
{
	return loop_timeout_ms(e->loop);
}

int bh_engine_process(bh_engine *e)
{
	loop_run_once(e->loop, e);
	return 0;
}

int bh_engine_wait(bh_engine *e, const bool *done, int timeout_ms, bh_error **err)
{
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : now_mono_us() + (uint64_t)timeout_ms * 1000u;
	while (!done || !*done) {
		uint64_t now = now_mono_us();
		if (now >= deadline)
			return bh_fail(err, BH_E_TIMEOUT, 0, "gave up waiting after %d ms", timeout_ms);
		int wait = loop_timeout_ms(e->loop);
		int left = deadline == UINT64_MAX ? -1 : (int)((deadline - now + 999) / 1000);
		if (wait < 0 || (left >= 0 && left < wait))
			wait = left;
		struct pollfd pfd = {.fd = loop_fd(e->loop), .events = POLLIN};
		if (poll(&pfd, 1, wait) < 0 && errno != EINTR)
			return bh_fail(err, BH_E_SYSTEM, errno, "poll");
		loop_run_once(e->loop, e);
	}
	return 0;
}

const char *bh_engine_state_dir(bh_engine *e)
{
	return e->state_dir;
}

const struct bh_policy *bh_engine_policy(bh_engine *e)
{
	return &e->policy;
}

const char *bh_engine_store_path(bh_engine *e)
{
	return e->store_path;
}

int bh_engine_backup(bh_engine *e, const char *dest, bh_error **err)
{
	return store_backup(e->store, dest, err);
}

const char *bh_engine_cgroup_parent(bh_engine *e)
{
	return e->cg.parent;
}

const char *bh_engine_runtime_root(bh_engine *e, enum bh_tier t)
{
	if (t < 0 || t >= BH_TIER_COUNT || !e->runtimes[t].ops)
		return NULL;
	return e->runtimes[t].root;
}

size_t bh_engine_live_sandboxes(bh_engine *e)
{
	size_t n = 0;
	for (struct sandbox *sb = e->sandboxes; sb; sb = sb->next)
		n += sb->state != SB_HIBERNATED; /* an image on disk runs nothing */
	return n;
}

/* ---- tiers ---- */

bool bh_engine_proven(bh_engine *e)
{
	return e->proofs_running == 0;
}

/* Whether a call can be placed: one pinned to a tier once that tier's proof
 * has finished (the other's may still run), one that names none (the
 * strongest offered) only once every proof has. */
bool engine_tier_decided(bh_engine *e, enum bh_tier tier)
{
	if (tier < 0 || tier >= BH_TIER_COUNT)
		return bh_engine_proven(e);
	return !e->tiers[tier].proving;
}

size_t bh_engine_tiers(bh_engine *e, const struct bh_tier_report **out)
{
	static struct bh_tier_report reports[BH_TIER_COUNT];
	/* Reports point into the engine; the array is only a contiguous view. */
	for (int t = 0; t < BH_TIER_COUNT; t++)
		reports[t] = e->tiers[t].report;
	*out = reports;
	return BH_TIER_COUNT;
}

enum bh_tier bh_engine_best_tier(bh_engine *e)
{
	for (int t = BH_TIER_COUNT - 1; t >= 0; t--)
		if (e->tiers[t].report.offered)
			return (enum bh_tier)t;
	return BH_TIER_UNKNOWN;
}

const char *bh_engine_environment(bh_engine *e, enum bh_tier tier)
{
	if (tier < 0 || tier >= BH_TIER_COUNT)
		return "";
	return e->tiers[tier].environment;
}

int bh_engine_preflight(bh_engine *e, bh_error **err)
{
	if (!bh_engine_proven(e)) {
		char what[512];
		bh_engine_proving(e, what, sizeof what);
		return bh_fail(err, BH_E_RUNTIME, 0,
			       "the isolation tiers are still being proven: %s; calls wait for it", what);
	}
	enum bh_tier best = bh_engine_best_tier(e);
	if (best == BH_TIER_UNKNOWN)
		return bh_fail(err, BH_E_RUNTIME, 0, "no isolation tier is offered (see bulkhead doctor)");
	for (int t = 0; t < BH_TIER_COUNT; t++) {
		const struct runtime *rt = &e->runtimes[t];
		if (e->tiers[t].report.offered && rt->path && access(rt->path, X_OK) < 0)
			return bh_fail(err, BH_E_RUNTIME, errno, "the %s tier's runtime %s is gone",
				       bh_tier_name((enum bh_tier)t), rt->path);
	}
	if (access(e->state_dir, W_OK) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "the state directory %s is not writable",
			       e->state_dir);
	return store_ping(e->store, err);
}

void bh_engine_limits(bh_engine *e, uint32_t *memory_mb, uint32_t *pids)
{
	*memory_mb = e->memory_limit_mb;
	*pids = e->pids_limit;
}

int bh_engine_records(bh_engine *e, const char *session, int64_t after_id, size_t limit,
		      bh_record_fn fn, void *arg, bh_error **err)
{
	return store_record_rows(e->store, session, after_id, limit, fn, arg, err);
}

int bh_engine_events(bh_engine *e, int64_t after_id, size_t limit, bh_event_fn fn, void *arg,
		     bh_error **err)
{
	return store_events(e->store, after_id, limit ? limit : 1000, fn, arg, err);
}

int bh_engine_records_newest(bh_engine *e, const char *session, int64_t before_id, size_t limit,
			     bh_record_fn fn, void *arg, bh_error **err)
{
	return store_record_rows_newest(e->store, session, before_id, limit, fn, arg, err);
}

int bh_engine_record_at(bh_engine *e, const char *session, uint64_t sequence, bh_record_fn fn,
			void *arg, bh_error **err)
{
	return store_record_row_at(e->store, session, sequence, fn, arg, err);
}

int bh_engine_events_newest(bh_engine *e, int64_t before_id, size_t limit, bh_event_fn fn,
			    void *arg, bh_error **err)
{
	return store_events_newest(e->store, before_id, limit ? limit : 1000, fn, arg, err);
}

/* ---- closing ---- */

void bh_engine_close(bh_engine *e)
{
	if (!e)
		return;
	e->closing = true;
	if (e->loop) {
		engine_proofs_done(e); /* pending calls are refused: closing */
		if (e->policy.shutdown_hibernate) {
			sessions_hibernate_for_shutdown(e);
			uint64_t until = now_mono_us() + (uint64_t)CLOSE_BUDGET_MS * 1000u;
			while (sessions_hibernating(e) && now_mono_us() < until) {
				struct pollfd pfd = {.fd = loop_fd(e->loop), .events = POLLIN};
				int wait = loop_timeout_ms(e->loop);
				poll(&pfd, 1, wait < 0 || wait > 100 ? 100 : wait);
				loop_run_once(e->loop, e);
			}
		}
		pool_close_all(e);
		sessions_close_all(e);
		for (struct sandbox *sb = e->sandboxes, *next; sb; sb = next) {
			next = sb->next;
			sandbox_close(e, sb);
		}
		uint64_t deadline = now_mono_us() + (uint64_t)CLOSE_BUDGET_MS * 1000u;
		while ((e->sandboxes || e->proofs_running) && now_mono_us() < deadline) {
			struct pollfd pfd = {.fd = loop_fd(e->loop), .events = POLLIN};
			int wait = loop_timeout_ms(e->loop);
			poll(&pfd, 1, wait < 0 || wait > 100 ? 100 : wait);
			loop_run_once(e->loop, e);
		}
		while (e->sandboxes)
			sandbox_abandon(e, e->sandboxes);
		children_reap(e);
	}
	/* Each ended sandbox removed its own bundle; what is left belongs to
	 * hibernated sessions the next engine re-adopts. */
	warden_stop(e);
	/* inflight: a dead engine's cgroups kept as evidence stay until reaped. */
	if (e->lock_fd >= 0 && e->cg.parent[0] && !e->inspect_only &&
	    !(e->keep_leftovers && e->leftovers.any))
		cgroups_cleanup(&e->cg);
	egress_engine_stop(e); /* ---- egress: its last notes into the store ---- */
	sessions_free(e);
	pool_free(e);
	store_close(e->store);
	evidence_free(e);
	for (int t = 0; t < BH_TIER_COUNT; t++) {
		free(e->runtimes[t].path);
		free(e->runtimes[t].root);
	}
	if (e->loop)
		children_release(e);
	loop_free(e->loop);
	if (e->lock_fd >= 0)
		close(e->lock_fd);
	uid_region_release(e);
	if (e->state_fd >= 0)
		close(e->state_fd);
	free(e->state_dir);
	free(e->init_path);
	free(e->interp_dir);
	view_close(e);
	free(e->rootfs);
	free(e->bundles_dir);
	free(e->images_dir);
	free(e->drop_wall);
	free(e->drop_wall_after_proof);
	free(e->evidence_dir);
	free(e->store_path);
	free(e->crash_at);
	free(e);
}

/* ---- stream ---- */
int bh_engine_cells(bh_engine *e, const char *session, uint64_t before_sequence, size_t limit,
		    bh_cell_row_fn fn, void *arg, bh_error **err)
{
	bh_error *local = NULL;
	if (!e->store)
		return bh_fail(err, BH_E_INVALID, 0, "cells: this engine keeps no store");
	int rc = store_cells(e->store, session, before_sequence, limit, fn, arg, err ? err : &local);
	bh_error_free(local);
	return rc;
}
