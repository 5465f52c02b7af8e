/* The channel between the engine and bulkhead-init (PID 1 inside a sandbox).
 *
 * The sandbox's stdin and stdout are two pipes the engine holds; the init moves
 * them to descriptors user code cannot reach (close-on-exec, init not dumpable)
 * and speaks framed binary messages over them. Both sides include this header:
 * it is the whole contract, with the limits both sides hold to at its end
 * (codec.h reads and writes the frames, path_rule.h judges their paths).
 * Integers are little-endian.
 *
 *   frame   := u32 length (of type + payload) | u8 type | payload
 *   string  := u32 length | bytes            (no terminator)
 *
 * The engine never trusts a frame's length beyond BH_CHAN_MAX_FRAME.
 */
#ifndef BH_PROTO_CHANNEL_H
#define BH_PROTO_CHANNEL_H

#define BH_CHAN_VERSION 2u /* 2: OUTPUT while a CELL runs; CELL's relay_ms */
#define BH_CHAN_MAX_FRAME (16u * 1024u * 1024u)
#define BH_CHAN_HEADER 5u /* u32 length + u8 type */

/* Engine -> init */
enum bh_chan_request {
	/* Run one program to completion.
	 * u64 call_id | u32 timeout_ms | u32 output_cap (bytes kept per stream)
	 * | u32 argc | argc x string | string stdin
	 * argv[0] is an absolute path inside the sandbox; cwd is /work; the
	 * environment is the init's own (the OCI process env). When the program
	 * ends, or at the deadline, every process in the sandbox but the init is
	 * killed (the sweep), then DONE is sent. */
	BH_CHAN_EXEC = 'X',
	/* Start the interpreters named in the mask (if not running), without
	 * waiting for any call. No reply; a failure to start is reported by
	 * the next CELL in that language.
	 * u32 language_mask (1 << enum bh_chan_language) */
	BH_CHAN_WARM = 'W',
	/* One cell in the persistent interpreter of its language.
	 * u64 call_id | u32 timeout_ms | u32 output_cap | u8 language
	 * | string code | u32 nfiles | nfiles x (string path | string content)
	 * Files are written under /work first, as the sandbox user, never
	 * through a symlink; if any cannot be written, none is left behind and
	 * REJECTED is the answer (nothing ran). Then the code runs in the
	 * language's interpreter (started now if needed: INTERP_STARTED).
	 * After the cell, every process that is not an interpreter is killed,
	 * then DONE. exit_code: 0 ran, 1 raised, 124 deadline (the interpreter
	 * was killed: the next cell starts a fresh one); if the interpreter
	 * died during the cell: its exit status (128+N for a signal) and
	 * INTERP_ENDED.
	 * Version 2 appends u32 relay_ms after the files: 0 asks for no OUTPUT
	 * frames; otherwise the init relays the cell's output while it runs
	 * (OUTPUT below), at most once every relay_ms (at least
	 * BH_CHAN_RELAY_MIN_MS). */
	BH_CHAN_CELL = 'C',
	/* List a directory under /work (path relative; "" is /work itself).
	 * u64 call_id | string path | u32 max_entries
	 * -> LISTING, or FAIL (ENOENT, ENOTDIR, ELOOP for a symlink on the way). */
	BH_CHAN_LIST = 'L',
	/* Read a regular file under /work (path relative), at most max_bytes.
	 * u64 call_id | string path | u32 max_bytes
	 * -> CONTENT, or FAIL (ELOOP: a symlink on the way or at the end;
	 * EINVAL: not a regular file, e.g. a FIFO or a device; ENOENT). */
	BH_CHAN_READ = 'G',
	/* ---- procs ---- */
	/* List the processes in the sandbox, as its /proc shows them (the
	 * init is PID 1 of the sandbox's pid namespace; under gVisor that is
	 * the Sentry's /proc). Read in a forked helper, like LIST, so it is
	 * answered while a CELL or an EXEC runs: the point is to see what a
	 * running call started.
	 * u64 call_id | u32 max_entries (at most BH_CHAN_PS_MAX_ENTRIES)
	 * -> PROCS, or FAIL. */
	BH_CHAN_PS = 'P',
};

enum bh_chan_language {
	BH_CHAN_PYTHON = 0,
	BH_CHAN_JAVASCRIPT = 1,
};

/* Where the cell servers live inside the sandbox (read-only bind mount of
 * data/interp): python/cell.py and javascript/cell.js. */
#define BH_INTERP_SANDBOX_DIR "/opt/bulkhead/interp"

