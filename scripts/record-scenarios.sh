#!/usr/bin/env bash
# Re-records every shipped scenario from its script, against real daemons
# (the kernel-tier ones need runsc). One command; fails on the first script
# that does not record. The Trigger.dev scenarios (trigger_*.json) are
# recorded by the TypeScript add-on: `cd clients/typescript && npm run record`.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BULKHEAD_BIN:-build/bulkhead}
[ -x "$bin" ] || { echo "record-scenarios: build first (bash scripts/setup.sh)" >&2; exit 1; }
for script in data/scenarios/scripts/*.json; do
	name=$(basename "$script" .json)
	"$bin" record "$script" -o "data/scenarios/$name.json"
done
