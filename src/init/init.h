/* Init mode: bulkhead-init as PID 1 of a sandbox, serving the engine's
 * channel (channel.h) on the descriptors it was started with. */
#ifndef BH_INIT_INIT_H
#define BH_INIT_INIT_H

/* Never returns normally: exits 0 when the engine closes the channel,
 * 2 on a protocol error or refusal to start, 1 on a channel I/O error. */
int bh_init_main(void);

#endif
