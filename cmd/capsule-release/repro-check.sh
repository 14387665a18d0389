#!/usr/bin/env bash
# repro-check.sh (make repro-check) builds bin/capsule twice from the
# committed HEAD, one build after the other, each in a fresh clone at a
# different path with its own empty build caches (CAPSULE_BUILD_CACHE: the
# Debian sources, CPython, zlib, sqlite3, the npm tarball; GOCACHE: every
# compiled Go package), and prints both SHA-256. The Go module cache and
# npm's cache are shared: both are verified by hash (go.sum, the pinned
# tarball SHA-256) before anything is used.
#
# When the binaries differ it says which embedded file differs and where.
# Exit status 0 when they are identical, 1 otherwise.
#
# Environment: CAPSULE_REPRO_DIR (work directory, default a new one under
# /tmp; removed on success), CAPSULE_BUILD_JOBS (passed on to build.sh).
set -euo pipefail

repo=$(git rev-parse --show-toplevel)
commit=$(git -C "$repo" rev-parse HEAD)
if [[ -n $(git -C "$repo" status --porcelain --untracked-files=no) ]]; then
	echo "repro-check: checking commit $commit; uncommitted changes are not part of it" >&2
fi
work=${CAPSULE_REPRO_DIR:-$(mktemp -d /tmp/capsule-repro.XXXXXX)}
mkdir -p "$work"

# Different directory names and depths, so a path that leaks into the
# output shows up as a difference.
dirs=("$work/one/capsule" "$work/second-build/deeper/src")
declare -a sums secs
for i in 0 1; do
	dir=${dirs[i]}
	rm -rf "$dir" "$work/cache-$i" "$work/gocache-$i"
	mkdir -p "$(dirname "$dir")"
	git clone -q "$repo" "$dir"
	git -C "$dir" checkout -q --detach "$commit"
	echo "repro-check: build $((i + 1)) of 2 in $dir (log: $work/build-$i.log)"
	start=$SECONDS
	if ! (cd "$dir" && env CAPSULE_BUILD_CACHE="$work/cache-$i" GOCACHE="$work/gocache-$i" make build) \
		>"$work/build-$i.log" 2>&1; then
		tail -n 30 "$work/build-$i.log" >&2
		echo "repro-check: build $((i + 1)) failed; see $work/build-$i.log" >&2
		exit 1
	fi
	secs[i]=$((SECONDS - start))
	sums[i]=$(sha256sum "$dir/bin/capsule" | cut -d' ' -f1)
done

for i in 0 1; do
	echo "build $((i + 1)): ${sums[i]}  bin/capsule  (${secs[i]} s, ${dirs[i]})"
done
if [[ ${sums[0]} == "${sums[1]}" ]]; then
	echo "repro-check: identical: commit $commit builds to ${sums[0]}"
	[[ -n ${CAPSULE_REPRO_DIR:-} ]] || rm -rf "$work"
	exit 0
fi

echo "repro-check: the binaries differ; the embedded files:" >&2
for f in runtimes/python/dist/python.wasm runtimes/python/dist/python311.zip runtimes/javascript/dist/quickjs.wasm; do
	a=${dirs[0]}/$f b=${dirs[1]}/$f
	if cmp -s "$a" "$b"; then
		echo "  $f: identical" >&2
	else
		echo "  $f: differs, $(cmp -l "$a" "$b" 2>/dev/null | wc -l) bytes; first: $(cmp "$a" "$b" 2>&1 | head -n 1)" >&2
	fi
done
# A differing zip: name the members.
python3.11 - "${dirs[0]}/runtimes/python/dist/python311.zip" "${dirs[1]}/runtimes/python/dist/python311.zip" <<'PY' >&2 || true
import sys, zipfile
a, b = (zipfile.ZipFile(p) for p in sys.argv[1:3])
na, nb = set(a.namelist()), set(b.namelist())
for n in sorted(na ^ nb):
    print("  python311.zip: only in one build:", n)
for n in sorted(na & nb):
    if a.read(n) != b.read(n) or a.getinfo(n).date_time != b.getinfo(n).date_time:
        print("  python311.zip: member differs:", n)
PY
echo "repro-check: builds kept in $work" >&2
exit 1
