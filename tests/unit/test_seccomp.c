/* The seccomp profile a bundle carries, judged the way libseccomp (crun) and
 * runsc build it: an evaluator answers what a call with given arguments
 * gets, and refuses a profile whose rules would be resolved in a way the
 * author did not mean (an unconditional rule beside conditional ones for the
 * same syscall: libseccomp lets it override them; two comparisons of one
 * argument in an entry: crun and runsc OR them). */
#include "engine_priv.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HI (1ull << 32)

static cJSON *bundle;

static cJSON *profile(bool errno_ret, const char *drop)
{
	struct bundle_spec s = {
		.name = "bh-test", .rootfs = "/nonexistent/rootfs", .init_path = "/nonexistent/init",
		.cgroup_path = "/bulkhead/k/bh-test", .host_uid_base = 1048576, .memory_mb = 512,
		.pids = 256, .nproc = 512, .cpu_millis = 1000, .tmp_mb = 256, .work_mb = 256,
		.shm_mb = 64, .userns = true, .seccomp_errno_ret = errno_ret, .drop_wall = drop,
	};
	bh_error *err = NULL;
	char *text = bundle_json(&s, &err);
	cr_assert_not_null(text, "%s", err ? err->msg : "");
	cJSON_Delete(bundle);
	bundle = cJSON_Parse(text);
	free(text);
	cr_assert_not_null(bundle);
	cJSON *sc = cJSON_GetObjectItem(cJSON_GetObjectItem(bundle, "linux"), "seccomp");
	cr_assert_not_null(sc);
	return sc;
}

static void fini(void)
{
	cJSON_Delete(bundle);
	bundle = NULL;
}

static bool names(cJSON *rule, const char *syscall)
{
	cJSON *n;
	cJSON_ArrayForEach(n, cJSON_GetObjectItem(rule, "names")) if (!strcmp(n->valuestring, syscall)) return true;
	return false;
}

static uint64_t num(cJSON *o, const char *k)
{
	cJSON *v = cJSON_GetObjectItem(o, k);
	return v ? (uint64_t)v->valuedouble : 0;
}

static bool arg_matches(cJSON *a, const uint64_t *args)
{
	const char *op = cJSON_GetObjectItem(a, "op")->valuestring;
	uint64_t x = args[num(a, "index")], v = num(a, "value"), v2 = num(a, "valueTwo");
	if (!strcmp(op, "SCMP_CMP_MASKED_EQ"))
		return (x & v) == v2;
	if (!strcmp(op, "SCMP_CMP_EQ"))
		return x == v;
	if (!strcmp(op, "SCMP_CMP_NE"))
		return x != v;
	cr_assert_fail("operator %s not modelled", op);
	return false;
}

/* "ALLOW", or "ERRNO <n>" (the default's errno if the rule names none). */
static const char *verdict(cJSON *sc, const char *syscall, const uint64_t args[6])
{
	static char out[32];
	cJSON *rule, *hit = NULL;
	bool unconditional = false, conditional = false;
	cJSON_ArrayForEach(rule, cJSON_GetObjectItem(sc, "syscalls"))
	{
		if (!names(rule, syscall))
			continue;
		cJSON *as = cJSON_GetObjectItem(rule, "args");
		bool match = true;
		if (cJSON_GetArraySize(as) == 0)
			unconditional = true;
		else
			conditional = true;
		cJSON *a;
		cJSON_ArrayForEach(a, as) match = match && arg_matches(a, args);
		if (!match)
			continue;
		if (hit) {
			cr_assert_str_eq(cJSON_GetObjectItem(hit, "action")->valuestring,
					 cJSON_GetObjectItem(rule, "action")->valuestring,
					 "%s: two rules with different actions match", syscall);
			cr_assert_eq(num(hit, "errnoRet"), num(rule, "errnoRet"),
				     "%s: two rules with different errnos match", syscall);
		}
		hit = rule;
	}
	cr_assert_not(unconditional && conditional,
		      "%s has an unconditional rule beside conditional ones (libseccomp lets it "
		      "override them)",
		      syscall);
	cJSON *from = hit ? hit : sc;
	const char *action = cJSON_GetObjectItem(from, hit ? "action" : "defaultAction")->valuestring;
	if (!strcmp(action, "SCMP_ACT_ALLOW"))
		return "ALLOW";
	cr_assert_str_eq(action, "SCMP_ACT_ERRNO");
	snprintf(out, sizeof out, "ERRNO %llu",
		 (unsigned long long)num(from, hit ? "errnoRet" : "defaultErrnoRet"));
	return out;
}

static const char *call(cJSON *sc, const char *syscall, unsigned index, uint64_t value)
{
	uint64_t args[6] = {0};
	args[index] = value;
	return verdict(sc, syscall, args);
}

