/* The operator's egress profiles (include/bulkhead/egress.h): a set loaded
 * whole from the profiles file, immutable afterwards and reference counted,
 * so a reload (SIGHUP) makes a new set and the calls in flight keep the one
 * they started with. */
#include "egress_priv.h"

#include <string.h>

int bh_egress_profiles_load(const char *path, bh_egress_profiles **out, bh_error **err)
{
	char *why = NULL, *text = NULL;
	size_t len = 0;
	bh_egress_profiles *set = NULL;
	*out = NULL;
	if (egress_read_file(path, &text, &len, &why) < 0)
		return egress_fail(err, &why);
	int rc = egress_profiles_parse(text, len, &set, &why);
	free(text);
	if (rc == 0 && egress_check_sources(set, &why) < 0) {
		bh_egress_profiles_unref(set);
		rc = -1;
	}
	if (rc < 0) {
		why_prefix(&why, "%s", path);
		return egress_fail(err, &why);
	}
	set->path = xstrdup(path);
	*out = set;
	return 0;
}

bh_egress_profiles *bh_egress_profiles_ref(bh_egress_profiles *set)
{
	if (set)
		atomic_fetch_add(&set->refs, 1);
	return set;
}

void bh_egress_profiles_unref(bh_egress_profiles *set)
{
	if (!set || atomic_fetch_sub(&set->refs, 1) != 1)
		return;
	for (size_t i = 0; i < set->n; i++)
		egress_profile_clear(&set->v[i]);
	free(set->v);
	free(set->credential_line);
	free(set->path);
	free(set);
}

size_t bh_egress_profiles_count(const bh_egress_profiles *set)
{
	return set ? set->n : 0;
}

const struct bh_egress_profile *bh_egress_profiles_at(const bh_egress_profiles *set, size_t i)
{
	return set && i < set->n ? &set->v[i] : NULL;
}

const struct bh_egress_profile *bh_egress_profiles_find(const bh_egress_profiles *set,
							 const char *name)
{
	if (!set || !name)
		return NULL;
	for (size_t i = 0; i < set->n; i++)
		if (!strcmp(set->v[i].name, name))
			return &set->v[i];
	return NULL;
}

/* NULL is nobody authenticated (the daemon's --open mode): plimsoll never
 * grants a profile to a caller it cannot name, and neither does "*". */
bool bh_egress_profile_allows(const struct bh_egress_profile *p, const char *principal)
{
	if (!p || !principal || !*principal)
		return false;
	for (size_t i = 0; i < p->n_principals; i++)
		if (!strcmp(p->principals[i], "*") || !strcmp(p->principals[i], principal))
			return true;
	return false;
}
