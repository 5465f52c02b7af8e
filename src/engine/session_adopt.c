/* ---- fleet (issue 20) ----
 * A hibernated session passed between engines that share an images
 * directory: what one publishes of it (bh_session_hibernated), and another
 * taking it over when the first is gone (bh_engine_adopt_hibernated). The
 * description comes from another machine's word (the fleet's directory):
 * every field is checked before any of it becomes a path, a row or a
 * session, and a refusal changes nothing. The image is claimed by renaming
 * it to a sandbox name of this engine's: of two engines adopting one
 * image, the rename of exactly one succeeds. */
#include "session_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int bh_session_hibernated(const bh_session *s, struct bh_hibernated *out, bh_error **err)
{
	cleanup_error bh_error *unasked = NULL;
	err = err ? err : &unasked;
	memset(out, 0, sizeof *out);
	if (s->state != BH_SESSION_HIBERNATED || !s->sb)
		return bh_fail(err, BH_E_INVALID, 0,
			       "session %.12s is %s: only a hibernated one (its image complete on "
			       "disk) can be described for another engine",
			       s->fp, bh_session_state_name(s->state));
	const char *texts[] = {s->principal, s->owner, s->run_key,
			       s->egress_profile ? s->egress_profile : ""};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
		if (texts[i] && strlen(texts[i]) > BH_HIBERNATED_TEXT_MAX)
			return bh_fail(err, BH_E_INVALID, 0,
				       "session %.12s: a text of it is longer than the %u bytes "
				       "another engine takes",
				       s->fp, BH_HIBERNATED_TEXT_MAX);
	snprintf(out->fingerprint, sizeof out->fingerprint, "%s", s->fp);
	snprintf(out->sandbox, sizeof out->sandbox, "%s", s->sandbox_name);
	out->tier = s->tier;
	out->floor = s->floor;
	snprintf(out->principal, sizeof out->principal, "%s", s->principal ? s->principal : "");
	snprintf(out->owner, sizeof out->owner, "%s", s->owner ? s->owner : "");
	snprintf(out->run_key, sizeof out->run_key, "%s", s->run_key ? s->run_key : "");
	snprintf(out->egress_profile, sizeof out->egress_profile, "%s",
		 s->egress_profile ? s->egress_profile : "");
	out->languages = s->languages;
	out->calls = s->calls;
	snprintf(out->last_record_sha256, sizeof out->last_record_sha256, "%s", s->last_record);
	out->created_unix_ms = s->created_ms;
	out->last_call_unix_ms = s->last_call_ms;
	out->hibernated_unix_ms = s->hibernated_ms;
	out->lifetime_ms = s->lifetime_ms;
	out->awake_ms = s->awake_used_us / 1000u;
	return 0;
}

/* ---- the checks, each a sentence naming the field ---- */

static bool lower_hex(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return false;
	return p[n] == '\0';
}

/* NUL-terminated inside its array, at most BH_HIBERNATED_TEXT_MAX bytes,
 * no control character (a text that ends up in rows, logs and screens). */
static bool text_ok(const char *p, size_t cap)
{
	size_t n = strnlen(p, cap);
	if (n == cap)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return false;
	return true;
}

static int refuse_field(bh_error **err, const char *field, const char *why)
{
	return bh_refuse(err, BH_REFUSAL_REQUEST,
			 "the hibernated session to adopt is refused: its %s %s; nothing was changed",
			 field, why);
}

