#!/usr/bin/env bash
# The fleet's screenshots (screenshots/fleet-*.png), from a real fleet: three
# nats-server nodes with JetStream in one cluster on free loopback ports,
# three `bulkhead serve --fleet` daemons (container tier, one clients file,
# one shared images directory, each its own state directory and socket), a
# session opened through each host, and `bulkhead console --fleet` in a tmux
# terminal of its own (120x32): the sandboxes with their HOST, :hosts, then
# one host killed (SIGKILL, by pid) and both views again once the fleet
# says it is gone. At the end, and on any failure: the console quits, the
# live daemons get SIGTERM (they close their sessions), the killed one's
# state directory is collected with `bulkhead gc`, the nats-servers are
# stopped by pid, the tmux server killed and the temporary directory removed.
#
#   bash scripts/screenshots-fleet.sh     (as root; scripts/screenshots.sh runs it last)
#
# SHOTS_BIN (the bulkhead binary; default build-shots/bulkhead, built if
# missing), SHOTS_COLS, SHOTS_LINES and SHOTS_FONT_SIZE as screenshots.sh's.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
cols=${SHOTS_COLS:-120}
lines=${SHOTS_LINES:-32}
font_size=${SHOTS_FONT_SIZE:-15}
out=$repo/screenshots
python=/usr/bin/python3
source "$repo/scripts/shots_lib.sh"

bin=${SHOTS_BIN:-$repo/build-shots/bulkhead}
if [ ! -x "$bin" ]; then
	[ -f build-shots/CMakeCache.txt ] ||
		cmake -S . -B build-shots -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBULKHEAD_TESTS=OFF >/dev/null
	cmake --build build-shots --target bulkhead-cli -j"$(nproc)" >/dev/null
	bin=$repo/build-shots/bulkhead
fi
command -v nats-server tmux >/dev/null || { say "nats-server or tmux missing: run scripts/setup.sh and screenshots.sh" >&2; exit 1; }

tmp=$(mktemp -d /tmp/bulkhead-shots-fleet.XXXXXX)
chmod 0711 "$tmp"
sock=$tmp/tmux.sock
target=fleet
status_file=$tmp/console.status
nats_pids=() daemon_pids=() states=() killed=

