#!/usr/bin/env bash
# The package's install test (issue 19, acceptance 3): the .deb that
# scripts/package.sh built, installed by dpkg into a clean root on this
# machine, checked, started the way its unit starts it, called once, removed,
# then purged.
#   bash tests/install/test_install.sh build-package/bulkhead_VERSION_amd64.deb
#
# The clean root is this machine's own / under an overlay whose upper layer is
# a tmpfs, all in a mount namespace of the test's own: dpkg runs in it for
# real (dependencies checked against the host's dpkg database, maintainer
# scripts run, conffiles registered), the installed binary runs at its
# installed path against the host's crun, runsc and Python, and nothing the
# install writes reaches the host: the namespace's mounts go when its last
# process does, so the root is gone even if this script is killed. What the
# package left after a remove or a purge is the overlay's upper layer: every
# file the install, the daemon and the uninstall wrote, and nothing else.
#
# systemd is not PID 1 here, so the daemon is started by this script with the
# unit's own ExecStart line, in the environment the unit's directives give it:
# Group= (the process's group), UMask=, RuntimeDirectory= and StateDirectory=
# (with their modes); the unit itself is checked by systemd-analyze verify.
#
# Output ends in a criterion-like "Synthesis:" line so scripts/test.sh's
# suite() counts its checks like any suite's.
set -uo pipefail
if [ -z "${BH_INSTALL_IN_NS:-}" ]; then
	deb=$(realpath "${1:?usage: test_install.sh PACKAGE.deb}")
	exec unshare --mount --propagation private env BH_INSTALL_IN_NS=1 bash "$0" "$deb"
fi
deb=$1
start=$SECONDS
passed=0 failed=0
ok() {
	passed=$((passed + 1))
	echo "[ OK ] $*"
}
bad() {
	failed=$((failed + 1))
	echo "[FAIL] $*"
}
check() { # check WHAT COMMAND...
	local what=$1
	shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}
# The outcome, and what is left on the way out: the daemon, its sandboxes
# (its own gc, in the root), then the root's mounts with the namespace.
daemon_pid=
root=
finish() {
	if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
		kill -TERM "$daemon_pid"
		for _ in $(seq 100); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
	fi
	if [ -n "$root" ] && [ -x "$root/usr/bin/bulkhead" ] && [ -d "$root/var/lib/bulkhead" ]; then
		chroot "$root" /usr/bin/bulkhead gc --state /var/lib/bulkhead --no-attach >/dev/null 2>&1
	fi
	if [ -n "$root" ]; then
		# Lazily: the daemon's own namespace may still pin them a moment.
		umount -R -l "$root"
		umount -l "$scratch"
		rmdir "$scratch"
	fi
	echo "install test: $((SECONDS - start))s"
	echo "[====] Synthesis: Tested: $((passed + failed)) | Passing: $passed | Failing: $failed | Crashing: 0"
	[ "$failed" = 0 ]
}
trap 'finish; exit $?' EXIT
trap 'exit 1' INT TERM

in_root() { chroot "$root" "$@"; }
# The daemon runs in the root as the root of a mount namespace of its own, not
# chrooted: a chrooted process may not create a user namespace (EPERM), and
# crun and runsc make one for every sandbox. pivot_root puts the host's root
# on /tmp (a tmpfs of the root's), whence it is unmounted. It replaces its
# caller (a subshell), so the caller's pid is the daemon's to signal.
in_pivoted_root() {
	exec unshare --mount --propagation private -- /bin/sh -c \
		'cd "$0" && pivot_root . tmp && cd / && umount -l /tmp && exec "$@"' "$root" "$@"
}

# ---- the clean root ----
scratch=$(mktemp -d "${BULKHEAD_TEST_ROOT:-/tmp}/install.XXXXXX")
mount -t tmpfs -o mode=0700,size=1g bulkhead-install "$scratch" || exit 1
mkdir -p "$scratch/upper" "$scratch/work" "$scratch/root"
root=$scratch/root
mount -t overlay bulkhead-install -o "lowerdir=/,upperdir=$scratch/upper,workdir=$scratch/work" "$root" ||
	exit 1
