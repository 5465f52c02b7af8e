/* Probe mode: report the sandbox's walls as seen from inside, one
 * key=value fact per line on stdout. The engine judges; the probe only
 * reports, so it exits 0 whatever it finds. */
#ifndef BH_INIT_PROBE_H
#define BH_INIT_PROBE_H

int bh_probe_main(void);

/* probe_seccomp.c: the profile's argument rules, plain and with bit 32 set,
 * the i386 and x32 entries and a syscall newer than the profile. Facts go
 * out through emit; errname names an errno the way the probe does. */
typedef void (*probe_emit_fn)(const char *key, const char *value);
typedef const char *(*probe_errname_fn)(int err);
void bh_probe_seccomp(probe_emit_fn emit, probe_errname_fn errname);

#endif
