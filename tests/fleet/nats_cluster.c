/* A real nats-server cluster on loopback (nats_cluster.h says what and why). */
#include "nats_cluster.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <nats/nats.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NATS_SERVER "/usr/sbin/nats-server"
#define MAX_PAYLOAD (9u << 20) /* bulkhead's bodies go to 8 MiB; NATS's default is 1 MiB */
#define RELAY_BUF 65536

struct node {
	char name[16];
	char dir[4096];
	pid_t pid;
	int client_port, route_port; /* route_port 0 while it is not running */
	unsigned starts;
	char url[64];
};

struct relay_conn {
	struct relay_conn *next;
	int a, b; /* a: the node that dialled, b: the node dialled */
	unsigned from, to;
	uint8_t ab[RELAY_BUF], ba[RELAY_BUF];
	size_t ab_len, ab_off, ba_len, ba_off;
	bool dead;
};

struct nats_cluster {
	char dir[2048];
	unsigned n;
	unsigned max_payload;
	struct node nodes[NATS_CLUSTER_MAX];
	char urls[NATS_CLUSTER_MAX * 64];
	int dead_fd, dead_port; /* the advertised route address: bound, never listening */
	int relay_fd[NATS_CLUSTER_MAX][NATS_CLUSTER_MAX], relay_port[NATS_CLUSTER_MAX][NATS_CLUSTER_MAX];
	/* shared with the relay thread */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool cut[NATS_CLUSTER_MAX];
	int dest_port[NATS_CLUSTER_MAX];
	unsigned routes[NATS_CLUSTER_MAX];
	uint64_t asked, done; /* commands to the thread and their acknowledgement */
	bool stop;
	int wake[2];
	pthread_t thread;
	bool thread_started;
	/* the thread's own */
	struct relay_conn *conns;
};

/* ---- clean-up at exit: clusters a failing test did not stop ---- */

static struct nats_cluster *live[8];

static void stop_live_at_exit(void)
{
	for (size_t i = 0; i < sizeof live / sizeof live[0]; i++)
		if (live[i])
			nats_cluster_stop(live[i]);
}

static void track(struct nats_cluster *c)
{
	static bool registered;
	if (!registered) {
		atexit(stop_live_at_exit);
		registered = true;
	}
	for (size_t i = 0; i < sizeof live / sizeof live[0]; i++)
		if (!live[i]) {
			live[i] = c;
			return;
		}
	cr_assert_fail("more than %zu NATS clusters at once", sizeof live / sizeof live[0]);
}

static void untrack(struct nats_cluster *c)
{
	for (size_t i = 0; i < sizeof live / sizeof live[0]; i++)
		if (live[i] == c)
			live[i] = NULL;
}

/* ---- small helpers ---- */

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* A loopback TCP socket bound to a port of the kernel's choosing. */
static int bound_socket(int *port, bool listening)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0, "socket: %s", strerror(errno));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0, "bind: %s", strerror(errno));
	socklen_t len = sizeof sa;
	getsockname(fd, (struct sockaddr *)&sa, &len);
	*port = ntohs(sa.sin_port);
	if (listening)
		cr_assert_eq(listen(fd, 16), 0, "listen: %s", strerror(errno));
	return fd;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

/* ---- the relays (one thread for all) ---- */

static void conn_close(struct nats_cluster *c, struct relay_conn *k)
{
	if (k->dead)
		return;
	close(k->a);
	close(k->b);
	k->dead = true;
	pthread_mutex_lock(&c->lock);
	c->routes[k->from]--;
	c->routes[k->to]--;
	pthread_mutex_unlock(&c->lock);
}

static void relay_accept(struct nats_cluster *c, unsigned from, unsigned to)
{
	int a = accept4(c->relay_fd[from][to], NULL, NULL, SOCK_CLOEXEC);
	if (a < 0)
		return;
	pthread_mutex_lock(&c->lock);
	bool cut = c->cut[from] || c->cut[to];
	int port = c->dest_port[to];
	pthread_mutex_unlock(&c->lock);
	if (cut || !port) {
		close(a); /* a partition: the route is refused */
		return;
	}
	int b = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons((uint16_t)port)};
	if (b < 0 || connect(b, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(a);
		if (b >= 0)
			close(b);
		return;
	}
	fcntl(a, F_SETFL, O_NONBLOCK);
	fcntl(b, F_SETFL, O_NONBLOCK);
	struct relay_conn *k = calloc(1, sizeof *k);
	cr_assert_not_null(k);
	k->a = a;
	k->b = b;
	k->from = from;
	k->to = to;
	k->next = c->conns;
	c->conns = k;
	pthread_mutex_lock(&c->lock);
	c->routes[from]++;
	c->routes[to]++;
	pthread_mutex_unlock(&c->lock);
}

