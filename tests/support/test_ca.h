/* A test CA and certificates it signs, made with the openssl CLI (never
 * the product's code): the broker's upstreams and the daemon's TLS tests
 * share it. Every file lands in dir; a failed command fails the test. */
#ifndef BH_TEST_CA_H
#define BH_TEST_CA_H

#include <stdbool.h>

/* dir/NAME.pem and dir/NAME.key: a self-signed P-256 CA valid two days. */
void test_ca_make(const char *dir, const char *name, const char *cn);

struct test_cert {
	const char *ca;      /* the CA's NAME in dir */
	const char *name;    /* dir/NAME.pem, dir/NAME.key */
	const char *subject; /* "/CN=worker-1/O=Example" */
	const char *san;     /* "DNS:api.test,IP:127.0.0.2"; NULL: none (a client's) */
	const char *usage;   /* "serverAuth" or "clientAuth" */
	bool expired;        /* its validity ended a day ago */
};
void test_ca_cert(const char *dir, const struct test_cert *c);

#endif
