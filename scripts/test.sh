#!/usr/bin/env bash
# The whole test suite, as CI runs it: set up, build (plain and with
# AddressSanitizer + UBSan), run every suite within its time budget, then
# prove nothing was left on the host.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1

# Sanitized build for the unit and engine suites.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DBULKHEAD_SANITIZE=ON >/dev/null &&
	cmake --build build-asan -j"$(nproc)" >/dev/null || { echo "asan build failed"; exit 1; }

export BULKHEAD_TEST_ROOT=${BULKHEAD_TEST_ROOT:-$(mktemp -d /tmp/bulkhead-tests.XXXXXX)}
chmod 0711 "$BULKHEAD_TEST_ROOT"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
snap=$(mktemp)
bash scripts/leftovers.sh snapshot "$BULKHEAD_TEST_ROOT" "$snap"

passed=0 failed=0 suites_failed=()
# What failed, repeated at the end: CI keeps only the tail of a long log.
failures=$(mktemp)
# True when every leak LeakSanitizer reported in LOG was allocated from
# libcriterion alone (no frame past the allocator's outside it).
only_criterion_leaks() {
	awk '
		/^(Direct|Indirect) leak of/ { inleak = 1; n++; next }
		inleak && /^ *#0 / { next }
		inleak && /^ *#[0-9]+ / { if ($0 !~ /libcriterion\.so/) ours = 1; next }
		inleak && !/^ *#/ { inleak = 0 }
		END { exit (n > 0 && !ours) ? 0 : 1 }
	' "$1"
}

# suite NAME BUDGET_SECONDS COMMAND...: runtime suites run one test at a time.
suite() {
	local name=$1 budget=$2
	shift 2
	echo "=== $name (budget ${budget}s)"
	local log
	log=$(mktemp)
	local start=$SECONDS
	# Into a file, then shown: a process a crashed test left behind holds
	# what it inherited, and a pipe to tee would never end.
	timeout --kill-after=10 "$budget" "$@" >"$log" 2>&1
	local rc=$?
	cat "$log"
	# Criterion's runner leaks an allocation of its own now and then (its
	# stack is libcriterion's alone): that is not ours to fail on. Any leak
	# with a frame of our code still fails the suite.
	if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -aq 'Synthesis: Tested:.*Failing: 0 | Crashing: 0' "$log" &&
		only_criterion_leaks "$log"; then
		echo "=== $name: LeakSanitizer reported only libcriterion's own allocations: not ours"
		rc=0
	fi
	local line
	line=$(grep -a 'Synthesis: Tested:' "$log" | tail -1)
	local p f c
	p=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$line")
	f=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$line")
	c=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$line")
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0} + ${c:-0}))
	if [ "$rc" != 0 ] || [ -z "$line" ]; then
		[ "$rc" = 124 ] && echo "=== $name: over its ${budget}s budget"
		suites_failed+=("$name")
		[ -z "$line" ] && failed=$((failed + 1))
		{
			echo "--- $name"
			grep -a -E '^\[(----|FAIL)\]|ERROR: (Address|Undefined)Sanitizer|runtime error:' "$log" | head -60
		} >>"$failures"
	fi
	# A test that crashed could not close its engine: collect what it left,
	# as the next engine on that directory would (the leftovers check below
	# still sees anything this misses).
	local d
	for d in "$BULKHEAD_TEST_ROOT"/state-* "$BULKHEAD_TEST_ROOT"/cli-*; do
		[ -d "$d" ] || continue
		echo "=== $name: collecting after a crashed test in $d"
		build/bulkhead gc --state "$d" >/dev/null && rm -rf "$d"
	done
	for d in "$BULKHEAD_TEST_ROOT"/daemon-*; do
		[ -d "$d" ] || continue
		echo "=== $name: collecting after a crashed daemon test in $d"
		build/bulkhead gc --state "$d/state" >/dev/null && rm -rf "$d"
	done
	echo "=== $name: $((SECONDS - start))s"
	rm -f "$log"
}

