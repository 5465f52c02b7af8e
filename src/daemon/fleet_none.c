/* serve --fleet in a build without libbulkhead-fleet (no libnats): the
 * daemon is one host alone, and --fleet is refused at start. */
#include "daemon_priv.h"
#include "why.h"

int daemon_fleet_start(struct server *s, char **why)
{
	if (!s->cfg->fleet.servers)
		return 0;
	return why_set(why, "--fleet: this bulkhead was built without the fleet (libnats-dev was "
			    "not found when it was built)");
}

void daemon_fleet_stop(struct server *s)
{
	(void)s;
}

int daemon_fleet_fd(struct server *s)
{
	(void)s;
	return -1;
}

int daemon_fleet_timeout_ms(struct server *s)
{
	(void)s;
	return -1;
}

void daemon_fleet_process(struct server *s)
{
	(void)s;
}

void daemon_fleet_tick(struct server *s)
{
	(void)s;
}

void daemon_fleet_session_changed(struct server *s)
{
	(void)s;
}

bool daemon_fleet_route(struct call *c, const char *method)
{
	(void)c, (void)method;
	return false;
}

void daemon_fleet_before_close(struct server *s, void (*run_once)(struct server *s, int ms),
			       uint64_t until_ms)
{
	(void)s, (void)run_once, (void)until_ms;
}
