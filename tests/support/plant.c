/* report: orphans planted for tests (plant.h). */
#include "plant.h"
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

void plant_orphan_bundle(const char *state, const char *cgroup_parent, const char *sandbox,
			 const char *orphan, const char *out_json)
{
	char out[1024];
	harness_sh_into(out, sizeof out,
			"sed -e 's|\"args\":\\[\"[^\"]*\"\\]|\"args\":[\"/bin/sleep\",\"300\"]|' "
			"-e 's|%s/%s|%s/%s|' '%s/bundles/%s/config.json' > '%s' && echo copied",
			cgroup_parent, sandbox, cgroup_parent, orphan, state, sandbox, out_json);
	cr_assert_str_eq(out, "copied\n", "could not copy %s's bundle for an orphan: %s", sandbox, out);
}

void plant_orphan_start(const char *state, const char *runtime_root, const char *orphan,
			const char *config_json, bool paused)
{
	/* `crun run -d` returns once the container is started, which can be
	 * before its init has exec'd the command: a pause then freezes crun's
	 * own child, and the orphan's process list shows crun, not sleep. So
	 * the pause waits (up to 5 s) for /bin/sleep to be what runs. */
	char pause[9000] = "";
	if (paused)
		snprintf(pause, sizeof pause,
			 "pid=$(crun --root '%s' state %s | sed -n 's/.*\"pid\": *\\([0-9]*\\).*/\\1/p'); "
			 "for i in $(seq 100); do "
			 "tr '\\0' ' ' < /proc/$pid/cmdline 2>/dev/null | grep -q '^/bin/sleep' && break; "
			 "sleep 0.05; done; "
			 "crun --root '%s' pause %s && ",
			 runtime_root, orphan, runtime_root, orphan);
	char out[4096];
	harness_sh_into(out, sizeof out,
			"set -e; d='%s/bundles/%s'; mkdir -p \"$d\"; cp '%s' \"$d/config.json\"; "
			"crun --root '%s' run -d --bundle \"$d\" %s </dev/null >/dev/null 2>\"$d.err\" "
			"|| { cat \"$d.err\"; rm -f \"$d.err\"; exit 1; }; rm -f \"$d.err\"; "
			"%secho planted",
			state, orphan, config_json, runtime_root, orphan, pause);
	cr_assert_str_eq(out, "planted\n", "could not plant the orphan %s: %s", orphan, out);
}

void plant_orphan_remove(const char *runtime_root, const char *orphan)
{
	char out[1024];
	harness_sh_into(out, sizeof out, "crun --root '%s' delete -f %s >/dev/null 2>&1; true",
			runtime_root, orphan);
}
