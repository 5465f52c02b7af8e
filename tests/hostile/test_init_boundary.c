/* The init as the wall between cells: user code of one cell must not keep a
 * process running into the next (the sweep), and no child of the init may
 * carry the init's descriptors once it is the sandbox user (whom gVisor lets
 * open /proc/<pid>/fd of a process of the same uid). Both tiers, in the
 * hostile frame: a bystander session and the host canaries are checked
 * after every case. */
#include "hostile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the sweep ---- */

/* Cell 1 starts the outliver (outliver.c, uploaded with the cell) in a
 * mode and waits until its heartbeat is fresh. */
static const char outliver_start[] =
	"hb = '/tmp/bh-outliver-heartbeat'\n"
	"os.chmod('/work/outliver', 0o755)\n"
	"subprocess.run(['/work/outliver', MODE, hb], check=True)\n"
	"t0 = time.time()\n"
	"while not os.path.exists(hb) and time.time() - t0 < 10: time.sleep(0.01)\n"
	"time.sleep(0.3)\n"
	"print('outliver', 'running' if time.time() - float(open(hb).read()) < 0.25 else 'stalled')\n";

/* What a later cell sees: how old the heartbeat is, and every process
 * with a live thread that is neither the init nor this interpreter (a
 * process whose main thread exited says Z in its own stat). */
static const char outliver_check[] =
	"time.sleep(0.5)\n"
	"try: age = time.time() - float(open('/tmp/bh-outliver-heartbeat').read())\n"
	"except (OSError, ValueError): age = -1\n"
	"def live(p):\n"
	"    try: st = open('/proc/%s/stat' % p).read().rsplit(')', 1)[1].split()\n"
	"    except OSError: return False\n"
	"    return st[0] not in 'ZX' or int(st[17]) > 1\n"
	"others = []\n"
	"for p in os.listdir('/proc'):\n"
	"    if not p.isdigit() or int(p) in (1, os.getpid()) or not live(p): continue\n"
	"    try: comm = open('/proc/%s/comm' % p).read().strip()\n"
	"    except OSError: comm = '?'\n"
	"    others.append('%s:%s' % (p, comm))\n"
	"print('age %.3f' % age)\n"
	"print('others', len(others), ' '.join(others[:8]))\n";

static size_t file_size(const char *path)
{
	struct stat sb;
	cr_assert_eq(stat(path, &sb), 0, "%s", path);
	return (size_t)sb.st_size;
}

/* Starts the outliver in `mode` in one cell; the sweep after that cell must
 * end it, and several later cells must find no trace of it running. */
static void outliver_case(const char *mode, const char *what)
{
	bh_session *s = hostile_session();
	case_begin(what);
	char *bin = harness_slurp(BH_OUTLIVER);
	cr_assert_not_null(bin, "cannot read %s", BH_OUTLIVER);
	struct bh_file upload = {.path = "outliver", .content = (const uint8_t *)bin,
				 .len = file_size(BH_OUTLIVER)};
	char code[4096];
	snprintf(code, sizeof code, "import os, subprocess, time\nMODE = '%s'\n%s", mode,
		 outliver_start);
	struct cell_outcome *o = harness_cell_files(&h, s, BH_LANG_PYTHON, code, &upload, 1);
	free(bin);
	cr_assert(o->answered, "%s\n%s", o->err_msg ? o->err_msg : "", h.log);
	cr_assert_not_null(strstr(o->out, "outliver running"), "the %s never ran:\n%s\n%s", mode,
			   o->out, o->errout);
	cell_outcome_free(o);
	double first_age = -1;
	for (int i = 0; i < 3; i++) {
		o = py(s, outliver_check, 30000);
		char v[256];
		cr_assert_not_null(probe(o->out, "age", v, sizeof v), "%s\n%s", o->out, o->errout);
		double age = atof(v);
		cr_assert_not_null(probe(o->out, "others", v, sizeof v), "%s", o->out);
		cr_assert(age >= 0.45,
			  "cell %d: the %s's heartbeat is %.3f s old: it outlived the sweep after its "
			  "cell (processes besides the interpreter: %s)", i + 2, mode, age, v);
		cr_assert_eq(atoi(v), 0, "cell %d: processes left besides the interpreter: %s", i + 2, v);
		if (i == 0)
			first_age = age;
		else
			cr_assert_gt(age, first_age, "the heartbeat moved between later cells");
		cell_outcome_free(o);
	}
	case_saw("%s: gone after its own cell's sweep (heartbeat %.1f s old one cell later; no "
		 "process besides the interpreter in 3 later cells)", what, first_age);
	case_end();
}

HOSTILE_TEST(a_fork_and_exit_chain_does_not_outlive_the_sweep_after_its_cell)
{
	outliver_case("chain", "a setsid fork-and-exit chain");
}

HOSTILE_TEST(a_process_whose_main_thread_exited_does_not_outlive_the_sweep)
{
	outliver_case("zombie-leader", "a process running on after its main thread exited (stat: Z)");
}
