/* Error text for the daemon's small modules: a fallible function takes
 * `char **why` last and, on failure, returns -1 with *why set to a malloc'd
 * sentence the caller shows and frees (why may be NULL: nobody asked).
 * The library never prints; the CLI or the daemon's log decides where the
 * text goes. */
#ifndef BH_DAEMON_WHY_H
#define BH_DAEMON_WHY_H

/* Replaces *why with the formatted text; always returns -1. */
int why_set(char **why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Like why_set, with ": strerror(err)" appended. */
int why_errno(char **why, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Puts "PREFIX: " in front of the text already in *why. */
void why_prefix(char **why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
