/* The daemon's loop: one thread polls the engine's descriptor, each
 * listener's libmicrohttpd epoll set and a signalfd. SIGHUP reloads the
 * clients file (and the profiles file); SIGTERM and SIGINT stop accepting calls, let the ones in
 * flight finish (up to the drain deadline), then close the engine, which
 * ends or hibernates the sessions per its shutdown policy. */
#include "daemon_priv.h"
#include "hardened.h" /* ---- config ---- */
#include "front_door.h"
#include "tls.h"
#include "tls_door.h"
#include "why.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static void engine_log(void *arg, enum bh_log_level level, const char *msg)
{
	(void)arg;
	if (level >= BH_LOG_INFO)
		daemon_log(level, "engine", "%s", msg);
}

static void mhd_log(void *arg, const char *fmt, va_list ap)
{
	(void)arg;
	char msg[512];
	vsnprintf(msg, sizeof msg, fmt, ap);
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	daemon_log(BH_LOG_WARN, "http", "%s", msg);
}

/* The socket's directory is made 0755 and the socket 0660: the group of
 * the directory decides who may call without a TCP port. */
static int unix_listener(const char *path, char **why)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path)
		return why_set(why, "socket path %s is longer than %zu bytes", path,
			       sizeof sa.sun_path - 1);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	char dir[sizeof sa.sun_path];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return why_errno(why, errno, "create %s", dir);
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return why_errno(why, errno, "socket");
	/* A stale socket of a daemon that died: nobody answers on it. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
		close(fd);
		return why_set(why, "another daemon already answers on %s", path);
	}
	unlink(path);
	mode_t old = umask(0117);
	int r = bind(fd, (struct sockaddr *)&sa, sizeof sa);
	umask(old);
	if (r < 0 || listen(fd, 128) < 0) {
		int saved = errno;
		close(fd);
		return why_errno(why, saved, "listen on %s", path);
	}
	chmod(path, 0660);
	return fd;
}

/* Any IPv4 or [IPv6] address (setup refused one off loopback without TLS
 * before we get here); "localhost" is 127.0.0.1. */
static int tcp_listener(const char *spec, int *port_out, char **why)
{
	char host[256];
	snprintf(host, sizeof host, "%s", spec);
	int port = DAEMON_DEFAULT_PORT;
	char *name = host;
	char *colon = NULL;
	if (host[0] == '[') {
		char *end = strchr(host, ']');
		if (!end || (end[1] && end[1] != ':'))
			return why_set(why, "--listen %s: an IPv6 address is written [ADDR]:PORT", spec);
		*end = '\0';
		name = host + 1;
		colon = end[1] ? end + 1 : NULL;
	} else {
		colon = strrchr(host, ':');
	}
	if (colon) {
		*colon = '\0';
		char *end;
		long p = strtol(colon + 1, &end, 10);
		if (!colon[1] || *end || p < 0 || p > 65535)
			return why_set(why, "--listen %s: the port is not a number from 0 to 65535", spec);
		port = (int)p;
	}
	if (!strcmp(name, "localhost"))
		name = "127.0.0.1";
	struct sockaddr_storage ss = {0};
	socklen_t sl;
	struct sockaddr_in *sa4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sa6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, name, &sa4->sin_addr) == 1) {
		sa4->sin_family = AF_INET;
		sa4->sin_port = htons((uint16_t)port);
		sl = sizeof *sa4;
	} else if (inet_pton(AF_INET6, name, &sa6->sin6_addr) == 1) {
		sa6->sin6_family = AF_INET6;
		sa6->sin6_port = htons((uint16_t)port);
		sl = sizeof *sa6;
	} else {
		return why_set(why, "--listen %s: give an IP address (127.0.0.1, 0.0.0.0, [::1]) and a port",
			       spec);
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return why_errno(why, errno, "socket");
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 128) < 0) {
		int saved = errno;
		close(fd);
		return why_errno(why, saved, "listen on %s", spec);
	}
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	*port_out = ntohs(ss.ss_family == AF_INET6 ? sa6->sin6_port : sa4->sin_port);
	return fd;
}