/* Init -> engine */
enum bh_chan_reply {
	/* Sent once, after the init hardened itself.
	 * u32 version | u32 flags (reserved, 0) */
	BH_CHAN_READY = 'R',
	/* u64 call_id | i32 exit_code | u32 term_signal | u32 flags
	 * | u64 duration_us | u64 stdout_total | u64 stderr_total
	 * | string stdout (at most output_cap) | string stderr (at most output_cap)
	 * | u64 disk_used (bytes used in /work, /tmp and /dev/shm once the call
	 *   and its sweep are over: the session's disk budget is measured here)
	 * exit_code: the program's exit status; 128+N if killed by signal N;
	 * 124 when the deadline killed it (flag TIMED_OUT). */
	BH_CHAN_DONE = 'D',
	/* The request could not be carried out (bad frame, exec failed, fork failed).
	 * u64 call_id | i32 errno | string message */
	BH_CHAN_FAIL = 'F',
	/* A CELL refused before any code ran (its files could not all be
	 * written, its language has no interpreter here, or it was malformed).
	 * u64 call_id | u32 reason (enum bh_chan_reject) | i32 errno | string message */
	BH_CHAN_REJECTED = 'J',
	/* u64 call_id | u32 n | n x (string name | u8 type | u64 size
	 * | u64 mtime_unix_ms | string symlink_target)
	 * type: 'f' file, 'd' directory, 'l' symlink, 'p' fifo, 's' socket,
	 * 'c'/'b' device, '?' other. Entries sorted by name; at most
	 * max_entries (flag: more in the high bit of n, 0x80000000). */
	BH_CHAN_LISTING = 'T',
	/* u64 call_id | u64 size (the file's full size) | u8 truncated
	 * | string content (at most max_bytes) */
	BH_CHAN_CONTENT = 'B',
	/* ---- procs ---- */
	/* u64 call_id | u32 n | n x (u32 pid | u32 ppid | u32 uid | u8 state
	 * | u64 cpu_us | u64 rss_bytes | u64 age_us | string command)
	 * pid and ppid as the sandbox's pid namespace numbers them; uid the
	 * effective one; state /proc's letter (R S D Z T t X I ...); cpu_us
	 * user + system time; age_us how long ago the process started;
	 * command its argv joined by spaces (NUL-free, at most
	 * BH_CHAN_COMMAND_MAX bytes; its comm in brackets when it has no
	 * argv, as ps shows a kernel thread). Sorted by pid; at most
	 * max_entries (flag: more in the high bit of n, 0x80000000). */
	BH_CHAN_PROCS = 'S',
	/* ---- stream: the running cell's output as it is produced ---- */
	/* While a CELL runs (and asked for relaying), bytes it wrote, sent
	 * before its DONE so an operator can follow them.
	 * u64 call_id | u8 stream (1 stdout, 2 stderr) | u64 offset | string bytes
	 * The rule both sides hold to: per stream the chunks are contiguous
	 * from offset 0 (each chunk's offset is the sum of the lengths before
	 * it), a chunk holds 1..BH_CHAN_OUTPUT_CHUNK_MAX bytes, and offset +
	 * length never passes the cell's output_cap (relaying stops at the
	 * cap: the bytes are the kept ones, a prefix of DONE's). The init
	 * coalesces: what arrived since the last relay goes out at most once
	 * every relay_ms, cut into chunks, so a tight print loop costs the
	 * channel at most cap bytes per stream and a frame per chunk. OUTPUT
	 * is never the answer: DONE (or REJECTED, FAIL) still ends the call
	 * and carries the whole kept output. The engine judges every OUTPUT
	 * (chan_check.c) and ends the sandbox on a broken rule. */
	BH_CHAN_OUTPUT = 'O',
};

/* OUTPUT's fixed part (call id, stream, offset, the string's length), its
 * most bytes per chunk, and the shortest interval an init relays at. */
#define BH_CHAN_OUTPUT_FIXED (8u + 1u + 8u + 4u)
#define BH_CHAN_OUTPUT_CHUNK_MAX (16u * 1024u)
#define BH_CHAN_RELAY_MIN_MS 10u
/* The interval the engine asks for. */
#define BH_CHAN_RELAY_DEFAULT_MS 50u
enum bh_chan_stream {
	BH_CHAN_STDOUT = 1,
	BH_CHAN_STDERR = 2,
};

/* What both sides hold each other to. The engine checks every count and
 * length in a reply against these and against what its request asked for
 * (output_cap, max_entries, max_bytes) before it allocates anything; a reply
 * that breaks one ends that sandbox. */
