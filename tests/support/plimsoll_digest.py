#!/usr/bin/env python3
"""plimsoll's run-record digests, written from its documentation alone
(reference: plimsoll.md section 5.2 and Appendix A), not from bulkhead's C:
the daemon tests hand it what they sent and what they received, and compare
its digests with the record's. Input on stdin: {"request": <RunRequest or
SessionRunRequest as sent>, "response": <RunResponse as received>}. Output:
the request digest and the result digest, one a line."""
import base64
import hashlib
import json
import struct
import sys

OUTCOMES = {"PROJECT_OUTCOME_UNSPECIFIED": 0, "PROJECT_OUTCOME_COMPLETED": 1,
            "PROJECT_OUTCOME_SETUP_FAILED": 2, "PROJECT_OUTCOME_TIMED_OUT": 3,
            "PROJECT_OUTCOME_PROTOCOL_ERROR": 4}


def value(b):
    return struct.pack(">Q", len(b)) + b


class Digest:
    def __init__(self, domain):
        self.h = hashlib.sha256(value(domain.encode()))

    def field(self, name, content):
        if isinstance(content, bool):
            content = b"true" if content else b"false"
        elif isinstance(content, int):
            content = str(content).encode()
        elif isinstance(content, str):
            content = content.encode()
        self.h.update(value(name.encode()) + value(content))

    def hex(self):
        return self.h.hexdigest()


def b64(s):
    return base64.b64decode(s or "")


def request_digest(req):
    protocol = int(req.get("protocol", 0))
    d = Digest("plimsoll.run-request.v2" if protocol >= 2 else "plimsoll.run-request.v1")
    d.field("protocol", protocol)
    d.field("minimum_isolation", req.get("minimumIsolation", ""))
    d.field("timeout_ms", int(req.get("timeoutMs", 0)))
    if protocol >= 2:
        rule = req.get("softwareRule") or {}
        d.field("software_mode", rule.get("mode", ""))
        ids = rule.get("identities", [])
        d.field("software_identities", len(ids))
        for i in ids:
            d.field("software_identity", i)
    if "project" in req:
        p = req["project"]
        d.field("kind", "project")
        d.field("grant_profile", p.get("grantProfile", ""))
        files = p.get("files", [])
        d.field("files", len(files))
        for f in files:
            d.field("file_path", f.get("path", ""))
            d.field("file_content", f.get("content", ""))
        steps = p.get("steps", [])
        d.field("steps", len(steps))
        for s in steps:
            d.field("step_command", s)
        arts = p.get("artifacts", [])
        d.field("artifacts", len(arts))
        for a in arts:
            d.field("artifact_path", a)
    elif "javascript" in req:
        d.field("kind", "javascript")
        d.field("code", req["javascript"].get("code", ""))
        d.field("grant_profile", req["javascript"].get("grantProfile", ""))
    elif "cell" in req:
        c = req["cell"]
        d.field("kind", "cell")
        d.field("language", c.get("language", ""))
        d.field("code", c.get("code", ""))
        files = c.get("files", [])
        d.field("files", len(files))
        for f in files:
            d.field("file_path", f.get("path", ""))
            d.field("file_content", f.get("content", ""))
    else:
        d.field("kind", "")
    return d.hex()


def result_digest(resp):
    d = Digest("plimsoll.run-result.v1")
    if "project" in resp:
        p = resp["project"]
        outcome = p.get("outcome", 0)
        d.field("kind", "project")
        d.field("outcome", OUTCOMES[outcome] if isinstance(outcome, str) else int(outcome))
        d.field("outcome_detail", p.get("outcomeDetail", ""))
        d.field("artifacts_truncated", bool(p.get("artifactsTruncated", False)))
        steps = p.get("steps", [])
        d.field("steps", len(steps))
        for s in steps:
            d.field("step_command", s.get("command", ""))
            d.field("step_exit_code", int(s.get("exitCode", 0)))
            d.field("step_timed_out", bool(s.get("timedOut", False)))
            d.field("step_stdout", b64(s.get("stdout")))
            d.field("step_stderr", b64(s.get("stderr")))
            d.field("step_stdout_truncated", bool(s.get("stdoutTruncated", False)))
            d.field("step_stderr_truncated", bool(s.get("stderrTruncated", False)))
        arts = p.get("artifacts", [])
        d.field("artifacts", len(arts))
        for a in arts:
            d.field("artifact_path", a.get("path", ""))
            d.field("artifact_content", b64(a.get("content")))
        return d.hex()
    kind = "cell" if "cell" in resp else "javascript"
    r = resp.get(kind, {})
    d.field("kind", kind)
    d.field("exit_code", int(r.get("exitCode", 0)))
    d.field("timed_out", bool(r.get("timedOut", False)))
    d.field("stdout", b64(r.get("stdout")))
    d.field("stderr", b64(r.get("stderr")))
    d.field("stdout_truncated", bool(r.get("stdoutTruncated", False)))
    d.field("stderr_truncated", bool(r.get("stderrTruncated", False)))
    if kind == "cell":
        d.field("interpreter_started", bool(r.get("interpreterStarted", False)))
        d.field("interpreter_ended", bool(r.get("interpreterEnded", False)))
    return d.hex()


def main():
    doc = json.load(sys.stdin)
    print(request_digest(doc["request"]))
    print(result_digest(doc["response"]))


if __name__ == "__main__":
    main()
