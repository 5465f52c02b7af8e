/* The fleet bucket's values and a forwarded message's header lines
 * (src/fleet/fleet_values.c): another host's word, read by every host. The
 * first byte picks the decoder, the rest is its input. A decoder accepts or
 * refuses with a why, never crashes or leaks, and what it accepts is
 * canonical: encoded again it decodes to the same thing, and its texts are
 * texts every reader accepts. */
#include "fleet_values.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void host(const uint8_t *d, size_t n)
{
	struct fleet_host_value v, again;
	char *why = NULL;
	if (fleet_host_decode(d, n, NULL, &v, &why) < 0) {
		if (!why)
			abort();
		free(why);
		return;
	}
	if (!fleet_id_ok(v.h.id) || !fleet_text_ok(v.h.api, sizeof v.h.api - 1))
		abort();
	char *s = fleet_host_encode(&v);
	if (fleet_host_decode(s, strlen(s), v.h.id, &again, &why) < 0 || memcmp(&v, &again, sizeof v))
		abort();
	free(s);
}

static void entry(const uint8_t *d, size_t n)
{
	struct bh_fleet_entry e, again;
	char *why = NULL;
	if (fleet_entry_decode(d, n, NULL, &e, &why) < 0) {
		if (!why)
			abort();
		free(why);
		return;
	}
	if (!fleet_fingerprint_ok(e.fingerprint) || !fleet_id_ok(e.host))
		abort();
	if (e.state == BH_FLEET_HIBERNATED && (strchr(e.hib.sandbox, '/') || !strcmp(e.hib.sandbox, "..")))
		abort();
	char *s = fleet_entry_encode(&e);
	if (fleet_entry_decode(s, strlen(s), e.fingerprint, &again, &why) < 0 || memcmp(&e, &again, sizeof e))
		abort();
	free(s);
}

static void drain(const uint8_t *d, size_t n)
{
	bool on;
	char *why = NULL;
	if (fleet_drain_decode(d, n, &on, &why) < 0) {
		if (!why)
			abort();
		free(why);
	}
}

static void header(const uint8_t *d, size_t n)
{
	char *line = malloc(n + 1);
	memcpy(line, d, n);
	line[n] = '\0';
	const char *name, *value;
	if (fleet_header_split(line, &name, &value) == 0) {
		if (!fleet_header_name_ok(name) || !fleet_header_value_ok(value) || strpbrk(value, "\r\n"))
			abort();
	}
	unsigned st;
	if (fleet_status_parse(line, &st) == 0 && (st < 100 || st > 599))
		abort();
	if (fleet_path_ok(line) && (line[0] != '/' || strpbrk(line, " \r\n")))
		abort();
	char name_buf[BH_FLEET_ID_MAX + 1];
	enum fleet_key_kind k = fleet_key_parse(line, name_buf);
	if (k == FLEET_KEY_SESSION ? !fleet_fingerprint_ok(name_buf) : k != FLEET_KEY_BAD && !fleet_id_ok(name_buf))
		abort();
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 4) {
	case 0:
		host(data + 1, size - 1);
		break;
	case 1:
		entry(data + 1, size - 1);
		break;
	case 2:
		drain(data + 1, size - 1);
		break;
	case 3:
		header(data + 1, size - 1);
		break;
	}
	return 0;
}