cleanup() {
	local rc=$? i p
	trap - EXIT INT TERM HUP
	set +e
	if tm has-session -t "$target" 2>/dev/null; then
		keys Escape
		type_text ":q"
		keys Enter
		for ((i = 0; i < 100; i++)); do
			pane_dead && break
			screen | grep -qE "quit and close [0-9]+ sandbox" && keys y
			sleep 0.1
		done
		tm kill-server 2>/dev/null
	fi
	for p in "${daemon_pids[@]}"; do
		[ -n "$p" ] && kill -TERM "$p" 2>/dev/null
	done
	for p in "${daemon_pids[@]}"; do
		[ -n "$p" ] || continue
		for ((i = 0; i < 600; i++)); do
			alive "$p" || break
			sleep 0.1
		done
		alive "$p" && kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	for i in "${!states[@]}"; do
		umount "${states[$i]}/view" 2>/dev/null
		BULKHEAD_INTERP="$repo/data/interp" "$bin" gc --state "${states[$i]}" >/dev/null 2>&1 ||
			say "bulkhead gc --state ${states[$i]} failed" >&2
	done
	for p in "${nats_pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	if grep -q " $tmp/" /proc/self/mounts; then
		say "something is still mounted under $tmp; left it there" >&2
	else
		rm -rf --one-file-system "$tmp"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# ---- three nats-server nodes, one cluster ----
read -r -a ports <<<"$("$python" -c 'import socket
ss = [socket.socket() for _ in range(9)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')"
urls=
for n in 0 1 2; do
	routes=
	for m in 0 1 2; do
		[ "$m" = "$n" ] || routes+=${routes:+, }nats-route://127.0.0.1:${ports[$((3 + m))]}
	done
	mkdir -p "$tmp/nats$n"
	cat >"$tmp/nats$n.conf" <<CONF
server_name: n$n
listen: 127.0.0.1:${ports[$n]}
http: 127.0.0.1:${ports[$((6 + n))]}
max_payload: 9437184
jetstream { store_dir: "$tmp/nats$n" }
cluster { name: shots, listen: 127.0.0.1:${ports[$((3 + n))]}, routes: [$routes] }
CONF
	nats-server -c "$tmp/nats$n.conf" >"$tmp/nats$n.log" 2>&1 &
	nats_pids+=($!)
	urls+=${urls:+,}nats://127.0.0.1:${ports[$n]}
done
deadline=$((SECONDS + 60))
for n in 0 1 2; do
	until curl -fs "http://127.0.0.1:${ports[$((6 + n))]}/healthz" | grep -q '"ok"'; do
		((SECONDS < deadline)) || fail "nats-server n$n was not healthy within 60 s: $(tail -3 "$tmp/nats$n.log")"
		sleep 0.3
	done
done
say "nats cluster up: $urls"

# ---- three daemons ----
clients=$tmp/clients
agent_token=$("$bin" token create agent --scope code:run --clients "$clients" 2>/dev/null | head -1)
operator_token=$("$bin" token create operator --scope code:run,operator --clients "$clients" 2>/dev/null | head -1)
[ -n "$agent_token" ] && [ -n "$operator_token" ] || fail "bulkhead token create failed"
images=$tmp/images
mkdir -m 0711 "$images"
for n in 1 2 3; do
	st=$tmp/h$n-state
	states+=("$st")
	BULKHEAD_INTERP="$repo/data/interp" "$bin" serve --no-config --state "$st" --socket "$tmp/h$n.sock" \
		--clients "$clients" --tier container --fleet "$urls" --host-id "h$n" --images-dir "$images" \
		--audit "$tmp/h$n.audit" </dev/null >"$tmp/h$n.out" 2>"$tmp/h$n.err" &
	daemon_pids+=($!)
	deadline=$((SECONDS + 120))
	until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --unix-socket "$tmp/h$n.sock" \
		http://localhost/readyz 2>/dev/null)" = 200 ]; do
		alive "${daemon_pids[-1]}" || fail "h$n exited: $(tail -5 "$tmp/h$n.err")"
		((SECONDS < deadline)) || fail "h$n was not ready within 120 s: $(tail -5 "$tmp/h$n.err")"
		sleep 0.3
	done
done
say "three daemons in the fleet"

# A conversation through each host (the fleet places each).
for n in 1 2 3; do
	opened=$(curl -sS --max-time 60 --unix-socket "$tmp/h$n.sock" -H "Authorization: Bearer $agent_token" \
		-H 'Content-Type: application/json' --data-binary "{\"protocol\":3,\"owner\":\"team-$n\"}" \
		http://localhost/plimsoll.v1.SandboxService/OpenSession) || fail "OpenSession through h$n: $opened"
	grep -q sessionId <<<"$opened" || fail "OpenSession through h$n answered: $opened"
	sleep 1.5 # the next placement sees this one in the host's figures
done

# ---- the console over the fleet ----
tm new-session -d -s "$target" -x "$cols" -y "$lines" -c "$repo" -- \
	sh -c '"$@"; echo $? >"$0"' "$status_file" \
	env -u NO_COLOR TERM=xterm-256color LANG=C.UTF-8 BULKHEAD_TOKEN="$operator_token" \
	"$bin" console --fleet "$urls"
wait_for "Sandboxes\[3\]" 60
wait_for "HOST"
shot fleet-sandboxes
command_ hosts "Hosts\[3\]"
wait_for "h3 +live"
shot fleet-hosts

kill -KILL "${daemon_pids[2]}"
wait "${daemon_pids[2]}" 2>/dev/null || true
daemon_pids[2]=
wait_for "h3 +gone" 30
shot fleet-hosts-gone
command_ sb "Sandboxes\["
wait_for "h3~" 30
shot fleet-sandboxes-gone
say "fleet screenshots done"
