#include "hostile.h"
#include "util.h"

#include <arpa/inet.h>
#include <criterion/hooks.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

struct harness h;
enum bh_tier tier;

static const char *test_root(void)
{
	const char *r = getenv("BULKHEAD_TEST_ROOT");
	return r && *r ? r : "/tmp/bulkhead-tests";
}

/* ---- the canaries ---- */

static struct {
	int tcp, unx;
	int port;
	char abstract[64];
	char dir[4096], path[4200], token[4200];
	char file_sha[65];
	char bins[3][4096];
	char bin_sha[3][65];
	size_t n_bins;
	pid_t pid;
	long rss_start;
	double clock_skew; /* realtime - monotonic, seconds */
} cn;

static bh_session *bystander;
static long bystander_n;
static bh_session *opened[8];
static size_t n_opened;

/* ---- rows ---- */

struct row {
	char name[128];
	char saw[1024];
	char host[512];
	bool passed;
};
static struct row rows[64];
static size_t n_rows;
static bool case_open;

static double clock_skew(void)
{
	struct timespec r, m;
	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return (double)(r.tv_sec - m.tv_sec) + (r.tv_nsec - m.tv_nsec) / 1e9;
}

static void canaries_arm(void)
{
	memset(&cn, 0, sizeof cn);
	cn.pid = getpid();
	/* A listener on every host address: loopback and the host's own. */
	cn.tcp = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
	cr_assert_eq(bind(cn.tcp, (struct sockaddr *)&a, sizeof a), 0, "bind: %s", strerror(errno));
	cr_assert_eq(listen(cn.tcp, 16), 0);
	socklen_t alen = sizeof a;
	getsockname(cn.tcp, (struct sockaddr *)&a, &alen);
	cn.port = ntohs(a.sin_port);
	/* A host abstract unix socket (the containerd-shim class). */
	snprintf(cn.abstract, sizeof cn.abstract, "bh-hostile-canary-%d", (int)cn.pid);
	cn.unx = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_un u = {.sun_family = AF_UNIX};
	memcpy(u.sun_path + 1, cn.abstract, strlen(cn.abstract));
	cr_assert_eq(bind(cn.unx, (struct sockaddr *)&u,
			  (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(cn.abstract))),
		     0, "bind abstract: %s", strerror(errno));
	cr_assert_eq(listen(cn.unx, 16), 0);
	/* A host file with a secret, a directory nothing may appear in, and a
	 * stand-in for the daemon's token file (0600, as the daemon keeps it). */
	snprintf(cn.dir, sizeof cn.dir, "%s/hostile-canary-XXXXXX", test_root());
	cr_assert_not_null(mkdtemp(cn.dir));
	snprintf(cn.path, sizeof cn.path, "%s/secret", cn.dir);
	char secret[33];
	random_hex(16, secret);
	cr_assert_eq(write_file_atomic(cn.path, secret, strlen(secret), 0644), 0);
	snprintf(cn.token, sizeof cn.token, "%s/token", cn.dir);
	cr_assert_eq(write_file_atomic(cn.token, secret, strlen(secret), 0600), 0);
	cr_assert_eq(sha256_file_hex(cn.path, cn.file_sha), 0);
	/* The runtime binaries (CVE-2019-5736) and the init the engine binds in. */
	const char *cands[] = {"/usr/bin/crun", "/usr/bin/runsc", BH_TEST_INIT};
	for (size_t i = 0; i < 3; i++) {
		if (sha256_file_hex(cands[i], cn.bin_sha[cn.n_bins]) == 0)
			snprintf(cn.bins[cn.n_bins++], sizeof cn.bins[0], "%s", cands[i]);
	}
	cn.rss_start = harness_rss_kib();
	cn.clock_skew = clock_skew();
}

static void canaries_disarm(void)
{
	if (cn.tcp > 0)
		close(cn.tcp);
	if (cn.unx > 0)
		close(cn.unx);
	cn.tcp = cn.unx = 0;
	if (cn.dir[0]) {
		unlink(cn.path);
		unlink(cn.token);
		rmdir(cn.dir);
	}
}

int canary_port(void) { return cn.port; }
const char *canary_abstract(void) { return cn.abstract; }
const char *canary_path(void) { return cn.path; }
const char *canary_dir(void) { return cn.dir; }
const char *host_token_path(void) { return cn.token; }

