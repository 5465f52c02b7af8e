#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang into build-fuzz and runs
# each for FUZZ_SECONDS (default 30) over its committed corpus in
# tests/fuzz/corpus/<target>/ (read only: new inputs go to a scratch
# directory, so a run never rewrites the repository). A crash, a leak or a
# sanitizer report fails the run; its reproducer is kept in build-fuzz/.
#   bash scripts/fuzz.sh [TARGET...]      (targets: wire_requests wire_operator connect init_frame
#                                          chan_check scenario history_store output_escape
#                                          egress_profiles broker_http capture_manifest project_report
#                                          serve_config clients_file fleet_values)
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-30}
CC=clang cmake -S tests/fuzz -B build-fuzz -DCMAKE_BUILD_TYPE=Debug >/dev/null &&
	cmake --build build-fuzz -j"$(nproc)" >/dev/null || { echo "fuzz: build failed"; exit 1; }
targets=("$@")
((${#targets[@]})) || targets=(wire_requests wire_operator connect init_frame chan_check scenario history_store output_escape
	egress_profiles # profiles
	broker_http     # broker
	capture_manifest # report
	project_report   # project
	serve_config     # config
	clients_file     # tls
	fleet_values     # fleet
)
failed=()
for t in "${targets[@]}"; do
	bin=build-fuzz/fuzz_$t
	if [ ! -x "$bin" ]; then
		echo "fuzz $t: not built (its source is missing)"
		failed+=("$t")
		continue
	fi
	scratch=$(mktemp -d)
	log=$(mktemp)
	echo "=== fuzz $t (${seconds}s)"
	"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="build-fuzz/crash-$t-" "$scratch" "tests/fuzz/corpus/$t" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -a -o 'cov: [0-9]*' "$log" | tail -1)
	echo "fuzz $t: exit $rc, ${execs:-?} runs, $cov, $(ls "$scratch" | wc -l) new inputs"
	if [ "$rc" != 0 ]; then
		grep -a -E -A30 '^==[0-9]+==ERROR|runtime error|SUMMARY|Test unit written' "$log" | head -60
		failed+=("$t")
	fi
	rm -rf "$scratch" "$log"
done
if ((${#failed[@]})); then
	echo "fuzz: failed: ${failed[*]}"
	exit 1
fi
echo "fuzz: every target ran ${seconds}s without a finding"
