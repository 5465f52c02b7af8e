#!/usr/bin/env bash
# Re-records every shipped scenario, against real daemons (the kernel-tier
# ones need runsc): the C recorder's scripts (data/scenarios/scripts/), then
# the Trigger.dev ones through the TypeScript add-on and Trigger.dev's
# mockChatAgent harness (data/scenarios/trigger_*.json). One command; fails
# on the first scenario that does not record. The egress ones (brokered_call,
# egress_refused) start a TLS upstream of their own on 127.0.0.2:9443
# (data/scenarios/scripts/upstream.py: python3, and the openssl CLI for its
# test CA); a recording fails, saying so, when that port is taken.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BULKHEAD_BIN:-build/bulkhead}
[ -x "$bin" ] || { echo "record-scenarios: build first (bash scripts/setup.sh)" >&2; exit 1; }
for script in data/scenarios/scripts/*.json; do
	name=$(basename "$script" .json)
	"$bin" record "$script" -o "data/scenarios/$name.json"
done
bin_abs=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
(cd clients/typescript && npm ci --no-audit --no-fund >/dev/null && npm run build >/dev/null &&
	BULKHEAD_BIN="$bin_abs" npm run record)
