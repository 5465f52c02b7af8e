#include "tamper_proxy.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

struct msg {
	char *head; /* through the blank line */
	size_t head_len;
	char *body;
	size_t body_len;
};

static int unix_socket(const char *path, bool listen_on)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	if (fd < 0)
		return -1;
	if (listen_on) {
		unlink(path);
		if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 16) < 0)
			return -1;
	} else if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* One HTTP/1.1 message framed by Content-Length (all this relay sees:
 * libcurl's POSTs and libmicrohttpd's buffered answers). */
static bool read_msg(int fd, struct msg *m, char **carry, size_t *carry_len)
{
	size_t cap = 65536, len = *carry_len;
	char *buf = malloc(cap);
	if (len)
		memcpy(buf, *carry, len);
	free(*carry);
	*carry = NULL;
	*carry_len = 0;
	char *end;
	while (!(end = memmem(buf, len, "\r\n\r\n", 4))) {
		if (len == cap)
			buf = realloc(buf, cap *= 2);
		ssize_t r = read(fd, buf + len, cap - len);
		if (r <= 0) {
			free(buf);
			return false;
		}
		len += (size_t)r;
	}
	m->head_len = (size_t)(end - buf) + 4;
	m->head = strndup(buf, m->head_len);
	size_t want = 0;
	for (char *line = strstr(m->head, "\r\n"); line; line = strstr(line + 2, "\r\n"))
		if (!strncasecmp(line + 2, "Content-Length:", 15))
			want = strtoul(line + 17, NULL, 10);
	while (len - m->head_len < want) {
		if (len == cap)
			buf = realloc(buf, cap *= 2);
		ssize_t r = read(fd, buf + len, cap - len);
		if (r <= 0) {
			free(buf);
			free(m->head);
			return false;
		}
		len += (size_t)r;
	}
	m->body_len = want;
	m->body = malloc(want + 1);
	memcpy(m->body, buf + m->head_len, want);
	m->body[want] = '\0';
	size_t rest = len - m->head_len - want;
	if (rest) {
		*carry = malloc(rest);
		memcpy(*carry, buf + m->head_len + want, rest);
		*carry_len = rest;
	}
	free(buf);
	return true;
}

static const char *replacement; /* TAMPER_REPLACE_BODY's body (the children inherit it) */

/* The Content-Length header says n. */
static void set_length(struct msg *m, size_t n)
{
	char *line = strcasestr(m->head, "\r\nContent-Length:");
	if (!line)
		return;
	char *next = strstr(line + 2, "\r\n");
	char *head = NULL;
	if (asprintf(&head, "%.*s\r\nContent-Length: %zu%s", (int)(line - m->head), m->head, n,
		     next) < 0)
		_exit(1);
	free(m->head);
	m->head = head;
	m->head_len = strlen(head);
}

static void spoil(struct msg *m, enum tamper mode)
{
	if (mode == TAMPER_FLIP_STDOUT) {
		char *p = strstr(m->body, "\"stdout\":\"");
		if (p) {
			p += 10;
			*p = *p == 'A' ? 'B' : 'A'; /* still base64, another byte */
		}
	} else if (mode == TAMPER_REPLACE_BODY) {
		free(m->body);
		m->body = strdup(replacement);
		m->body_len = strlen(replacement);
		set_length(m, m->body_len);
	} else if (mode == TAMPER_DROP_REQUEST_ID) {
		char *line = strcasestr(m->head, "\r\nPlimsoll-Request-Id:");
		if (line) {
			char *next = strstr(line + 2, "\r\n");
			memmove(line, next, strlen(next) + 1);
			m->head_len = strlen(m->head);
		}
	}
}

static void relay(int client, const char *upstream, enum tamper mode, const char *path,
		  int spare, int *seen)
{
	char *carry = NULL;
	size_t carry_len = 0;
	struct msg req, ans;
	while (read_msg(client, &req, &carry, &carry_len)) {
		bool target = path && strstr(req.head, path) && strstr(req.head, path) < strstr(req.head, "\r\n");
		int up = unix_socket(upstream, false);
		char *none = NULL;
		size_t none_len = 0;
		if (up < 0 || !write_all(up, req.head, req.head_len) ||
		    !write_all(up, req.body, req.body_len) || !read_msg(up, &ans, &none, &none_len))
			_exit(1);
		close(up);
		free(none);
		if (target && __atomic_fetch_add(seen, 1, __ATOMIC_SEQ_CST) >= spare)
			spoil(&ans, mode);
		if (!write_all(client, ans.head, ans.head_len) || !write_all(client, ans.body, ans.body_len))
			_exit(0);
		free(req.head);
		free(req.body);
		free(ans.head);
		free(ans.body);
	}
	_exit(0);
}

void proxy_start(struct tamper_proxy *p, const char *upstream, const char *sock, enum tamper mode,
		 const char *path, int spare)
{
	snprintf(p->sock, sizeof p->sock, "%s", sock);
	int lfd = unix_socket(sock, true);
	cr_assert_geq(lfd, 0, "the proxy cannot listen on %s: %s", sock, strerror(errno));
	/* Shared by every connection's child: answers are counted across them. */
	int *seen = mmap(NULL, sizeof *seen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(seen, MAP_FAILED);
	*seen = 0;
	p->pid = fork();
	cr_assert_neq(p->pid, -1);
	if (p->pid == 0) {
		setpgid(0, 0);
		signal(SIGCHLD, SIG_IGN);
		signal(SIGTERM, SIG_DFL);
		for (;;) {
			int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (c < 0) {
				if (errno == EINTR)
					continue;
				_exit(1);
			}
			if (fork() == 0) {
				close(lfd);
				relay(c, upstream, mode, path, spare, seen);
			}
			close(c);
		}
	}
	setpgid(p->pid, p->pid);
	close(lfd);
}

void proxy_start_answering(struct tamper_proxy *p, const char *upstream, const char *sock,
			   const char *path, const char *body)
{
	replacement = body;
	proxy_start(p, upstream, sock, TAMPER_REPLACE_BODY, path, 0);
}

void proxy_stop(struct tamper_proxy *p)
{
	if (p->pid > 0) {
		kill(-p->pid, SIGKILL);
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
		p->pid = 0;
	}
	if (p->sock[0])
		unlink(p->sock);
	p->sock[0] = '\0';
}
