#!/usr/bin/env bash
# Regenerates screenshots/*.png, one per console view, from the real console:
# builds bulkhead into build-shots/ if needed, starts `bulkhead console` in a
# detached tmux terminal (120x32, TERM=xterm-256color) on a fresh state
# directory under a temporary directory, drives it with tmux send-keys —
# opens two sandboxes, runs Python and JavaScript cells, pauses one, plants
# one orphan container for the leaks view and reaps it from there, looks
# inside a sandbox (its usage while a cell holds 200 MiB, describe, the
# running cell's output followed, its processes, its files), searches the
# stored cells' code, captures the orphan's evidence (into the temporary
# directory) — and renders each screen (tmux capture-pane -e) with
# scripts/render_ansi.py. Then it starts a daemon of its own that holds
# code calls for approval (`serve --approval required`, its socket and
# clients file in the temporary directory), has an agent's SessionRun
# (curl) held there, and shoots the approvals view of a console attached
# to it; the console denies the call, nothing of it runs. The agent's next
# call is approved from a script (`bulkhead approvals approve`) and
# followed on :live; the console pauses, resumes and closes the agent's
# session and shoots :events (who acted). Then, with a call of the agent's
# running, it kills the daemon and its warden (SIGKILL, by pid) and shoots
# a console on that state directory: what the previous engine left, its
# leaks, a suspect's timeline (the cleanup's gc reaps it). Then
# `bulkhead replay` (no engine) in terminals of its own: a hop and the receipt (next_turn), presenter mode
# (in 120x36), the lanes (concurrent_calls), the scenario list's preview
# and a Trigger.dev call the daemon refused (trigger_floor_refused). Last,
# a second daemon (no approval policy: a project cannot be held) with an
# egress profile (`serve --profiles`, `--upstream-ca` a CA made here with
# openssl) naming a TLS upstream of the script's own (python3 on
# 127.0.0.2): a project Run shot in :rec, and a session opened with the
# profile whose cell fetches an allowed route and a refused one, shot in
# :events and describe.
# The replay shots need data/scenarios/one_turn.json, next_turn.json,
# concurrent_calls.json and trigger_floor_refused.json.
# Every step waits for what it expects on screen, with a timeout.
#
# At the end, and on any failure, it quits the console (its engine closes
# the sandboxes), stops the agent's curl and the daemon (SIGTERM: it closes
# its sessions; then `bulkhead gc` on its state, also once it was killed),
# the same for the second daemon, stops the TLS upstream (by pid), kills
# its tmux server and removes the temporary directory.
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
# shared with screenshots-fleet.sh: say, the terminal's helpers, shot
source "$repo/scripts/shots_lib.sh"

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
status_file=$tmp/console.status # the console's exit status, once it has gone
orphan=
dstate= daemon_pid= agent_pid= # the approvals' daemon and its held agent
dead_daemon= # set once that daemon is killed (its state is still gc'd)
d2state= d2sock= daemon2_pid= # the project's daemon (no approval policy)
upstream_pid= # the egress shots' TLS upstream (python3, on 127.0.0.2)