Test(seccomp, the_profile_is_an_allowlist_that_answers_enosys_for_anything_unnamed, .fini = fini)
{
	cJSON *sc = profile(true, NULL);
	cr_assert_str_eq(cJSON_GetObjectItem(sc, "defaultAction")->valuestring, "SCMP_ACT_ERRNO");
	cr_assert_eq(num(sc, "defaultErrnoRet"), 38);
	cr_assert_str_eq(call(sc, "listmount", 0, 0), "ERRNO 38", "a syscall newer than the profile");
	cr_assert_str_eq(call(sc, "read", 0, 0), "ALLOW");
	cr_assert_str_eq(call(sc, "ptrace", 0, 0), "ERRNO 1", "refused by name: EPERM");
	cr_assert_str_eq(call(sc, "process_madvise", 0, 0), "ERRNO 1");
	cr_assert_str_eq(call(sc, "clone3", 0, 0), "ERRNO 38", "glibc falls back to clone");
	/* Only the x86_64 ABI: i386 and x32 calls are the bad-architecture action. */
	cJSON *arches = cJSON_GetObjectItem(sc, "architectures");
	cr_assert_eq(cJSON_GetArraySize(arches), 1);
	cr_assert_str_eq(cJSON_GetArrayItem(arches, 0)->valuestring, "SCMP_ARCH_X86_64");
}

Test(seccomp, every_argument_rule_reads_only_the_low_32_bits, .fini = fini)
{
	cJSON *sc = profile(true, NULL), *rule;
	size_t ruled = 0;
	cJSON_ArrayForEach(rule, cJSON_GetObjectItem(sc, "syscalls"))
	{
		bool seen[6] = {false};
		cJSON *a;
		cJSON_ArrayForEach(a, cJSON_GetObjectItem(rule, "args"))
		{
			const char *name = cJSON_GetArrayItem(cJSON_GetObjectItem(rule, "names"), 0)->valuestring;
			uint64_t idx = num(a, "index"), mask = num(a, "value"), want = num(a, "valueTwo");
			cr_assert_str_eq(cJSON_GetObjectItem(a, "op")->valuestring, "SCMP_CMP_MASKED_EQ",
					 "%s compares argument %llu with all 64 bits", name,
					 (unsigned long long)idx);
			cr_assert_leq(mask, 0xffffffffull, "%s: mask %llx reaches above bit 31", name,
				      (unsigned long long)mask);
			cr_assert_eq(want & ~mask, 0, "%s: value outside its mask never matches", name);
			cr_assert_not(seen[idx], "%s: two comparisons of argument %llu (runtimes OR them)",
				      name, (unsigned long long)idx);
			seen[idx] = true;
			/* The kernel reads the low half: so must the rule. */
			uint64_t args[6] = {0};
			args[idx] = want;
			char plain[32];
			snprintf(plain, sizeof plain, "%s", verdict(sc, name, args));
			args[idx] = want | HI;
			cr_assert_str_eq(verdict(sc, name, args), plain, "%s(%llx) with bit 32 set", name,
					 (unsigned long long)want);
			ruled++;
		}
	}
	cr_assert_geq(ruled, 24);
}

Test(seccomp, each_argument_rule_refuses_exactly_what_it_means_to, .fini = fini)
{
	cJSON *sc = profile(true, NULL);
	/* socket: unix, IPv4, IPv6 and netlink only; packet and vsock by name. */
	for (uint64_t fam = 0; fam < 64; fam++) {
		const char *want = fam == 1 || fam == 2 || fam == 10 || fam == 16 ? "ALLOW"
				   : fam == 17 || fam == 40		    ? "ERRNO 97"
									    : "ERRNO 38";
		cr_assert_str_eq(call(sc, "socket", 0, fam), want, "family %llu",
				 (unsigned long long)fam);
		cr_assert_str_eq(call(sc, "socket", 0, fam | HI), want, "family %llu | 1<<32",
				 (unsigned long long)fam);
	}
	/* ioctl: all but TIOCSTI and TIOCLINUX, in any of the 32 bits. */
	const uint64_t denied[] = {0x5412, 0x541C};
	const uint64_t allowed[] = {0, 0x5401, 0x5411, 0x5413, 0x541B, 0x541D, 0x5451, 0x80045430,
				    0xffffffff, 0x1412, 0x15412, 0x8000541C};
	for (size_t i = 0; i < 2; i++)
		for (int shift = 0; shift < 3; shift++)
			cr_assert_str_eq(call(sc, "ioctl", 1, denied[i] | ((uint64_t)shift << 32)), "ERRNO 1");
	for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
		cr_assert_str_eq(call(sc, "ioctl", 1, allowed[i] | HI), "ALLOW", "cmd %llx",
				 (unsigned long long)allowed[i]);
	/* mknod and mknodat: every file type but character and block devices. */
	for (uint64_t t = 0; t < 16; t++) {
		uint64_t mode = t << 12 | 0600;
		const char *want = t == 2 || t == 6 ? "ERRNO 1" : "ALLOW";
		cr_assert_str_eq(call(sc, "mknod", 1, mode), want, "type %llx", (unsigned long long)t);
		cr_assert_str_eq(call(sc, "mknodat", 2, mode | HI), want, "type %llx",
				 (unsigned long long)t);
	}
	/* clone: any namespace flag refused, anything else a fork or a thread. */
	const uint64_t news[] = {0x80, 0x20000, 0x2000000, 0x4000000, 0x8000000, 0x10000000,
				 0x20000000, 0x40000000};
	for (size_t i = 0; i < sizeof news / sizeof news[0]; i++)
		cr_assert_str_eq(call(sc, "clone", 0, news[i] | 0x11 | HI), "ERRNO 1");
	cr_assert_str_eq(call(sc, "clone", 0, 0x11), "ALLOW");
	cr_assert_str_eq(call(sc, "clone", 0, 0x3d0f00), "ALLOW", "pthread_create's flags");
}