/* Moves what src has into buf (when buf is empty) and buf into dst. */
static bool pump(int src, int dst, uint8_t *buf, size_t *len, size_t *off, short src_ev)
{
	if ((src_ev & (POLLIN | POLLHUP | POLLERR)) && *len == 0) {
		ssize_t r = read(src, buf, RELAY_BUF);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			return false;
		if (r > 0) {
			*len = (size_t)r;
			*off = 0;
		}
	}
	if (*len > *off) { /* non-blocking: what the peer takes now */
		ssize_t w = write(dst, buf + *off, *len - *off);
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return false;
		if (w > 0)
			*off += (size_t)w;
		if (*off == *len)
			*len = *off = 0;
	}
	return true;
}

static void *relay_main(void *arg)
{
	struct nats_cluster *c = arg;
	struct pollfd *pfd = NULL;
	size_t cap = 0;
	for (;;) {
		pthread_mutex_lock(&c->lock);
		bool stop = c->stop;
		uint64_t asked = c->asked;
		bool cut[NATS_CLUSTER_MAX];
		memcpy(cut, c->cut, sizeof cut);
		pthread_mutex_unlock(&c->lock);
		/* a cut node's routes are closed, a stopped cluster's all */
		for (struct relay_conn *k = c->conns; k; k = k->next)
			if (stop || cut[k->from] || cut[k->to])
				conn_close(c, k);
		for (struct relay_conn **kp = &c->conns; *kp;) {
			if ((*kp)->dead) {
				struct relay_conn *d = *kp;
				*kp = d->next;
				free(d);
			} else {
				kp = &(*kp)->next;
			}
		}
		pthread_mutex_lock(&c->lock);
		c->done = asked;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		if (stop)
			break;
		size_t nconn = 0;
		for (struct relay_conn *k = c->conns; k; k = k->next)
			nconn++;
		size_t need = 1 + (size_t)c->n * c->n + 2 * nconn;
		if (need > cap) {
			cap = need * 2;
			pfd = realloc(pfd, cap * sizeof *pfd);
		}
		size_t np = 0;
		pfd[np++] = (struct pollfd){.fd = c->wake[0], .events = POLLIN};
		for (unsigned i = 0; i < c->n; i++)
			for (unsigned j = 0; j < c->n; j++)
				pfd[np++] = (struct pollfd){.fd = i == j ? -1 : c->relay_fd[i][j], .events = POLLIN};
		size_t base = np;
		for (struct relay_conn *k = c->conns; k; k = k->next) {
			pfd[np++] = (struct pollfd){.fd = k->a,
						    .events = (short)((k->ab_len ? 0 : POLLIN) | (k->ba_len ? POLLOUT : 0))};
			pfd[np++] = (struct pollfd){.fd = k->b,
						    .events = (short)((k->ba_len ? 0 : POLLIN) | (k->ab_len ? POLLOUT : 0))};
		}
		if (poll(pfd, np, 1000) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN) {
			char buf[64];
			while (read(c->wake[0], buf, sizeof buf) > 0)
				;
		}
		/* the connections first (an accept below adds at the head, polled next round) */
		size_t p = base;
		for (struct relay_conn *k = c->conns; k && p + 1 < np; k = k->next, p += 2) {
			short ea = pfd[p].revents, eb = pfd[p + 1].revents;
			if (!pump(k->a, k->b, k->ab, &k->ab_len, &k->ab_off, ea) ||
			    !pump(k->b, k->a, k->ba, &k->ba_len, &k->ba_off, eb))
				conn_close(c, k);
		}
		p = 1;
		for (unsigned i = 0; i < c->n; i++)
			for (unsigned j = 0; j < c->n; j++, p++)
				if (i != j && (pfd[p].revents & POLLIN))
					relay_accept(c, i, j);
	}
	free(pfd);
	return NULL;
}

