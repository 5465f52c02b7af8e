/* The daemon holding a state directory, found through the note it leaves
 * there (STATE/daemon.sock.path). A command that finds one sends it the
 * operator's bearer token, so the note is trusted only as far as it can be
 * checked: a state directory may be a copy from somewhere untrusted, and a
 * socket path in /tmp may be bound by anyone once its daemon is gone.
 *
 * The daemon's uid is the state directory's owner (root, or the uid a
 * rootless daemon runs as: bh_state_dir_check allows no other). The note
 * must be that uid's (or root's) regular file, and name an absolute path of
 * a unix socket that uid or root owns, in a directory nobody else can
 * change; the process answering on it must run as that uid or root. Any
 * other address (http, https) is used only when the operator names it with
 * --attach. */
#include "client_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* Sets *why; returns rc. */
static int say(char **why, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int say(char **why, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	free(*why);
	if (vasprintf(why, fmt, ap) < 0)
		abort();
	va_end(ap);
	return rc;
}

static bool trusted_uid(uid_t uid, uid_t owner)
{
	return uid == 0 || uid == owner;
}

/* The note's first line, printable (it is quoted back to the operator). */
static char *read_note(const char *file, uid_t owner, char **why)
{
	int fd = open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			say(why, -1, "cannot read it: %s", strerror(errno));
		return NULL;
	}
	struct stat st;
	char text[4096];
	ssize_t n = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && trusted_uid(st.st_uid, owner) &&
	    !(st.st_mode & (S_IWGRP | S_IWOTH)))
		n = read(fd, text, sizeof text - 1);
	close(fd);
	if (n < 0) {
		say(why, -1, "it is not a regular file of root's or uid %u's that only its owner can "
			     "write", (unsigned)owner);
		return NULL;
	}
	text[n] = '\0';
	text[strcspn(text, "\r\n")] = '\0';
	for (char *c = text; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c == 0x7f)
			*c = '?';
	return xstrdup(text);
}

/* The socket's directory decides who can replace it before we connect. */
static bool dir_guards(const char *sock, uid_t owner, char **why)
{
	cleanup_free char *dir = xstrdup(sock);
	char *slash = strrchr(dir, '/');
	slash[slash == dir ? 1 : 0] = '\0';
	struct stat st;
	if (stat(dir, &st) < 0) {
		say(why, -1, "%s: %s", dir, strerror(errno));
		return false;
	}
	bool others_write = (st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX);
	if (!trusted_uid(st.st_uid, owner) || others_write) {
		say(why, -1, "the socket's directory %s (uid %u, mode %04o) lets someone other than "
			     "root or uid %u replace it",
		     dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)owner);
		return false;
	}
	return true;
}

/* 1: a trusted daemon answers; 0: nobody answers (a stale note); -1: the
 * process answering is not the daemon's uid. */
static int probe(const char *sock, uid_t owner, char **why)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	int r = 0;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		say(why, 0, "%s answers nobody", sock);
	} else {
		struct ucred peer;
		socklen_t len = sizeof peer;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) == 0 &&
		    trusted_uid(peer.uid, owner)) {
			r = 1;
		} else {
			r = say(why, -1, "the process answering on %s runs as uid %u, not root or uid %u",
				sock, (unsigned)peer.uid, (unsigned)owner);
		}
	}
	close(fd);
	return r;
}

int bh_client_discover(const char *state_dir, char **sock, char **why)
{
	*sock = NULL;
	*why = NULL;
	const char *dir = bh_state_dir_name(state_dir);
	cleanup_free char *file = xasprintf("%s/%s", dir, BH_CLIENT_ATTACH_FILE);
	struct stat st;
	if (lstat(file, &st) < 0)
		return 0; /* no note: no daemon */
	bh_error *err = NULL;
	if (bh_state_dir_check(dir, &err) < 0) {
		say(why, -1, "%s", err->msg);
		bh_error_free(err);
		return -1;
	}
	if (stat(dir, &st) < 0)
		return say(why, -1, "%s: %s", dir, strerror(errno));
	uid_t owner = st.st_uid;
	char *line = read_note(file, owner, why);
	if (!line)
		return *why ? -1 : 0;
	cleanup_free char *path = line;
	if (!*path)
		return 0;
	struct sockaddr_un sa;
	if (path[0] != '/')
		return say(why, -1,
			   "it names \"%.200s\", not the absolute path of a unix socket (an http or "
			   "https daemon is reached only when named with --attach)",
			   path);
	if (strlen(path) >= sizeof sa.sun_path)
		return say(why, -1,
			   "it names a socket path of %zu bytes, too long to check (a unix socket's "
			   "path has at most %zu)",
			   strlen(path), sizeof sa.sun_path - 1);
	if (lstat(path, &st) < 0)
		return say(why, 0, "%s: %s", path, strerror(errno)); /* gone: a stale note */
	if (!S_ISSOCK(st.st_mode))
		return say(why, -1, "%s is not a socket", path);
	if (!trusted_uid(st.st_uid, owner))
		return say(why, -1,
			   "the socket %s is owned by uid %u, not root or the state directory's owner "
			   "(uid %u)",
			   path, (unsigned)st.st_uid, (unsigned)owner);
	if (!dir_guards(path, owner, why))
		return -1;
	int r = probe(path, owner, why);
	if (r > 0)
		*sock = xstrdup(path);
	return r;
}
