/* The hostile suite's frame: an engine per test, a bystander session that
 * must keep answering, host canaries checked around every case, and one
 * row per case for RESULTS.md (what the cell saw, what the host checked). */
#ifndef BH_HOSTILE_H
#define BH_HOSTILE_H

#include "harness.h"

#include <criterion/criterion.h>

extern struct harness h;
extern enum bh_tier tier;

/* Opens the engine and the bystander for `t` (skipping nothing: a tier that
 * is not offered fails the test), and arms the canaries. */
void hostile_setup(enum bh_tier t);
/* ---- egress (plumb): the same, the engine given a broker's ops ---- */
struct bh_egress_ops;
void hostile_setup_egress(enum bh_tier t, const struct bh_egress_ops *ops, void *arg);
/* Writes the rows of this test (a case still open is a failure), closes
 * every session and the engine. */
void hostile_teardown(void);

/* A case: begin takes the canaries' baseline; saw notes what the cell saw
 * (short, for the table); end checks every canary unchanged (asserting) and
 * records the row as passed. */
void case_begin(const char *name);
void case_saw(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void case_end(void);

/* A session of the test's tier (python warm), closed at teardown. */
bh_session *hostile_session(void);
/* Runs a Python cell (prelude included) that must be answered. */
struct cell_outcome *py(bh_session *s, const char *code, uint32_t timeout_ms);
/* The value of "NAME VALUE" on a line of out, or NULL. */
const char *probe(const char *out, const char *name, char *val, size_t vlen);
/* Asserts each named probe ran and did not print OK; notes them in saw. */
void assert_blocked(const char *out, const char *const *names);

/* Host facts the cases use. */
int canary_port(void);             /* the host listener (all addresses) */
const char *canary_abstract(void); /* the host's abstract unix socket name */
const char *canary_path(void);     /* a host file whose hash must not change */
const char *canary_dir(void);      /* a host directory nothing may appear in */
const char *host_token_path(void); /* a stand-in for the daemon's token file */
int host_gateway(char *out, size_t n); /* the default route's gateway, or -1 */
int host_address(char *out, size_t n); /* a non-loopback IPv4 of the host, or -1 */

/* Every test runs once per tier. */
#define HOSTILE_TEST(name)                                                                        \
	static void name##_body(void);                                                              \
	Test(hostile_container, name, .fini = hostile_teardown)                                     \
	{                                                                                           \
		hostile_setup(BH_TIER_CONTAINER);                                                   \
		name##_body();                                                                      \
	}                                                                                           \
	Test(hostile_kernel, name, .fini = hostile_teardown)                                        \
	{                                                                                           \
		hostile_setup(BH_TIER_KERNEL);                                                      \
		name##_body();                                                                      \
	}                                                                                           \
	static void name##_body(void)

#endif
