/* Every frame from a sandbox's init, judged before anything reads it
 * (chan_check.h). The layouts are channel.h's, read with its codec. */
#include "chan_check.h"

#include "codec.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

const char *chan_frame_name(uint8_t type)
{
	switch (type) {
	case BH_CHAN_READY:
		return "READY";
	case BH_CHAN_DONE:
		return "DONE";
	case BH_CHAN_FAIL:
		return "FAIL";
	case BH_CHAN_REJECTED:
		return "REJECTED";
	case BH_CHAN_LISTING:
		return "LISTING";
	case BH_CHAN_CONTENT:
		return "CONTENT";
	case BH_CHAN_PROCS: /* ---- procs ---- */
		return "PROCS";
	case BH_CHAN_OUTPUT:
		return "OUTPUT";
	default:
		return "an unknown frame";
	}
}

static const char *request_name(uint8_t type)
{
	switch (type) {
	case BH_CHAN_EXEC:
		return "an EXEC";
	case BH_CHAN_CELL:
		return "a CELL";
	case BH_CHAN_LIST:
		return "a LIST";
	case BH_CHAN_READ:
		return "a READ";
	case BH_CHAN_PS: /* ---- procs ---- */
		return "a PS";
	default:
		return "a request";
	}
}

int chan_ask_of(const uint8_t *frame, size_t len, struct chan_ask *ask)
{
	struct proto_cursor c = proto_cursor(frame, len);
	uint8_t type;
	uint64_t call_id;
	uint32_t timeout, path_len;

	*ask = (struct chan_ask){0};
	if (proto_get_u8(&c, &type) < 0 || proto_get_u64(&c, &call_id) < 0)
		return -1;
	ask->request = type;
	switch (type) {
	case BH_CHAN_EXEC:
	case BH_CHAN_CELL:
		proto_get_u32(&c, &timeout);
		proto_get_u32(&c, &ask->output_cap);
		if (c.bad)
			return -1;
		/* stream: a CELL's relay_ms is its last word (channel.h) */
		if (type == BH_CHAN_CELL) {
			if (len < 1u + 8u + 8u + 4u)
				return -1;
			ask->relay_ms = proto_le32(frame + len - 4u);
		}
		return 0;
	case BH_CHAN_LIST:
	case BH_CHAN_READ:
		proto_get_u32(&c, &path_len);
		proto_take(&c, path_len, NULL);
		proto_get_u32(&c, type == BH_CHAN_LIST ? &ask->max_entries : &ask->max_bytes);
		return c.bad ? -1 : 0;
	case BH_CHAN_PS: /* ---- procs ---- */
		proto_get_u32(&c, &ask->max_entries);
		return c.bad ? -1 : 0;
	default:
		return -1;
	}
}

__attribute__((format(printf, 3, 4))) static const char *say(char *why, size_t n, const char *fmt,
							       ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return why;
}

static bool allowed(uint8_t request, uint8_t type)
{
	if (type == BH_CHAN_FAIL)
		return true;
	switch (request) {
	case BH_CHAN_EXEC:
		return type == BH_CHAN_DONE;
	case BH_CHAN_CELL:
		return type == BH_CHAN_DONE || type == BH_CHAN_REJECTED;
	case BH_CHAN_LIST:
		return type == BH_CHAN_LISTING;
	case BH_CHAN_READ:
		return type == BH_CHAN_CONTENT;
	case BH_CHAN_PS: /* ---- procs ---- */
		return type == BH_CHAN_PROCS;
	default:
		return false;
	}
}

/* i32 errno | string message: a sentence, not a payload. */
static const char *check_message(struct proto_cursor *c, const char *frame, char *why, size_t n)
{
	uint32_t err, len;
	if (proto_get_u32(c, &err) < 0 || proto_get_u32(c, &len) < 0)
		return say(why, n, "its init sent a %s cut short", frame);
	if (len > c->left)
		return say(why, n, "its init sent a %s whose message length (%u) runs past the frame",
			   frame, len);
	if (len > BH_CHAN_MESSAGE_MAX)
		return say(why, n, "its init sent a %s message of %u bytes; at most %u are allowed",
			   frame, len, BH_CHAN_MESSAGE_MAX);
	proto_take(c, len, NULL);
	return NULL;
}

