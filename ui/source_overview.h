/* An attached console's header and sandboxes view from one Overview (B27):
 * the last answer kept, and a long poll on the daemon that is answered as
 * soon as what it shows changes. While that poll is out (and younger than
 * its wait), the kept answer is the daemon's state: a refresh reads it and
 * sends nothing. Once the poll fails, or something this console did changed
 * the state, the next ask sends an Overview to be answered at once, and the
 * asks wait for it (pending, so a script's next key waits too). */
#ifndef BH_UI_SOURCE_OVERVIEW_H
#define BH_UI_SOURCE_OVERVIEW_H

#include "client.h"
#include "source.h"

/* What the long poll asks the daemon to wait at most (its cap). */
#define OVERVIEW_WAIT_MS WIRE_OPERATOR_OVERVIEW_WAIT_MAX_MS
/* A poll out longer than its wait and this is not answering: the kept
 * answer is no longer taken for the daemon's state. */
#define OVERVIEW_LATE_MS 1000u
/* A poll just sent may carry a token already old (its answer sat unread
 * while the console's loop was busy, or blocked reading a script): the
 * daemon looks at a poll as it arrives and answers a stale token at once,
 * so one still out after this long vouches for the kept answer. */
#define OVERVIEW_CONFIRM_MS 300u
/* The console's loop reads every answer that came at least every 200 ms;
 * one that has not for longer (it was blocked, reading a script) may have a
 * poll's answer unread: the kept answer is then not vouched for. */
#define OVERVIEW_UNREAD_MS 250u

struct overview_waiter;
struct overview_sent;

struct overview {
	/* the owner's: set before the first ask */
	bh_client *c;
	void *owner;
	void (*note)(void *owner, const struct bh_client_error *err); /* the link's state */
	bool (*mine)(void *owner, const char *fp);                    /* opened by this console */
	int *pending;
	bool closing; /* the client is being freed: nothing is sent again */
	/* the kept answer */
	bool have;
	char token[WIRE_OPERATOR_TOKEN_MAX + 1];
	struct ui_session *rows;
	size_t n_rows;
	char version[32];
	struct bh_host_usage host;
	uint64_t kept_mono_ms; /* when this console read the daemon's clock (host.now_unix_ms) */
	struct bh_session_usage *usage;
	size_t n_usage;
	size_t waiting;
	/* the requests out: the long poll (since when) and one to answer now */
	bool polling, asking;
	/* Bumped by overview_stale: an answer to what was sent before it is
	 * kept, but does not answer those who asked after (it was computed
	 * before what made it stale). */
	unsigned stale_count;
	uint64_t poll_sent_ms;
	uint64_t read_ms; /* the owner's loop last read what came (overview_read) */
	struct overview_sent *poll_call, *ask_call; /* the requests out, for overview_close */
	struct overview_waiter *waiters;
	size_t n_waiters, cap_waiters;
};

void overview_sessions(struct overview *o, ui_sessions_fn cb, void *arg);
void overview_usage(struct overview *o, ui_usage_fn cb, void *arg);
void overview_waiting(struct overview *o, ui_count_fn cb, void *arg);
/* This console changed what the daemon shows (an action, a cell, an open):
 * the next ask is answered fresh, not from the kept answer. */
void overview_stale(struct overview *o);
/* The loop's turn: an Overview for the asks waiting, if none is out. */
void overview_flush(struct overview *o);
bool overview_due(const struct overview *o);
/* The owner's loop has just read every answer that came. */
void overview_read(struct overview *o);
/* Before the client goes: the requests out are abandoned (nothing of them
 * left), none is sent again. */
void overview_close(struct overview *o);
void overview_free(struct overview *o);

#endif
