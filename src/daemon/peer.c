/* Who is at the other end of a connection (peer.h). */
#include "peer.h"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static uid_t tcp_peer_uid(int fd)
{
	struct sockaddr_in peer, local;
	socklen_t n = sizeof peer;
	if (getpeername(fd, (struct sockaddr *)&peer, &n) < 0 || peer.sin_family != AF_INET)
		return PEER_UNKNOWN;
	n = sizeof local;
	if (getsockname(fd, (struct sockaddr *)&local, &n) < 0 || local.sin_family != AF_INET)
		return PEER_UNKNOWN;
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return PEER_UNKNOWN;
	/* The other end's socket, named as it sees itself: its source is our
	 * peer, its destination us. One exact lookup, not a dump. */
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} req;
	memset(&req, 0, sizeof req);
	req.h.nlmsg_len = sizeof req;
	req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.h.nlmsg_flags = NLM_F_REQUEST;
	req.r.sdiag_family = AF_INET;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	req.r.id.idiag_sport = peer.sin_port;
	req.r.id.idiag_dport = local.sin_port;
	req.r.id.idiag_src[0] = peer.sin_addr.s_addr;
	req.r.id.idiag_dst[0] = local.sin_addr.s_addr;
	req.r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	uid_t uid = PEER_UNKNOWN;
	/* The kernel answers within sendto: the reply is queued by the time it
	 * returns, so the read never waits. */
	union {
		struct nlmsghdr h;
		char bytes[8192];
	} reply;
	if (sendto(nl, &req, sizeof req, 0, (struct sockaddr *)&kernel, sizeof kernel) ==
	    (ssize_t)sizeof req) {
		ssize_t got = recv(nl, &reply, sizeof reply, MSG_DONTWAIT);
		if (got >= (ssize_t)NLMSG_LENGTH(sizeof(struct inet_diag_msg)) &&
		    NLMSG_OK(&reply.h, (unsigned)got) && reply.h.nlmsg_type == SOCK_DIAG_BY_FAMILY) {
			const struct inet_diag_msg *m = NLMSG_DATA(&reply.h);
			if (m->id.idiag_sport == peer.sin_port && m->id.idiag_dport == local.sin_port)
				uid = m->idiag_uid;
		}
	}
	close(nl);
	return uid;
}

uid_t peer_uid(int fd, bool tcp)
{
	if (fd < 0)
		return PEER_UNKNOWN;
	if (tcp)
		return tcp_peer_uid(fd);
	struct ucred cred;
	socklen_t n = sizeof cred;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &n) < 0 || n != sizeof cred)
		return PEER_UNKNOWN;
	return cred.uid;
}

bool peer_remote_key(const struct sockaddr *sa, socklen_t len, struct peer_id *out)
{
	if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		const struct in_addr *a = &((const struct sockaddr_in *)sa)->sin_addr;
		if ((ntohl(a->s_addr) >> 24) == 127)
			return false;
		out->remote = true;
		inet_ntop(AF_INET, a, out->addr, sizeof out->addr);
		return true;
	}
	if (sa->sa_family != AF_INET6 || len < (socklen_t)sizeof(struct sockaddr_in6))
		return false; /* not TCP over IP: a local peer */
	const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	if (IN6_IS_ADDR_LOOPBACK(a))
		return false;
	if (IN6_IS_ADDR_V4MAPPED(a)) { /* an IPv4 peer on a dual-stack listener */
		struct in_addr v4;
		memcpy(&v4, &a->s6_addr[12], sizeof v4);
		if ((ntohl(v4.s_addr) >> 24) == 127)
			return false;
		out->remote = true;
		inet_ntop(AF_INET, &v4, out->addr, sizeof out->addr);
		return true;
	}
	struct in6_addr net = *a;
	memset(&net.s6_addr[8], 0, 8);
	char text[INET6_ADDRSTRLEN];
	inet_ntop(AF_INET6, &net, text, sizeof text);
	out->remote = true;
	snprintf(out->addr, sizeof out->addr, "%s/64", text);
	return true;
}

void peer_identify(int fd, bool tcp, struct peer_id *out)
{
	memset(out, 0, sizeof *out);
	out->uid = PEER_UNKNOWN;
	if (fd >= 0 && tcp) {
		struct sockaddr_storage ss;
		socklen_t n = sizeof ss;
		if (getpeername(fd, (struct sockaddr *)&ss, &n) == 0 &&
		    peer_remote_key((const struct sockaddr *)&ss, n, out))
			return;
	}
	out->uid = peer_uid(fd, tcp);
}

bool peer_same(const struct peer_id *a, const struct peer_id *b)
{
	if (a->remote != b->remote)
		return false;
	return a->remote ? !strcmp(a->addr, b->addr) : a->uid == b->uid;
}

void peer_describe(const struct peer_id *p, char *buf, size_t n)
{
	if (p->remote)
		snprintf(buf, n, "your address %s", p->addr);
	else if (p->uid == PEER_UNKNOWN)
		snprintf(buf, n, "peers whose user could not be found");
	else
		snprintf(buf, n, "your user (uid %d)", (int)p->uid);
}
