#!/usr/bin/env bash
# Regenerates screenshots/*.png, one per console view, from the real console:
# builds bulkhead into build-shots/ if needed, starts `bulkhead console` in a
# detached tmux terminal (120x32, TERM=xterm-256color) on a fresh state
# directory under a temporary directory, drives it with tmux send-keys —
# opens two sandboxes, runs Python and JavaScript cells, pauses one, plants
# one orphan container for the leaks view and reaps it from there — and
# renders each screen (tmux capture-pane -e) with scripts/render_ansi.py.
# The replay player's shot needs data/scenarios/one_turn.json.
# Every step waits for what it expects on screen, with a timeout.
#
# At the end, and on any failure, it quits the console (its engine closes
# the sandboxes), kills its tmux server and removes the temporary directory.
#
#   bash scripts/screenshots.sh           (as root on Debian 12, like setup.sh)
#
# SHOTS_COLS, SHOTS_LINES (120, 32), SHOTS_FONT_SIZE (15) and SHOTS_BUILD
# (build-shots) change the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
started=$SECONDS

cols=${SHOTS_COLS:-120}
lines=${SHOTS_LINES:-32}
font_size=${SHOTS_FONT_SIZE:-15}
build=${SHOTS_BUILD:-build-shots}
out=$repo/screenshots
python=/usr/bin/python3 # Debian's, where python3-pil is

say() { printf 'screenshots: %s\n' "$*"; }

# ---- what it needs ----

# The toolchain, the libraries and the runtimes are setup.sh's business.
if ! command -v cmake crun runsc >/dev/null 2>&1; then
	say "cmake, crun or runsc missing: running scripts/setup.sh first"
	bash scripts/setup.sh
fi
packages=(tmux python3-pil fonts-dejavu-core)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
	if [ "$(id -u)" != 0 ]; then
		say "missing packages (${missing[*]}); run this as root to install them" >&2
		exit 1
	fi
	say "installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -f "$build/CMakeCache.txt" ]; then
	cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBULKHEAD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target bulkhead-cli -j"$(nproc)" >/dev/null
bin=$repo/$build/bulkhead
[ -x "$bin" ] || { say "no $bin after the build" >&2; exit 1; }

# ---- the terminal ----

tmp=$(mktemp -d /tmp/bulkhead-shots.XXXXXX)
chmod 0711 "$tmp" # the sandboxes' users walk through it to their bundles
state=$tmp/state
sock=$tmp/tmux.sock # its own server, gone with the directory
target=shots
orphan=
tm() { tmux -S "$sock" "$@"; }

# The console has gone: its terminal is closed (or its status is written).
pane_dead() {
	[ -s "$tmp/console.status" ] || [ "$(tm display-message -p -t "$target" '#{pane_dead}' 2>/dev/null)" != 0 ]
}

