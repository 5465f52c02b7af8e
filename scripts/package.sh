#!/usr/bin/env bash
# Builds the Debian package (debian/, dpkg-buildpackage) into build-package/:
# the Release build a packager runs (debian/rules: CMake's Release flags with
# Debian's hardening, -Werror, the tests compiled but not run), then lintian,
# which must report no error (its warnings are printed).
#   bash scripts/package.sh            -> build-package/bulkhead_VERSION_amd64.deb
# The tree is built from a copy of the files git knows (committed or not) in
# build-package/src, since dpkg-buildpackage writes its results beside the
# source: nothing is written in the work tree but build-package/. Set
# BULKHEAD_PACKAGE_CCACHE=1 to compile through ccache (a developer's rebuild:
# the copy's path stays the same, so the cache hits).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$PWD/build-package
src=$out/src
rm -rf "$src"
mkdir -p "$src"
rm -f "$out"/bulkhead_* "$out"/bulkhead-dbgsym_*
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
	[ -e "$f" ] && printf '%s\0' "$f"
done | tar -c --null -T - | tar -x -C "$src"
# The man pages carry the date of the last commit, not of this build.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
if [ "${BULKHEAD_PACKAGE_CCACHE:-}" = 1 ] && command -v ccache >/dev/null; then
	# debian/rules takes it from the environment (BULKHEAD_CMAKE_ARGS ?=).
	export BULKHEAD_CMAKE_ARGS=-DCMAKE_C_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR=$src CCACHE_NOHASHDIR=1
fi
log=$out/build.log
echo "package: building in $src (log: $log)"
if ! (cd "$src" && DEB_BUILD_OPTIONS="parallel=$(nproc) ${DEB_BUILD_OPTIONS:-}" \
	dpkg-buildpackage -b -us -uc) >"$log" 2>&1; then
	grep -a -E 'error|Error|warning:' "$log" | head -40 || true
	echo "package: dpkg-buildpackage failed (the whole log: $log)" >&2
	exit 1
fi
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
deb=bulkhead_${version}_amd64.deb
rm -rf "$src"
echo "package: $out/$deb"
# lintian: errors fail the build, warnings are shown.
lint=$out/lintian.txt
lintian --tag-display-limit 0 "$out/$deb" >"$lint" 2>&1 || true
grep -E '^[EW]: ' "$lint" || echo "package: lintian: no errors and no warnings"
if grep -q '^E: ' "$lint"; then
	echo "package: lintian reports errors (above)" >&2
	exit 1
fi
