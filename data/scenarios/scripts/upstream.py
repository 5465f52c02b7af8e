#!/usr/bin/env python3
"""The test upstream `bulkhead record` starts for the egress scenarios
(docs/scenarios.md, "egress"): a small orders API over TLS on a loopback
address, its certificate from a CA the recorder made for the recording.

It answers only a caller that presents the token (`Authorization: Bearer
TOKEN`, TOKEN from the environment variable named by --credential-env), as a
real API would; the token reaches it from the broker on the host, never from
the sandbox. Every request it reads is one line in --seen: the method, the
path, whether the credential came and matched. Never the credential's value,
nor any header's.

Usage: upstream.py --addr 127.0.0.2 --port 9443 --cert C --key K
                   --credential-env NAME --seen FILE
Prints "listening" once it accepts connections.
"""
import argparse
import http.server
import json
import os
import ssl
import sys

ORDERS = {
    "1001": {"order": 1001, "customer": "ada", "total": 42.50, "status": "shipped"},
    "1002": {"order": 1002, "customer": "grace", "total": 17.25, "status": "packing"},
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--credential-env", required=True)
    ap.add_argument("--seen", required=True)
    a = ap.parse_args()
    token = os.environ.get(a.credential_env, "")
    if not token:
        sys.exit("upstream.py: no credential in $" + a.credential_env)
    seen = open(a.seen, "a", buffering=1)

    class Orders(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            auth = self.headers.get("Authorization")
            came = "none" if auth is None else \
                "matched" if auth == "Bearer " + token else "wrong"
            seen.write("%s %s credential=%s\n" % (self.command, self.path.split("?")[0], came))
            if came != "matched":
                return self.answer(401, {"error": "a bearer token is required"})
            parts = self.path.split("?")[0].strip("/").split("/")
            if len(parts) == 3 and parts[:2] == ["v1", "orders"] and parts[2] in ORDERS:
                return self.answer(200, ORDERS[parts[2]])
            if parts == ["v1", "orders"]:
                return self.answer(200, {"orders": sorted(ORDERS)})
            if parts == ["v1", "payroll"]:
                return self.answer(200, {"payroll": "every salary"})
            return self.answer(404, {"error": "no such resource"})

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    srv = http.server.ThreadingHTTPServer((a.addr, a.port), Orders)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("listening", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
