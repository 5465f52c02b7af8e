#!/usr/bin/env bash
# The whole test suite, as CI runs it: set up, build (plain and with
# AddressSanitizer + UBSan), run every suite within its time budget, then
# prove nothing was left on the host.
#
# Under 45 minutes by parallelism, never by dropping a suite: the runtime,
# hostile, daemon and console suites run two tests at a time (their tests are
# independent: each has its own state directory, engine, cgroup parent, daemon
# and terminal); what does not compete with
# a suite runs beside it in the background, niced so the suite keeps the
# cores first: the ASan build beside the plain unit and runtime suites, the
# fuzz targets (their build and their 12 x 30 s) beside the daemon and client
# suites, the TypeScript add-on beside the console's. A background job runs
# in a BULKHEAD_TEST_ROOT subdirectory of its own (its crash collection sees
# only what it made), its output is shown whole when it is joined, and its
# tallies join the run's; the leftovers check runs once all are joined.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1

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
	# ---- fleet: a fleet test that crashed or timed out could not stop its
	# NATS cluster (its nodes died with it: PR_SET_PDEATHSIG); its directory
	# is removed here ----
	for d in "$BULKHEAD_TEST_ROOT"/nats-??????; do
		[ -d "$d" ] || continue
		echo "=== $name: removing a crashed fleet test's NATS cluster directory $d"
		rm -rf "$d"
	done
	echo "=== $name: $((SECONDS - start))s"
	rm -f "$log"
}

# bg NAME FUNCTION ARGS...: FUNCTION (suite, or one below) in the background,
# niced, with counters, a failures file and a BULKHEAD_TEST_ROOT of its own;
# bg_join NAME waits for it, shows its output and adds its tallies. Its exit
# status is bg_join's.
declare -A bg_pid bg_dir
bg() {
	local name=$1
	shift
	local dir
	dir=$(mktemp -d)
	bg_dir[$name]=$dir
	(
		export BULKHEAD_TEST_ROOT="$BULKHEAD_TEST_ROOT/bg-$name"
		mkdir -p "$BULKHEAD_TEST_ROOT" && chmod 0711 "$BULKHEAD_TEST_ROOT"
		passed=0 failed=0 suites_failed=() failures="$dir/failures"
		: >"$failures"
		renice -n 10 -p "$BASHPID" >/dev/null
		"$@"
		rc=$?
		echo "$passed $failed ${suites_failed[*]}" >"$dir/tally"
		rmdir "$BULKHEAD_TEST_ROOT/evidence" "$BULKHEAD_TEST_ROOT" 2>/dev/null
		exit $rc
	) >"$dir/out" 2>&1 &
	bg_pid[$name]=$!
}
bg_join() {
	local name=$1 dir=${bg_dir[$1]}
	wait "${bg_pid[$name]}"
	local rc=$?
	cat "$dir/out"
	local p=0 f=1 names=$name
	[ -s "$dir/tally" ] && read -r p f names <"$dir/tally"
	passed=$((passed + p))
	failed=$((failed + f))
	[ -n "$names" ] && suites_failed+=($names)
	cat "$dir/failures" >>"$failures" 2>/dev/null
	rm -rf "$dir"
	return $rc
}

asan_build() {
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DBULKHEAD_SANITIZE=ON >/dev/null &&
		cmake --build build-asan -j"$(nproc)" >/dev/null || { echo "asan build failed"; return 1; }
}

# The TypeScript add-on (clients/typescript): npm ci from the lock file, tsc,
# then node's test runner against real daemons it starts with build/bulkhead.
# Its output is TAP, not criterion's, so it is counted here.
typescript_suite() {
	echo "=== typescript (budget 600s)"
	local ts_start=$SECONDS ts_log
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
}

# libFuzzer targets (clang, build-fuzz/), 30 s each over tests/fuzz/corpus.
fuzz_suite() {
	echo "=== fuzz (budget 600s)"
	local fz_start=$SECONDS
	if ! timeout --kill-after=10 600 bash scripts/fuzz.sh; then
		suites_failed+=(fuzz)
		failed=$((failed + 1))
		echo "--- fuzz: a target crashed, leaked or did not build (see above)" >>"$failures"
	fi
	echo "=== fuzz: $((SECONDS - fz_start))s"
}

