/* The test-only build of bulkhead-init (BH_TEST_CORRUPT_INIT): a stand-in
 * for an init that user code has taken over, or one with a bug. It behaves
 * like the real init until /work/.bulkhead-corrupt-init exists (user code
 * writes it: the tests' cells do), then rewrites the replies the file names:
 *
 *   listing-count        a LISTING claims 2^31-1 entries
 *   listing-entries N    a LISTING of N well-formed entries (more than asked)
 *   content-bytes N      a CONTENT of N bytes (more than asked)
 *   done-stdout N        a DONE whose stdout is N bytes (more than the cap)
 *   done-stdout-length   a DONE whose stdout length runs past the frame
 *   done-type            a DONE sent as a LISTING
 *   done-call-id         a DONE for a call nobody made
 *   procs-count          a PROCS claims 2^31-1 processes
 *   procs-command N      a PROCS whose one process has a command of N bytes
 *   procs-command-nul    a PROCS whose one process has a NUL in its command
 *   procs-state          a PROCS whose one process has state 0x01
 *   output-offset        an OUTPUT 100 bytes past where the last one ended
 *   output-stream        an OUTPUT for stream 3
 *   output-call-id       an OUTPUT for a call nobody made
 *   output-chunk         an OUTPUT of BH_CHAN_OUTPUT_CHUNK_MAX + 1 bytes
 *   output-flood N       N more well-formed, contiguous 16 KiB chunks after
 *                        the real one (past the cell's cap)
 *
 * Never shipped: only tests/CMakeLists.txt builds it. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "init_priv.h"

#define CONTROL_FILE WORK_DIR "/.bulkhead-corrupt-init"

static bool control(char *mode, size_t n, unsigned long *arg)
{
	char buf[128];
	struct stat sb;
	int fd = open(CONTROL_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	ssize_t len;

	if (fd < 0)
		return false;
	len = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) ? read(fd, buf, sizeof(buf) - 1) : -1;
	close(fd);
	if (len <= 0)
		return false;
	buf[len] = '\0';
	*arg = 0;
	return sscanf(buf, "%63s %lu", mode, arg) >= 1 && n >= 64;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)proto_le32(p) | (uint64_t)proto_le32(p + 4) << 32;
}

static void set_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A LISTING of n entries named e0, e1, ...: each well formed. */
static void many_entries(struct bh_outq *q, uint64_t call_id, unsigned long n)
{
	size_t len = 8 + 4;
	char name[32];

	for (unsigned long i = 0; i < n; i++)
		len += 4 + (size_t)snprintf(name, sizeof(name), "e%lu", i) + 1 + 8 + 8 + 4;
	if (bh_frame_begin(q, BH_CHAN_LISTING, len) < 0)
		return;
	proto_put_u64(&q->buf, call_id);
	proto_put_u32(&q->buf, (uint32_t)n);
	for (unsigned long i = 0; i < n; i++) {
		uint8_t type = 'f';
		int nl = snprintf(name, sizeof(name), "e%lu", i);

		proto_put_str(&q->buf, name, (uint32_t)nl);
		buf_append(&q->buf, &type, 1);
		proto_put_u64(&q->buf, 0);
		proto_put_u64(&q->buf, 0);
		proto_put_str(&q->buf, "", 0);
	}
}

/* The same DONE with stdout replaced by n bytes. */
static void long_stdout(struct bh_outq *q, const uint8_t *p, unsigned long n)
{
	/* call_id exit sig flags dur out_total err_total | out | err | disk */
	uint8_t fixed[8 + 4 + 4 + 4 + 8];
	uint32_t out_len = proto_le32(p + 44), err_len = proto_le32(p + 48 + out_len);
	uint64_t err_total = le64(p + 36), disk = le64(p + 52 + out_len + err_len);
	uint8_t *err = malloc(err_len + 1u), *out = malloc(n + 1u);

	if (!err || !out)
		goto out;
	memcpy(fixed, p, sizeof(fixed));
	memcpy(err, p + 52 + out_len, err_len);
	memset(out, 'x', n);
	if (bh_frame_begin(q, BH_CHAN_DONE, BH_CHAN_DONE_FIXED + n + err_len) < 0)
		goto out;
	buf_append(&q->buf, fixed, sizeof(fixed));
	proto_put_u64(&q->buf, n);
	proto_put_u64(&q->buf, err_total);
	proto_put_str(&q->buf, out, (uint32_t)n);
	proto_put_str(&q->buf, err, err_len);
	proto_put_u64(&q->buf, disk);
out:
	free(err);
	free(out);
}

static void long_content(struct bh_outq *q, uint64_t call_id, unsigned long n)
{
	uint8_t *data = malloc(n + 1u);
	uint8_t truncated = 0;

	if (!data)
		return;
	memset(data, 'y', n);
	if (bh_frame_begin(q, BH_CHAN_CONTENT, 8 + 8 + 1 + 4 + n) == 0) {
		proto_put_u64(&q->buf, call_id);
		proto_put_u64(&q->buf, n);
		buf_append(&q->buf, &truncated, 1);
		proto_put_str(&q->buf, data, (uint32_t)n);
	}
	free(data);
}

