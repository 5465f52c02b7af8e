#!/usr/bin/env bash
# Writes a man page for bulkhead and one for each of its commands into OUTDIR
# (bulkhead.1, bulkhead-serve.1, ...) from the binary itself, so a page
# cannot say what the binary does not: `bulkhead --help` gives the command
# list (each page's NAME line), `bulkhead CMD --help` the page's body, shown
# as the binary writes it. Every command answers --help (exit 0, its usage on
# stdout); one that does not is a bug in the binary, and no page is written
# for it: this script fails, naming it.
#   bash scripts/manpages.sh BULKHEAD OUTDIR
# Run by `cmake --install` (CMakeLists.txt, the package block), so by
# scripts/package.sh. Touches nothing but OUTDIR; needs no root, no daemon.
set -euo pipefail
bin=${1:?usage: manpages.sh BULKHEAD OUTDIR}
out=${2:?usage: manpages.sh BULKHEAD OUTDIR}
mkdir -p "$out"
version=$("$bin" --version | sed 's/^bulkhead //')
# The date of the source, not of the build: the same tree makes the same pages.
date=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(git -C "$(dirname "$0")/.." log -1 --format=%ct 2>/dev/null || echo 0)}" +%Y-%m-%d)

# roff: a backslash doubled, a line that starts with . or ' kept as text.
roff() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }

# page NAME SECTION-TITLE WHAT BODY-FILE
page() {
	local name=$1 what=$2 body=$3
	{
		printf '.TH %s 1 "%s" "bulkhead %s" "bulkhead manual"\n' "$(tr a-z A-Z <<<"$name")" "$date" "$version"
		printf '.SH NAME\n%s \\- %s\n' "$name" "$(roff <<<"$what")"
		printf '.SH DESCRIPTION\n.nf\n'
		roff <"$body"
		printf '.fi\n'
		printf '.SH SEE ALSO\n'
		if [ "$name" = bulkhead ]; then
			printf 'Each command has its page: '
			sed 's/^\(.*\)$/.BR bulkhead-\1 (1),/' "$commands" | sed '$ s/,$//' | tr '\n' ' '
			printf '\n'
		else
			printf '.BR bulkhead (1)\n'
		fi
	} >"$out/$name.1"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
commands=$tmp/commands
"$bin" --help >"$tmp/top"
# "  NAME     what it does": the list the binary dispatches on.
sed -n 's/^  \([a-z][a-z-]*\)  *\(.*\)$/\1\t\2/p' "$tmp/top" >"$tmp/list"
cut -f1 "$tmp/list" >"$commands"
[ -s "$commands" ] || { echo "manpages: $bin --help lists no commands" >&2; exit 1; }
page bulkhead "a self-hosted code-execution sandbox service for AI agents" "$tmp/top"

while IFS=$'\t' read -r cmd what; do
	body=$tmp/$cmd
	if ! "$bin" "$cmd" --help >"$body" 2>"$tmp/err" </dev/null || [ ! -s "$body" ]; then
		echo "manpages: $bin $cmd --help did not answer with its usage (exit 0, on stdout):" >&2
		cat "$tmp/err" >&2
		exit 1
	fi
	page "bulkhead-$cmd" "$what" "$body"
done <"$tmp/list"
echo "manpages: $(wc -l <"$commands") command pages and bulkhead.1 in $out"
