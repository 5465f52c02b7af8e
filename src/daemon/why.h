/* The daemon's error text helpers are the base's (why_set, why_errno,
 * why_prefix in include/bulkhead-base/base.h): one definition, which the
 * profiles file's code below the daemon uses too. */
#ifndef BH_DAEMON_WHY_H
#define BH_DAEMON_WHY_H

#include "base.h"

#endif
