# What scripts/screenshots.sh and scripts/screenshots-fleet.sh share: driving
# a console in a tmux terminal of the script's own and shooting its screens.
# Sourced, not run. The caller sets $sock (its tmux server's socket),
# $target (the session), $status_file (where the console's exit status is
# written once it has gone), $tmp, $out (screenshots/), $python (Debian's,
# with python3-pil) and $font_size before calling any of these.

say() { printf 'screenshots: %s\n' "$*"; }

tm() { tmux -S "$sock" "$@"; }

# The console has gone: its terminal is closed (or its status is written).
pane_dead() {
	[ -s "$status_file" ] || [ "$(tm display-message -p -t "$target" '#{pane_dead}' 2>/dev/null)" != 0 ]
}

# alive PID: a process of this script's that has not exited (a zombie has).
alive() {
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $st != Z* ]]
}

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

# wait_gone REGEX [SECONDS]: until the screen no longer shows REGEX (an
# earlier flash gone, 6 s after it came).
wait_gone() {
	local pattern=$1 limit=${2:-20} deadline=$((SECONDS + ${2:-20}))
	while screen | grep -qE -- "$pattern"; do
		pane_dead && fail "the console exited while waiting for /$pattern/ to go"
		((SECONDS < deadline)) || fail "/$pattern/ still showed after ${limit}s"
		sleep 0.1
	done
}

# settle [TRIES]: until two captures 0.3 s apart are the same (at most 16
# tries, 5 s): what was asked for has arrived and been drawn. (While a cell
# runs the spinner turns: those shots try twice.)
settle() {
	local a b i
	a=$(tm capture-pane -e -p -N -t "$target")
	for ((i = 0; i < ${1:-16}; i++)); do
		sleep 0.3
		b=$(tm capture-pane -e -p -N -t "$target")
		[ "$a" = "$b" ] && return 0
		a=$b
	done
}

keys() { tm send-keys -t "$target" "$@"; }

type_text() { tm send-keys -t "$target" -l -- "$1"; }

# retype TEXT: replaces the text a prompt offers (its cursor at the end)
# with TEXT.
retype() {
	keys C-e
	keys -N 200 BSpace
	type_text "$1"
}

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

# shot NAME [TRIES]: screenshots/NAME.png of the screen, once settled.
shot() {
	local name=$1 size
	settle "${2:-16}"
	tm capture-pane -e -p -N -t "$target" >"$tmp/$name.ans"
	# The terminal's own size: one replay shot has a larger one.
	size=$(tm display-message -p -t "$target" '#{pane_width} #{pane_height}')
	"$python" scripts/render_ansi.py "$tmp/$name.ans" "$out/$name.png" --cols "${size% *}" --rows "${size#* }" \
		--font-size "$font_size" --title "bulkhead console — $name"
	say "screenshots/$name.png"
}