/* Tells the relay thread to look at the flags again and waits until it did. */
static void relay_sync(struct nats_cluster *c)
{
	pthread_mutex_lock(&c->lock);
	uint64_t mine = ++c->asked;
	pthread_mutex_unlock(&c->lock);
	ssize_t w = write(c->wake[1], "x", 1);
	(void)w;
	pthread_mutex_lock(&c->lock);
	while (c->done < mine)
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

/* ---- the nodes ---- */

static void write_config(struct nats_cluster *c, unsigned i)
{
	struct node *nd = &c->nodes[i];
	char routes[2048] = "";
	for (unsigned j = 0; j < c->n; j++) {
		if (j == i)
			continue;
		char r[96];
		snprintf(r, sizeof r, "    nats-route://127.0.0.1:%d\n", c->relay_port[i][j]);
		strncat(routes, r, sizeof routes - strlen(routes) - 1);
	}
	char cluster[3072] = "";
	/* one node is a standalone server: JetStream refuses a cluster without routes */
	if (c->n > 1)
		snprintf(cluster, sizeof cluster,
			 "cluster {\n"
			 "  name: bulkhead_test\n"
			 "  host: 127.0.0.1\n"
			 "  port: -1\n"
			 "  # no client learns another node's URL, and no gossiped route goes around the relays\n"
			 "  no_advertise: true\n"
			 "  advertise: \"127.0.0.1:%d\"\n"
			 "  routes: [\n%s  ]\n"
			 "}\n",
			 c->dead_port, routes);
	char conf[8192], path[4200];
	snprintf(conf, sizeof conf,
		 "server_name: %s\n"
		 "host: 127.0.0.1\n"
		 "port: %d\n"
		 "# bulkhead's forwarded bodies go to 8 MiB; NATS's default max_payload is 1 MiB\n"
		 "max_payload: %u\n"
		 "max_pending: 67108864\n"
		 "jetstream {\n  store_dir: \"%s/js\"\n  max_memory_store: 67108864\n  max_file_store: 268435456\n}\n"
		 "%s",
		 nd->name, nd->client_port ? nd->client_port : -1, c->max_payload, nd->dir, cluster);
	snprintf(path, sizeof path, "%s/nats.conf", nd->dir);
	write_file(path, conf);
}

/* The port after "what" in the node's log, 0 while it is not there. */
static int logged_port(const char *log, const char *what)
{
	const char *p = strstr(log, what);
	if (!p)
		return 0;
	p += strlen(what);
	const char *colon = strchr(p, ':');
	const char *nl = strchr(p, '\n');
	if (!colon || (nl && colon > nl))
		return 0;
	return atoi(colon + 1);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(m);
	fclose(f);
	return buf;
}

static void start_node(struct nats_cluster *c, unsigned i)
{
	struct node *nd = &c->nodes[i];
	write_config(c, i);
	char conf[4200], log[4200];
	snprintf(conf, sizeof conf, "%s/nats.conf", nd->dir);
	snprintf(log, sizeof log, "%s/log.%u", nd->dir, ++nd->starts);
	pid_t parent = getpid();
	pid_t pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		/* it dies with the test that started it, whatever becomes of the test */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		for (int s = 1; s < NSIG; s++)
			signal(s, SIG_DFL);
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		int nul = open("/dev/null", O_RDONLY);
		if (fd < 0 || nul < 0)
			_exit(127);
		dup2(nul, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(NATS_SERVER, "nats-server", "-c", conf, (char *)NULL);
		_exit(127);
	}
	nd->pid = pid;
	/* its ports, from its log (chosen by the kernel: nothing fixed) */
	uint64_t until = mono_ms() + 20000;
	for (;;) {
		char *text = slurp(log);
		int client = text ? logged_port(text, "Listening for client connections on") : 0;
		int route = text ? logged_port(text, "Listening for route connections on") : 0;
		bool ready = text && strstr(text, "Server is ready");
		bool fatal = text && strstr(text, "[FTL]");
		if (client && (route || c->n == 1) && ready) {
			free(text);
			nd->client_port = client;
			nd->route_port = route;
			break;
		}
		int st;
		if (fatal || waitpid(pid, &st, WNOHANG) == pid || mono_ms() > until) {
			cr_log_error("nats-server %s did not start; its log:\n%s", nd->name, text ? text : "(none)");
			free(text);
			if (nd->pid > 0) {
				kill(nd->pid, SIGKILL);
				waitpid(nd->pid, NULL, 0);
			}
			nd->pid = 0;
			cr_assert_fail("nats-server %s did not start", nd->name);
		}
		free(text);
		sleep_ms(20);
	}
	snprintf(nd->url, sizeof nd->url, "nats://127.0.0.1:%d", nd->client_port);
	pthread_mutex_lock(&c->lock);
	c->dest_port[i] = nd->route_port;
	pthread_mutex_unlock(&c->lock);
}

struct nats_cluster *nats_cluster_start(unsigned n)
{
	return nats_cluster_start_with(n, 0);
}

struct nats_cluster *nats_cluster_start_with(unsigned n, unsigned max_payload)
{
	cr_assert(n >= 1 && n <= NATS_CLUSTER_MAX, "a cluster of 1 to %d nodes", NATS_CLUSTER_MAX);
	cr_assert_eq(access(NATS_SERVER, X_OK), 0, NATS_SERVER " is not installed (scripts/setup.sh)");
	struct nats_cluster *c = calloc(1, sizeof *c);
	cr_assert_not_null(c);
	c->n = n;
	c->max_payload = max_payload ? max_payload : MAX_PAYLOAD;
	const char *root = getenv("BULKHEAD_TEST_ROOT");
	snprintf(c->dir, sizeof c->dir, "%s/nats-XXXXXX", root && *root ? root : "/tmp");
	cr_assert_not_null(mkdtemp(c->dir), "mkdtemp %s: %s", c->dir, strerror(errno));
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	cr_assert_eq(pipe2(c->wake, O_CLOEXEC | O_NONBLOCK), 0);
	c->dead_fd = bound_socket(&c->dead_port, false);
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < n; j++)
			c->relay_fd[i][j] = i == j ? -1 : bound_socket(&c->relay_port[i][j], true);
	for (unsigned i = 0; i < n; i++) {
		struct node *nd = &c->nodes[i];
		snprintf(nd->name, sizeof nd->name, "n%u", i);
		snprintf(nd->dir, sizeof nd->dir, "%s/n%u", c->dir, i);
		cr_assert_eq(mkdir(nd->dir, 0700), 0, "mkdir %s: %s", nd->dir, strerror(errno));
	}
	track(c);
	cr_assert_eq(pthread_create(&c->thread, NULL, relay_main, c), 0);
	c->thread_started = true;
	for (unsigned i = 0; i < n; i++)
		start_node(c, i);
	c->urls[0] = '\0';
	for (unsigned i = 0; i < n; i++) {
		if (i)
			strcat(c->urls, ",");
		strcat(c->urls, c->nodes[i].url);
	}
	cr_assert(nats_cluster_wait_jetstream(c, 30000), "the NATS cluster's JetStream did not become ready in 30 s");
	return c;
}

