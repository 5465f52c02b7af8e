/* The front door of a TCP call (front_door.h). */
#include "front_door.h"
#include "daemon_priv.h"
#include "tls.h"
#include "why.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* "name:port", "[v6]:port", "[v6]" or "name" -> name (brackets off). */
static void host_of(const char *hostport, char *out, size_t n)
{
	snprintf(out, n, "%s", hostport);
	if (out[0] == '[') {
		char *end = strchr(out, ']');
		if (end)
			*end = '\0';
		memmove(out, out + 1, strlen(out));
		return;
	}
	char *colon = strchr(out, ':');
	/* One colon is a port; more is a bare IPv6 address. */
	if (colon && !strchr(colon + 1, ':'))
		*colon = '\0';
}

static bool ip_literal(const char *s)
{
	unsigned char a[16];
	return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

/* Letters, digits, '-', '.' (a DNS name), or an IP literal. */
static bool host_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 253)
		return false;
	if (ip_literal(s))
		return true;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '-' || ch == '.'))
			return false;
	}
	return true;
}

int front_door_check_config(const struct bh_daemon_config *cfg, char **why)
{
	for (unsigned i = 0; i < cfg->n_trusted_proxies; i++)
		if (!ip_literal(cfg->trusted_proxies[i]))
			return why_set(why, "--trusted-proxy %s: give the proxy's IP address (IPv4 or IPv6, "
					    "no port)", cfg->trusted_proxies[i]);
	for (unsigned i = 0; i < cfg->n_allowed_hosts; i++)
		if (!host_name_ok(cfg->allowed_hosts[i]))
			return why_set(why, "--allowed-host %s: give a host name or address, without a "
					    "port or a path", cfg->allowed_hosts[i]);
	return 0;
}

/* The peer's address as text ("" when unknown). */
static void peer_address(struct MHD_Connection *conn, char *out, size_t n)
{
	out[0] = '\0';
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!ci || !ci->client_addr)
		return;
	const struct sockaddr *sa = ci->client_addr;
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)n);
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out, (socklen_t)n);
}

static bool trusted(const struct bh_daemon_config *cfg, const char *addr)
{
	unsigned char a[16], b[16];
	int fam = strchr(addr, ':') ? AF_INET6 : AF_INET;
	if (!*addr || inet_pton(fam, addr, a) != 1)
		return false;
	for (unsigned i = 0; i < cfg->n_trusted_proxies; i++)
		if (inet_pton(fam, cfg->trusted_proxies[i], b) == 1 &&
		    !memcmp(a, b, fam == AF_INET ? 4 : 16))
			return true;
	return false;
}

/* The last element of a comma list (the one the proxy itself added), trimmed. */
static void last_item(const char *list, char *out, size_t n)
{
	const char *comma = strrchr(list, ',');
	const char *p = comma ? comma + 1 : list;
	while (*p == ' ' || *p == '\t')
		p++;
	snprintf(out, n, "%s", p);
	size_t len = strlen(out);
	while (len && (out[len - 1] == ' ' || out[len - 1] == '\t'))
		out[--len] = '\0';
}

/* The first element (the original client's Host). */
static void first_item(const char *list, char *out, size_t n)
{
	while (*list == ' ' || *list == '\t')
		list++;
	snprintf(out, n, "%.*s", (int)strcspn(list, ", \t"), list);
}

static bool names_us(const struct bh_daemon_config *cfg, const char *name)
{
	static const char *const loopback[] = {"localhost", "127.0.0.1", "::1"};
	for (size_t i = 0; i < sizeof loopback / sizeof loopback[0]; i++)
		if (!strcasecmp(name, loopback[i]))
			return true;
	char listen[256];
	if (cfg->listen) {
		host_of(cfg->listen, listen, sizeof listen);
		if (!strcasecmp(name, listen))
			return true;
	}
	for (unsigned i = 0; i < cfg->n_allowed_hosts; i++)
		if (!strcasecmp(name, cfg->allowed_hosts[i]))
			return true;
	return false;
}

const char *front_door_refusal(struct call *c)
{
	const struct bh_daemon_config *cfg = c->srv->cfg;
	struct MHD_Connection *conn = c->conn;
	char peer[INET6_ADDRSTRLEN];
	peer_address(conn, peer, sizeof peer);
	snprintf(c->client_addr, sizeof c->client_addr, "%s", peer);
	bool via_proxy = trusted(cfg, peer);
	/* From anyone else these headers are the client's word: ignored. */
	const char *xff = via_proxy ? MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
								  "X-Forwarded-For") : NULL;
	const char *xfp = via_proxy ? MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
								  "X-Forwarded-Proto") : NULL;
	const char *xfh = via_proxy ? MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
								  "X-Forwarded-Host") : NULL;
	if (xff) {
		char fwd[sizeof c->client_addr];
		last_item(xff, fwd, sizeof fwd);
		if (ip_literal(fwd))
			snprintf(c->client_addr, sizeof c->client_addr, "%s", fwd);
	}
	if (xfp && (!strcasecmp(xfp, "https") || !strcasecmp(xfp, "http")))
		snprintf(c->forwarded_proto, sizeof c->forwarded_proto, "%s",
			 !strcasecmp(xfp, "https") ? "https" : "http");
	/* A browser page must not reach us through DNS rebinding, whoever
	 * forwarded it. */
	if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin"))
		return "requests from a browser page (an Origin header) are refused";
	const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	if (!host)
		return "a Host header is required";
	char name[256], first[256];
	if (xfh) {
		first_item(xfh, first, sizeof first);
		host = first;
	}
	host_of(host, name, sizeof name);
	if (names_us(cfg, name))
		return NULL;
	return xfh ? "the proxy's X-Forwarded-Host must name this daemon (localhost, 127.0.0.1, [::1], "
		     "the --listen address or an --allowed-host)"
		   : "the Host header must name this daemon (localhost, 127.0.0.1, [::1], the --listen "
		     "address or an --allowed-host)";
}

int front_door_certificate(struct call *c, struct client_principal *who, char *msg, size_t n)
{
	struct server *s = c->srv;
	if (!c->via->tls || !s->tls || !s->clients)
		return 0;
	char subject[DAEMON_TLS_SUBJECT_MAX];
	switch (daemon_tls_peer(s->tls, c->conn, subject, sizeof subject)) {
	case DAEMON_PEER_NO_CERT:
		return 0;
	case DAEMON_PEER_INVALID:
		snprintf(msg, n, "the client certificate is not valid: %s", subject);
		return -1;
	case DAEMON_PEER_VERIFIED:
		break;
	}
	if (clients_by_subject(s->clients, subject, who) < 0) {
		snprintf(msg, n, "the client certificate's subject (%.200s) is no client's", subject);
		return -1;
	}
	return 1;
}