/* One captured stream: its length within the frame and the cap, and the
 * total the init counted at least what it sends. */
static const char *check_stream(struct proto_cursor *c, const char *name, uint64_t total,
				uint32_t cap, char *why, size_t n)
{
	uint32_t len;
	if (proto_get_u32(c, &len) < 0)
		return say(why, n, "its init sent a DONE cut short before its %s", name);
	if (len > c->left)
		return say(why, n, "its init sent a DONE whose %s length (%u) runs past the frame", name,
			   len);
	if (len > cap)
		return say(why, n, "its init sent %u bytes of %s; the cap asked for was %u", len, name,
			   cap);
	if (total < len)
		return say(why, n, "its init sent %u bytes of %s but counted %llu in all", len, name,
			   (unsigned long long)total);
	proto_take(c, len, NULL);
	return NULL;
}

#define DONE_FLAGS                                                                                 \
	(BH_CHAN_TIMED_OUT | BH_CHAN_STDOUT_TRUNCATED | BH_CHAN_STDERR_TRUNCATED |                  \
	 BH_CHAN_INTERP_STARTED | BH_CHAN_INTERP_ENDED)

static const char *check_done(const struct chan_ask *ask, struct proto_cursor *c, char *why,
			      size_t n)
{
	uint32_t exit_code, sig, flags;
	uint64_t duration, out_total, err_total, disk;
	const char *bad;
	proto_get_u32(c, &exit_code);
	proto_get_u32(c, &sig);
	proto_get_u32(c, &flags);
	proto_get_u64(c, &duration);
	proto_get_u64(c, &out_total);
	proto_get_u64(c, &err_total);
	if (c->bad)
		return say(why, n, "its init sent a DONE cut short");
	/* An exit status, 124, or 128 + a signal: always a byte. */
	if (exit_code > 255)
		return say(why, n, "its init sent a DONE with exit code %d", (int32_t)exit_code);
	if (sig > 64)
		return say(why, n, "its init sent a DONE with signal %u", sig);
	if (flags & ~(uint32_t)DONE_FLAGS)
		return say(why, n, "its init sent a DONE with unknown flags 0x%x",
			   flags & ~(uint32_t)DONE_FLAGS);
	if ((bad = check_stream(c, "stdout", out_total, ask->output_cap, why, n)) ||
	    (bad = check_stream(c, "stderr", err_total, ask->output_cap, why, n)))
		return bad;
	if (proto_get_u64(c, &disk) < 0)
		return say(why, n, "its init sent a DONE cut short before its disk use");
	return NULL;
}

static const char *check_listing(const struct chan_ask *ask, struct proto_cursor *c, char *why,
				 size_t n)
{
	uint32_t count;
	if (proto_get_u32(c, &count) < 0)
		return say(why, n, "its init sent a LISTING cut short");
	count &= 0x7fffffffu; /* the high bit: more entries than shown */
	if (count > ask->max_entries)
		return say(why, n, "its init sent a LISTING of %u entries; at most %u were asked for",
			   count, ask->max_entries);
	if (count > c->left / BH_CHAN_LISTING_ENTRY_MIN)
		return say(why, n, "its init sent a LISTING of %u entries in %zu bytes", count,
			   c->left);
	for (uint32_t i = 0; i < count; i++) {
		uint32_t name_len, target_len;
		const uint8_t *name;
		uint8_t type;
		uint64_t size, mtime;
		if (proto_get_u32(c, &name_len) < 0 || name_len > c->left)
			return say(why, n, "its init sent a LISTING whose entry %u runs past the frame", i);
		proto_take(c, name_len, &name);
		if (name_len == 0 || name_len > BH_CHAN_NAME_MAX || memchr(name, '/', name_len) ||
		    memchr(name, '\0', name_len))
			return say(why, n, "its init sent a LISTING whose entry %u has a name that is "
					   "no file name (%u bytes)", i, name_len);
		proto_get_u8(c, &type);
		proto_get_u64(c, &size);
		proto_get_u64(c, &mtime);
		proto_get_u32(c, &target_len);
		if (c->bad)
			return say(why, n, "its init sent a LISTING whose entry %u is cut short", i);
		if (!type || !strchr("fdlpscb?", type))
			return say(why, n, "its init sent a LISTING whose entry %u has type 0x%02x", i,
				   type);
		if (target_len > c->left || target_len > BH_CHAN_TARGET_MAX)
			return say(why, n, "its init sent a LISTING whose entry %u has a link target of "
					   "%u bytes", i, target_len);
		proto_take(c, target_len, NULL);
	}
	return NULL;
}