int host_gateway(char *out, size_t n)
{
	FILE *f = fopen("/proc/net/route", "r");
	char line[512];
	int ret = -1;
	while (f && fgets(line, sizeof line, f)) {
		char ifc[64];
		unsigned dest, gw;
		if (sscanf(line, "%63s %x %x", ifc, &dest, &gw) == 3 && dest == 0 && gw != 0) {
			struct in_addr a = {.s_addr = gw};
			inet_ntop(AF_INET, &a, out, (socklen_t)n);
			ret = 0;
			break;
		}
	}
	if (f)
		fclose(f);
	return ret;
}

int host_address(char *out, size_t n)
{
	struct ifaddrs *ifs = NULL, *i;
	int ret = -1;
	if (getifaddrs(&ifs) < 0)
		return -1;
	for (i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		struct sockaddr_in *a = (struct sockaddr_in *)i->ifa_addr;
		if ((ntohl(a->sin_addr.s_addr) >> 24) == 127)
			continue;
		inet_ntop(AF_INET, &a->sin_addr, out, (socklen_t)n);
		ret = 0;
		break;
	}
	freeifaddrs(ifs);
	return ret;
}

/* ---- sessions ---- */

static const char prelude[] =
	"import ctypes as _ct, errno as _errno, os, socket, subprocess, sys, time\n"
	"_libc = _ct.CDLL(None, use_errno=True)\n"
	"def _en(e): return _errno.errorcode.get(e, str(e))\n"
	"def sc(name, nr, *a):\n"
	"    _ct.set_errno(0)\n"
	"    r = _libc.syscall(_ct.c_long(nr), *[_ct.c_long(x) if isinstance(x, int) else x for x in a])\n"
	"    print(name, 'OK' if r >= 0 else _en(_ct.get_errno()))\n"
	"def tryop(name, f):\n"
	"    try:\n"
	"        r = f(); print(name, 'OK')\n"
	"        return r\n"
	"    except OSError as e:\n"
	"        print(name, _en(e.errno) if e.errno else type(e).__name__)\n"
	"    except Exception as e:\n"
	"        print(name, type(e).__name__)\n";

bh_session *hostile_session(void)
{
	bh_session *s = harness_session(&h, tier, 1u << BH_LANG_PYTHON);
	cr_assert_lt(n_opened, sizeof opened / sizeof opened[0]);
	opened[n_opened++] = s;
	return s;
}

struct cell_outcome *py(bh_session *s, const char *code, uint32_t timeout_ms)
{
	size_t n = strlen(prelude) + strlen(code) + 1;
	char *full = malloc(n);
	snprintf(full, n, "%s%s", prelude, code);
	struct cell_outcome *o = harness_cell(&h, s, BH_LANG_PYTHON, full, timeout_ms);
	free(full);
	cr_assert(o->answered, "the cell was not answered: %s\nengine log:\n%s",
		  o->err_msg ? o->err_msg : "", h.log);
	return o;
}

const char *probe(const char *out, const char *name, char *val, size_t vlen)
{
	size_t nl = strlen(name);
	for (const char *p = out; p && *p;) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		if (len > nl && !strncmp(p, name, nl) && p[nl] == ' ') {
			size_t v = len - nl - 1;
			if (v >= vlen)
				v = vlen - 1;
			memcpy(val, p + nl + 1, v);
			val[v] = '\0';
			return val;
		}
		p = eol ? eol + 1 : NULL;
	}
	return NULL;
}

void assert_blocked(const char *out, const char *const *names)
{
	for (const char *const *n = names; *n; n++) {
		char v[128];
		cr_assert_not_null(probe(out, *n, v, sizeof v), "probe %s did not run:\n%s", *n, out);
		cr_assert_str_neq(v, "OK", "%s succeeded inside the sandbox:\n%s", *n, out);
		case_saw("%s %s", *n, v);
	}
}

/* ---- the frame ---- */

static void bystander_check(void)
{
	struct cell_outcome *o = harness_cell(&h, bystander, BH_LANG_PYTHON, "n += 1; n", 0);
	cr_assert(o->answered, "the bystander session stopped answering: %s\n%s",
		  o->err_msg ? o->err_msg : "", h.log);
	char want[32];
	snprintf(want, sizeof want, "%ld\n", ++bystander_n);
	cr_assert_str_eq(o->out, want, "the bystander lost its state: %s", o->out);
	cell_outcome_free(o);
}

static void setup_with(enum bh_tier t, const struct bh_egress_ops *egress, void *egress_arg);

