/* Stores generated for the history tests: honest ones (every record sealed
 * and chained, as the engine writes them) of any size, in seconds, and
 * hostile ones built from them. */
#ifndef BH_TEST_GEN_STORE_H
#define BH_TEST_GEN_STORE_H

#include <stddef.h>
#include <stdint.h>

struct gen_store_spec {
	size_t sessions;            /* each with records_per_session chained records */
	size_t records_per_session;
	size_t single_runs;         /* records of no session */
	size_t events;
	size_t detail_bytes;        /* each event's detail (at least 32) */
};

/* Creates PATH with this build's schema and the rows of spec, in one
 * transaction (the engine's store code makes the schema). */
void gen_store(const char *path, const struct gen_store_spec *spec);
/* The fingerprint gen_store gives session i (0-based). */
void gen_store_session(size_t i, char fp[65]);
/* Runs SQL on PATH (to make a hostile store of an honest one). */
void gen_store_exec(const char *path, const char *sql);

#endif
