/* What sandbox.c (the sandbox, its runtime calls and its channel) and
 * sandbox_control.c (pause, resume, hibernate, restore) and sandbox_exec.c
 * (one program to completion) share; nothing else
 * includes it. */
#ifndef BH_ENGINE_SANDBOX_PRIV_H
#define BH_ENGINE_SANDBOX_PRIV_H

#include "engine_priv.h"

/* The three pipes to a new init: requests, replies, diagnostics. */
struct channel_pipes {
	int to[2], from[2], dg[2];
};

void channel_attach(bh_engine *e, struct sandbox *sb, struct channel_pipes *p);
void close_channel(bh_engine *e, struct sandbox *sb);
const char *diag_text(struct sandbox *sb, char *out, size_t n);
void on_init_exit(bh_engine *e, void *arg, const struct bh_child_result *r);
void pipes_close(struct channel_pipes *p);
int pipes_open(struct channel_pipes *p);
void sandbox_set_state(bh_engine *e, struct sandbox *sb, enum sandbox_state s);
int spawn_runtime(bh_engine *e, struct sandbox *sb, const char *const *args, int in,
		  int out, int err_fd, bh_child_fn fn, bh_error **err);
int uid_slot_take(bh_engine *e);
/* The first host uid of a slot's range (this engine's region). */
uint32_t sandbox_uid_base(bh_engine *e, int slot);
/* The sandbox died or broke its channel: whoever waits is told why. */
void sandbox_lost(bh_engine *e, struct sandbox *sb, const char *why);
void control_finish(bh_engine *e, struct sandbox *sb, const bh_error *err);

#endif