# ---- package: the Debian package (scripts/package.sh: the Release build a
# packager runs, with Debian's flags and -Werror, tests compiled; lintian) in
# the background beside the sanitized unit and runtime suites through the broker's, then
# its install test (tests/install: dpkg into a clean root, the unit's
# ExecStart, one call, remove and purge; ~25 s). ----
# step NAME BUDGET COMMAND...: a step that is no criterion suite, timed, a
# failure counted once (its own output says what failed).
step() {
	local name=$1 budget=$2 st=$SECONDS
	shift 2
	echo "=== $name (budget ${budget}s)"
	if ! timeout --kill-after=10 "$budget" "$@"; then
		suites_failed+=("$name")
		failed=$((failed + 1))
		echo "--- $name: failed (see above)" >>"$failures"
	fi
	echo "=== $name: $((SECONDS - st))s"
}
package_build() { step package 900 bash scripts/package.sh; }
# ---- package: clang builds everything too (CI's one clang build of the whole
# tree, -Werror, tests included), after the fuzz targets in their background
# job: the fuzz build compiles only what it fuzzes, with sanitizers. ----
clang_build() {
	step clang 900 bash -c 'CC=clang cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
		{ cmake --build build-clang -j"$(nproc)" >build-clang/build.log 2>&1 ||
			{ grep -a -E "error" build-clang/build.log | head -20; false; }; }'
}
fuzz_and_clang() {
	fuzz_suite
	clang_build
}

# The sanitized build beside the plain unit and runtime suites.
bg asan-build asan_build
suite unit 300 build/tests/test_unit --jobs 2
suite runtime 900 build/tests/test_runtime --jobs 2
echo "=== asan build (beside unit and runtime)"
bg_join asan-build || { echo "asan build failed"; exit 1; }
bg package package_build # ---- package ----
suite unit-asan 400 build-asan/tests/test_unit --jobs 2
suite runtime-asan 1200 build-asan/tests/test_runtime --jobs 2
suite hostile 600 build/tests/test_hostile --jobs 2
# The fuzz targets' build and runs beside the daemon and client suites, then
# the clang build of everything (---- package ----).
bg fuzz fuzz_and_clang
suite daemon 600 build/tests/test_daemon --jobs 2
suite daemon-asan 900 build-asan/tests/test_daemon --jobs 2
suite client 600 build/tests/test_client --jobs 1
suite client-asan 900 build-asan/tests/test_client --jobs 1
# ---- broker: the egress broker against real TLS upstreams on loopback (a test
# CA made by the test); ~30 s plain ----
suite broker 300 build/tests/test_broker --jobs 2
suite broker-asan 400 build-asan/tests/test_broker --jobs 2
# ---- fleet (issue 20): libbulkhead-fleet against real nats-server clusters
# on loopback (tests/fleet/nats_cluster.h: free ports, kill/restart a node,
# a node cut off from its routes and healed), each test its own cluster;
# ~40 s plain ----
suite fleet 400 build/tests/test_fleet --jobs 2
# (libnats's own occasional leak of a late API reply is suppressed: tests/fleet/lsan.supp)
suite fleet-asan 400 env LSAN_OPTIONS=suppressions=$PWD/tests/fleet/lsan.supp build-asan/tests/test_fleet --jobs 2
# ---- package: joined, then the install test of what it built (the build
# had unit-asan through the broker suites beside it) ----
echo "=== package (beside unit-asan through broker)"
bg_join package && suite install 180 bash tests/install/test_install.sh build-package/bulkhead_*_amd64.deb
bg_join fuzz
# 32 sessions x 100 cells, churn, and 64 sessions x 50 cells beside 60 s of churn; ~1.5 min.
suite load 600 build/tests/test_load --jobs 1
# kill -9 loop (>= 20 kills at named points and random times), the state
# disk full, sandboxes killed or stopped out of band, a runtime missing; ~1.5 min.
suite faults 420 build/tests/test_faults --jobs 1
# The TypeScript add-on beside the console's suites (they keep the test
# root's own path: the screen tests cut at 80 columns after it).
bg ts typescript_suite
# 62 screen tests, two at a time (each has its own terminal, and its own
# daemon where it attaches); ~180 s beside the TypeScript add-on.
suite tui 480 build/tests/test_tui --jobs 2
suite tui-asan 600 build-asan/tests/test_tui --jobs 2
# ---- tls: a set of the attached screen tests again, the console attached
# over https:// (--cacert) to a daemon serving TLS on 127.0.0.x:443; ~35 s.
suite tui-tls 180 env BH_TUI_ATTACH_TLS=1 build/tests/test_tui --jobs 1 \
	--filter 'console/attached_@(it_shows_a_session*|and_readonly*|describe_shows_the_cell*|live_follows*)'
suite replay 300 build/tests/test_replay --jobs 2
suite replay-asan 400 build-asan/tests/test_replay --jobs 2
bg_join ts

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
