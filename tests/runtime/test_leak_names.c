/* A leak the reap takes by its name (an image, a container, a cgroup) is
 * never named by a cut of its name: cut to fit a finding, images/AAAA...(70)
 * would be reported and reaped as images/AAAA...(63), another directory
 * (issue 19: the Release build's -Wformat-truncation in leaks.c). A name
 * longer than any bulkhead makes is left alone, and the log says so. */
#include "harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct harness h;

static void setup(void)
{
	harness_open(&h, NULL);
}

static void teardown(void)
{
	harness_close(&h);
}

static char *image_dir(const char *name)
{
	char *p = NULL;
	cr_assert_neq(asprintf(&p, "%s/images/%s", h.state_dir, name), -1);
	return p;
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

Test(leak_names, an_image_whose_name_is_too_long_is_left_alone_and_its_cut_is_not_reaped_for_it,
     .init = setup, .fini = teardown)
{
	char shorter[64], longer[71];
	memset(shorter, 'a', sizeof shorter - 1);
	shorter[sizeof shorter - 1] = '\0';
	memset(longer, 'a', sizeof longer - 1);
	longer[sizeof longer - 1] = '\0';
	char *kept = image_dir(longer), *stale = image_dir(shorter), *images = image_dir("");
	mkdir(images, 0700); /* made at the first hibernation */
	free(images);
	cr_assert_eq(mkdir(kept, 0700), 0, "mkdir %s", kept);
	cr_assert_eq(mkdir(stale, 0700), 0, "mkdir %s", stale);

	struct bh_leak *v = NULL;
	size_t n = bh_engine_leaks(h.e, &v);
	size_t found = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i].kind != BH_LEAK_STALE_IMAGE)
			continue;
		found++;
		cr_assert_str_eq(v[i].sandbox, shorter, "a finding names \"%s\"", v[i].sandbox);
	}
	free(v);
	cr_assert_eq(found, 1, "%zu stale images found: one of them named by a cut of the other", found);
	cr_assert_not_null(strstr(h.log, "longer than any name bulkhead makes"), "the log: %s", h.log);

	struct bh_leak *reaped = NULL;
	bh_engine_gc(h.e, &reaped);
	free(reaped);
	cr_assert_not(is_dir(stale), "the stale image %s is still there", stale);
	cr_assert(is_dir(kept), "the reap took %s, which no finding named", kept);
	rmdir(kept);
	free(kept);
	free(stale);
}