void hostile_setup(enum bh_tier t)
{
	setup_with(t, NULL, NULL);
}

/* ---- egress (plumb) ---- */
void hostile_setup_egress(enum bh_tier t, const struct bh_egress_ops *ops, void *arg)
{
	setup_with(t, ops, arg);
}

static void setup_with(enum bh_tier t, const struct bh_egress_ops *egress, void *egress_arg)
{
	tier = t;
	n_rows = 0;
	n_opened = 0;
	case_open = false;
	canaries_arm();
	if (egress)
		harness_open_egress(&h, egress, egress_arg);
	else
		harness_open(&h, NULL);
	harness_require_tier(&h, t);
	bystander = harness_session(&h, t, 1u << BH_LANG_PYTHON);
	struct cell_outcome *o = harness_cell(&h, bystander, BH_LANG_PYTHON, "n = 0", 0);
	cr_assert(o->answered, "bystander: %s", o->err_msg ? o->err_msg : "");
	cell_outcome_free(o);
	bystander_n = 0;
}

void case_begin(const char *name)
{
	cr_assert_lt(n_rows, sizeof rows / sizeof rows[0]);
	struct row *r = &rows[n_rows++];
	memset(r, 0, sizeof *r);
	snprintf(r->name, sizeof r->name, "%s", name);
	case_open = true;
}

void case_saw(const char *fmt, ...)
{
	if (!n_rows)
		return;
	struct row *r = &rows[n_rows - 1];
	size_t used = strlen(r->saw);
	if (used && used < sizeof r->saw - 2) {
		r->saw[used++] = ';';
		r->saw[used++] = ' ';
		r->saw[used] = '\0';
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->saw + used, sizeof r->saw - used, fmt, ap);
	va_end(ap);
}

void case_end(void)
{
	struct row *r = &rows[n_rows - 1];
	/* The canary file, unchanged. */
	char sha[65];
	cr_assert_eq(sha256_file_hex(cn.path, sha), 0, "the canary file is gone");
	cr_assert_str_eq(sha, cn.file_sha, "the canary file changed");
	/* Nothing reached the host's listeners. */
	int c = accept(cn.tcp, NULL, NULL);
	cr_assert_eq(c, -1, "the host listener on port %d was reached", cn.port);
	c = accept(cn.unx, NULL, NULL);
	cr_assert_eq(c, -1, "the host's abstract socket was reached");
	/* Nothing appeared in the host directory. */
	char cmd[4300];
	snprintf(cmd, sizeof cmd, "%s", cn.dir);
	DIR *d = opendir(cmd);
	cr_assert_not_null(d);
	size_t entries = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			entries++;
	closedir(d);
	cr_assert_eq(entries, 2, "something appeared in the host directory %s", cn.dir);
	/* The engine: the same process, its memory within a bound (64 MiB of
	 * growth over a whole test, slack for the allocator). */
	cr_assert_eq(getpid(), cn.pid);
	long rss = harness_rss_kib();
	cr_assert_lt(rss - cn.rss_start, 64 * 1024, "engine RSS grew by %ld KiB", rss - cn.rss_start);
	/* The runtime binaries and the init, unchanged. */
	for (size_t i = 0; i < cn.n_bins; i++) {
		cr_assert_eq(sha256_file_hex(cn.bins[i], sha), 0, "%s is gone", cn.bins[i]);
		cr_assert_str_eq(sha, cn.bin_sha[i], "%s changed", cn.bins[i]);
	}
	/* The host clock was not set (0.5 s of slack for NTP slewing). */
	double skew = clock_skew() - cn.clock_skew;
	cr_assert(skew > -0.5 && skew < 0.5, "the host clock moved by %.3f s", skew);
	/* The other session still answers, its state intact. */
	bystander_check();
	snprintf(r->host, sizeof r->host,
		 "canary sha256 same; 0 connections (tcp :%d, abstract); canary dir unchanged; "
		 "engine pid %d, RSS %+ld KiB; crun/runsc/init sha256 same; clock skew %.3f s; "
		 "bystander answered %ld",
		 cn.port, (int)cn.pid, rss - cn.rss_start, skew, bystander_n);
	r->passed = true;
	case_open = false;
}

