#include "clients_edit.h"
#include "why.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER                                                                                 \
	"# bulkhead clients: NAME sha256:DIGEST SCOPES [approval=required|none] (one a line).\n" \
	"# Holds SHA-256 digests of tokens, never a token. Edit with `bulkhead token`;\n"      \
	"# a running daemon reads it again on SIGHUP.\n"

/* One edit in progress: the lock is held from begin() until end(). */
struct edit {
	const char *path;
	int lock_fd;
	bool existed;
	struct stat st; /* of the file as read, when it existed */
	char *text;
	size_t len;
	struct client_entry *v;
	size_t n;
};

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

static void end(struct edit *ed)
{
	free(ed->text);
	free(ed->v);
	if (ed->lock_fd >= 0)
		close(ed->lock_fd); /* releases the flock */
	ed->text = NULL;
	ed->v = NULL;
	ed->lock_fd = -1;
}

static int begin(const char *path, bool create, struct edit *ed, char **why)
{
	*ed = (struct edit){.path = path, .lock_fd = -1};
	if (create) {
		char *dir = dir_of(path);
		if (!dir)
			abort();
		int r = mkdir(dir, 0755);
		int e = errno;
		if (r < 0 && e != EEXIST) {
			why_errno(why, e, "cannot create the directory %s for the clients file", dir);
			free(dir);
			return -1;
		}
		free(dir);
	}
	char *lock = NULL;
	if (asprintf(&lock, "%s.lock", path) < 0)
		abort();
	ed->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (ed->lock_fd < 0) {
		int e = errno;
		if (e == ENOENT)
			why_errno(why, e, "cannot open the clients file %s", path);
		else
			why_errno(why, e, "cannot open the lock file %s", lock);
		free(lock);
		return -1;
	}
	int r;
	while ((r = flock(ed->lock_fd, LOCK_EX)) < 0 && errno == EINTR)
		;
	if (r < 0) {
		why_errno(why, errno, "cannot lock %s", lock);
		free(lock);
		end(ed);
		return -1;
	}
	free(lock);

	bool missing = false;
	if (clients_read_file(path, &ed->text, &ed->len, &missing, why) < 0) {
		if (!(missing && create)) {
			end(ed);
			return -1;
		}
		if (why) {
			free(*why);
			*why = NULL;
		}
		ed->text = strdup("");
		ed->len = 0;
	} else {
		ed->existed = true;
		if (stat(path, &ed->st) < 0) {
			why_errno(why, errno, "cannot stat the clients file %s", path);
			end(ed);
			return -1;
		}
	}
	if (clients_parse(ed->text, ed->len, &ed->v, &ed->n, why) < 0) {
		why_prefix(why, "%s", path);
		if (why)
			why_set(why, "%s (fix it by hand; nothing was changed)", *why);
		end(ed);
		return -1;
	}
	return 0;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Replaces the file with text: temp file, fsync, rename, fsync the directory. */
static int commit(struct edit *ed, const char *text, size_t len, char **why)
{
	/* Never write a file the daemon would refuse. */
	struct client_entry *check = NULL;
	size_t n = 0;
	if (clients_parse(text, len, &check, &n, why) < 0) {
		why_prefix(why, "internal error: the edited clients file would not load");
		return -1;
	}
	free(check);

	mode_t mode = ed->existed ? (ed->st.st_mode & 0644) : 0600;
	char *tmp = NULL;
	if (asprintf(&tmp, "%s.tmp.XXXXXX", ed->path) < 0)
		abort();
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		why_errno(why, errno, "cannot create a temporary file beside %s", ed->path);
		free(tmp);
		return -1;
	}
	const char *step = "write";
	int e = 0;
	if (write_all(fd, text, len) < 0)
		goto fail;
	step = "chmod";
	if (fchmod(fd, mode) < 0)
		goto fail;
	step = "chown";
	if (ed->existed && geteuid() == 0 && fchown(fd, ed->st.st_uid, ed->st.st_gid) < 0)
		goto fail;
	step = "fsync";
	if (fsync(fd) < 0)
		goto fail;
	step = "close";
	int r = close(fd);
	fd = -1;
	if (r < 0)
		goto fail;
	step = "rename";
	if (rename(tmp, ed->path) < 0)
		goto fail;
	free(tmp);

	char *dir = dir_of(ed->path);
	if (!dir)
		abort();
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) < 0) {
		e = errno;
		if (dfd >= 0)
			close(dfd);
		why_errno(why, e, "%s was replaced but its directory %s could not be synced", ed->path,
			  dir);
		free(dir);
		return -1;
	}
	close(dfd);
	free(dir);
	return 0;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	why_errno(why, e, "cannot write the clients file %s (%s of %s failed)", ed->path, step, tmp);
	free(tmp);
	return -1;
}