for d in proc sys dev; do mount --rbind "/$d" "$root/$d" && mount --make-rslave "$root/$d"; done
mount -t tmpfs -o mode=0755 run "$root/run"
mount -t tmpfs -o mode=1777 tmp "$root/tmp"
# The lower layer is this machine as it is, less any bulkhead of its own:
# a package installed here would make this an upgrade, and a state
# directory or config some test or developer left (serve without --state)
# is hidden in the root (a whiteout in the upper layer; the host keeps it).
if dpkg-query -W -f='${Status}' bulkhead 2>/dev/null | grep -q 'installed'; then
	echo "install: bulkhead is installed on this machine; the test needs a host without the package" >&2
	exit 1
fi
for p in /etc/bulkhead /var/lib/bulkhead /usr/bin/bulkhead /usr/lib/bulkhead /usr/share/bulkhead; do
	rm -rf "${root:?}$p"
done
# man-db's trigger would index every page on the machine (seconds); without
# this file it skips, and the pages are checked as files below.
rm -f "$root/var/lib/man-db/auto-update"
cp "$deb" "$root/tmp/bulkhead.deb"
# The upper layer before the install: what was there is not the package's.
upper_before=$(cd "$scratch/upper" && find . -mindepth 1 | sort)

# ---- install ----
if in_root dpkg -i /tmp/bulkhead.deb >"$scratch/dpkg.log" 2>&1; then
	ok "dpkg -i installs the package (its dependencies are on this machine)"
else
	bad "dpkg -i installs the package"
	cat "$scratch/dpkg.log"
	exit 1
fi
rm -f "$root/tmp/bulkhead.deb"

# ---- files and modes ----
mode_is() { # mode_is PATH MODE OWNER:GROUP
	local got
	got=$(stat -c '%a %U:%G' "$root$1" 2>/dev/null)
	[ "$got" = "$2 $3" ] || { echo "  $1: \"$got\", not \"$2 $3\""; return 1; }
}
check "the binary is /usr/bin/bulkhead, 0755 root" mode_is /usr/bin/bulkhead 755 root:root
check "the init is /usr/lib/bulkhead/bulkhead-init, 0755 root" mode_is /usr/lib/bulkhead/bulkhead-init 755 root:root
check "the init is static (it runs inside sandboxes that see no host libraries)" \
	bash -c "file -b '$root/usr/lib/bulkhead/bulkhead-init' | grep -q 'statically linked'"
check "the unit is /lib/systemd/system/bulkhead.service, 0644" mode_is /lib/systemd/system/bulkhead.service 644 root:root
check "the config is /etc/bulkhead/bulkhead.conf, 0644 root" mode_is /etc/bulkhead/bulkhead.conf 644 root:root
check "dpkg knows bulkhead.conf as a conffile" \
	bash -c "chroot '$root' dpkg-query -W -f='\${Conffiles}' bulkhead | grep -q ' /etc/bulkhead/bulkhead.conf '"
# serve reads the shipped file at every start: it must be one serve takes.
# (A serve before the config file, issue 19's config part, has no
# --print-config and reads no file: nothing to check.)
if in_root /usr/bin/bulkhead serve --help | grep -q -- '--print-config'; then
	check "serve takes the shipped bulkhead.conf (serve --print-config reads it)" \
		bash -c "chroot '$root' /usr/bin/bulkhead serve --print-config >/dev/null"
fi
check "the clients file is there, empty, 0600 root (the operator's)" \
	bash -c "[ ! -s '$root/etc/bulkhead/clients' ] && stat -c '%a %U' '$root/etc/bulkhead/clients' | grep -qx '600 root'"
check "the bulkhead group exists, a system group" \
	bash -c "gid=\$(chroot '$root' getent group bulkhead | cut -d: -f3) && [ -n \"\$gid\" ] && [ \"\$gid\" -lt 1000 ]"
check "the cell servers and the scenarios are in /usr/share/bulkhead" \
	bash -c "[ -f '$root/usr/share/bulkhead/interp/python/cell.py' ] && [ -f '$root/usr/share/bulkhead/interp/javascript/cell.js' ] &&
		[ -f '$root/usr/share/bulkhead/scenarios/one_turn.json' ] && [ -f '$root/usr/share/bulkhead/profiles/profiles.example' ]"