/* DONE's fixed part: call_id, exit, signal, flags, duration, both totals,
 * both string lengths, disk_used. */
#define BH_CHAN_DONE_FIXED (8u + 4u + 4u + 4u + 8u + 8u + 8u + 4u + 4u + 8u)
/* CONTENT's fixed part: call_id, size, truncated, the string's length. */
#define BH_CHAN_CONTENT_FIXED (8u + 8u + 1u + 4u)
/* The entries the engine asks a LIST for. */
#define BH_CHAN_LIST_MAX_ENTRIES 10000u
/* The smallest LISTING entry: a one-byte name, type, size, mtime, an empty
 * target. */
#define BH_CHAN_LISTING_ENTRY_MIN (4u + 1u + 1u + 8u + 8u + 4u)
/* A name in a LISTING (one path component) and a symlink's target. */
#define BH_CHAN_NAME_MAX 255u
#define BH_CHAN_TARGET_MAX 4096u
/* The message of a FAIL or REJECTED. */
#define BH_CHAN_MESSAGE_MAX 4095u

/* ---- procs ---- */
/* The processes the engine asks a PS for, and one process's command as
 * PROCS carries it. */
#define BH_CHAN_PS_MAX_ENTRIES 1024u
#define BH_CHAN_COMMAND_MAX 1024u
/* A PROCS entry: pid, ppid, uid, state, cpu, rss, age, the command's
 * length (an entry's smallest size: the command may be empty). */
#define BH_CHAN_PROCS_ENTRY_MIN (4u + 4u + 4u + 1u + 8u + 8u + 8u + 4u)
/* /proc's state letters a PROCS entry may carry ('?': one this list does
 * not know). */
#define BH_CHAN_PROC_STATES "RSDZTtXxKWPI?"
_Static_assert(8u + 4u + BH_CHAN_PS_MAX_ENTRIES * (BH_CHAN_PROCS_ENTRY_MIN + BH_CHAN_COMMAND_MAX) <
		       BH_CHAN_MAX_FRAME,
	       "a PROCS at the limits must fit one frame");

/* ---- what a request may ask: the engine refuses more before sending ---- */

/* The most output kept per stream (output_cap): both streams at their cap
 * must still fit one DONE frame. An EXEC may ask up to this; the init
 * could not honour more. */
#define BH_MAX_OUTPUT_CAP ((BH_CHAN_MAX_FRAME - 1u - BH_CHAN_DONE_FIXED) / 2u)
/* A cell's output_cap: a session keeps less than a one-off program may. */
#define BH_MAX_CELL_OUTPUT_CAP (1u * 1024u * 1024u)
/* A cell's code (and a snippet's), its files, their bytes in all, and one
 * file's path (relative to /work; path_rule.h). */
#define BH_MAX_CODE_BYTES (256u * 1024u)
#define BH_MAX_FILES 200u
#define BH_MAX_FILES_BYTES (4u * 1024u * 1024u)
#define BH_MAX_PATH_BYTES 4096u

/* A CELL at every limit still fits one frame: type, call id, timeout, cap,
 * language, the code's string, the count, each file's two strings, relay_ms. */
_Static_assert(1u + 8u + 4u + 4u + 1u + 4u + BH_MAX_CODE_BYTES + 4u +
			       BH_MAX_FILES * (4u + BH_MAX_PATH_BYTES + 4u) + BH_MAX_FILES_BYTES + 4u <=
		       BH_CHAN_MAX_FRAME,
	       "a cell at the limits must fit one frame");
_Static_assert(BH_MAX_CELL_OUTPUT_CAP <= BH_MAX_OUTPUT_CAP,
	       "a cell may not ask more output than a DONE frame holds");

enum bh_chan_reject {
	BH_CHAN_REJECT_FILES = 1,     /* a file could not be written */
	BH_CHAN_REJECT_LANGUAGE = 2,  /* no interpreter for the language */
	BH_CHAN_REJECT_MALFORMED = 3, /* the request made no sense */
};

enum bh_chan_done_flags {
	BH_CHAN_TIMED_OUT = 1u << 0,
	BH_CHAN_STDOUT_TRUNCATED = 1u << 1,
	BH_CHAN_STDERR_TRUNCATED = 1u << 2,
	BH_CHAN_INTERP_STARTED = 1u << 3, /* this cell ran in a fresh interpreter */
	BH_CHAN_INTERP_ENDED = 1u << 4,   /* the interpreter is gone after this cell */
};

#endif