static int start_mhd(struct server *s, struct listener *l, char **why)
{
	unsigned max_conn = s->cfg->max_connections ? s->cfg->max_connections : 256; /* as setup's */
	/* ---- tls: the TCP listener speaks TLS when a pair was given ---- */
	struct MHD_OptionItem tls_ops[8] = {{MHD_OPTION_LISTEN_SOCKET, l->fd, NULL},
					    {MHD_OPTION_END, 0, NULL}};
	unsigned tls_flag = 0;
	if (l->tcp && s->tls) {
		/* Its accepts are tls_door's, which hands libmicrohttpd the
		 * connections that start a handshake. */
		daemon_tls_mhd_options(s->tls, tls_ops, sizeof tls_ops / sizeof tls_ops[0]);
		tls_flag = MHD_USE_TLS | MHD_USE_NO_LISTEN_SOCKET;
	}
	l->mhd = MHD_start_daemon(
		MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG | tls_flag, 0, NULL, NULL,
		daemon_on_request, l, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		MHD_OPTION_NOTIFY_COMPLETED, daemon_on_completed, l,
		MHD_OPTION_NOTIFY_CONNECTION, daemon_on_connection, l,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)DAEMON_MAX_HEADER + 16384,
		MHD_OPTION_CONNECTION_LIMIT, max_conn,
		MHD_OPTION_CONNECTION_TIMEOUT, DAEMON_IDLE_TIMEOUT_S,
		MHD_OPTION_ARRAY, tls_ops, MHD_OPTION_END);
	if (!l->mhd)
		return why_set(why, "libmicrohttpd would not start on the %s listener%s",
			       l->tcp ? "TCP" : "unix", tls_flag ? " (with TLS)" : "");
	if (tls_flag) /* ---- tls ---- */
		l->door = tls_door_new(l->fd, l->mhd);
	return 0;
}

static int mhd_fd(struct listener *l)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(l->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	return i ? i->epoll_fd : -1;
}

static int loop_timeout(struct server *s)
{
	int t = bh_engine_timeout_ms(s->e);
	int ft = daemon_fleet_timeout_ms(s); /* ---- fleet ---- */
	if (ft >= 0 && (t < 0 || ft < t))
		t = ft;
	/* The deadline sweep runs every second; long polls look every 100 ms. */
	int cap = operator_waiting(s) ? 100 : 1000;
	int best = t < 0 ? cap : (t < cap ? t : cap);
	for (size_t i = 0; i < s->n_ls; i++) {
		MHD_UNSIGNED_LONG_LONG mt;
		if (MHD_get_timeout(s->ls[i].mhd, &mt) == MHD_YES && (long long)mt < best)
			best = (int)mt;
	}
	return best;
}

/* ---- tls ---- */
static void tls_reload(struct server *s)
{
	char *why = NULL;
	if (daemon_tls_reload(s->tls, &why) < 0)
		daemon_log(BH_LOG_ERROR, "tls", "SIGHUP: kept the certificate in use: %s", why);
	else
		daemon_log(BH_LOG_INFO, "tls", "SIGHUP: new handshakes use %s", s->cfg->tls.cert_path);
	free(why);
}

/* Before anything listens: the pair loads, and a listener off loopback
 * has TLS or the operator's word that it may go without. */
static int tls_setup(struct server *s, char **why)
{
	const struct bh_daemon_config *cfg = s->cfg;
	bool tls = cfg->tls.cert_path || cfg->tls.key_path || cfg->tls.client_ca_path;
	if (front_door_check_config(cfg, why) < 0)
		return -1;
	if (tls && !cfg->listen)
		return why_set(why, "--tls-cert and --tls-key are for the --listen address (the unix "
				    "socket never speaks TLS)");
	if (tls && daemon_tls_load(&cfg->tls, &s->tls, why) < 0)
		return -1;
	if (!cfg->listen || tls || daemon_listen_is_loopback(cfg->listen))
		return 0;
	if (!cfg->insecure_cleartext)
		return why_set(why, "--listen %s is off loopback without TLS: give --tls-cert and "
				    "--tls-key (or --insecure-cleartext, if tokens, code and answers "
				    "may cross the network in cleartext)", cfg->listen);
	daemon_log(BH_LOG_ERROR, "tls", "--insecure-cleartext: listening on %s WITHOUT TLS: bearer "
		   "tokens, code and answers cross the network in cleartext", cfg->listen);
	return 0;
}