commands=$(in_root /usr/bin/bulkhead --help | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p')
missing=
for c in $commands; do
	f=$root/usr/share/man/man1/bulkhead-$c.1.gz
	[ -f "$f" ] && zcat "$f" | grep -q "^bulkhead-$c \\\\- " || missing="$missing $c"
done
check "a man page for each of the $(wc -w <<<"$commands") commands bulkhead --help lists, and bulkhead(1)${missing:+ (missing:$missing)}" \
	bash -c "[ -z '$missing' ] && [ -f '$root/usr/share/man/man1/bulkhead.1.gz' ]"
# The page's body, its roff escapes undone (scripts/manpages.sh's roff()).
man_body() {
	zcat "$root/usr/share/man/man1/$1.1.gz" | sed -n '/^\.nf$/,/^\.fi$/p' | sed -e '1d' -e '$d' |
		sed -e 's/^\\&//' -e 's/\\e/\\/g'
}
check "bulkhead-serve(1) is serve --help, word for word" \
	diff <(in_root /usr/bin/bulkhead serve --help) <(man_body bulkhead-serve)
# Every command answers --help (scripts/manpages.sh fails otherwise): each
# page is its command's usage, every option line of it.
differs=
for c in $commands; do
	diff -q <(in_root /usr/bin/bulkhead "$c" --help) <(man_body "bulkhead-$c") >/dev/null ||
		differs="$differs $c"
done
check "each command's page is its --help, word for word${differs:+ (not:$differs)}" test -z "$differs"

# ---- the unit ----
if in_root systemd-analyze verify /lib/systemd/system/bulkhead.service >"$scratch/verify.log" 2>&1 &&
	! grep -q . "$scratch/verify.log"; then
	ok "systemd-analyze verify finds nothing to say about the unit"
else
	bad "systemd-analyze verify: $(cat "$scratch/verify.log")"
fi
unit=$root/lib/systemd/system/bulkhead.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
unit_value() { sed -n "s/^$1=//p" "$unit" | tail -1; }

# ---- the daemon, as the unit starts it ----
group=$(unit_value Group)
gid=$(in_root getent group "$group" | cut -d: -f3)
# RuntimeDirectory= and StateDirectory=: made by systemd, root:Group.
install -d -m "$(unit_value RuntimeDirectoryMode)" -g "$gid" "$root/run/$(unit_value RuntimeDirectory)"
install -d -m "$(unit_value StateDirectoryMode)" -g "$gid" "$root/var/lib/$(unit_value StateDirectory)"
# A client to make the one call: the operator's step after an install.
token=$(in_root /usr/bin/bulkhead token create install-test --scope code:run,operator 2>"$scratch/token.log")
check "bulkhead token create adds a client to the installed clients file" test -n "$token"
printf '%s\n' "$token" >"$root/tmp/token"
chmod 0600 "$root/tmp/token"
# ExecStart's words, run in the root with Group= and UMask=, stdout (the
# ready line) and stderr (the journal's) kept.
read -r -a argv <<<"$exec_start"
(umask "$(unit_value UMask)" && in_pivoted_root setpriv --regid="$gid" --clear-groups "${argv[@]}") \
	>"$scratch/daemon.out" 2>"$scratch/daemon.err" &
daemon_pid=$!
for _ in $(seq 600); do
	grep -q '^ready ' "$scratch/daemon.out" && break
	kill -0 "$daemon_pid" 2>/dev/null || break
	sleep 0.1
done
if grep -q '^ready ' "$scratch/daemon.out"; then
	ok "the unit's ExecStart ($exec_start) serves: $(head -1 "$scratch/daemon.out")"
else
	bad "the unit's ExecStart ($exec_start) did not get ready: $(tail -5 "$scratch/daemon.err")"
	exit 1
fi
sock=$(awk '/^ready /{print $2; exit}' "$scratch/daemon.out")
# (numbers: the group is the root's, the host has no name for it)
check "the socket is root:$group 0660 in a root:$group 0750 directory" \
	bash -c "[ \"\$(stat -c '%a %u:%g' '$root$sock')\" = '660 0:$gid' ] &&
		[ \"\$(stat -c '%a %u:%g' '$root$(dirname "$sock")')\" = '750 0:$gid' ]"
# One call: a cell in a new session, through the socket, by the installed
# client: the sandbox runs with the installed init and cell servers.
answer=$(printf 'print(6 * 7)\n' | timeout 60 chroot "$root" /usr/bin/bulkhead shell --attach "$sock" \
	--token-file /tmp/token 2>"$scratch/shell.err")
if grep -qx '42' <<<"$answer"; then
	ok "a cell through the socket answers 42 (a sandbox with the installed init)"
else
	bad "a cell through the socket: \"$answer\" $(tail -3 "$scratch/shell.err")"
	echo "  the daemon's stderr:"
	sed 's/^/    /' "$scratch/daemon.err" | tail -20
fi
kill -TERM "$daemon_pid"
wait "$daemon_pid"
rc=$?
daemon_pid=
check "SIGTERM stops the daemon cleanly (exit 0)" test "$rc" = 0

# ---- remove, then purge: what is left is in the upper layer ----
# An entry of the upper layer is left by the package unless it is a directory
# the host already has (copied up to hold what was written below it), a
# whiteout (a host file deleted), or dpkg's own books and the group (kept, as
# Debian keeps system groups: files may still be owned by it), and man's own
# cache (systemd-analyze verify formats the unit's Documentation= page).
left() {
	(cd "$scratch/upper" && find . -mindepth 1 | sort) | comm -13 <(printf '%s\n' "$upper_before") - |
		grep -v -E '^\./(var/lib/dpkg|var/log|var/cache/debconf|var/cache/man)(/|$)|^\./etc/(group|gshadow)-?$|^\./etc/\.pwd\.lock$' |
		while read -r f; do
			[ -d "$scratch/upper/$f" ] && [ ! -L "$scratch/upper/$f" ] && [ -d "/$f" ] && continue
			[ -c "$scratch/upper/$f" ] && [ "$(stat -c %t:%T "$scratch/upper/$f")" = 0:0 ] && continue
			echo "${f#.}"
		done
}
if in_root dpkg -r bulkhead >"$scratch/dpkg.log" 2>&1; then ok "dpkg -r removes the package"; else bad "dpkg -r: $(cat "$scratch/dpkg.log")"; fi
# A remove keeps what a purge takes: the state directory, the conffile and
# the clients file, and the unit's enablement, masked, as deb-systemd-helper
# keeps it for a package removed but not purged.
after_remove=$(left | grep -v -E '^/(var/lib/bulkhead|etc/bulkhead)(/|$)|^/etc/systemd/system/bulkhead\.service$|^/var/lib/systemd/deb-systemd-helper-(enabled|masked)(/|$)|^/etc/systemd/system/multi-user\.target\.wants(/bulkhead\.service)?$' | tr '\n' ' ')
check "a remove leaves the state directory, the config and the clients file, nothing else${after_remove:+ (left: $after_remove)}" \
	bash -c "[ -z '$after_remove' ] && [ -d '$root/var/lib/bulkhead' ] && [ -f '$root/etc/bulkhead/bulkhead.conf' ] &&
		[ -f '$root/etc/bulkhead/clients' ] && [ ! -e '$root/usr/bin/bulkhead' ] && [ ! -e '$root/usr/lib/bulkhead' ]"
if in_root dpkg -P bulkhead >"$scratch/dpkg.log" 2>&1; then ok "dpkg -P purges the package"; else bad "dpkg -P: $(cat "$scratch/dpkg.log")"; fi
# A purge takes the config and the clients file too, and keeps the state
# directory alone (the records are evidence; debian/bulkhead.postrm says why).
after_purge=$(left | grep -v -E '^/var/lib/bulkhead(/|$)' | tr '\n' ' ')
check "a purge leaves nothing of the package's but the state directory${after_purge:+ (left: $after_purge)}" \
	bash -c "[ -z '$after_purge' ] && [ -d '$root/var/lib/bulkhead' ] && [ ! -e '$root/etc/bulkhead' ]"
exit 0
