#!/usr/bin/env bash
# repro-check.sh (make repro-check) runs `make image` twice from the
# committed HEAD, one build after the other, each in a fresh clone at a
# different path with its own empty build caches (CAPSULE_BUILD_CACHE: the
# Debian sources, CPython, zlib, sqlite3, the bundled packages' .debs, the
# npm tarball; GOCACHE: every compiled Go package), and compares every release
# artefact: the binary and tarball of each architecture, the npm packages and
# the container images (dist/SHA256SUMS, and the images' digests). The Go
# module cache and npm's cache are shared: both are verified by hash (go.sum,
# wazero's pin in runtimes/wazero/prepare.sh, the pinned tarball SHA-256)
# before anything is used.
#
# When the binaries differ it says which embedded file differs and where.
# Exit status 0 when every artefact is identical, 1 otherwise.
#
# Environment: CAPSULE_REPRO_DIR (work directory, default a new one under
# /tmp; removed on success), CAPSULE_REPRO_PARALLEL=1 (run the two builds
# side by side, the second a minute later), CAPSULE_BUILD_JOBS (passed on
# to build.sh).
set -euo pipefail

repo=$(git rev-parse --show-toplevel)
commit=$(git -C "$repo" rev-parse HEAD)
if [[ -n $(git -C "$repo" status --porcelain --untracked-files=no) ]]; then
	echo "repro-check: checking commit $commit; uncommitted changes are not part of it" >&2
fi
work=${CAPSULE_REPRO_DIR:-$(mktemp -d /tmp/capsule-repro.XXXXXX)}
mkdir -p "$work"

# Different names, lengths and depths for the trees and the caches, so a
# path that leaks into the output (or changes its layout) shows up.
dirs=("$work/one/capsule" "$work/second-build/deeper/src")
caches=("$work/c1" "$work/second-build/build-cache")
declare -a sums secs
build() {
	local i=$1 dir=${dirs[$1]} start=$SECONDS
	if ! (cd "$dir" && env CAPSULE_BUILD_CACHE="${caches[i]}" GOCACHE="${caches[i]}/go" make image) \
		>"$work/build-$i.log" 2>&1; then
		tail -n 30 "$work/build-$i.log" >&2
		echo "repro-check: build $((i + 1)) failed; see $work/build-$i.log" >&2
		return 1
	fi
	echo "$((SECONDS - start))" >"$work/build-$i.secs"
}
for i in 0 1; do
	rm -rf "${dirs[i]}" "${caches[i]}" "$work/build-$i.secs"
	mkdir -p "$(dirname "${dirs[i]}")"
	git clone -q "$repo" "${dirs[i]}"
	git -C "${dirs[i]}" checkout -q --detach "$commit"
done
if [[ ${CAPSULE_REPRO_PARALLEL:-0} == 1 ]]; then
	# Side by side, the second a minute later (so the clocks differ): on a
	# busy shared machine this takes about as long as one cold build.
	echo "repro-check: builds 1 and 2 side by side in ${dirs[0]} and ${dirs[1]} (logs: $work/build-*.log)"
	build 0 &
	first=$!
	sleep 60
	build 1 || { wait "$first"; exit 1; }
	wait "$first" || exit 1
else
	for i in 0 1; do
		echo "repro-check: build $((i + 1)) of 2 in ${dirs[i]} (log: $work/build-$i.log)"
		build "$i" || exit 1
	done
fi
for i in 0 1; do
	secs[i]=$(<"$work/build-$i.secs")
	sums[i]=$(sha256sum "${dirs[i]}/dist/SHA256SUMS" | cut -d' ' -f1)
	echo "build $((i + 1)): ${secs[i]} s in ${dirs[i]}; dist/SHA256SUMS:"
	sed 's/^/    /' "${dirs[i]}/dist/SHA256SUMS"
	grep -h -o 'image capsule:[^ ]* for linux/[a-z0-9]*, digest sha256:[0-9a-f]*' "$work/build-$i.log" | sed 's/^/    /'
done
if [[ ${sums[0]} == "${sums[1]}" ]]; then
	echo "repro-check: identical: commit $commit gives the same binaries, tarballs, npm packages and images (dist/SHA256SUMS ${sums[0]})"
	[[ -n ${CAPSULE_REPRO_DIR:-} ]] || rm -rf "$work"
	exit 0
fi
diff <(cat "${dirs[0]}/dist/SHA256SUMS") <(cat "${dirs[1]}/dist/SHA256SUMS") >&2 || true

echo "repro-check: the artefacts differ; the files the binaries embed:" >&2
# Every file the binary embeds is in a runtime's dist/ directory (Python's
# bundled packages in dist/bundle).
for f in $(cd "${dirs[0]}" && find runtimes/*/dist -maxdepth 2 -type f | LC_ALL=C sort); do
	a=${dirs[0]}/$f b=${dirs[1]}/$f
	if cmp -s "$a" "$b"; then
		echo "  $f: identical" >&2
	else
		echo "  $f: differs, $(cmp -l "$a" "$b" 2>/dev/null | wc -l) bytes; first: $(cmp "$a" "$b" 2>&1 | head -n 1)" >&2
	fi
done
# A differing zip: name the members.
for z in python311.zip bundle/packages.zip; do
	python3.11 - "$z" "${dirs[0]}/runtimes/python/dist/$z" "${dirs[1]}/runtimes/python/dist/$z" <<'PY' >&2 || true
import sys, zipfile
name = sys.argv[1]
a, b = (zipfile.ZipFile(p) for p in sys.argv[2:4])
na, nb = set(a.namelist()), set(b.namelist())
for n in sorted(na ^ nb):
    print("  %s: only in one build: %s" % (name, n))
for n in sorted(na & nb):
    if a.read(n) != b.read(n) or a.getinfo(n).date_time != b.getinfo(n).date_time:
        print("  %s: member differs: %s" % (name, n))
PY
done
echo "repro-check: builds kept in $work" >&2
exit 1