# Quits the console so its engine closes its sandboxes, then removes all
# this run made. Runs on every exit.
cleanup() {
	local rc=$? i
	trap - EXIT INT TERM HUP
	set +e
	# The planted orphan first, while the engine still runs: it holds a
	# cgroup below the engine's, which the engine removes as it closes.
	if [ -n "$orphan" ]; then
		local ns
		if ns=$(engine_mount_ns); then
			nsenter --mount="$ns" crun --root "$state/run/crun" delete -f "$orphan" >/dev/null 2>&1
		else
			unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; crun --root "$1" delete -f "$2"' \
				sh "$state/run/crun" "$orphan" >/dev/null 2>&1
		fi
	fi
	if tm has-session -t "$target" 2>/dev/null; then
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
			# It asks first when quitting closes sandboxes: yes.
			for ((i = 0; i < 600; i++)); do
				pane_dead && break
				tm capture-pane -p -t "$target" 2>/dev/null | grep -qE "quit and close [0-9]+ sandbox" &&
					tm send-keys -t "$target" y
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
	# The agent's held call (a denied one has ended already), then the
	# daemon: SIGTERM, it closes its sessions; gc deletes what it could not.
	if [ -n "$agent_pid" ]; then
		kill "$agent_pid" 2>/dev/null
		wait "$agent_pid" 2>/dev/null
	fi
	if [ -n "$daemon_pid" ] || [ -n "$dead_daemon" ]; then
		kill -TERM "$daemon_pid" 2>/dev/null
		for ((i = 0; i < 600; i++)); do
			alive "$daemon_pid" || break
			sleep 0.1
		done
		if alive "$daemon_pid"; then
			say "the daemon did not stop within 60 s of SIGTERM; killing it" >&2
			kill -KILL "$daemon_pid" 2>/dev/null
		fi
		wait "$daemon_pid" 2>/dev/null
		BULKHEAD_INTERP="$repo/data/interp" "$bin" gc --state "$dstate" >/dev/null 2>&1 ||
			say "bulkhead gc --state $dstate failed" >&2
	fi
	if [ -n "$upstream_pid" ]; then
		kill "$upstream_pid" 2>/dev/null
		wait "$upstream_pid" 2>/dev/null
	fi
	# The project's daemon, the same way.
	if [ -n "$daemon2_pid" ]; then
		kill -TERM "$daemon2_pid" 2>/dev/null
		for ((i = 0; i < 600; i++)); do
			alive "$daemon2_pid" || break
			sleep 0.1
		done
		alive "$daemon2_pid" && kill -KILL "$daemon2_pid" 2>/dev/null
		wait "$daemon2_pid" 2>/dev/null
		BULKHEAD_INTERP="$repo/data/interp" "$bin" gc --state "$d2state" >/dev/null 2>&1 ||
			say "bulkhead gc --state $d2state failed" >&2
	fi
	# What a killed engine, or a leak the console did not reap, leaves.
	local d name st
	for d in "$state/run/crun" "$state/run/runsc" ${dstate:+"$dstate/run/crun" "$dstate/run/runsc"} \
		${d2state:+"$d2state/run/crun" "$d2state/run/runsc"}; do
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
	for st in "$state" ${dstate:+"$dstate"} ${d2state:+"$d2state"}; do
		skey=$(printf %s "$(realpath -m "$st")" | sha256sum | cut -c1-12)
		for d in /sys/fs/cgroup/*/bulkhead/"$skey" /sys/fs/cgroup/bulkhead/"$skey"; do
			[ -d "$d" ] || continue
			rmdir "$d"/bh-* "$d" 2>/dev/null || say "left $d (not empty)" >&2
		done
		# and the plain directories crun makes below the hidden v2 mount.
		unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null && rm -rf "/sys/fs/cgroup/unified/bulkhead/$1"' \
			sh "$skey" 2>/dev/null
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










# selected_id: the SESSION of the selected row (the one in reverse video).
selected_id() {
	tm capture-pane -e -p -N -t "$target" | grep -aE $'\e\\[([0-9]+;)*7(;[0-9]+)*m' | sed 's/\x1b\[[0-9;]*m//g' |
		grep -oE '^[0-9a-f]{12} ' | head -1 | tr -d ' ' || true
}

# select_row TEXT: selects the one sandbox whose row has TEXT: from the top
# row down (j) until that row is the selected one.
select_row() {
	local id first was i k
	id=$(screen | grep -E "^[0-9a-f]{12} .*$1" | head -1 | cut -c1-12 || true)
	first=$(screen | grep -E "^[0-9a-f]{12} " | head -1 | cut -c1-12 || true)
	[ -n "$id" ] || fail "no sandbox row has $1"
	keys g
	for ((k = 0; k < 50; k++)); do
		[ "$(selected_id)" = "$first" ] && break
		sleep 0.1
	done
	for ((i = 0; i < 30; i++)); do
		was=$(selected_id)
		[ "$was" = "$id" ] && return 0
		keys j
		for ((k = 0; k < 50; k++)); do
			[ "$(selected_id)" != "$was" ] && break
			sleep 0.1
		done
	done
	fail "could not select the sandbox $id ($1)"
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

# engine_mount_ns: the mount namespace of the console's engine (a thread of
# the console made it: the one that differs from this shell's).
engine_mount_ns() {
	local host sh_pid pid t
	host=$(readlink /proc/self/ns/mnt)
	sh_pid=$(tm display-message -p -t "$target" '#{pane_pid}' 2>/dev/null) || return 1
	for pid in $(ps -o pid= --ppid "$sh_pid"); do
		for t in /proc/"$pid"/task/*; do
			if [ "$(readlink "$t/ns/mnt" 2>/dev/null)" != "$host" ]; then
				echo "$t/ns/mnt"
				return 0
			fi
		done
	done
	return 1
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
	# The bundle's mounts come from the engine's view (a tmpfs in its own
	# mount namespace, where crun refuses no cgroup v1+v2 hybrid either):
	# crun runs there.
	local ns
	ns=$(engine_mount_ns) || {
		say "the engine's mount namespace was not found: the leaks view will have no finding" >&2
		return 0
	}
	if nsenter --mount="$ns" crun --root "$root" run -d --bundle "$tmp/orphan" "$name" \
		</dev/null >/dev/null 2>"$tmp/orphan.err"; then
		orphan=$name
	else
		say "could not start the orphan container ($(tail -1 "$tmp/orphan.err")): the leaks view will have no finding" >&2
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
# search.png: / in :rec with a prefix searches every stored cell's code.
keys Escape
wait_for "Records\[4\]"
keys /
type_text "code:import"
keys Enter
wait_for "Search\[[1-9]"
wait_for "socket"
wait_gone "^cell #[0-9]+ in "
shot search
keys Escape
command_ walls "offered, proven|no tier"
keys G
shot walls
if [ -n "$orphan" ]; then
	command_ leaks "Leaks\[[1-9]"
	wait_for "orphan +$orphan"
	shot leaks
	# capture.png: v, the folder (under the temporary directory), enter.
	keys v
	wait_for "evidence folder: "
	retype "$tmp/evidence-orphan"
	keys Enter
	wait_done "captured into " "not captured"
	shot capture
	# The reap captures every finding first, into a folder it asks for.
	# reap-preview.png: ctrl-d lists what it would reap (a dry run) and asks.
	keys C-d
	wait_for "reap (the )?[0-9]+ finding"
	shot reap-preview
	keys y
	wait_for "capture before the reap, into: "
	retype "$tmp/evidence-reap"
	keys Enter
	wait_done "reaped [0-9]+ finding" "not captured|reap: "
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
		keys Space
		sleep 0.1
	done
	wait_gone "^reaped "
	shot player
	keys Escape
	wait_for "Replay\[1\]"
	keys Escape
fi
command_ sb "Sandboxes\[2\]"
keys '?'
wait_for "Help\[[0-9]+\]"
shot help

# ---- inside a sandbox: usage, describe, a cell followed, processes, files ----

# The status line's spinner while cells run.
spinner='^[-|/\\] (running [0-9]+ cells?|.*, [0-9]+ cells? running)\.\.\.'

# py_cell: the cell prompt on the selected sandbox, in Python (the prompt
# starts in the language of the console's last cell).
py_cell() {
	keys x
	wait_for "cell in [0-9a-f]{12} +\[(python|javascript)\]"
	if screen | grep -qE "cell in [0-9a-f]{12} +\[javascript\]"; then
		keys C-t
		wait_for "cell in [0-9a-f]{12} +\[python\]"
	fi
}

# cell_ended [SECONDS]: until no cell runs (the spinner has gone), and the
# flash says the one that ended exited 0. Only after its spinner was seen.
cell_ended() {
	local limit=${1:-60} deadline=$((SECONDS + ${1:-60}))
	while screen | grep -qE -- "$spinner"; do
		pane_dead && fail "the console exited while a cell ran"
		((SECONDS < deadline)) || fail "a cell still ran after ${limit}s"
		sleep 0.1
	done
	wait_for "cell #[0-9]+ in [0-9a-f]{12}: exit|cell in [0-9a-f]{12}: " 5
	screen | grep -qE "cell #[0-9]+ in [0-9a-f]{12}: exit 0," || fail "the console said: $(screen | tail -1)"
}

# back_to_sandboxes: esc until the sandboxes view is on top (its selection kept).
back_to_sandboxes() {
	local i
	for ((i = 0; i < 6; i++)); do
		screen | grep -qE "^ *Sandboxes\[[0-9]+\]" && return 0
		keys Escape
		sleep 0.4
	done
	wait_for "^ *Sandboxes\[[0-9]+\]" 5
}

# usage.png: the notebook holds 200 MiB; the sampler's figures after a
# few seconds and a refresh.
keys Escape
wait_for "Sandboxes\[2\]"
select_row notebook
py_cell
type_text "x = bytearray(200 * 1024 * 1024); print(len(x) >> 20, 'MiB held')"
keys Enter
wait_done "200 MiB held" "cell in [0-9a-f]{12}: |: exit [1-9]"
sleep 6
for ((i = 0; i < 10; i++)); do
	keys C-r
	sleep 1
	screen | grep -E "notebook" | grep -qE "\b([2-4][0-9]{2}(\.[0-9])?M|0\.[0-9]+G)/" && break
done
screen | grep -E "notebook" | grep -qE "\b([2-4][0-9]{2}(\.[0-9])?M|0\.[0-9]+G)/" ||
	say "the notebook's MEM does not show 200 MiB held: shooting it anyway" >&2
shot usage

# describe.png: a cell in flight, its code and how long it has run.
py_cell
type_text "import time; time.sleep(20)"
keys Enter
wait_for "$spinner"
sleep 2.5
keys d
wait_for "Describe\[[0-9]+\]"
wait_for "in flight, running"
shot describe 2
back_to_sandboxes
cell_ended 30

# cell-follow.png: l, enter on the running cell: its output as it arrives.
py_cell
cell_lines "import time" "for epoch in range(1, 13):" \
	"    print(f'epoch {epoch:2}/12  loss {0.92 ** epoch:.4f}', flush=True)" "    time.sleep(1)"
keys Enter
wait_for "$spinner"
keys l
wait_for "Cells\[[0-9]+\]"
wait_for " running "
keys /
type_text running
keys Enter
wait_for "Cells\[1\] </running>"
keys Enter
wait_for "Cell \(cell #[0-9]+ of [0-9a-f]{12}\)"
wait_for "epoch  6/12" 20
shot cell-follow 2
wait_for "epoch 12/12" 20
cell_ended 20
back_to_sandboxes

# processes.png: a cell's background child while the cell sleeps.
py_cell
type_text "import subprocess, time; p = subprocess.Popen(['sleep', '30']); time.sleep(10)"
keys Enter
wait_for "$spinner"
sleep 1.5
keys t
wait_for "Processes\[[0-9]+\]"
wait_for "sleep 30"
shot processes 2
back_to_sandboxes
cell_ended 30

# files.png, file.png: a matplotlib PNG and a text file the next cell wrote.
py_cell
cell_lines "import matplotlib, matplotlib.pyplot as plt, numpy as np" \
	"t = np.linspace(0, 2 * np.pi, 200)" \
	"plt.plot(t, np.sin(t)); plt.title('sin(t)'); plt.savefig('/work/sine.png', dpi=80)" \
	"open('/work/notes.txt', 'w').write('sine.png: one period of sin(t), 200 points\\nmade by matplotlib ' + matplotlib.__version__ + '\\n')" \
	"print('wrote', 'sine.png', 'notes.txt')"
keys Enter
wait_done "wrote sine.png notes.txt" "cell in [0-9a-f]{12}: |: exit [1-9]"
keys f
wait_for "Files\[[0-9]+\]"
wait_for "sine\.png"
wait_for "notes\.txt"
shot files
keys /
type_text notes
keys Enter
wait_for "Files\[1\] </notes>"
keys Enter
wait_for "File [0-9a-f]{12}:/work/notes\.txt"
wait_for "one period of sin"
shot file
back_to_sandboxes

wait_for "Sandboxes\[2\]"
type_text ":q"
keys Enter
wait_for "quit and close 2 sandboxes\?"
keys y
for ((i = 0; i < 600; i++)); do
	[ -s "$status_file" ] && break
	sleep 0.1
done
[ -s "$status_file" ] || fail "the console did not quit within 60 s of :q"
status=$(cat "$status_file")
[ "$status" = 0 ] || fail "the console exited with status $status"

# ---- approvals: a daemon that holds code calls, a console attached ----

# api PROCEDURE TOKEN BODY: a call to the daemon; its answer on stdout.
api() {
	curl -sS --max-time 20 --unix-socket "$dsock" -H "Authorization: Bearer $2" \
		-H 'Content-Type: application/json' --data-binary "$3" "http://localhost/$1"
}

dstate=$tmp/daemon-state
dsock=$tmp/daemon.sock
clients=$tmp/clients
agent_token=$("$bin" token create agent-7 --scope code:run --clients "$clients" 2>/dev/null | head -1)
console_token=$("$bin" token create operator --scope code:run,operator --clients "$clients" 2>/dev/null | head -1)
[ -n "$agent_token" ] && [ -n "$console_token" ] || fail "bulkhead token create failed"
BULKHEAD_INTERP="$repo/data/interp" "$bin" serve --state "$dstate" --socket "$dsock" --clients "$clients" \
	--audit "$tmp/audit.log" --tier container --approval required \
	</dev/null >"$tmp/daemon.out" 2>"$tmp/daemon.err" &
daemon_pid=$!
say "daemon started on $dstate (pid $daemon_pid)"
deadline=$((SECONDS + 180))
until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --unix-socket "$dsock" http://localhost/readyz 2>/dev/null)" = 200 ]; do
	alive "$daemon_pid" || fail "the daemon exited: $(tail -5 "$tmp/daemon.err")"
	((SECONDS < deadline)) || fail "the daemon was not ready within 180 s: $(tail -5 "$tmp/daemon.err")"
	sleep 0.3
done

# The agent's session (OpenSession is not held), then its call, held: its
# curl waits for the decision in the background.
opened=$(api plimsoll.v1.SandboxService/OpenSession "$agent_token" \
	'{"protocol":3,"traceId":"run-42","owner":"acme"}') || fail "OpenSession: $opened"
sid=$("$python" -c 'import json, sys; print(json.load(sys.stdin)["sessionId"])' <<<"$opened") ||
	fail "OpenSession answered: $opened"
held_code="import shutil; shutil.rmtree('/work/cache'); print('cache cleared')"
body=$("$python" -c 'import json, sys
print(json.dumps({"protocol": 3, "sessionId": sys.argv[1], "cell": {"language": "python", "code": sys.argv[2]}}))' \
	"$sid" "$held_code")
curl -sS --max-time 120 --unix-socket "$dsock" -H "Authorization: Bearer $agent_token" \
	-H 'Content-Type: application/json' --data-binary "$body" \
	http://localhost/plimsoll.v1.SandboxService/SessionRun >"$tmp/agent.out" 2>&1 &
agent_pid=$!

# The console attached, in a terminal of its own; the first one goes.
tm new-session -d -s attached -x "$cols" -y "$lines" -c "$repo" -- \
	sh -c '"$@"; echo $? >"$0"' "$tmp/attached.status" \
	env -u NO_COLOR TERM=xterm-256color LANG=C.UTF-8 BULKHEAD_TOKEN="$console_token" \
	BULKHEAD_INTERP="$repo/data/interp" "$bin" console --attach "$dsock"
tm kill-session -t "$target"
target=attached
status_file=$tmp/attached.status
say "console attached to $dsock"
wait_for "Sandboxes\[1\]" 30
wait_for "approvals: 1 waiting" 20
command_ approvals "Approvals\[1\]"
wait_for "agent-7"
shot approvals 2
keys Enter
wait_for "Held call"
wait_for "shutil.rmtree"
shot approval 2
# Denied with a reason: nothing of it runs, the agent's curl has its answer.
keys d
wait_for "deny [^ ]+, reason: "
type_text "not now: /work/cache is the audit's evidence"
keys Enter
wait_for "deny call [^ ]+ of agent-7\?"
keys y
wait_done "denied [^ ]+" "deny [^ ]+: "
for ((i = 0; i < 100; i++)); do
	alive "$agent_pid" || break
	sleep 0.1
done
grep -q "denied by operator" "$tmp/agent.out" || fail "the agent's call was not denied: $(cat "$tmp/agent.out")"
wait "$agent_pid" 2>/dev/null || true
agent_pid=

# live.png: :live waits for the next call on any session; the agent's
# next call (it prints, sleeps, prints) is held, approved from a script
# (bulkhead approvals approve), and followed as it runs.
wait_gone "^denied "
command_ live "waiting for the next call"
wait_for "waiting for the next call"
live_code="import time
for page in range(1, 4):
    print(f'fetching page {page}/3', flush=True)
    time.sleep(4)
print('3 pages fetched')"
body=$("$python" -c 'import json, sys
print(json.dumps({"protocol": 3, "sessionId": sys.argv[1], "cell": {"language": "python", "code": sys.argv[2]}}))' \
	"$sid" "$live_code")
curl -sS --max-time 120 --unix-socket "$dsock" -H "Authorization: Bearer $agent_token" \
	-H 'Content-Type: application/json' --data-binary "$body" \
	http://localhost/plimsoll.v1.SandboxService/SessionRun >"$tmp/agent.out" 2>&1 &
agent_pid=$!
held_id=
deadline=$((SECONDS + 30))
until [ -n "$held_id" ]; do
	held_id=$(BULKHEAD_TOKEN="$console_token" "$bin" approvals --json --attach "$dsock" 2>/dev/null |
		"$python" -c 'import json, sys
d = json.load(sys.stdin)
calls = d if isinstance(d, list) else next((v for v in d.values() if isinstance(v, list)), [])
print(calls[0].get("id") or calls[0].get("callId") if calls else "")' 2>/dev/null || true)
	((SECONDS < deadline)) || fail "the agent's second call was not held within 30 s"
	[ -n "$held_id" ] || sleep 0.3
done
BULKHEAD_TOKEN="$console_token" "$bin" approvals approve "$held_id" --attach "$dsock" \
	--reason "read-only: a class watches it" >/dev/null || fail "bulkhead approvals approve $held_id failed"
wait_for "fetching page 2/3" 60
shot live 2
for ((i = 0; i < 300; i++)); do
	alive "$agent_pid" || break
	sleep 0.1
done
"$python" -c 'import base64, json, sys
sys.exit(b"3 pages fetched" not in base64.b64decode(json.load(open(sys.argv[1]))["run"]["cell"]["stdout"]))' \
	"$tmp/agent.out" 2>/dev/null || fail "the agent's approved call did not finish: $(cat "$tmp/agent.out")"
wait "$agent_pid" 2>/dev/null || true
agent_pid=

# events-by.png: the agent's session paused, resumed and closed from the console;
# :events says who did each thing (BY, at 90 columns or more): the agent's
# principal, the operator's.
command_ sb "Sandboxes\[1\]"
select_row . # the agent's, the only one
keys p
wait_done "pause [0-9a-f]{12}: done" "^pause [0-9a-f]{12}: "
wait_for "paused +container"
# Resumed before the close: a close of a paused session is queued, and the
# wake it needs is put down to the session's principal (the agent), not to
# the operator who closed it.
keys r
wait_done "resume [0-9a-f]{12}: done" "^resume [0-9a-f]{12}: "
wait_for "ready +container"
keys C-d
wait_for "close sandbox [0-9a-f]{12}\?"
keys y
wait_done "close [0-9a-f]{12}: done" "^close [0-9a-f]{12}: "
command_ events "Events\[[0-9]+\]"
wait_for " BY "
wait_for "closed"
shot events-by
# It opened no sandbox: :q asks nothing (a y if it does).
type_text ":q"
keys Enter
for ((i = 0; i < 600; i++)); do
	[ -s "$status_file" ] && break
	screen | grep -qE "quit and close [0-9]+ sandbox" && keys y
	sleep 0.1
done
[ -s "$status_file" ] || fail "the attached console did not quit within 60 s of :q"
status=$(cat "$status_file")
[ "$status" = 0 ] || fail "the attached console exited with status $status"

# ---- what a dead engine left: the daemon and its warden killed ----

# dead-engine.png: a call running in a session of the daemon's when the
# daemon and its warden (which would kill the dead engine's sandboxes) are
# killed with SIGKILL, by pid; a console on the state directory says what
# the previous engine left, and keeps it (gc reaps it in the cleanup).
opened=$(api plimsoll.v1.SandboxService/OpenSession "$agent_token" \
	'{"protocol":3,"traceId":"run-43","owner":"acme"}') || fail "OpenSession: $opened"
sid=$("$python" -c 'import json, sys; print(json.load(sys.stdin)["sessionId"])' <<<"$opened") ||
	fail "OpenSession answered: $opened"
dying_code="import time
print('migrating the orders table', flush=True)
time.sleep(600)"
body=$("$python" -c 'import json, sys
print(json.dumps({"protocol": 3, "sessionId": sys.argv[1], "cell": {"language": "python", "code": sys.argv[2]}}))' \
	"$sid" "$dying_code")
curl -sS --max-time 700 --unix-socket "$dsock" -H "Authorization: Bearer $agent_token" \
	-H 'Content-Type: application/json' --data-binary "$body" \
	http://localhost/plimsoll.v1.SandboxService/SessionRun >"$tmp/agent.out" 2>&1 &
agent_pid=$!
held_id=
deadline=$((SECONDS + 30))
until [ -n "$held_id" ]; do
	held_id=$(BULKHEAD_TOKEN="$console_token" "$bin" approvals --json --attach "$dsock" 2>/dev/null |
		"$python" -c 'import json, sys
calls = json.load(sys.stdin)
print(calls[0]["id"] if calls else "")' 2>/dev/null || true)
	((SECONDS < deadline)) || fail "the agent's call was not held within 30 s"
	[ -n "$held_id" ] || sleep 0.3
done
BULKHEAD_TOKEN="$console_token" "$bin" approvals approve "$held_id" --attach "$dsock" >/dev/null ||
	fail "bulkhead approvals approve $held_id failed"
deadline=$((SECONDS + 60))
until BULKHEAD_TOKEN="$console_token" "$bin" ls --attach "$dsock" 2>/dev/null | grep -qE '^[0-9a-f]{12} +busy '; do
	((SECONDS < deadline)) || fail "the agent's call was not running within 60 s"
	sleep 0.3
done
warden_pid=
for pid in $(ps -o pid= --ppid "$daemon_pid"); do
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- '--warden' && warden_pid=$pid
done
[ -n "$warden_pid" ] || fail "the daemon's warden (a child with --warden) was not found"
kill -KILL "$warden_pid"
kill -KILL "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
daemon_pid= # the cleanup's gc still reaps what it left ($dstate)
dead_daemon=1
wait "$agent_pid" 2>/dev/null || true
agent_pid=
tm new-session -d -s dead -x "$cols" -y "$lines" -c "$repo" -- \
	sh -c '"$@"; echo $? >"$0"' "$tmp/dead.status" \
	env -u NO_COLOR -u BULKHEAD_TOKEN TERM=xterm-256color LANG=C.UTF-8 \
	BULKHEAD_INTERP="$repo/data/interp" "$bin" console --state "$dstate"
tm kill-session -t "$target"
target=dead
status_file=$tmp/dead.status
say "console on the dead daemon's state $dstate"
wait_for "previous engine" 60
wait_for "kept, see :leaks"
wait_for "Sandboxes\[[0-9]+\]"
shot dead-engine
# dead-leaks.png, timeline.png: :leaks lists the abandoned sandbox and the
# call it was running; enter, the suspect's timeline.
command_ leaks "Leaks\[[1-9]"
wait_for "abandoned"
shot dead-leaks
keys /
type_text abandoned
keys Enter
wait_for "Leaks\[1\] </abandoned>"
keys Enter
wait_for "Timeline"
wait_for "migrating the orders table|opening"
shot timeline
keys Escape
type_text ":q"
keys Enter
for ((i = 0; i < 600; i++)); do
	[ -s "$status_file" ] && break
	screen | grep -qE "quit and close [0-9]+ sandbox" && keys y
	sleep 0.1
done
[ -s "$status_file" ] || fail "the console on the dead daemon's state did not quit within 60 s of :q"

# ---- the replay for a class: hops, the receipt, presenter mode, lanes ----

# replay_terminal SCENARIO COLS LINES: `bulkhead replay SCENARIO` (no
# engine, no daemon: nothing runs) in a terminal of its own of that size;
# the one before goes.
replays=0
replay_terminal() {
	local name=replay-$((++replays))
	tm new-session -d -s "$name" -x "$2" -y "$3" -c "$repo" -- \
		sh -c '"$@"; echo $? >"$0"' "$tmp/$name.status" \
		env -u NO_COLOR TERM=xterm-256color LANG=C.UTF-8 "$bin" replay "$1"
	tm kill-session -t "$target" 2>/dev/null || true
	target=$name
	status_file=$tmp/$name.status
	wait_for "Replay \($1: step 1/" 30
}

# hop_to N: l until the player (or the presenter) says hop N.
hop_to() {
	local i
	for ((i = 0; i < 30; i++)); do
		screen | grep -qE "hop $1/[0-9]+" && return 0
		keys l
		sleep 0.2
	done
	wait_for "hop $1/[0-9]+" 5
}

# hop.png: next_turn's second step, lit hop by hop down to the daemon,
# which narrates its part; the SessionRun request as it was on the wire.
replay_terminal next_turn "$cols" "$lines"
keys Space
wait_for "Replay \(next_turn: step 2/"
hop_to 5
wait_for "ON THE WIRE: plimsoll.v1 SessionRun request"
shot hop
# receipt.png: two hops on, the daemon's answer carries the run record;
# enter opens it as the receipt, its digest recomputed.
hop_to 7
wait_for "ON THE WIRE: SessionRun answer"
keys Enter
wait_for "Receipt \("
wait_for "record_sha256 (verifies|DOES NOT)"
shot receipt

# brokered-call.png: brokered_call's second step at the sandbox hop: the
# broker on the host took the cell's request and added the credential; its
# egress event as it was on the wire.
replay_terminal brokered_call "$cols" "$lines"
keys Space
wait_for "Replay \(brokered_call: step 2/"
hop_to 6
wait_for "ON THE WIRE: the broker's egress events"
shot brokered-call
# project-receipt.png: project_run's Run answer opened as its receipt: the
# result digest recomputed in plimsoll's project encoding.
replay_terminal project_run "$cols" "$lines"
hop_to 6
keys Enter
wait_for "project encoding: digest matches"
shot project-receipt

# presenter.png: concurrent_calls in presenter mode on a larger terminal,
# at the third call's fifth hop: the daemon refuses it, STOPPED HERE.
replay_terminal concurrent_calls 120 36
keys P
wait_for "step 1/3 \["
keys 2 g
wait_for "step 2/3 \\["
hop_to 5
wait_for "STOPPED HERE"
shot presenter

# lanes.png: the three calls on a time axis at the third one's moment:
# one running, one waiting its turn, one refused.
replay_terminal concurrent_calls "$cols" "$lines"
keys L
wait_for "Lanes \(concurrent_calls"
keys l
wait_for "moment 2/"
keys l
wait_for "moment 3/"
wait_for "^  (being )?refused"
shot lanes

# replay-preview.png: `bulkhead replay` lists the scenarios; the pane
# under the list has the selected one's title and lesson whole, wrapped.
tm new-session -d -s replay-list -x "$cols" -y "$lines" -c "$repo" -- \
	sh -c '"$@"; echo $? >"$0"' "$tmp/replay-list.status" \
	env -u NO_COLOR TERM=xterm-256color LANG=C.UTF-8 "$bin" replay
tm kill-session -t "$target" 2>/dev/null || true
target=replay-list
status_file=$tmp/replay-list.status
wait_for "Replay\[[0-9]+\]" 30
keys g
for ((i = 0; i < 40; i++)); do
	screen | grep -qE "^ trigger_floor_refused: " && break
	keys j
	sleep 0.15
done
wait_for "^ trigger_floor_refused: "
shot replay-preview

# trigger-refused.png: that Trigger.dev call hop by hop, stopped at the
# daemon: OpenSession's refusal on the wire.
replay_terminal trigger_floor_refused "$cols" "$lines"
keys Space
wait_for "Replay \(trigger_floor_refused: step 2/"
for ((i = 0; i < 12; i++)); do
	screen | grep -q "STOPPED HERE" && screen | grep -qE "ON THE WIRE: .*OpenSession" && break
	keys l
	sleep 0.3
done
wait_for "STOPPED HERE"
wait_for "ON THE WIRE: .*OpenSession"
shot trigger-refused
type_text ":q"
keys Enter
for ((i = 0; i < 100; i++)); do
	[ -s "$status_file" ] && break
	sleep 0.1
done
[ -s "$status_file" ] || fail "the replay did not quit within 10 s of :q"

# ---- a project run: a daemon without an approval policy (a project
# cannot be held yet), a console attached ----

d2state=$tmp/project-state
d2sock=$tmp/project.sock
# Egress (the same daemon): a TLS upstream of the script's on 127.0.0.2,
# its certificate from a CA made here (the broker's --upstream-ca), and a
# profile naming it with one read-only route and a brokered token.
mkdir -p "$tmp/egress"
(
	cd "$tmp/egress"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=shots upstream CA"
	openssl req -newkey rsa:2048 -nodes -keyout up.key -out up.csr -subj "/CN=127.0.0.2"
	printf 'subjectAltName=IP:127.0.0.2\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >ext
	openssl x509 -req -in up.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out up.pem -days 2 -extfile ext
) >/dev/null 2>&1 || fail "openssl could not make the upstream's CA and certificate"
"$python" - "$tmp/egress/up.pem" "$tmp/egress/up.key" "$tmp/egress/port" <<-'PY' &
	import http.server, json, os, ssl, sys
	class Reports(http.server.BaseHTTPRequestHandler):
	    def do_GET(self):
	        body = json.dumps({"report": self.path.rsplit("/", 1)[-1], "rows": 42,
	                           "token_seen": self.headers.get("Authorization") == "Bearer tok-ops-2026"}).encode()
	        self.send_response(200)
	        self.send_header("Content-Type", "application/json")
	        self.send_header("Content-Length", str(len(body)))
	        self.end_headers()
	        self.wfile.write(body)
	    def log_message(self, *args):
	        pass
	server = http.server.ThreadingHTTPServer(("127.0.0.2", 0), Reports)
	tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
	tls.load_cert_chain(sys.argv[1], sys.argv[2])
	server.socket = tls.wrap_socket(server.socket, server_side=True)
	open(sys.argv[3] + ".new", "w").write(str(server.server_address[1]))
	os.rename(sys.argv[3] + ".new", sys.argv[3])
	server.serve_forever()
PY
upstream_pid=$!
for ((i = 0; i < 50; i++)); do
	[ -s "$tmp/egress/port" ] && break
	alive "$upstream_pid" || fail "the TLS upstream exited"
	sleep 0.1
done
upstream_port=$(cat "$tmp/egress/port" 2>/dev/null) || fail "the TLS upstream did not say its port"
printf 'tok-ops-2026\n' >"$tmp/egress/token"
chmod 0600 "$tmp/egress/token"
cat >"$tmp/egress/profiles" <<PROFILES
profile reports
  description  The reports service, read-only, with the operator's token
  origin       https://127.0.0.2:$upstream_port
  route        GET /reports/*
  credential   file $tmp/egress/token
  header       Authorization Bearer {credential}
  principals   agent-7
  allow-in-sessions yes
PROFILES
chmod 0644 "$tmp/egress/profiles"
BULKHEAD_INTERP="$repo/data/interp" "$bin" serve --state "$d2state" --socket "$d2sock" --clients "$clients" \
	--tier container --profiles "$tmp/egress/profiles" --upstream-ca "$tmp/egress/ca.pem" \
	</dev/null >"$tmp/daemon2.out" 2>"$tmp/daemon2.err" &
daemon2_pid=$!
say "project daemon started on $d2state (pid $daemon2_pid)"
deadline=$((SECONDS + 180))
until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --unix-socket "$d2sock" http://localhost/readyz 2>/dev/null)" = 200 ]; do
	alive "$daemon2_pid" || fail "the project daemon exited: $(tail -5 "$tmp/daemon2.err")"
	((SECONDS < deadline)) || fail "the project daemon was not ready within 180 s: $(tail -5 "$tmp/daemon2.err")"
	sleep 0.3
done
dsock=$d2sock # api() now speaks to this one
# A console attached to it.
tm new-session -d -s project -x "$cols" -y "$lines" -c "$repo" -- \
	sh -c '"$@"; echo $? >"$0"' "$tmp/project.status" \
	env -u NO_COLOR TERM=xterm-256color LANG=C.UTF-8 BULKHEAD_TOKEN="$console_token" \
	BULKHEAD_INTERP="$repo/data/interp" "$bin" console --attach "$d2sock"
tm kill-session -t "$target" 2>/dev/null || true
target=project
status_file=$tmp/project.status
wait_for "Sandboxes\[[0-9]+\]" 30
# live-refused.png: :live, and the agent asks its container session for a
# floor this daemon cannot give (minimumIsolation vm): the call stops at
# the daemon with its refusal; nothing ran. (Not on the approvals' daemon:
# there the call would be held first.)
command_ live "waiting for the next call"
opened=$(api plimsoll.v1.SandboxService/OpenSession "$agent_token" \
	'{"protocol":3,"traceId":"run-45","owner":"acme"}') || fail "OpenSession: $opened"
sid=$("$python" -c 'import json, sys; print(json.load(sys.stdin)["sessionId"])' <<<"$opened") ||
	fail "OpenSession answered: $opened"
body=$("$python" -c 'import json, sys
print(json.dumps({"protocol": 3, "sessionId": sys.argv[1], "minimumIsolation": "vm",
                  "cell": {"language": "python", "code": "print(\"on a VM, please\")"}}))' "$sid")
api plimsoll.v1.SandboxService/SessionRun "$agent_token" "$body" >"$tmp/agent.out" 2>&1 || true
grep -q "floor vm is above" "$tmp/agent.out" || fail "the vm call was not refused: $(cat "$tmp/agent.out")"
wait_for "STOPPED HERE" 20
wait_for "the daemon refused the call before it ran" 10
shot live-refused
keys Escape
project='{"protocol":3,"traceId":"etl-7","project":{"files":[{"path":"data/in.csv","content":"a,b\n1,2\n"}],"steps":["wc -l < data/in.csv","cat data/in.csv"],"artifacts":[]}}'
ran=$(api plimsoll.v1.SandboxService/Run "$agent_token" "$project") || fail "the project Run: $ran"
grep -q PROJECT_OUTCOME_COMPLETED <<<"$ran" || fail "the project Run answered: $ran"
# records-project.png, record-project.png: :rec, the project's row
# (language project), and its record (enter): the steps as its code,
# their output, the outcome.
command_ rec "Records\[[1-9]"
wait_for " project "
wait_gone "^the daemon refused the call"
shot records-project
keys /
type_text project
keys Enter
wait_for "Records\[1\] </project>"
keys Enter
wait_for "call +project, exit 0, completed"
shot record-project
keys Escape

# events-egress.png, describe-egress.png: a session opened with the
# profile; a cell fetches an allowed report and tries a route the profile
# does not name. :events has both requests (the refused one in yellow),
# d on its sandbox the profile and what the broker did.
opened=$(api plimsoll.v1.SandboxService/OpenSession "$agent_token" \
	'{"protocol":3,"traceId":"run-44","owner":"etl","grantProfile":"reports"}') || fail "OpenSession: $opened"
sid=$("$python" -c 'import json, sys; print(json.load(sys.stdin)["sessionId"])' <<<"$opened") ||
	fail "OpenSession with the profile answered: $opened"
egress_code="import urllib.request, urllib.error
base = 'https://127.0.0.2:$upstream_port'
print(urllib.request.urlopen(base + '/reports/2026-11').read().decode())
try:
    urllib.request.urlopen(base + '/admin/keys')
except urllib.error.HTTPError as e:
    print('refused:', e.code, e.read().decode().strip())"
body=$("$python" -c 'import json, sys
print(json.dumps({"protocol": 3, "sessionId": sys.argv[1], "cell": {"language": "python", "code": sys.argv[2]}}))' \
	"$sid" "$egress_code")
ran=$(api plimsoll.v1.SandboxService/SessionRun "$agent_token" "$body") || fail "the egress cell: $ran"
"$python" -c 'import base64, json, sys
out = base64.b64decode(json.loads(sys.argv[1])["run"]["cell"]["stdout"])
sys.exit(not (b"\"rows\": 42" in out and b"refused: 403" in out))' "$ran" ||
	fail "the egress cell did not reach the upstream and meet the refusal: $ran"
command_ events "Events\[[0-9]+\]"
wait_for "egress"
wait_for "refused"
keys g # the top row selected: the refused request shows in its colour
shot events-egress
command_ sb "Sandboxes\[[1-9]"
select_row " etl "
keys d
wait_for "brokered"
wait_for "profile reports"
shot describe-egress
keys Escape
type_text ":q"
keys Enter
for ((i = 0; i < 600; i++)); do
	[ -s "$status_file" ] && break
	screen | grep -qE "quit and close [0-9]+ sandbox" && keys y
	sleep 0.1
done
[ -s "$status_file" ] || fail "the console attached to the project daemon did not quit within 60 s of :q"

# The fleet's views (:hosts, the HOST column) from a fleet of the script's own.
SHOTS_BIN=$bin bash "$repo/scripts/screenshots-fleet.sh" || fail "the fleet's screenshots failed"

say "done in $((SECONDS - started)) s: $(cd "$out" && echo ./*.png | sed 's|\./||g')"