Test(seccomp, the_kernel_tier_lets_clone3_through_to_the_sentry, .fini = fini)
{
	/* runsc answers EPERM for any errno rule; glibc falls back from clone3
	 * only on ENOSYS, which the Sentry (no clone3) gives itself. */
	cJSON *sc = profile(false, NULL);
	cr_assert_str_eq(call(sc, "clone3", 0, 0), "ALLOW");
	cr_assert_str_eq(call(sc, "clone", 0, 0x10000011), "ERRNO 1");
}

Test(seccomp, every_name_is_one_the_hosts_libseccomp_resolves, .fini = fini)
{
	void *lib = dlopen("libseccomp.so.2", RTLD_NOW);
	cr_assert_not_null(lib, "libseccomp: %s", dlerror());
	int (*resolve)(uint32_t, const char *) =
		(int (*)(uint32_t, const char *))dlsym(lib, "seccomp_syscall_resolve_name_arch");
	cr_assert_not_null(resolve);
	cJSON *sc = profile(true, NULL), *rule, *n;
	cJSON_ArrayForEach(rule, cJSON_GetObjectItem(sc, "syscalls"))
		cJSON_ArrayForEach(n, cJSON_GetObjectItem(rule, "names"))
			cr_assert_geq(resolve(0xc000003e /* SCMP_ARCH_X86_64 */, n->valuestring), 0,
				      "libseccomp does not know %s: crun would refuse the profile",
				      n->valuestring);
	dlclose(lib);
	/* And the bundle asks crun to refuse a name it cannot resolve. */
	cJSON *ann = cJSON_GetObjectItem(bundle, "annotations");
	cJSON *fail = cJSON_GetObjectItem(ann, "run.oci.seccomp_fail_unknown_syscall");
	cr_assert(cJSON_IsString(fail) && !strcmp(fail->valuestring, "1"));
}

Test(seccomp, dropping_the_masks_restores_the_old_deny_list, .fini = fini)
{
	cJSON *sc = profile(true, "seccomp-masks");
	cr_assert_str_eq(cJSON_GetObjectItem(sc, "defaultAction")->valuestring, "SCMP_ACT_ALLOW");
	cr_assert_str_eq(call(sc, "socket", 0, 40), "ERRNO 97");
	cr_assert_str_eq(call(sc, "socket", 0, 40 | HI), "ALLOW", "the hole issue 14 closed");
}

Test(seccomp, the_profile_is_what_its_generator_writes, .fini = fini)
{
	/* data/seccomp/profile.json is generated (scripts/seccomp_profile.py):
	 * an edit by hand would drift from the reasons written there. */
	char out[] = "/tmp/bh-seccomp-profile-XXXXXX";
	int fd = mkstemp(out);
	cr_assert_geq(fd, 0);
	close(fd);
	char cmd[8192];
	snprintf(cmd, sizeof cmd, "python3 '%s/scripts/seccomp_profile.py' '%s'", BH_SOURCE_DIR, out);
	cr_assert_eq(system(cmd), 0, "%s failed", cmd);
	char *want = read_file(out, 1 << 20, NULL), path[4096];
	unlink(out);
	snprintf(path, sizeof path, "%s/data/seccomp/profile.json", BH_SOURCE_DIR);
	char *have = read_file(path, 1 << 20, NULL);
	cr_assert(want && have);
	cr_assert(!strcmp(want, have), "data/seccomp/profile.json differs from what "
				       "scripts/seccomp_profile.py writes: run it");
	free(want);
	free(have);
}