static int check_description(bh_engine *e, const struct bh_hibernated *h, const char *origin,
			     bh_error **err)
{
	if (!lower_hex(h->fingerprint, 64))
		return refuse_field(err, "fingerprint", "is not 64 lowercase hex digits");
	if (strnlen(h->sandbox, sizeof h->sandbox) == sizeof h->sandbox ||
	    !sandbox_name_valid(h->sandbox))
		return refuse_field(err, "sandbox",
				    "is not a name bulkhead makes (\"bh-\" and 16 lowercase hex digits)");
	if (h->tier < 0 || h->tier >= BH_TIER_COUNT)
		return refuse_field(err, "tier", "is not a tier");
	if (h->floor < BH_TIER_UNKNOWN || h->floor >= BH_TIER_COUNT)
		return refuse_field(err, "floor", "is not a tier");
	if (h->floor > BH_TIER_NONE && !bh_tier_meets(h->tier, h->floor))
		return refuse_field(err, "tier", "does not meet its floor");
	const struct {
		const char *name, *text;
	} texts[] = {{"principal", h->principal},
		     {"owner", h->owner},
		     {"run key", h->run_key},
		     {"egress profile", h->egress_profile}};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
		if (!text_ok(texts[i].text, BH_HIBERNATED_TEXT_MAX + 1))
			return refuse_field(err, texts[i].name,
					    "is longer than 256 bytes, unterminated or holds a "
					    "control character");
	/* The owner's form bh_session_open accepts. */
	size_t on = strlen(h->owner);
	if (on > 64 || strspn(h->owner, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
					"0123456789._:-") != on)
		return refuse_field(err, "owner", "is not 1 to 64 of A-Z a-z 0-9 . _ : -");
	if (h->languages >> BH_LANG_COUNT)
		return refuse_field(err, "languages", "name a language this engine does not know");
	if (h->calls == 0 ? h->last_record_sha256[0] != '\0' : !lower_hex(h->last_record_sha256, 64))
		return refuse_field(err, "chain head",
				    "is not 64 lowercase hex digits (or empty before any call)");
	if (h->calls > (uint64_t)INT64_MAX)
		return refuse_field(err, "call count", "is out of range");
	int64_t now = (int64_t)now_real_ms();
	if (h->created_unix_ms <= 0 || h->hibernated_unix_ms < h->created_unix_ms ||
	    h->last_call_unix_ms < 0 || (h->last_call_unix_ms && h->last_call_unix_ms < h->created_unix_ms) ||
	    h->hibernated_unix_ms > now + 24ll * 3600 * 1000)
		return refuse_field(err, "times",
				    "are not in order (created, last call, hibernated; none in the far "
				    "future)");
	if (h->lifetime_ms == 0 || h->lifetime_ms > SESSION_MAX_LIFETIME_MS)
		return refuse_field(err, "lifetime", "is not between 1 ms and the 12 h maximum");
	if (h->awake_ms > (uint64_t)h->lifetime_ms * 2u)
		return refuse_field(err, "awake time", "is far past its lifetime");
	if (!origin || !text_ok(origin, BH_HIBERNATED_TEXT_MAX + 1))
		return bh_refuse(err, BH_REFUSAL_REQUEST,
				 "the origin host of the session to adopt must be a name of at most "
				 "256 bytes without control characters; nothing was changed");
	/* What this engine can restore. */
	if (h->tier != BH_TIER_KERNEL || !e->runtimes[h->tier].ops ||
	    e->runtimes[h->tier].ops != &runtime_runsc)
		return bh_refuse(err, BH_REFUSAL_UNSUPPORTED,
				 "a %s-tier session cannot be adopted: only the kernel tier (gVisor) "
				 "hibernates here; nothing was changed",
				 bh_tier_name(h->tier));
	if (e->tiers[h->tier].proving)
		return bh_refuse(err, BH_REFUSAL_ENVIRONMENT,
				 "the %s tier is still being proven here: its hibernated session can "
				 "be adopted once the proof is done; nothing was changed",
				 bh_tier_name(h->tier));
	if (!e->tiers[h->tier].report.offered || !e->runtimes[h->tier].path)
		return bh_refuse(err, BH_REFUSAL_UNSUPPORTED,
				 "the %s tier is not offered here (%s), so its hibernated session "
				 "cannot be restored; nothing was changed",
				 bh_tier_name(h->tier), e->tiers[h->tier].report.reason);
	if (h->egress_profile[0] && egress_check_profile(e, h->egress_profile, err) < 0)
		return -1;
	return 0;
}

static bool fingerprint_held(bh_engine *e, const char *fp)
{
	for (bh_session *s = e->sessions; s; s = s->next)
		if (!strcmp(s->fp, fp))
			return true;
	return store_knows_fingerprint(e->store, fp);
}

static bool sandbox_ours(bh_engine *e, const char *name)
{
	for (struct sandbox *sb = e->sandboxes; sb; sb = sb->next)
		if (!strcmp(sb->name, name))
			return true;
	return store_knows_sandbox(e->store, name);
}

/* The image as this engine will restore it: a directory (no link), owned
 * by root or us, with no group or other write (what it holds is restored
 * into a sandbox). at is the images directory's descriptor. */
static int check_image(int at, const char *images, const char *name, bool gone_is_lost,
		       bh_error **err)
{
	struct stat st;
	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT && gone_is_lost)
			return bh_refuse(err, BH_REFUSAL_REQUEST,
					 "the hibernation image %s/%s is not there: another engine "
					 "adopted it first, or it was deleted; nothing was changed",
					 images, name);
		return bh_fail(err, BH_E_SYSTEM, errno, "hibernation image %s/%s", images, name);
	}
	if (S_ISLNK(st.st_mode))
		return bh_refuse(err, BH_REFUSAL_REQUEST,
				 "the hibernation image %s/%s is a symbolic link: bulkhead restores "
				 "from no link; nothing was changed",
				 images, name);
	if (!S_ISDIR(st.st_mode))
		return bh_refuse(err, BH_REFUSAL_REQUEST,
				 "the hibernation image %s/%s is not a directory; nothing was changed",
				 images, name);
	if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH)))
		return bh_refuse(err, BH_REFUSAL_REQUEST,
				 "the hibernation image %s/%s is owned by uid %u with mode %04o: "
				 "bulkhead restores only an image of root's or its own that nobody "
				 "else can write; nothing was changed",
				 images, name, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	return 0;
}

