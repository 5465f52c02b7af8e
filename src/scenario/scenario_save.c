/* Writing a recording (bulkhead record): what is written is what the loader
 * accepts, checked before the file exists, so a recorder bug shows as a
 * refusal naming the step instead of a scenario the player refuses later. */
#include "scenario.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int scenario_save(const char *path, const char *text, char *err, size_t errlen)
{
	struct scenario *s = NULL;
	char why[512];
	if (scenario_parse(text, strlen(text), &s, why, sizeof why) < 0) {
		snprintf(err, errlen, "%s: not written: the recording does not load as a scenario: %s",
			 path, why);
		return -1;
	}
	scenario_free(s);
	char tmp[PATH_MAX + 8];
	if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
		snprintf(err, errlen, "%.200s...: the path is too long", path);
		return -1;
	}
	FILE *f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fputc('\n', f) < 0 || fclose(f) != 0) {
		int e = errno;
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(e));
		unlink(tmp);
		return -1;
	}
	if (rename(tmp, path) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(e));
		unlink(tmp);
		return -1;
	}
	return 0;
}
