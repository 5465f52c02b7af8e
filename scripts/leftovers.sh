#!/usr/bin/env bash
# Snapshots what a test run could leave behind on the host: sandbox cgroups,
# containers and bundles under the test root, sandbox processes, and the
# fleet tests' nats-server processes and directories.
#   leftovers.sh snapshot ROOT FILE   write the snapshot
#   leftovers.sh check ROOT FILE      compare with it; report, clean up, exit 1 on a difference
set -uo pipefail
mode=$1 root=$2 file=$3

snapshot() {
	find /sys/fs/cgroup/*/bulkhead -mindepth 1 -maxdepth 2 -type d 2>/dev/null | sed 's/^/cgroup /'
	# Engines hide the hybrid cgroup2 mount in their own mount namespace, and
	# crun then makes plain directories under it: look there too.
	unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null &&
		find /sys/fs/cgroup/unified/bulkhead -mindepth 2 -maxdepth 2 -type d 2>/dev/null' |
		sed 's/^/hidden-cgroup-dir /'
	# ROOT/STATE/..., and ROOT/bg-JOB/STATE/... for a suite test.sh ran in the background.
	for d in "$root"/*/run/crun "$root"/bg-*/*/run/crun; do [ -d "$d" ] && crun --root "$d" list -q 2>/dev/null | sed "s|^|crun $d |"; done
	for d in "$root"/*/run/runsc "$root"/bg-*/*/run/runsc; do [ -d "$d" ] && runsc --root "$d" list --quiet 2>/dev/null | sed "s|^|runsc $d |"; done
	find "$root" -mindepth 3 -maxdepth 3 -path '*/bundles/*' 2>/dev/null | sed 's/^/bundle /'
	find "$root" -mindepth 4 -maxdepth 4 -path '*/bg-*/*/bundles/*' 2>/dev/null | sed 's/^/bundle /'
	ps -eo pid=,comm= | awk '$2 == "bulkhead-init" || $2 ~ /^runsc/ {print "process " $1 " " $2}'
	ps -eo pid=,args= | grep -F -- "--root $root/" | grep -v grep | awk '{print "process " $1 " runtime"}'
	# ---- fleet (issue 20): the NATS harness's servers (their configs under the root) and directories ----
	ps -eo pid=,args= | grep -F -- "nats-server -c $root/" | grep -v grep | awk '{print "process " $1 " nats-server"}'
	find "$root" -mindepth 1 -maxdepth 2 -type d -name 'nats-??????' 2>/dev/null | sed 's/^/nats-dir /'
} 

case $mode in
snapshot) snapshot | sort >"$file" ;;
check)
	now=$(mktemp)
	snapshot | sort >"$now"
	left=$(comm -13 "$file" "$now")
	rm -f "$now"
	if [ -z "$left" ]; then
		echo "leftovers: none (cgroups, containers, bundles and processes as before the run)"
		exit 0
	fi
	echo "leftovers: the run left these behind:"
	echo "$left" | sed 's/^/  /'
	# Clean up what this run made, so the machine is usable, then fail.
	echo "$left" | awk '$1 == "crun" || $1 == "runsc" {print $1, $2, $3}' | while read -r rt dir name; do
		"$rt" --root "$dir" kill "$name" KILL >/dev/null 2>&1
		"$rt" --root "$dir" delete $([ "$rt" = crun ] && echo -f || echo -force) "$name" >/dev/null 2>&1
	done
	echo "$left" | awk '$1 == "process" {print $2}' | while read -r pid; do kill -9 "$pid" 2>/dev/null; done
	sleep 1
	echo "$left" | awk '$1 == "cgroup" {print $2}' | sort -r | while read -r cg; do rmdir "$cg" 2>/dev/null; done
	echo "$left" | awk '$1 == "hidden-cgroup-dir" {print $2}' |
		unshare -m sh -c 'umount /sys/fs/cgroup/unified && while read -r d; do rm -rf "$d"; done' 
	exit 1
	;;
*) echo "usage: $0 snapshot|check ROOT FILE" >&2; exit 2 ;;
esac