suite unit 120 build/tests/test_unit --jobs 2
suite unit-asan 180 build-asan/tests/test_unit --jobs 2
suite runtime 900 build/tests/test_runtime --jobs 1
suite runtime-asan 1200 build-asan/tests/test_runtime --jobs 1
suite hostile 600 build/tests/test_hostile --jobs 1
suite daemon 600 build/tests/test_daemon --jobs 1
suite daemon-asan 900 build-asan/tests/test_daemon --jobs 1
suite client 600 build/tests/test_client --jobs 1
suite client-asan 900 build-asan/tests/test_client --jobs 1
# 32 sessions x 100 cells, churn, and 64 sessions x 50 cells beside 60 s of churn; ~1.5 min.
suite load 600 build/tests/test_load --jobs 1
# kill -9 loop (>= 20 kills at named points and random times), the state
# disk full, sandboxes killed or stopped out of band, a runtime missing; ~1.5 min.
suite faults 420 build/tests/test_faults --jobs 1
suite tui 300 build/tests/test_tui --jobs 1
suite tui-asan 400 build-asan/tests/test_tui --jobs 1
suite replay 300 build/tests/test_replay --jobs 2
suite replay-asan 400 build-asan/tests/test_replay --jobs 2

# The TypeScript add-on (clients/typescript): npm ci from the lock file, tsc,
# then node's test runner against real daemons it starts with build/bulkhead.
# Its output is TAP, not criterion's, so it is counted here.
echo "=== typescript (budget 600s)"
ts_start=$SECONDS
ts_log=$(mktemp)
if (cd clients/typescript && timeout --kill-after=10 300 npm ci --no-audit --no-fund >/dev/null &&
	npm run --silent build && BULKHEAD_TEST_ROOT="$BULKHEAD_TEST_ROOT" timeout --kill-after=10 300 npm test) 2>&1 | tee "$ts_log"; then
	passed=$((passed + $(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$ts_log" | tail -1)))
else
	suites_failed+=(typescript)
	failed=$((failed + $(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$ts_log" | tail -1 | grep . || echo 1)))
	{
		echo "--- typescript"
		grep -a -E '^not ok|^# (pass|fail)' "$ts_log" | head -60
	} >>"$failures"
fi
rm -f "$ts_log"
echo "=== typescript: $((SECONDS - ts_start))s"

# libFuzzer targets (clang, build-fuzz/), 30 s each over tests/fuzz/corpus.
echo "=== fuzz"
if ! timeout --kill-after=10 400 bash scripts/fuzz.sh; then
	suites_failed+=(fuzz)
	failed=$((failed + 1))
	echo "--- fuzz: a target crashed, leaked or did not build (see above)" >>"$failures"
fi

# The benchmark's quick variant: figures for the log, never a verdict on
# timings (it fails only when it cannot run, e.g. a tier is not offered).
echo "=== bench --quick (figures only)"
if ! timeout --kill-after=10 300 build/bench/bulkhead-bench --quick --root "$BULKHEAD_TEST_ROOT/bench"; then
	suites_failed+=(bench)
	failed=$((failed + 1))
fi

echo "=== leftovers"
if ! bash scripts/leftovers.sh check "$BULKHEAD_TEST_ROOT" "$snap"; then
	suites_failed+=(leftovers)
	failed=$((failed + 1))
fi
rm -f "$snap"
rm -rf "$BULKHEAD_TEST_ROOT"

echo
if [ -s "$failures" ]; then
	echo "what failed (repeated from above):"
	cat "$failures"
fi
rm -f "$failures"
((${#suites_failed[@]})) && echo "failed suites: ${suites_failed[*]}"
echo "tests: $passed passed, $failed failed"
[ "$failed" = 0 ] && [ ${#suites_failed[@]} = 0 ]