static const char *check_content(const struct chan_ask *ask, struct proto_cursor *c, char *why,
				 size_t n)
{
	uint64_t size;
	uint8_t truncated;
	uint32_t len;
	proto_get_u64(c, &size);
	proto_get_u8(c, &truncated);
	proto_get_u32(c, &len);
	if (c->bad)
		return say(why, n, "its init sent a CONTENT cut short");
	if (truncated > 1)
		return say(why, n, "its init sent a CONTENT whose truncated flag is %u", truncated);
	if (len > c->left)
		return say(why, n, "its init sent a CONTENT whose length (%u) runs past the frame", len);
	if (len > ask->max_bytes)
		return say(why, n, "its init sent %u bytes of a file; at most %u were asked for", len,
			   ask->max_bytes);
	proto_take(c, len, NULL);
	return NULL;
}

/* ---- procs ---- */
/* Counts first, against the request and the frame's bytes; then each
 * entry's command within BH_CHAN_COMMAND_MAX, NUL-free, and its state one
 * of /proc's letters. */
static const char *check_procs(const struct chan_ask *ask, struct proto_cursor *c, char *why,
			       size_t n)
{
	uint32_t count;
	if (proto_get_u32(c, &count) < 0)
		return say(why, n, "its init sent a PROCS cut short");
	count &= 0x7fffffffu; /* the high bit: more processes than shown */
	if (count > ask->max_entries || count > BH_CHAN_PS_MAX_ENTRIES)
		return say(why, n, "its init sent a PROCS of %u processes; at most %u were asked for",
			   count, ask->max_entries);
	if (count > c->left / BH_CHAN_PROCS_ENTRY_MIN)
		return say(why, n, "its init sent a PROCS of %u processes in %zu bytes", count, c->left);
	for (uint32_t i = 0; i < count; i++) {
		uint32_t pid, ppid, uid, len;
		uint8_t state;
		uint64_t cpu, rss, age;
		const uint8_t *command;
		proto_get_u32(c, &pid);
		proto_get_u32(c, &ppid);
		proto_get_u32(c, &uid);
		proto_get_u8(c, &state);
		proto_get_u64(c, &cpu);
		proto_get_u64(c, &rss);
		proto_get_u64(c, &age);
		proto_get_u32(c, &len);
		if (c->bad)
			return say(why, n, "its init sent a PROCS whose process %u is cut short", i);
		if (!state || !strchr(BH_CHAN_PROC_STATES, state))
			return say(why, n, "its init sent a PROCS whose process %u has state 0x%02x", i,
				   state);
		if (len > c->left)
			return say(why, n, "its init sent a PROCS whose process %u has a command "
					   "length (%u) that runs past the frame", i, len);
		if (len > BH_CHAN_COMMAND_MAX)
			return say(why, n, "its init sent a PROCS whose process %u has a command of %u "
					   "bytes; at most %u are allowed", i, len, BH_CHAN_COMMAND_MAX);
		proto_take(c, len, &command);
		if (len && memchr(command, '\0', len))
			return say(why, n, "its init sent a PROCS whose process %u has a NUL in its "
					   "command", i);
	}
	return NULL;
}