int bh_engine_adopt_hibernated(bh_engine *e, const struct bh_hibernated *h,
			       const char *origin_host, bh_session **out, bh_error **err)
{
	cleanup_error bh_error *unasked = NULL;
	err = err ? err : &unasked;
	if (out)
		*out = NULL;
	if (!h)
		return bh_refuse(err, BH_REFUSAL_REQUEST, "no hibernated session to adopt");
	if (e->closing)
		return bh_fail(err, BH_E_CLOSED, 0, "the engine is shutting down; nothing adopted");
	if (!e->store || e->inspect_only)
		return bh_refuse(err, BH_REFUSAL_ENVIRONMENT,
				 "this engine runs no sandboxes (inspect-only or no store): nothing "
				 "adopted");
	if (check_description(e, h, origin_host, err) < 0)
		return -1;
	if (fingerprint_held(e, h->fingerprint))
		return bh_refuse(err, BH_REFUSAL_REQUEST,
				 "session %.12s is already this engine's (its store has a row for it): "
				 "nothing adopted",
				 h->fingerprint);
	if (sandbox_ours(e, h->sandbox))
		return bh_refuse(err, BH_REFUSAL_REQUEST,
				 "sandbox %s is one of this engine's own: nothing adopted", h->sandbox);
	struct admit_ask ask = {.kind = ADMIT_ADOPT, .principal = h->principal, .tier = h->tier};
	if (admit_sandbox(e, &ask, err) < 0)
		return -1;
	cleanup_close int at = open(e->images_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (at < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "images directory %s", e->images_dir);
	if (check_image(at, e->images_dir, h->sandbox, true, err) < 0)
		return -1;
	char name[40];
	if (sandbox_new_name(name) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "getrandom");
	/* The claim: atomic on one filesystem, so of two engines adopting this
	 * image one rename finds it and the other finds nothing. */
	if (renameat2(at, h->sandbox, at, name, RENAME_NOREPLACE) < 0) {
		if (errno == ENOENT)
			return bh_refuse(err, BH_REFUSAL_REQUEST,
					 "the hibernation image %s/%s is not there: another engine "
					 "adopted it first, or it was deleted; nothing was changed",
					 e->images_dir, h->sandbox);
		return bh_fail(err, BH_E_SYSTEM, errno, "claim the hibernation image %s/%s",
			       e->images_dir, h->sandbox);
	}
	/* Looked at again now that it is ours: what was checked could have
	 * been swapped between the look and the rename. */
	if (check_image(at, e->images_dir, name, false, err) < 0)
		goto give_back;
	enum egress_mount em = !e->egress ? EGRESS_NONE
			       : h->egress_profile[0] ? EGRESS_PROXY
						      : EGRESS_SOCKET;
	struct sandbox *sb = sandbox_adopt_image(e, h->tier, name, em, err);
	if (!sb)
		goto give_back;
	char floor[16];
	snprintf(floor, sizeof floor, "%s", h->floor > BH_TIER_NONE ? bh_tier_name(h->floor) : "");
	struct store_hibernated_row row = {
		.fingerprint = h->fingerprint,
		.sandbox = name,
		.runtime = e->runtimes[h->tier].ops->name,
		.tier = bh_tier_name(h->tier),
		.floor = floor,
		.principal = h->principal,
		.owner = h->owner,
		.run_key = h->run_key,
		.created_ms = h->created_unix_ms,
		.last_call_ms = h->last_call_unix_ms,
		.awake_ms = (int64_t)h->awake_ms,
		.lifetime_ms = h->lifetime_ms,
		.hibernated_ms = h->hibernated_unix_ms,
		.calls = h->calls,
		.last_record_sha256 = h->last_record_sha256,
		.egress_profile = h->egress_profile,
	};
	char detail[700];
	snprintf(detail, sizeof detail,
		 "from host %s (its sandbox %s), after record %llu %.64s", origin_host, h->sandbox,
		 (unsigned long long)h->calls, h->calls ? h->last_record_sha256 : "(none)");
	if (store_session_adopted(e->store, &row, origin_host, getpid(), detail, err) < 0) {
		rm_rf(sb->bundle_dir);
		if (sb->egress_dir)
			rm_rf(sb->egress_dir);
		free(sb->image_dir); /* the image is given back below, not deleted */
		sb->image_dir = NULL;
		sandbox_detach(e, sb);
		goto give_back;
	}
	bh_session *s = session_register_hibernated(e, sb, h->tier, &row);
	s->languages = h->languages;
	bh_log(e, BH_LOG_INFO, "session %.12s: adopted %s", s->fp, detail);
	sessions_enforce_images_budget(e, s);
	if (out)
		*out = s;
	return 0;
give_back:
	/* Nothing of it is ours after all: under its old name again, for
	 * another engine (or the operator) to judge. */
	if (renameat2(at, name, at, h->sandbox, RENAME_NOREPLACE) < 0)
		bh_log(e, BH_LOG_WARN, "the hibernation image %s/%s could not be given back its name %s: %s",
		       e->images_dir, name, h->sandbox, strerror(errno));
	return -1;
}
