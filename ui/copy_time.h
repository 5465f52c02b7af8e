/* report: a time of a store copy's row, shown as itself (a copy, maybe days
 * old, has no "now" of its own to count an age against): UTC "hh:mm" when
 * it falls on today's UTC date, else the day, "MM-DD" — `ls -l`'s rule, in
 * the five columns an age takes. The whole time is in the detail views. */
#ifndef BH_UI_COPY_TIME_H
#define BH_UI_COPY_TIME_H

#include <stddef.h>
#include <stdint.h>

/* "-" for no time (0 or less). */
void copy_time(char *buf, size_t n, int64_t unix_ms, int64_t now_ms);

#endif
