#!/usr/bin/env bash
# Writes the default /etc/bulkhead/bulkhead.conf to OUT from the binary
# itself: a header, then `bulkhead serve --no-config --print-config`, which
# writes every setting at its default as a comment ("# key = DEFAULT"), so
# the shipped file changes nothing and names every key serve takes.
#   bash scripts/default-config.sh BULKHEAD OUT
# Run by `cmake --install` (CMakeLists.txt, the package block).
set -euo pipefail
bin=${1:?usage: default-config.sh BULKHEAD OUT}
out=${2:?usage: default-config.sh BULKHEAD OUT}
mkdir -p "$(dirname "$out")"
settings=$(mktemp)
trap 'rm -f "$settings"' EXIT
if ! "$bin" serve --no-config --print-config >"$settings" 2>/dev/null; then
	# A serve before the config file (issue 19's config part): it reads no
	# file, so the file says so rather than list keys nothing reads.
	printf '# This bulkhead serve reads no config file yet: see bulkhead-serve(1).\n' >"$settings"
fi
{
	cat <<'HEADER'
# bulkhead serve's settings: the systemd unit (bulkhead.service) starts
# `bulkhead serve`, which reads this file. One `key = value` a line; a key is
# serve's long flag without "--" (bulkhead-serve(1)); a flag with no value
# takes true or false; a repeatable one is repeated; `#` starts a comment only
# as a line's first character. An unknown key, a bad value or a second of a
# key that is not repeatable stops serve with this file's name and the line.
# Flags in the unit's ExecStart override what is here.
#
# Every line below is a setting at its default, commented out. To reach this
# daemon from another machine (TLS, a reverse proxy, the console from a
# laptop) and to upgrade without losing conversations (shutdown = hibernate),
# read /usr/share/doc/bulkhead/deploy.md.gz.
#
HEADER
	cat "$settings"
} >"$out"
chmod 0644 "$out"
