/* The files a profiles file is, and names: who owns them and who else may
 * read or change them. The profiles file follows the clients file's rule
 * (owned by root or by the daemon's user, writable by nobody else): whoever
 * can write it can point a profile anywhere. A credential file is stricter,
 * readable by nobody else either; a credential command may be read but not
 * changed. */
#include "egress_priv.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Owned by root or us; never writable by group or others; with secret,
 * never readable by them either. */
static int owner_mode_check(const struct stat *st, const char *what, const char *path,
			    bool secret, char **why)
{
	if (st->st_uid != 0 && st->st_uid != geteuid())
		return why_set(why,
			       "refusing %s %s: it is owned by uid %u, neither root nor us "
			       "(uid %u)",
			       what, path, (unsigned)st->st_uid, (unsigned)geteuid());
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return why_set(why, "refusing %s %s: it is %s-writable (mode %04o; chmod go-w %s)",
			       what, path, st->st_mode & S_IWOTH ? "world" : "group",
			       (unsigned)(st->st_mode & 07777), path);
	if (secret && (st->st_mode & (S_IRGRP | S_IROTH)))
		return why_set(why, "refusing %s %s: it is %s-readable (mode %04o; chmod go-r %s)",
			       what, path, st->st_mode & S_IROTH ? "world" : "group",
			       (unsigned)(st->st_mode & 07777), path);
	return 0;
}

int egress_read_file(const char *path, char **text, size_t *len, char **why)
{
	static const char what[] = "the profiles file";
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return why_errno(why, errno, "cannot open %s %s", what, path);
	struct stat st;
	int rc = -1;
	char *buf = NULL;
	if (fstat(fd, &st) < 0) {
		why_errno(why, errno, "cannot stat %s %s", what, path);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		why_set(why, "%s %s is not a regular file", what, path);
		goto out;
	}
	if (owner_mode_check(&st, what, path, false, why) < 0)
		goto out;
	if ((uintmax_t)st.st_size > EGRESS_FILE_MAX) {
		why_set(why, "refusing %s %s: %jd bytes is more than the %u allowed", what, path,
			(intmax_t)st.st_size, EGRESS_FILE_MAX);
		goto out;
	}
	buf = xzalloc((size_t)st.st_size + 2);
	size_t got = 0;
	for (;;) {
		/* One byte past the size stat gave, to notice a file that grew. */
		ssize_t r = read(fd, buf + got, (size_t)st.st_size + 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			why_errno(why, errno, "cannot read %s %s", what, path);
			goto out;
		}
		if (r == 0)
			break;
		got += (size_t)r;
		if (got > (size_t)st.st_size) {
			why_set(why, "%s %s changed while it was read; try again", what, path);
			goto out;
		}
	}
	*text = steal_ptr(buf);
	*len = got;
	rc = 0;
out:
	free(buf);
	close(fd);
	return rc;
}

/* lstat, not stat: the broker opens this path later, and a symlink could
 * be pointed elsewhere in between. */
static int regular_file(const char *what, const char *path, struct stat *st, char **why)
{
	if (lstat(path, st) < 0)
		return why_errno(why, errno, "%s %s", what, path);
	if (S_ISLNK(st->st_mode))
		return why_set(why, "%s %s is a symbolic link; name the file itself", what, path);
	if (!S_ISREG(st->st_mode))
		return why_set(why, "%s %s is not a regular file", what, path);
	return 0;
}

static int credential_check(const struct bh_egress_credential *c, char **why)
{
	struct stat st;
	switch (c->source) {
	case BH_EGRESS_CREDENTIAL_NONE:
		return 0;
	case BH_EGRESS_CREDENTIAL_FILE:
		if (regular_file("the credential file", c->file, &st, why) < 0 ||
		    owner_mode_check(&st, "the credential file", c->file, true, why) < 0)
			return -1;
		if (st.st_size == 0)
			return why_set(why, "the credential file %s is empty", c->file);
		return 0;
	case BH_EGRESS_CREDENTIAL_ENV: {
		/* Never the value: only whether there is one. */
		const char *v = getenv(c->env);
		if (!v || !*v)
			return why_set(why,
				       "the daemon's environment has no %s (credential env %s)",
				       c->env, c->env);
		return 0;
	}
	case BH_EGRESS_CREDENTIAL_COMMAND:
		if (regular_file("the credential command", c->argv[0], &st, why) < 0 ||
		    owner_mode_check(&st, "the credential command", c->argv[0], false, why) < 0)
			return -1;
		if (access(c->argv[0], X_OK) < 0)
			return why_errno(why, errno, "the credential command %s is not executable",
					 c->argv[0]);
		return 0;
	}
	return why_set(why, "unknown credential source");
}

int egress_check_sources(const bh_egress_profiles *set, char **why)
{
	for (size_t i = 0; i < set->n; i++)
		if (credential_check(&set->v[i].credential, why) < 0) {
			why_prefix(why, "line %u: profile \"%s\"", set->credential_line[i],
				   set->v[i].name);
			return -1;
		}
	return 0;
}
