/* Probe mode: report the sandbox's walls as seen from inside, one
 * key=value fact per line on stdout. The engine judges; the probe only
 * reports, so it exits 0 whatever it finds. */
#ifndef BH_INIT_PROBE_H
#define BH_INIT_PROBE_H

int bh_probe_main(void);

#endif