# Quits the console so its engine closes its sandboxes, then removes all
# this run made. Runs on every exit.
cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	set +e
	# The planted orphan first, while the engine still runs: it holds a
	# cgroup below the engine's, which the engine removes as it closes.
	if [ -n "$orphan" ]; then
		unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; crun --root "$1" delete -f "$2"' \
			sh "$state/run/crun" "$orphan" >/dev/null 2>&1
	fi
	if tm has-session -t "$target" 2>/dev/null; then
		local i
		for how in quit ctrl-c; do
			pane_dead && break
			if [ "$how" = quit ]; then
				tm send-keys -t "$target" Escape
				sleep 0.1
				tm send-keys -t "$target" Escape
				sleep 0.1
				tm send-keys -t "$target" -l ':q'
				tm send-keys -t "$target" Enter
			else
				tm send-keys -t "$target" C-c
			fi
			for ((i = 0; i < 600; i++)); do
				pane_dead && break
				sleep 0.1
			done
		done
		if ! pane_dead; then
			say "the console did not quit; killing it (its sandboxes are deleted below)" >&2
			local sh_pid pid
			sh_pid=$(tm display-message -p -t "$target" '#{pane_pid}')
			for pid in $(ps -o pid= --ppid "$sh_pid"); do kill -KILL "$pid" 2>/dev/null; done
			sleep 1
		fi
		tm kill-server 2>/dev/null
	fi
	# What a killed engine, or a leak the console did not reap, leaves.
	local d name
	for d in "$state/run/crun" "$state/run/runsc"; do
		[ -d "$d" ] || continue
		if [[ $d == */crun ]]; then
			for name in $(crun --root "$d" list -q 2>/dev/null); do
				unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; crun --root "$1" delete -f "$2"' \
					sh "$d" "$name" >/dev/null 2>&1
				say "deleted container $name left under $d" >&2
			done
		else
			for name in $(runsc --root "$d" list --quiet 2>/dev/null); do
				runsc --root "$d" delete -force "$name" >/dev/null 2>&1
				say "deleted container $name left under $d" >&2
			done
		fi
	done
	# The engine's cgroups (/bulkhead/<its state key>), when it could not
	# remove them itself: only empty ones, with rmdir.
	local skey
	skey=$(printf %s "$(realpath -m "$state")" | sha256sum | cut -c1-12)
	for d in /sys/fs/cgroup/*/bulkhead/"$skey" /sys/fs/cgroup/bulkhead/"$skey"; do
		[ -d "$d" ] || continue
		rmdir "$d"/bh-* "$d" 2>/dev/null || say "left $d (not empty)" >&2
	done
	# and the plain directories crun makes below the hidden v2 mount.
	unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null && rm -rf "/sys/fs/cgroup/unified/bulkhead/$1"' \
		sh "$skey" 2>/dev/null
	if grep -q " $tmp/" /proc/self/mounts; then
		say "something is still mounted under $tmp; left it there" >&2
	else
		rm -rf --one-file-system "$tmp"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

screen() { tm capture-pane -p -N -t "$target"; }

fail() {
	say "$*" >&2
	if tm has-session -t "$target" 2>/dev/null; then
		say "the screen was:" >&2
		screen | sed 's/^/  | /' >&2
	fi
	exit 1
}

# wait_for REGEX [SECONDS]: until the screen shows REGEX (grep -E).
wait_for() {
	local pattern=$1 limit=${2:-20} deadline=$((SECONDS + ${2:-20}))
	until screen | grep -qE -- "$pattern"; do
		pane_dead && fail "the console exited while waiting for /$pattern/"
		((SECONDS < deadline)) || fail "waited ${limit}s for /$pattern/"
		sleep 0.1
	done
}

# settle: until two captures 0.3 s apart are the same (at most 5 s): what
# was asked for has arrived and been drawn.
settle() {
	local a b i
	a=$(tm capture-pane -e -p -N -t "$target")
	for ((i = 0; i < 16; i++)); do
		sleep 0.3
		b=$(tm capture-pane -e -p -N -t "$target")
		[ "$a" = "$b" ] && return 0
		a=$b
	done
}

keys() { tm send-keys -t "$target" "$@"; }
type_text() { tm send-keys -t "$target" -l -- "$1"; }

# command NAME EXPECT: the :NAME command, then wait for EXPECT.
command_() {
	type_text ":$1"
	keys Enter
	wait_for "$2"
}

# wait_done OK BAD: the flash at the bottom says OK (or fail when it says
# BAD, how the console words that action's error).
wait_done() {
	wait_for "$1|$2" 60
	screen | grep -qE -- "$1" || fail "the console said: $(screen | tail -1)"
}

shot() {
	local name=$1
	settle
	tm capture-pane -e -p -N -t "$target" >"$tmp/$name.ans"
	"$python" scripts/render_ansi.py "$tmp/$name.ans" "$out/$name.png" --cols "$cols" --rows "$lines" \
		--font-size "$font_size" --title "bulkhead console — $name"
	say "screenshots/$name.png"
}

# select_row TEXT: selects the one sandbox whose row has TEXT (with the
# filter, cleared again: the selection stays on it).
select_row() {
	keys /
	type_text "$1"
	keys Enter
	wait_for "Sandboxes\[1\] </$1>"
	keys Escape
	wait_for "Sandboxes\[[0-9]+\] *$"
}

# cell_lines LINE...: types the lines into the open cell prompt, ctrl-o
# between them.
cell_lines() {
	local first=1 l
	for l in "$@"; do
		((first)) || keys C-o
		first=0
		type_text "$l"
	done
}

# An orphan: a container running under the engine's crun root that no
# registry row names — what a crashed engine leaves behind. A copy of a
# sandbox's bundle running `sleep`; the leaks view finds it and reaps it.
plant_orphan() {
	local root=$state/run/crun name=bh-orphan-demo b
	b=$(crun --root "$root" list -q 2>/dev/null | head -1)
	if [ -z "$b" ] || [ ! -f "$state/bundles/$b/config.json" ]; then
		say "no container-tier bundle to copy: the leaks view will have no finding" >&2
		return 0
	fi
	mkdir -p "$tmp/orphan"
	"$python" - "$state/bundles/$b/config.json" "$tmp/orphan/config.json" "$name" <<-'EOF'
		import json, sys
		c = json.load(open(sys.argv[1]))
		c["process"]["args"] = ["/usr/bin/sleep", "600"]
		p = c["linux"].get("cgroupsPath")
		if p:
		    c["linux"]["cgroupsPath"] = p.rsplit("/", 1)[0] + "/" + sys.argv[3]
		json.dump(c, open(sys.argv[2], "w"))
	EOF
	# crun refuses cgroup v1+v2 hybrids; the engine hides the v2 mount the same way.
	if unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec crun --root "$1" run -d --bundle "$2" "$3"' \
		sh "$root" "$tmp/orphan" "$name" </dev/null >/dev/null 2>&1; then
		orphan=$name
	else
		say "could not start the orphan container: the leaks view will have no finding" >&2
	fi
}

# ---- the run ----

mkdir -p "$out"
cat >"$tmp/tmux.conf" <<'EOF'
set -g remain-on-exit on
set -g status off
set -g history-limit 100
EOF
tm -f "$tmp/tmux.conf" new-session -d -s "$target" -x "$cols" -y "$lines" -c "$repo" -- \
	sh -c '"$@"; echo $? >"$0"' "$tmp/console.status" \
	env -u NO_COLOR -u BULKHEAD_TOKEN TERM=xterm-256color LANG=C.UTF-8 \
	BULKHEAD_STATE="$state" BULKHEAD_INTERP="$repo/data/interp" "$bin" console

say "console started on $state"
wait_for "Sandboxes\[0\]" 30
wait_for "^tiers: (container|kernel|no tier)" 120
if screen | grep -qE '^tiers: .*kernel'; then strong=kernel; else strong=container; fi
screen | grep -qE '^tiers: .*container' || fail "the container tier is not offered here; see bulkhead doctor"

# Two sandboxes: a notebook's on the strongest tier with that floor, an
# agent's on the container tier.
keys n
wait_for "open sandbox \["
type_text "$strong $strong notebook"
keys Enter
wait_done "opened [0-9a-f]{12}" "^open: "
wait_for "Sandboxes\[1\]"
keys n
wait_for "open sandbox \["
type_text "container - agent-7"
keys Enter
wait_for "Sandboxes\[2\]" 60
wait_for "agent-7 +mine"

# The agent's: one cell, then paused.
select_row agent-7
keys x
wait_for "cell in [0-9a-f]{12} +\[python\]"
type_text "sum(range(10**6))"
keys Enter
wait_done "499999500000" "^cell: "
keys p
wait_done "pause [0-9a-f]{12}: done" "^pause [0-9a-f]{12}: "
wait_for "paused +container"

# The notebook's: a connection the walls refuse, numpy, then JavaScript.
select_row notebook
keys x
wait_for "cell in [0-9a-f]{12} +\[python\]"
cell_lines "import socket" "socket.create_connection(('1.1.1.1', 80), timeout=3)"
keys Enter
wait_done "Traceback|\[exit 1[] ]" "^cell: "
keys x
wait_for "cell in [0-9a-f]{12} +\[python\]"
cell_lines "import numpy as np, platform" "a = np.arange(12).reshape(3, 4)" \
	"print(platform.python_version(), a.sum(axis=0))"
keys Enter
wait_done "\[12 15 18 21\]" "^cell: "
keys x
wait_for "cell in [0-9a-f]{12} +\[python\]"
keys C-t
wait_for "cell in [0-9a-f]{12} +\[javascript\]"
cell_lines "const langs = ['python', 'javascript']" "langs.map(l => l.toUpperCase())"
wait_for "langs.map"
shot cell
keys Enter
wait_done "'PYTHON'" "^cell: "
shot sandboxes

plant_orphan

command_ runs "Runs\[[0-9]+\]"
shot runs
command_ rec "Records\[4\]"
shot records
keys Enter
wait_for "Record \(record [0-9]+\)"
wait_for "record_sha256 (verifies|DOES NOT)"
wait_for "chain (holds|BROKEN)"
shot record
command_ walls "offered, proven|no tier"
keys G
shot walls
if [ -n "$orphan" ]; then
	command_ leaks "Leaks\[[1-9]"
	wait_for "orphan +$orphan"
	shot leaks
	keys C-d
	wait_for "reap [0-9]+ finding"
	keys y
	wait_for "reaped [0-9]+ finding"
	orphan=
else
	command_ leaks "Leaks\[[0-9]+\]"
	shot leaks
fi
command_ events "Events\[[0-9]+\]"
shot events
command_ replay "Replay\[[0-9]+\]"
shot replay
# The player on the first call of one_turn (when it is shipped): the lit
# hops, the call and the answer as recorded.
if screen | grep -qE '^one_turn '; then
	keys /
	type_text one_turn
	keys Enter
	wait_for "Replay\[1\] </one_turn>"
	keys Enter
	wait_for "Replay \(one_turn: step 1/"
	until screen | grep -qE '^CALL '; do
		screen | grep -qE 'step ([0-9]+)/\1 ' && fail "one_turn has no call"
		keys l
		sleep 0.1
	done
	shot player
	keys Escape
	wait_for "Replay\[1\]"
	keys Escape
fi
command_ sb "Sandboxes\[2\]"
keys '?'
wait_for "Help\[[0-9]+\]"
shot help

# Quit here rather than in the trap, to see that it quits cleanly. (The
# exit status comes through the sh around the console: tmux does not always
# collect it.)
keys Escape
wait_for "Sandboxes\[2\]"
type_text ":q"
keys Enter
for ((i = 0; i < 600; i++)); do
	[ -s "$tmp/console.status" ] && break
	sleep 0.1
done
[ -s "$tmp/console.status" ] || fail "the console did not quit within 60 s of :q"
status=$(cat "$tmp/console.status")
[ "$status" = 0 ] || fail "the console exited with status $status"
say "done in $((SECONDS - started)) s: $(cd "$out" && echo ./*.png | sed 's|\./||g')"
