/* A real `bulkhead serve` for a test: its own state directory, clients file
 * and unix socket (and TCP port when asked), driven over HTTP with libcurl. */
#ifndef BH_TEST_DAEMON_HARNESS_H
#define BH_TEST_DAEMON_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct daemon {
	char dir[4096];        /* holds state/, sock, clients, audit.log */
	char sock[4200];
	int port;              /* 0 without --listen */
	pid_t pid;
	char run_token[128];   /* scope code:run */
	char op_token[128];    /* scope operator */
	char both_token[128];  /* code:run,operator */
	char other_token[128]; /* code:run, another principal */
};

/* Starts a daemon (extra: more `serve` arguments) and waits until it answers. */
void daemon_start(struct daemon *d, const char *extra);
/* Starts `serve` again on the same directory, socket and clients file (the
 * one before died or was stopped without daemon_stop) and waits likewise. */
void daemon_restart(struct daemon *d, const char *extra);
/* SIGTERM, wait, then collect anything left and remove the directory. */
void daemon_stop(struct daemon *d);

struct answer {
	long status;
	char *body;             /* NUL-terminated */
	size_t len;
	char request_id[80];    /* the Plimsoll-Request-Id answered */
	char not_dispatched[32];/* the Plimsoll-Not-Dispatched header */
	int curl_code;          /* non-zero when the transfer failed */
};

/* POST body to path ("plimsoll.v1.SandboxService/Run") with a bearer token
 * (NULL: none) over the unix socket; sends a fresh request id. */
struct answer *daemon_call(struct daemon *d, const char *token, const char *path, const char *body);
/* The same with full control: over TCP when tcp, extra headers ("Name: v"). */
struct answer *daemon_call_with(struct daemon *d, const char *token, const char *path,
				const char *body, size_t len, bool tcp, const char *const *headers);
struct answer *daemon_get(struct daemon *d, const char *path);
/* A session opened with the run token ({"protocol":3}), its answer
 * asserted: the id to call it with and its fingerprint. */
struct daemon_session {
	char id[64], fp[65];
};
void daemon_open_session(struct daemon *d, struct daemon_session *out);
/* GET with a bearer token (/metrics wants the operator's). */
struct answer *daemon_get_as(struct daemon *d, const char *token, const char *path);
void answer_free(struct answer *a);

/* The SessionRun body of one cell in a session (caller frees). */
char *daemon_cell_body(const char *session_id, const char *language, const char *code);
/* SessionRun of one cell, with a token; the answer as it came. */
struct answer *daemon_cell(struct daemon *d, const char *token, const char *session_id,
			   const char *language, const char *code);
/* A Python cell that must be answered (HTTP 200): its stdout as a
 * plimsoll client decodes it (caller frees). */
char *daemon_cell_stdout(struct daemon *d, const char *token, const char *session_id,
			 const char *code);

#endif
