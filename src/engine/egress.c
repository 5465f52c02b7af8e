/* Egress, the engine's side (issue 18): the broker's socket mounted into
 * a sandbox, the proxy and CA environment of the sandboxes that may use a
 * profile, the holds that let the broker serve them, and the broker's
 * notes turned into events and counts.
 *
 * Each sandbox that may reach the broker gets a directory of its own,
 * STATE/egress/<sandbox>, bound read-only at /run: the broker listens on
 * host-api.sock there once a session (or a granted run) takes the sandbox,
 * and host-api-ca.pem beside it is the system's CA bundle with the broker's
 * interception CA appended. The directory and its files belong to the
 * sandbox's own root (host uid base) and group (base + 1000, its user),
 * mode 0750/0660: the init and user code of that sandbox reach them, no
 * other sandbox's uids and no host user but root do; read-only, so nothing
 * inside can add a file to the host's disk there.
 *
 * The engine never speaks HTTP: it reaches the broker only through struct
 * bh_egress_ops (egress.h). The broker's notes are egress_notes.c's. */
#include "engine_priv.h"
#include "egress_relay.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "egress.h"

_Static_assert(BH_PROTO_EGRESS_RELAY_PORT == BH_EGRESS_RELAY_PORT,
	       "the init relays the port egress.h names");
_Static_assert(sizeof BH_PROTO_EGRESS_SOCKET == sizeof BH_EGRESS_SOCKET_IN_SANDBOX,
	       "the socket is where egress.h says");

#define SOCKET_NAME "host-api.sock"
#define CA_NAME "host-api-ca.pem"
#define SYSTEM_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define MAX_CA_BYTES (4u << 20)

/* Set only in sandboxes that may use a profile (their posture allows
 * exactly these names beside the sandbox's own). */
const char *const bh_egress_env[] = {"HTTP_PROXY=" BH_PROTO_EGRESS_PROXY_URL,
				     "HTTPS_PROXY=" BH_PROTO_EGRESS_PROXY_URL,
				     "http_proxy=" BH_PROTO_EGRESS_PROXY_URL,
				     "https_proxy=" BH_PROTO_EGRESS_PROXY_URL,
				     "NO_PROXY=localhost,127.0.0.1",
				     "no_proxy=localhost,127.0.0.1",
				     "SSL_CERT_FILE=" BH_PROTO_EGRESS_CA_FILE,
				     "REQUESTS_CA_BUNDLE=" BH_PROTO_EGRESS_CA_FILE,
				     "PIP_CERT=" BH_PROTO_EGRESS_CA_FILE,
				     "NODE_EXTRA_CA_CERTS=" BH_PROTO_EGRESS_CA_FILE,
				     /* Node 20's fetch ignores HTTP_PROXY: this one
				      * goes through the relay (data/interp). */
				     "NODE_OPTIONS=--require " BH_INTERP_SANDBOX_DIR
				     "/javascript/egress_fetch.js",
				     NULL};

static bool valid_profile_name(const char *p)
{
	size_t n = strlen(p);
	if (n < 1 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			  (i > 0 && (c == '.' || c == '_' || c == '-'));
		if (!ok)
			return false;
	}
	return true;
}

int egress_check_profile(bh_engine *e, const char *profile, bh_error **err)
{
	if (!profile || !*profile)
		return 0;
	/* The daemon checks who may use which profile; this is the engine's
	 * own guard: without a broker nothing could serve one, and a name
	 * that is not a name is not passed on. One text for both, as the
	 * daemon's refusal has (a caller learns nothing from the difference). */
	if (!e->egress || !valid_profile_name(profile))
		return bh_refuse(err, BH_REFUSAL_PERMISSION, BH_EGRESS_REFUSED_FMT,
				 valid_profile_name(profile) ? profile : "(not a profile name)");
	return 0;
}

/* ---- a sandbox's directory ---- */

static int chown_to_sandbox(int fd, uint32_t uid_base)
{
	return fchown(fd, uid_base, uid_base + 1000u);
}