static void write_rows(void)
{
	const char *path = getenv("BH_HOSTILE_ROWS");
	if (!path || !n_rows)
		return;
	FILE *f = fopen(path, "a");
	if (!f)
		return;
	for (size_t i = 0; i < n_rows; i++) {
		struct row *r = &rows[i];
		for (char *p = r->saw; *p; p++)
			if (*p == '\t' || *p == '\n' || *p == '|')
				*p = ' ';
		fprintf(f, "%s\t%s\t%s\t%s\t%s\n", r->name, bh_tier_name(tier),
			r->passed ? "pass" : "FAIL", r->saw[0] ? r->saw : "-",
			r->passed ? r->host : "the case did not finish (see the test's failure)");
	}
	fclose(f);
}

void hostile_teardown(void)
{
	write_rows();
	n_rows = 0;
	/* Closing the engine kills and deletes every sandbox it holds. */
	bystander = NULL;
	n_opened = 0;
	harness_close(&h);
	canaries_disarm();
}

/* ---- RESULTS.md, assembled by the runner once every test has run ---- */

static char rows_path[4200];

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	(void)set;
	snprintf(rows_path, sizeof rows_path, "%s/hostile-rows-%d.tsv", test_root(), (int)getpid());
	mkdir(test_root(), 0711);
	unlink(rows_path);
	setenv("BH_HOSTILE_ROWS", rows_path, 1);
}

static int cmp_rows(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A notes file copied under the table, after a blank line (none: nothing). */
static void append_notes(FILE *f, const char *path)
{
	FILE *notes = fopen(path, "r");
	if (!notes)
		return;
	fputc('\n', f);
	char buf[4096];
	size_t got;
	while ((got = fread(buf, 1, sizeof buf, notes)) > 0)
		fwrite(buf, 1, got, f);
	fclose(notes);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	FILE *in = fopen(rows_path, "r");
	if (!in)
		return;
	char *lines[1024];
	size_t n = 0;
	char buf[4096];
	while (n < 1024 && fgets(buf, sizeof buf, in))
		lines[n++] = strdup(buf);
	fclose(in);
	unlink(rows_path);
	if (getenv("BH_HOSTILE_NO_RESULTS"))
		goto out;
	qsort(lines, n, sizeof *lines, cmp_rows);
	FILE *f = fopen(BH_HOSTILE_RESULTS, "w");
	if (!f)
		goto out;
	size_t pass[2] = {0}, total[2] = {0};
	for (size_t i = 0; i < n; i++) {
		int k = strstr(lines[i], "\tkernel\t") ? 1 : 0;
		total[k]++;
		if (strstr(lines[i], "\tpass\t"))
			pass[k]++;
	}
	time_t now = time(NULL);
	char when[64];
	strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&now));
	fprintf(f,
		"# Hostile suite results\n\n"
		"Generated by `build/tests/test_hostile --jobs 2` (tests/hostile) on %s; do not edit by "
		"hand.\nEach case is code a cell runs inside a session of the tier; the outcome is "
		"asserted from outside, and after every case the host canaries are checked unchanged "
		"(a canary file's hash, a host TCP listener on every address and a host abstract unix "
		"socket that must see no connection, a host directory nothing may appear in, the "
		"engine's pid and RSS growth, the crun/runsc/init binaries' hashes, the host clock, "
		"and a bystander session that must keep answering with its state).\n\n"
		"Criterion: %zu tests, %zu passed, %zu failed, %zu crashed. Cases: container %zu/%zu "
		"passed, kernel %zu/%zu passed.\n\n"
		"| case | tier | outcome | what the cell saw | what the host checked |\n"
		"|---|---|---|---|---|\n",
		when, stats->nb_tests, stats->tests_passed, stats->tests_failed, stats->tests_crashed,
		pass[0], total[0], pass[1], total[1]);
	for (size_t i = 0; i < n; i++) {
		char *cols[5] = {0};
		char *save = NULL, *p = strtok_r(lines[i], "\t\n", &save);
		for (int c = 0; c < 5 && p; c++, p = strtok_r(NULL, "\t\n", &save))
			cols[c] = p;
		if (!cols[4])
			continue;
		fprintf(f, "| %s | %s | %s | %s | %s |\n", cols[0], cols[1], cols[2], cols[3], cols[4]);
	}
	/* What the table cannot say: the profile compared with Docker's. */
	append_notes(f, BH_HOSTILE_NOTES);
	/* ---- e2e: the broker's host-side cases (issue 18), listed by their tests ---- */
	append_notes(f, BH_HOSTILE_BROKER_NOTES);
	fclose(f);
out:
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
}
