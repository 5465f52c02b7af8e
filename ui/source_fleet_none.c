/* A build without libbulkhead-fleet (no libnats): console --fleet is
 * refused at start, in words, and nothing else changes. */
#include "source.h"
#include "base.h"

struct ui_source *ui_source_fleet(const char *servers, const struct bh_client_options *o,
				  const char *images_dir, char **why)
{
	(void)servers, (void)o, (void)images_dir;
	if (why)
		*why = xstrdup("this bulkhead was built without the fleet library (libnats-dev): "
			       "--fleet is not available");
	return NULL;
}

int ui_fleet_leaks(struct ui_source *s, uint32_t timeout_ms, struct bh_leak **out, size_t *n,
		   char **silent, char **why)
{
	(void)s, (void)timeout_ms;
	*out = NULL;
	*n = 0;
	*silent = NULL;
	*why = xstrdup("this bulkhead was built without the fleet library");
	return -1;
}