const char *nats_cluster_urls(const struct nats_cluster *c)
{
	return c->urls;
}

const char *nats_cluster_url(const struct nats_cluster *c, unsigned i)
{
	cr_assert_lt(i, c->n);
	return c->nodes[i].url;
}

unsigned nats_cluster_size(const struct nats_cluster *c)
{
	return c->n;
}

pid_t nats_cluster_pid(const struct nats_cluster *c, unsigned i)
{
	cr_assert_lt(i, c->n);
	return c->nodes[i].pid;
}

const char *nats_cluster_dir(const struct nats_cluster *c)
{
	return c->dir;
}

void nats_cluster_kill(struct nats_cluster *c, unsigned i)
{
	cr_assert_lt(i, c->n);
	struct node *nd = &c->nodes[i];
	cr_assert_gt(nd->pid, 0, "node %u is not running", i);
	kill(nd->pid, SIGKILL);
	waitpid(nd->pid, NULL, 0);
	nd->pid = 0;
	pthread_mutex_lock(&c->lock);
	c->dest_port[i] = 0;
	pthread_mutex_unlock(&c->lock);
}

void nats_cluster_restart(struct nats_cluster *c, unsigned i)
{
	cr_assert_lt(i, c->n);
	cr_assert_eq(c->nodes[i].pid, 0, "node %u is running", i);
	start_node(c, i); /* the same client port, name and store */
}

