#!/usr/bin/env bash
# Installs everything bulkhead needs on a fresh Debian 12 machine (as root),
# then builds it into build/. Idempotent: with everything present it only
# rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
	# toolchain
	build-essential cmake pkg-config git
	# libraries
	libcjson-dev libsqlite3-dev libssl-dev libncurses-dev libcurl4-openssl-dev
	libmicrohttpd-dev libcriterion-dev
	# ---- tls: the daemon's TLS is libmicrohttpd's GnuTLS, which the daemon also calls (tls.c) ----
	libgnutls28-dev
	# ---- fleet (issue 20): NATS with JetStream is the fleet's distributed
	# engine; libnats its C client (the fleet library and its tests) ----
	nats-server libnats-dev
	# the runtimes: crun (container tier) and gVisor's runsc (kernel tier)
	crun runsc
	# what cells import inside the sandbox (the sandbox sees the host's /usr)
	python3 python3-numpy python3-pandas python3-matplotlib
	# ---- plumb: what a profile's session fetches with (issue 18) ----
	python3-requests
	# tools the tests and scripts use
	util-linux procps iproute2 binutils sqlite3 node-acorn
	# the report schema test validates with a real JSON Schema validator (capture)
	python3-jsonschema
	# the fuzz targets (scripts/fuzz.sh): clang with libFuzzer's runtime
	clang libclang-rt-14-dev
	# ---- package: scripts/package.sh (dpkg-buildpackage with debhelper, then
	# lintian) and its install test (systemd-analyze verify) ----
	debhelper lintian systemd
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# JavaScript cells need node; any node on /usr works (Debian's or NodeSource's).
command -v node >/dev/null 2>&1 || missing+=(nodejs)
# The TypeScript add-on's tests (clients/typescript) need npm (npm ci from its lock file).
command -v npm >/dev/null 2>&1 || missing+=(npm)

if ((${#missing[@]})); then
	if [ "$(id -u)" != 0 ]; then
		echo "setup: missing packages (${missing[*]}); run this as root to install them" >&2
		exit 1
	fi
	echo "setup: installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
echo "setup: built build/bulkhead and build/bulkhead-init"
