/* A small real HTTP relay between a client and a daemon (both on unix
 * sockets) that forwards every request unchanged and can spoil chosen
 * answers on their way back: the man in the middle a client's checks must
 * catch. It runs in its own process group, one child per connection. */
#ifndef BH_TEST_TAMPER_PROXY_H
#define BH_TEST_TAMPER_PROXY_H

#include <sys/types.h>

enum tamper {
	TAMPER_NONE,
	TAMPER_FLIP_STDOUT,     /* one byte of the answer's stdout changes */
	TAMPER_DROP_REQUEST_ID, /* the Plimsoll-Request-Id header is removed */
	TAMPER_REPLACE_BODY,    /* the body becomes another (proxy_start_answering) */
};

struct tamper_proxy {
	pid_t pid;
	char sock[4200]; /* where clients connect */
};

/* Relays sock -> upstream. Answers to requests whose path contains `path`
 * are spoiled, after the first `spare` of them went through untouched. */
void proxy_start(struct tamper_proxy *p, const char *upstream, const char *sock, enum tamper mode,
		 const char *path, int spare);
/* The same relay answering `body` (a daemon's answer gone wrong) for every
 * request whose path contains `path`, the status and headers kept. */
void proxy_start_answering(struct tamper_proxy *p, const char *upstream, const char *sock,
			   const char *path, const char *body);
void proxy_stop(struct tamper_proxy *p);

#endif
