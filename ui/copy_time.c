#include "copy_time.h"

#include <stdbool.h>
#include <stdio.h>
#include <time.h>

void copy_time(char *buf, size_t n, int64_t unix_ms, int64_t now_ms)
{
	time_t t = (time_t)(unix_ms / 1000), now = (time_t)(now_ms / 1000);
	struct tm tm, today;
	if (unix_ms <= 0 || !gmtime_r(&t, &tm) || !gmtime_r(&now, &today)) {
		snprintf(buf, n, "-");
		return;
	}
	bool same_day = tm.tm_year == today.tm_year && tm.tm_yday == today.tm_yday;
	strftime(buf, n, same_day ? "%H:%M" : "%m-%d", &tm);
}