static int write_all_fd(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int write_ca_bundle(bh_engine *e, int dir_fd, uint32_t uid_base, bh_error **err)
{
	size_t sys_len = 0, ca_len = 0;
	cleanup_free char *sys = read_file(SYSTEM_CA_BUNDLE, MAX_CA_BYTES, &sys_len);
	const char *ca_path = e->egress->ca_cert_path ? e->egress->ca_cert_path(e->egress_arg) : NULL;
	cleanup_free char *ca = ca_path ? read_file(ca_path, 1u << 20, &ca_len) : NULL;
	if (ca_path && !ca)
		return bh_fail(err, BH_E_SYSTEM, errno, "read the broker's CA certificate %s", ca_path);
	struct buf b = {0};
	if (sys)
		buf_append(&b, sys, sys_len);
	if (b.len && b.data[b.len - 1] != '\n')
		buf_append(&b, "\n", 1);
	if (ca)
		buf_append(&b, ca, ca_len);
	int fd = openat(dir_fd, CA_NAME, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640);
	int rc = 0;
	if (fd < 0 || (b.len && write_all_fd(fd, b.data, b.len) < 0) || chown_to_sandbox(fd, uid_base) < 0 ||
	    fchmod(fd, 0640) < 0)
		rc = bh_fail(err, BH_E_SYSTEM, errno, "write the sandbox's CA bundle");
	if (fd >= 0)
		close(fd);
	buf_free(&b);
	return rc;
}

char *egress_sandbox_dir(bh_engine *e, const char *sandbox)
{
	return xasprintf("%s/egress/%s", e->state_dir, sandbox);
}

int egress_sandbox_prepare(bh_engine *e, const char *sandbox, uint32_t uid_base, char **dir_out,
			   bh_error **err)
{
	*dir_out = NULL;
	cleanup_free char *top = xasprintf("%s/egress", e->state_dir);
	/* Others may search it: the runtime reaches the bind source as the
	 * sandbox's uids (state_parents.c). */
	if (mkdir_p(top, 0711) < 0 || chmod(top, 0711) < 0)
		return bh_fail(err, BH_E_SYSTEM, errno, "create %s", top);
	char *dir = egress_sandbox_dir(e, sandbox);
	rm_rf(dir); /* a dead engine's, for a name it cannot have reused */
	if (mkdir(dir, 0750) < 0) {
		bh_fail(err, BH_E_SYSTEM, errno, "create %s", dir);
		free(dir);
		return -1;
	}
	int fd = open_nofollow(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY, 0);
	int rc = 0;
	if (fd < 0 || chown_to_sandbox(fd, uid_base) < 0 || fchmod(fd, 0750) < 0)
		rc = bh_fail(err, BH_E_SYSTEM, errno, "make %s the sandbox's", dir);
	if (rc == 0)
		rc = write_ca_bundle(e, fd, uid_base, err);
	if (fd >= 0)
		close(fd);
	if (rc < 0) {
		rm_rf(dir);
		free(dir);
		return -1;
	}
	*dir_out = dir;
	return 0;
}

/* ---- a session's socket and holds ---- */

int egress_open_session(bh_engine *e, const char *fp, const struct sandbox *sb, bh_error **err)
{
	if (!e->egress || !sb->egress_dir)
		return 0;
	cleanup_free char *path = xasprintf("%s/" SOCKET_NAME, sb->egress_dir);
	unlink(path); /* the last holder's, if the broker left it */
	if (e->egress->open_session(e->egress_arg, fp, path, err) < 0) {
		bh_error_wrap(*err, "the egress broker could not listen for the sandbox");
		return -1;
	}
	/* Whoever made it, the socket is the sandbox's: its init (the relay)
	 * and its user connect; nobody else's uids. */
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		uint32_t base = sb->host_uid_base;
		if (lchown(path, base, base + 1000u) < 0 || chmod(path, 0660) < 0) {
			e->egress->close_session(e->egress_arg, fp);
			return bh_fail(err, BH_E_SYSTEM, errno, "make the broker's socket the sandbox's");
		}
	}
	return 0;
}

void egress_close_session(bh_engine *e, const char *fp)
{
	if (e->egress)
		e->egress->close_session(e->egress_arg, fp);
}

int egress_hold(bh_engine *e, const char *fp, uint64_t hold, const char *profile, bh_error **err)
{
	if (!e->egress)
		return bh_refuse(err, BH_REFUSAL_PERMISSION, BH_EGRESS_REFUSED_FMT, profile);
	if (e->egress->hold(e->egress_arg, fp, hold, profile, err) < 0)
		return -1;
	return 0;
}

void egress_release(bh_engine *e, const char *fp, uint64_t hold)
{
	if (e->egress)
		e->egress->release(e->egress_arg, fp, hold);
}

/* ---- the engine's part ---- */

/* The directories a dead engine's sandboxes left: each goes unless a
 * bundle of that name is kept (a hibernated session's, restored later). */
void egress_sweep_stale(bh_engine *e)
{
	cleanup_free char *top = xasprintf("%s/egress", e->state_dir);
	cleanup_close int fd = open_nofollow(AT_FDCWD, top, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return;
	int dup_fd = dup(fd);
	cleanup_dir DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		cleanup_free char *bundle = xasprintf("%s/%s", e->bundles_dir, de->d_name);
		struct stat st;
		if (sandbox_name_valid(de->d_name) && lstat(bundle, &st) == 0 && S_ISDIR(st.st_mode))
			continue;
		bool live = false;
		for (struct sandbox *sb = e->sandboxes; sb && !live; sb = sb->next)
			live = !strcmp(sb->name, de->d_name);
		if (live)
			continue;
		cleanup_free char *path = xasprintf("%s/%s", top, de->d_name);
		rm_rf(path);
	}
}

int egress_engine_start(bh_engine *e, const struct bh_config *cfg, bh_error **err)
{
	if (!cfg->egress)
		return 0;
	const struct bh_egress_ops *ops = cfg->egress;
	if (!ops->open_session || !ops->close_session || !ops->hold || !ops->release)
		return bh_fail(err, BH_E_INVALID, 0, "egress: the broker's ops are incomplete");
	e->egress = ops;
	e->egress_arg = cfg->egress_arg;
	/* runsc connects a sandbox to a host socket only with this; only the
	 * sockets mounted into the sandbox can be reached (the gofer serves
	 * nothing else), and the tier's proof runs with it. */
	e->runtimes[BH_TIER_KERNEL].host_uds = true;
	return egress_notes_start(e, err);
}

void egress_engine_stop(bh_engine *e)
{
	egress_notes_stop(e);
}