static void run_once(struct server *s, int timeout)
{
	struct pollfd p[5 + 1 + TLS_DOOR_MAX];
	size_t n = 0;
	p[n++] = (struct pollfd){.fd = bh_engine_fd(s->e), .events = POLLIN};
	p[n++] = (struct pollfd){.fd = s->sigfd, .events = POLLIN};
	/* ---- fleet: its callbacks (answers, forwarded calls) run on this thread ---- */
	p[n++] = (struct pollfd){.fd = daemon_fleet_fd(s), .events = POLLIN};
	for (size_t i = 0; i < s->n_ls; i++)
		p[n++] = (struct pollfd){.fd = mhd_fd(&s->ls[i]), .events = POLLIN};
	for (size_t i = 0; i < s->n_ls; i++) /* ---- tls ---- */
		if (s->ls[i].door)
			n += tls_door_pollfds(s->ls[i].door, p + n, sizeof p / sizeof p[0] - n);
	poll(p, n, timeout);
	bh_engine_process(s->e);
	daemon_fleet_process(s); /* ---- fleet ---- */
	for (size_t i = 0; i < s->n_ls; i++) {
		if (s->ls[i].door) /* ---- tls ---- */
			tls_door_process(s->ls[i].door);
		MHD_run(s->ls[i].mhd);
	}
	if (p[1].revents & POLLIN) {
		struct signalfd_siginfo si;
		while (read(s->sigfd, &si, sizeof si) == sizeof si) {
			if (si.ssi_signo == SIGHUP) /* ---- profiles ---- */
				daemon_egress_reload(s);
			if (si.ssi_signo == SIGHUP && s->tls) /* ---- tls ---- */
				tls_reload(s);
			if (si.ssi_signo == SIGHUP && s->clients) {
				char *why = NULL;
				if (clients_reload(s->clients, &why) < 0)
					daemon_log(BH_LOG_ERROR, "clients", "SIGHUP: kept the old clients: %s", why);
				else
					daemon_log(BH_LOG_INFO, "clients", "SIGHUP: %zu clients loaded from %s",
						clients_count(s->clients), clients_path(s->clients));
				free(why);
			} else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
				s->stop = true;
			}
		}
	}
}

static bool engine_calls_pending(struct server *s)
{
	for (struct call *c = s->calls; c; c = c->next)
		if (c->engine_pending)
			return true;
	return false;
}

static void drain_and_close(struct server *s)
{
	s->draining = true;
	operator_poll_waiters(s, true);
	/* ---- approvals ---- */
	approvals_refuse_all(s, "the daemon is shutting down before anyone decided; nothing ran");
	uint32_t budget = s->cfg->drain_ms ? s->cfg->drain_ms : 30000;
	uint64_t until = now_mono_ms() + budget;
	daemon_log(BH_LOG_INFO, NULL, "stopping: new calls refused, waiting up to %u ms for calls in flight",
		   budget);
	while (engine_calls_pending(s) && now_mono_ms() < until)
		run_once(s, 100);
	/* ---- fleet: what hibernates is adoptable once the directory says so ---- */
	daemon_fleet_before_close(s, run_once, until);
	/* Closing the engine answers whatever still waits (refused: closing). */
	audit_engine_events(s, false);
	daemon_broker_engine(s, NULL); /* ---- profiles: no note reaches a closing engine ---- */
	bh_engine_close(s->e);
	s->e = NULL;
	for (int i = 0; i < 20; i++) {
		/* Flush the answers just made. */
		for (size_t j = 0; j < s->n_ls; j++)
			MHD_run(s->ls[j].mhd);
		usleep(10 * 1000);
	}
}