const char *chan_check_reply(const struct chan_ask *ask, uint8_t type, const uint8_t *p,
			     size_t len, char *why, size_t n)
{
	struct proto_cursor c = proto_cursor(p, len);
	const char *bad;
	uint32_t reason;
	if (!allowed(ask->request, type))
		return say(why, n, "its init answered %s with a %s", request_name(ask->request),
			   chan_frame_name(type));
	switch (type) {
	case BH_CHAN_DONE:
		bad = check_done(ask, &c, why, n);
		break;
	case BH_CHAN_FAIL:
		bad = check_message(&c, "FAIL", why, n);
		break;
	case BH_CHAN_REJECTED:
		if (proto_get_u32(&c, &reason) < 0)
			return say(why, n, "its init sent a REJECTED cut short");
		if (reason < BH_CHAN_REJECT_FILES || reason > BH_CHAN_REJECT_MALFORMED)
			return say(why, n, "its init sent a REJECTED for unknown reason %u", reason);
		bad = check_message(&c, "REJECTED", why, n);
		break;
	case BH_CHAN_LISTING:
		bad = check_listing(ask, &c, why, n);
		break;
	case BH_CHAN_PROCS: /* ---- procs ---- */
		bad = check_procs(ask, &c, why, n);
		break;
	default: /* BH_CHAN_CONTENT: allowed() admits nothing else */
		bad = check_content(ask, &c, why, n);
		break;
	}
	if (bad)
		return bad;
	if (c.left)
		return say(why, n, "its init sent a %s with %zu bytes after its end", chan_frame_name(type),
			   c.left);
	return NULL;
}

const char *chan_check_ready(const uint8_t *p, size_t len, char *why, size_t n)
{
	struct proto_cursor c = proto_cursor(p, len);
	uint32_t version, flags;
	if (proto_get_u32(&c, &version) < 0 || proto_get_u32(&c, &flags) < 0 || c.left)
		return say(why, n, "its init sent a READY of %zu bytes", len);
	if (version != BH_CHAN_VERSION)
		return say(why, n, "its init speaks channel version %u, not %u", version,
			   BH_CHAN_VERSION);
	return NULL;
}

/* ---- stream ---- */
const char *chan_check_output(const struct chan_ask *ask, const uint64_t relayed[2],
			      const uint8_t *p, size_t len, uint8_t *stream, uint64_t *offset,
			      const uint8_t **data, uint32_t *n, char *why, size_t wn)
{
	struct proto_cursor c = proto_cursor(p, len);
	if (ask->request != BH_CHAN_CELL || !ask->relay_ms)
		return say(why, wn, "its init answered %s with an OUTPUT it did not ask for",
			   request_name(ask->request));
	proto_get_u8(&c, stream);
	proto_get_u64(&c, offset);
	proto_get_u32(&c, n);
	if (c.bad)
		return say(why, wn, "its init sent an OUTPUT cut short");
	if (*stream != BH_CHAN_STDOUT && *stream != BH_CHAN_STDERR)
		return say(why, wn, "its init sent an OUTPUT for stream %u", *stream);
	const char *name = *stream == BH_CHAN_STDOUT ? "stdout" : "stderr";
	if (*n > c.left)
		return say(why, wn, "its init sent an OUTPUT whose length (%u) runs past the frame", *n);
	if (*n < c.left)
		return say(why, wn, "its init sent an OUTPUT with %zu bytes after its end", c.left - *n);
	if (*n == 0 || *n > BH_CHAN_OUTPUT_CHUNK_MAX)
		return say(why, wn, "its init sent an OUTPUT chunk of %u bytes; 1 to %u are allowed", *n,
			   BH_CHAN_OUTPUT_CHUNK_MAX);
	if (*offset != relayed[*stream - 1])
		return say(why, wn,
			   "its init sent %s at offset %llu; the %llu bytes before it were relayed, "
			   "so the next is at %llu",
			   name, (unsigned long long)*offset, (unsigned long long)relayed[*stream - 1],
			   (unsigned long long)relayed[*stream - 1]);
	if (*offset + *n > ask->output_cap)
		return say(why, wn, "its init relayed %llu bytes of %s; the cap asked for was %u",
			   (unsigned long long)(*offset + *n), name, ask->output_cap);
	proto_take(&c, *n, data);
	return NULL;
}