void nats_cluster_cut(struct nats_cluster *c, unsigned i)
{
	cr_assert_lt(i, c->n);
	pthread_mutex_lock(&c->lock);
	c->cut[i] = true;
	pthread_mutex_unlock(&c->lock);
	relay_sync(c);
}

void nats_cluster_heal(struct nats_cluster *c, unsigned i)
{
	cr_assert_lt(i, c->n);
	pthread_mutex_lock(&c->lock);
	c->cut[i] = false;
	pthread_mutex_unlock(&c->lock);
	relay_sync(c);
}

unsigned nats_cluster_routes(struct nats_cluster *c, unsigned i)
{
	cr_assert_lt(i, c->n);
	relay_sync(c);
	pthread_mutex_lock(&c->lock);
	unsigned r = c->routes[i];
	pthread_mutex_unlock(&c->lock);
	return r;
}

bool nats_cluster_wait_jetstream(struct nats_cluster *c, unsigned timeout_ms)
{
	const char *urls[NATS_CLUSTER_MAX];
	int n = 0;
	for (unsigned i = 0; i < c->n; i++)
		if (c->nodes[i].pid > 0)
			urls[n++] = c->nodes[i].url;
	if (!n)
		return false;
	char bucket[64];
	snprintf(bucket, sizeof bucket, "bh_probe_%d", (int)getpid());
	uint64_t until = mono_ms() + timeout_ms;
	bool ok = false;
	while (!ok && mono_ms() < until) {
		natsOptions *o = NULL;
		natsConnection *nc = NULL;
		jsCtx *js = NULL;
		kvStore *kv = NULL;
		natsOptions_Create(&o);
		natsOptions_SetServers(o, urls, n);
		natsOptions_SetTimeout(o, 1000);
		natsOptions_SetMaxReconnect(o, 0);
		if (natsConnection_Connect(&nc, o) == NATS_OK) {
			jsOptions jo;
			jsOptions_Init(&jo);
			jo.Wait = 2000;
			if (natsConnection_JetStream(&js, nc, &jo) == NATS_OK) {
				kvConfig kc;
				kvConfig_Init(&kc);
				kc.Bucket = bucket;
				kc.Replicas = n < 3 ? n : 3;
				if (js_CreateKeyValue(&kv, js, &kc) == NATS_OK) {
					ok = kvStore_PutString(NULL, kv, "probe", "1") == NATS_OK;
					kvStore_Destroy(kv);
					js_DeleteKeyValue(js, bucket);
				}
				jsCtx_Destroy(js);
			}
			natsConnection_Close(nc);
			natsConnection_Destroy(nc);
		}
		natsOptions_Destroy(o);
		if (!ok)
			sleep_ms(200);
	}
	return ok;
}

void nats_cluster_stop(struct nats_cluster *c)
{
	if (!c)
		return;
	untrack(c);
	for (unsigned i = 0; i < c->n; i++) {
		if (c->nodes[i].pid > 0) {
			kill(c->nodes[i].pid, SIGKILL);
			waitpid(c->nodes[i].pid, NULL, 0);
			c->nodes[i].pid = 0;
		}
	}
	if (c->thread_started) {
		pthread_mutex_lock(&c->lock);
		c->stop = true;
		pthread_mutex_unlock(&c->lock);
		relay_sync(c);
		pthread_join(c->thread, NULL);
	}
	for (struct relay_conn *k = c->conns, *next; k; k = next) {
		next = k->next;
		free(k);
	}
	for (unsigned i = 0; i < c->n; i++)
		for (unsigned j = 0; j < c->n; j++)
			if (c->relay_fd[i][j] >= 0)
				close(c->relay_fd[i][j]);
	close(c->dead_fd);
	close(c->wake[0]);
	close(c->wake[1]);
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->dir);
	if (getenv("BH_NATS_KEEP")) /* a failing test's nodes' logs, for a look */
		fprintf(stderr, "nats_cluster: kept %s (BH_NATS_KEEP)\n", c->dir);
	else if (system(cmd) != 0) /* (no cr_log: this may run at exit, after criterion let go) */
		fprintf(stderr, "nats_cluster: could not remove %s\n", c->dir);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c);
}