static int setup(struct server *s, const struct bh_daemon_config *cfg, char **why)
{
	s->cfg = cfg;
	s->sigfd = -1;
	daemon_log_set_format(cfg->log_format);
	/* ---- config: --hardened names every violation at once, before any
	 * listener binds (hardened.c); what setup stops on meanwhile comes
	 * after the ones found so far ---- */
	__attribute__((cleanup(hardened_done))) struct hardened hard = {.on = cfg->hardened};
	if (hard.on)
		hardened_check_settings(&hard, cfg);
	if (cfg->open && cfg->listen)
		return why_set(why, "--open (no authentication) is allowed only on the unix socket, "
				    "not with --listen");
	if (tls_setup(s, why) < 0) /* ---- tls: before anything listens ---- */
		return -1;
	if (!cfg->open) {
		const char *path = cfg->clients_path ? cfg->clients_path : CLIENTS_DEFAULT_PATH;
		if (clients_load(path, &s->clients, why) < 0) {
			why_prefix(why, "clients file");
			if (!hard.on) /* ---- config ---- */
				return -1;
			hardened_take(&hard, why);
		}
	}
	/* ---- profiles: before anything listens, so a bad file stops us ---- */
	if (daemon_egress_load(s, why) < 0)
		return -1;
	unsigned max_conn = cfg->max_connections ? cfg->max_connections : 256;
	s->per_peer = cfg->max_per_peer ? cfg->max_per_peer : (max_conn / 4 ? max_conn / 4 : 1);
	struct ratelimit_config rc = {
		.per_minute = cfg->rate_per_minute ? cfg->rate_per_minute : 600,
		.per_principal = 64,
		.total = cfg->max_connections ? cfg->max_connections : 256,
	};
	s->approvals = approvals_new(cfg); /* ---- approvals ---- */
	s->rl = ratelimit_new(&rc);
	s->audit = stderr;
	if (cfg->audit_path) {
		s->audit = fopen(cfg->audit_path, "ae");
		if (!s->audit)
			return why_errno(why, errno, "open the audit log %s", cfg->audit_path);
		setvbuf(s->audit, NULL, _IOLBF, 0);
	}
	/* Whatever started us may have ignored these (an ignored signal never
	 * reaches a signalfd, and an ignored SIGCHLD reaps children behind the
	 * engine's back). */
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	s->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->sigfd < 0)
		return why_errno(why, errno, "signalfd");

	/* Before the engine starts its warden, which shares our score. */
	daemon_keep_out_of_oom();
	struct bh_config ec = cfg->engine;
	if (!ec.log)
		ec.log = engine_log;
	/* A daemon serves many principals: by default none may take more
	 * than a quarter of the places (serve --per-principal). */
	if (!ec.policy.max_per_principal)
		ec.policy.max_per_principal = BH_FAIR_SHARE;
	/* ---- profiles: the broker, when there are profiles to hold; then
	 * whether grants can be held ---- */
	if (daemon_broker_start(s, &ec, why) < 0)
		return -1;
	daemon_egress_started(s, ec.egress != NULL);
	bh_error *err = NULL;
	if (bh_engine_open(&ec, &s->e, &err) < 0) {
		why_set(why, "%s", err->msg);
		bh_error_free(err);
		return -1;
	}
	daemon_broker_engine(s, s->e); /* ---- profiles: its notes become events ---- */
	if (hard.on && hardened_verdict(&hard, s->e, s->sigfd, why) < 0) /* ---- config ---- */
		return -1;
	s->socket_path = strdup(cfg->socket_path ? cfg->socket_path : DAEMON_DEFAULT_SOCKET);
	int fd = unix_listener(s->socket_path, why);
	if (fd < 0)
		return -1;
	s->ls[s->n_ls++] = (struct listener){.srv = s, .fd = fd};
	if (cfg->listen) {
		int port = 0;
		fd = tcp_listener(cfg->listen, &port, why);
		if (fd < 0)
			return -1;
		s->ls[s->n_ls++] = (struct listener){.srv = s, .tcp = true, .fd = fd, .port = port,
						     .tls = s->tls != NULL};
	}
	for (size_t i = 0; i < s->n_ls; i++)
		if (start_mhd(s, &s->ls[i], why) < 0)
			return -1;
	/* The CLI finds a running daemon of a state directory here and
	 * attaches to it instead of opening an engine of its own. */
	if (asprintf(&s->attach_file, "%s/daemon.sock.path", bh_engine_state_dir(s->e)) < 0)
		abort();
	char abs[4096];
	const char *sock = s->socket_path;
	if (sock[0] != '/' && getcwd(abs, sizeof abs - strlen(sock) - 2)) {
		strcat(abs, "/");
		strcat(abs, sock);
		sock = abs;
	}
	/* Never through a link (the engine refused a state directory holding
	 * one at open); readable by all, writable by us alone, as a client's
	 * auto-attach requires before it trusts the note. */
	int note = open(s->attach_file, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	FILE *f = note < 0 ? NULL : fdopen(note, "w");
	if (!f) {
		int saved = errno;
		if (note >= 0)
			close(note);
		return why_errno(why, saved, "write %s", s->attach_file);
	}
	bool ok = fchmod(note, 0644) == 0 && fprintf(f, "%s\n", sock) >= 0;
	if (fclose(f) != 0 || !ok)
		return why_errno(why, errno, "write %s", s->attach_file);
	/* ---- fleet: a daemon that cannot join refuses to start ---- */
	if (daemon_fleet_start(s, why) < 0)
		return -1;
	return 0;
}

