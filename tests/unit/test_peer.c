/* The per-peer connection limit's key (src/daemon/peer.c): a peer off this
 * machine is its address — IPv4 whole, IPv6 by its /64 —, a loopback peer
 * is looked up by uid instead. */
#include "peer.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <string.h>

static bool key_of(const char *addr, struct peer_id *out)
{
	memset(out, 0, sizeof *out);
	if (strchr(addr, ':')) {
		struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(40000)};
		cr_assert_eq(inet_pton(AF_INET6, addr, &a.sin6_addr), 1, "%s", addr);
		return peer_remote_key((const struct sockaddr *)&a, sizeof a, out);
	}
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(40000)};
	cr_assert_eq(inet_pton(AF_INET, addr, &a.sin_addr), 1, "%s", addr);
	return peer_remote_key((const struct sockaddr *)&a, sizeof a, out);
}

Test(peer, a_remote_ipv4_peer_is_its_address_and_loopback_is_left_to_the_uid_lookup)
{
	struct peer_id p;
	cr_assert(key_of("192.0.2.7", &p));
	cr_assert(p.remote);
	cr_assert_str_eq(p.addr, "192.0.2.7");
	char told[96];
	peer_describe(&p, told, sizeof told);
	cr_assert_str_eq(told, "your address 192.0.2.7");
	cr_assert_not(key_of("127.0.0.1", &p));
	cr_assert_not(key_of("127.0.0.2", &p));
	cr_assert_not(key_of("::1", &p));
	cr_assert_not(key_of("::ffff:127.0.0.9", &p), "a mapped loopback address is loopback");
}

Test(peer, ipv6_peers_in_one_slash_64_share_a_key_and_a_mapped_ipv4_peer_is_its_ipv4_address)
{
	struct peer_id a, b, c;
	cr_assert(key_of("2001:db8:1:2::10", &a));
	cr_assert(key_of("2001:db8:1:2:ffff:1:2:3", &b));
	cr_assert(key_of("2001:db8:1:3::10", &c));
	cr_assert_str_eq(a.addr, "2001:db8:1:2::/64");
	cr_assert(peer_same(&a, &b), "%s vs %s", a.addr, b.addr);
	cr_assert_not(peer_same(&a, &c));
	struct peer_id m, v4;
	cr_assert(key_of("::ffff:198.51.100.4", &m));
	cr_assert(key_of("198.51.100.4", &v4));
	cr_assert_str_eq(m.addr, "198.51.100.4");
	cr_assert(peer_same(&m, &v4));
}

Test(peer, a_local_uid_and_a_remote_address_are_never_the_same_peer)
{
	struct peer_id local = {.remote = false, .uid = 0}, other = {.remote = false, .uid = 0};
	struct peer_id remote;
	cr_assert(key_of("203.0.113.1", &remote));
	cr_assert(peer_same(&local, &other));
	cr_assert_not(peer_same(&local, &remote));
	other.uid = 1000;
	cr_assert_not(peer_same(&local, &other));
	char told[96];
	peer_describe(&local, told, sizeof told);
	cr_assert_str_eq(told, "your user (uid 0)");
}