/* ---- procs ---- */
/* A PROCS of one process with the given state and command. */
static void one_process(struct bh_outq *q, uint64_t call_id, uint8_t state, const uint8_t *cmd,
			size_t cmd_len)
{
	if (bh_frame_begin(q, BH_CHAN_PROCS, 8 + 4 + BH_CHAN_PROCS_ENTRY_MIN + cmd_len) < 0)
		return;
	proto_put_u64(&q->buf, call_id);
	proto_put_u32(&q->buf, 1);
	proto_put_u32(&q->buf, 7);
	proto_put_u32(&q->buf, 1);
	proto_put_u32(&q->buf, 1000);
	buf_append(&q->buf, &state, 1);
	proto_put_u64(&q->buf, 0);
	proto_put_u64(&q->buf, 0);
	proto_put_u64(&q->buf, 0);
	proto_put_str(&q->buf, cmd, (uint32_t)cmd_len);
}

static bool corrupt_procs(struct bh_outq *q, size_t start, uint8_t *p, const char *mode,
			  unsigned long arg)
{
	uint64_t call_id = le64(p);

	if (!strcmp(mode, "procs-count")) {
		set_le32(p + 8, 0x7fffffffu);
	} else if (!strcmp(mode, "procs-command")) {
		uint8_t *cmd = malloc(arg + 1u);

		if (!cmd)
			return true;
		memset(cmd, 'c', arg);
		q->buf.len = start;
		one_process(q, call_id, 'S', cmd, arg);
		free(cmd);
	} else if (!strcmp(mode, "procs-command-nul")) {
		q->buf.len = start;
		one_process(q, call_id, 'S', (const uint8_t *)"sleep\0 30", 9);
	} else if (!strcmp(mode, "procs-state")) {
		q->buf.len = start;
		one_process(q, call_id, 0x01, (const uint8_t *)"sleep 30", 8);
	} else {
		return false;
	}
	return true;
}

static void set_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- stream: OUTPUT frames (call_id | stream | offset | string) ---- */
static void output_chunk(struct bh_outq *q, uint64_t call_id, uint8_t stream, uint64_t offset,
			 size_t n)
{
	uint8_t *data = malloc(n);

	if (!data)
		return;
	memset(data, 'z', n);
	if (bh_frame_begin(q, BH_CHAN_OUTPUT, BH_CHAN_OUTPUT_FIXED + n) == 0) {
		proto_put_u64(&q->buf, call_id);
		buf_append(&q->buf, &stream, 1);
		proto_put_u64(&q->buf, offset);
		proto_put_str(&q->buf, data, (uint32_t)n);
	}
	free(data);
}

static void corrupt_output(struct bh_outq *q, size_t start, uint8_t *p, const char *mode,
			   unsigned long arg)
{
	uint64_t call_id = le64(p), offset = le64(p + 9);
	uint32_t len = proto_le32(p + 17);
	uint8_t stream = p[8]; /* p goes stale once the queue grows */

	if (!strcmp(mode, "output-offset")) {
		set_le64(p + 9, offset + 100u);
	} else if (!strcmp(mode, "output-stream")) {
		p[8] = 3;
	} else if (!strcmp(mode, "output-call-id")) {
		set_le64(p, call_id + 1000u);
	} else if (!strcmp(mode, "output-chunk")) {
		q->buf.len = start;
		output_chunk(q, call_id, stream, offset, BH_CHAN_OUTPUT_CHUNK_MAX + 1u);
	} else if (!strcmp(mode, "output-flood")) {
		uint64_t at = offset + len;

		for (unsigned long i = 0; i < arg; i++, at += BH_CHAN_OUTPUT_CHUNK_MAX)
			output_chunk(q, call_id, stream, at, BH_CHAN_OUTPUT_CHUNK_MAX);
	}
}

void reply_queued(struct init *st, size_t frame_len)
{
	struct bh_outq *q = &st->out;
	size_t start = q->buf.len - frame_len;
	uint8_t *f = q->buf.data + start, type = f[4], *p = f + BH_CHAN_HEADER;
	char mode[64];
	unsigned long arg;

	if (!control(mode, sizeof(mode), &arg))
		return;
	if (type == BH_CHAN_PROCS && corrupt_procs(q, start, p, mode, arg)) {
		return;
	} else if (type == BH_CHAN_OUTPUT && !strncmp(mode, "output-", 7)) {
		corrupt_output(q, start, p, mode, arg);
	} else if (type == BH_CHAN_LISTING && !strcmp(mode, "listing-count")) {
		set_le32(p + 8, 0x7fffffffu);
	} else if (type == BH_CHAN_LISTING && !strcmp(mode, "listing-entries")) {
		uint64_t call_id = le64(p);

		q->buf.len = start;
		many_entries(q, call_id, arg);
	} else if (type == BH_CHAN_CONTENT && !strcmp(mode, "content-bytes")) {
		uint64_t call_id = le64(p);

		q->buf.len = start;
		long_content(q, call_id, arg);
	} else if (type == BH_CHAN_DONE && !strcmp(mode, "done-stdout")) {
		uint8_t *copy = malloc(frame_len);

		if (!copy)
			return;
		memcpy(copy, f, frame_len);
		q->buf.len = start;
		long_stdout(q, copy + BH_CHAN_HEADER, arg);
		free(copy);
	} else if (type == BH_CHAN_DONE && !strcmp(mode, "done-stdout-length")) {
		set_le32(p + 44, 0xffffffffu);
	} else if (type == BH_CHAN_DONE && !strcmp(mode, "done-type")) {
		f[4] = BH_CHAN_LISTING;
	} else if (type == BH_CHAN_DONE && !strcmp(mode, "done-call-id")) {
		uint64_t id = le64(p) + 1000u;

		for (int i = 0; i < 8; i++)
			p[i] = (uint8_t)(id >> (8 * i));
	}
}