static void teardown(struct server *s)
{
	daemon_broker_engine(s, NULL); /* ---- profiles ---- */
	if (s->e) {
		bh_engine_close(s->e);
		s->e = NULL;
	}
	daemon_broker_stop(s); /* ---- profiles: after the engine, which closed its sessions ---- */
	daemon_fleet_stop(s);  /* ---- fleet: after the engine's last answers ---- */
	/* Suspended connections must be resumed before their daemon stops. */
	for (struct call *c = s->calls; c; c = c->next)
		if (c->suspended && c->conn) {
			c->suspended = false;
			MHD_resume_connection(c->conn);
		}
	for (size_t i = 0; i < s->n_ls; i++) {
		tls_door_free(s->ls[i].door); /* ---- tls ---- */
		if (s->ls[i].mhd)
			MHD_stop_daemon(s->ls[i].mhd);
		if (s->ls[i].fd >= 0)
			close(s->ls[i].fd);
	}
	while (s->calls) {
		struct call *c = s->calls;
		s->calls = c->next;
		if (c->ctx_free)
			c->ctx_free(c->ctx);
		free(c->body);
		free(c->answer);
		free(c->relay); /* ---- fleet ---- */
		free(c);
	}
	if (s->attach_file) {
		unlink(s->attach_file);
		free(s->attach_file);
	}
	if (s->socket_path) {
		unlink(s->socket_path);
		free(s->socket_path);
	}
	if (s->sigfd >= 0)
		close(s->sigfd);
	if (s->clients)
		clients_free(s->clients);
	if (s->rl)
		ratelimit_free(s->rl);
	if (s->audit)
		audit_reads_flush(s, true); /* ---- truth: the last tallies ---- */
	approvals_free(s->approvals); /* ---- approvals ---- */
	daemon_egress_free(s);        /* ---- profiles ---- */
	daemon_tls_free(s->tls);      /* ---- tls: after the listeners stopped ---- */
	if (s->audit && s->audit != stderr)
		fclose(s->audit);
	free(s->ready.text);
}

int bh_daemon_serve(const struct bh_daemon_config *cfg, char **why)
{
	struct server s = {0};
	if (setup(&s, cfg, why) < 0) {
		teardown(&s);
		return -1;
	}
	/* ---- config: where it listens, in the daemon's log (the CLI's
	 * on_ready prints only its "ready" line on stdout) ---- */
	if (s.n_ls > 1)
		daemon_log(BH_LOG_INFO, NULL, "listening on %s and %s://%s (port %d)", s.socket_path,
			   cfg->tls.cert_path ? "https" : "http", cfg->listen, s.ls[1].port);
	else
		daemon_log(BH_LOG_INFO, NULL, "listening on %s", s.socket_path);
	if (cfg->on_ready)
		cfg->on_ready(cfg->on_ready_arg, s.socket_path, s.n_ls > 1 ? s.ls[1].port : 0);
	uint64_t next_sweep = now_mono_ms() + 1000, next_poll = 0;
	audit_engine_events(&s, true);
	while (!s.stop) {
		/* Never sleep past the next sweep: deadlines and the audit
		 * of the engine's events are due every second. */
		uint64_t now = now_mono_ms();
		int tmo = loop_timeout(&s);
		int to_sweep = next_sweep > now ? (int)(next_sweep - now) : 0;
		run_once(&s, tmo < to_sweep ? tmo : to_sweep);
		daemon_fleet_tick(&s); /* ---- fleet ---- */
		if (now_mono_ms() >= next_poll) {
			operator_poll_waiters(&s, false);
			next_poll = now_mono_ms() + 100;
		}
		if (now_mono_ms() >= next_sweep) {
			daemon_enforce_deadlines(&s);
			approvals_tick(&s); /* ---- approvals ---- */
			audit_engine_events(&s, false);
			next_sweep = now_mono_ms() + 1000;
		}
	}
	drain_and_close(&s);
	teardown(&s);
	return 0;
}
