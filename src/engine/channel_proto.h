/* The channel between the engine and bulkhead-init (PID 1 inside a sandbox).
 *
 * The sandbox's stdin and stdout are two pipes the engine holds; the init moves
 * them to descriptors user code cannot reach (close-on-exec, init not dumpable)
 * and speaks framed binary messages over them. Both sides include this header:
 * it is the whole contract. Integers are little-endian.
 *
 *   frame   := u32 length (of type + payload) | u8 type | payload
 *   string  := u32 length | bytes            (no terminator)
 *
 * The engine never trusts a frame's length beyond BH_CHAN_MAX_FRAME.
 */
#ifndef BH_CHANNEL_PROTO_H
#define BH_CHANNEL_PROTO_H

#define BH_CHAN_VERSION 1u
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
};

/* Init -> engine */
enum bh_chan_reply {
	/* Sent once, after the init hardened itself.
	 * u32 version | u32 flags (reserved, 0) */
	BH_CHAN_READY = 'R',
	/* u64 call_id | i32 exit_code | u32 term_signal | u32 flags
	 * | u64 duration_us | u64 stdout_total | u64 stderr_total
	 * | string stdout (at most output_cap) | string stderr (at most output_cap)
	 * exit_code: the program's exit status; 128+N if killed by signal N;
	 * 124 when the deadline killed it (flag TIMED_OUT). */
	BH_CHAN_DONE = 'D',
	/* The request could not be carried out (bad frame, exec failed, fork failed).
	 * u64 call_id | i32 errno | string message */
	BH_CHAN_FAIL = 'F',
};

enum bh_chan_done_flags {
	BH_CHAN_TIMED_OUT = 1u << 0,
	BH_CHAN_STDOUT_TRUNCATED = 1u << 1,
	BH_CHAN_STDERR_TRUNCATED = 1u << 2,
};

/* Where the init finds itself inside the sandbox (a read-only bind mount). */
#define BH_INIT_SANDBOX_PATH "/opt/bulkhead/bulkhead-init"

#endif
