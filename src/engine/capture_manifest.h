/* What capture.c and the MANIFEST's parser share (capture_manifest.c). */
#ifndef BH_ENGINE_CAPTURE_MANIFEST_H
#define BH_ENGINE_CAPTURE_MANIFEST_H

#include "bulkhead.h"

#define CAPTURE_MANIFEST_CAP (1024u * 1024) /* bytes of a MANIFEST read back */

/* A file name an evidence folder may hold: letters, digits, '.', '-', '_',
 * not starting with '.', at most BH_CAPTURE_NAME_MAX, never MANIFEST. */
bool capture_name_ok(const char *name);

#endif
