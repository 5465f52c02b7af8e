/* A store nobody vouches for (bh_history_open and its reads): whatever the
 * file holds, opening and reading it ends, with rows or an error, and
 * touches no memory it should not. The work bound keeps each run short. */
#include "bulkhead.h"
#include "record.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int on_record(void *arg, const struct bh_record_row *r)
{
	(void)arg;
	/* Every string a row hands out is a string. */
	volatile size_t n = 0;
	for (const char *p = r->record->isolation; *p; p++)
		n++;
	for (const char *p = r->language; *p; p++)
		n++;
	return 0;
}

static int on_event(void *arg, const struct bh_event *ev)
{
	(void)arg;
	volatile size_t n = 0;
	for (const char *p = ev->detail; *p; p++)
		n++;
	return 0;
}

static int on_session(void *arg, const struct bh_history_session *s)
{
	(void)arg;
	volatile size_t n = 0;
	/* The reader parsed the state and end reason; their names must be the
	 * vocabulary's, whatever the store held. */
	for (const char *p = bh_session_state_name(s->state); *p; p++)
		n++;
	for (const char *p = bh_end_reason_name(s->end_reason); *p; p++)
		n++;
	for (const char *p = s->end_detail; *p; p++)
		n++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[] = "/tmp/bh-fuzz-store-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		unlink(path);
		return 0;
	}
	close(fd);
	bh_history *h = NULL;
	bh_error *err = NULL;
	if (bh_history_open(path, &h, &err) == 0) {
		bh_history_events_newest(h, 0, 50, on_event, NULL, NULL);
		bh_history_events(h, 0, 50, on_event, NULL, NULL);
		bh_history_records_newest(h, NULL, 0, 50, on_record, NULL, NULL);
		bh_history_record_at(h, "x", 1, on_record, NULL, NULL);
		bh_history_sessions(h, 50, on_session, NULL, NULL);
		bh_history_close(h);
	}
	bh_error_free(err);
	unlink(path);
	return 0;
}