static const struct client_entry *find(const struct edit *ed, const char *name)
{
	for (size_t i = 0; i < ed->n; i++)
		if (!strcmp(ed->v[i].name, name))
			return &ed->v[i];
	return NULL;
}

int clients_edit_create(const char *path, const char *name, unsigned scopes,
			char token[CLIENTS_TOKEN_LEN + 1], char **why)
{
	return clients_edit_create_approval(path, name, scopes, CLIENT_APPROVAL_DEFAULT, token, why);
}

/* ---- approvals ---- */
const char *clients_approval_field(enum client_approval approval)
{
	switch (approval) {
	case CLIENT_APPROVAL_REQUIRED:
		return "approval=required";
	case CLIENT_APPROVAL_NONE:
		return "approval=none";
	case CLIENT_APPROVAL_DEFAULT:
		break;
	}
	return "";
}

int clients_edit_create_approval(const char *path, const char *name, unsigned scopes,
				 enum client_approval approval, char token[CLIENTS_TOKEN_LEN + 1],
				 char **why)
{
	if (clients_check_name(name, why) < 0)
		return -1;
	if (!scopes)
		return why_set(why, "a client needs at least one scope (code:run, operator)");
	struct edit ed;
	if (begin(path, true, &ed, why) < 0)
		return -1;
	int rc = -1;
	char *text = NULL;
	const struct client_entry *old = find(&ed, name);
	if (old) {
		why_set(why,
			"a client named \"%s\" already exists (line %u of %s); revoke it first or "
			"choose another name",
			name, old->line, path);
		goto out;
	}
	if (clients_token_new(token, why) < 0)
		goto out;
	unsigned char digest[CLIENTS_DIGEST_LEN];
	char hex[65], scope_text[64];
	clients_token_digest(token, strlen(token), digest);
	clients_digest_hex(digest, hex);
	clients_scopes_format(scopes, scope_text, sizeof scope_text);
	bool need_nl = ed.len && ed.text[ed.len - 1] != '\n';
	const char *option = clients_approval_field(approval);
	int len = asprintf(&text, "%s%s%s%s sha256:%s %s%s%s\n", ed.text, need_nl ? "\n" : "",
			   ed.len ? "" : HEADER, name, hex, scope_text, *option ? " " : "", option);
	if (len < 0)
		abort();
	rc = commit(&ed, text, (size_t)len, why);
out:
	if (rc < 0)
		OPENSSL_cleanse(token, CLIENTS_TOKEN_LEN + 1);
	free(text);
	end(&ed);
	return rc;
}

int clients_edit_revoke(const char *path, const char *name, char **why)
{
	struct edit ed;
	if (begin(path, false, &ed, why) < 0)
		return -1;
	int rc = -1;
	char *text = NULL;
	const struct client_entry *e = find(&ed, name);
	if (!e) {
		why_set(why, "no client named \"%s\" in %s", name, path);
		goto out;
	}
	/* Drops line e->line and keeps every other byte as it was. */
	size_t start = 0;
	for (unsigned line = 1; line < e->line; line++) {
		const char *nl = memchr(ed.text + start, '\n', ed.len - start);
		start = (size_t)(nl - ed.text) + 1;
	}
	const char *nl = memchr(ed.text + start, '\n', ed.len - start);
	size_t stop = nl ? (size_t)(nl - ed.text) + 1 : ed.len;
	size_t len = ed.len - (stop - start);
	text = malloc(len + 1);
	if (!text)
		abort();
	memcpy(text, ed.text, start);
	memcpy(text + start, ed.text + stop, ed.len - stop);
	text[len] = '\0';
	rc = commit(&ed, text, len, why);
out:
	free(text);
	end(&ed);
	return rc;
}
