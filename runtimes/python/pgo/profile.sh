#!/usr/bin/env bash
# profile.sh regenerates cpython.proftext.xz, the execution profile that
# build.sh compiles CPython for wasm32 with (-fprofile-instr-use).
#
# There is no profiling runtime for wasm32 in Debian, so the profile comes
# from a native clang-14 build of the same Debian python3.11 source,
# instrumented and trained by CPython's own rules (profile-gen-stamp,
# profile-run-stamp: the standard PGO training run, `-m test --pgo`, 44 of
# its test modules, as Debian's python3.11 is trained). Clang's profile is
# keyed by function name and a hash of the function's control flow as
# written in the source, so it applies to the wasm32 objects wherever the
# two builds compile the same code: the native build goes without computed
# gotos and with pymalloc, as the wasm build does, so ceval.c matches
# (RATIONALE.md has the numbers).
#
# The profile is committed rather than made in every build: a training run
# counts slightly differently each time (timings, threads, the file
# system), and different counts give different objects, which would make
# the release unreproducible. It is small (xz'd text) and only an input to
# the optimiser: it changes which paths are laid out and inlined as hot,
# never what the code does.
#
# Run it after the Debian source version in runtimes/python/dist/VERSION
# changes (build.sh prints a reminder when the profile was trained on
# another version), then commit pgo/. Needs build.sh to have run once (for
# the source package in its cache), clang-14 and libclang-rt-14-dev.
#
# Usage: runtimes/python/pgo/profile.sh
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python_dir=$(cd "$here/.." && pwd)
cache_root=${CAPSULE_BUILD_CACHE:-$HOME/.cache/capsule-build}/python
jobs=${CAPSULE_BUILD_JOBS:-$(nproc)}

version=$(sed -n 's/^debian=//p' "$python_dir/dist/VERSION" 2>/dev/null || true)
dsc=$cache_root/src/python3.11_${version#*:}.dsc
if [[ -z $version || ! -f $dsc ]]; then
	echo "profile.sh: run runtimes/python/build.sh first (no dist/VERSION or no $dsc)" >&2
	exit 1
fi
for p in clang-14 libclang-rt-14-dev llvm-14; do
	if [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) != ii* ]]; then
		echo "profile.sh: install $p: apt-get install -y --no-install-recommends $p" >&2
		exit 1
	fi
done

work=$(mktemp -d /tmp/capsule-pgo.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "profile.sh: python3.11 $version, native instrumented build in $work"
dpkg-source -q -x "$dsc" "$work/src" >"$work/extract.log" 2>&1 || { cat "$work/extract.log" >&2; exit 1; }
mkdir -p "$work/src/builddir/native"
cd "$work/src/builddir/native"
CC=clang-14 ../../configure --enable-optimizations --without-computed-gotos --with-pymalloc \
	--disable-test-modules >configure.log 2>&1 || { tail -n 40 configure.log >&2; exit 1; }
make -j"$jobs" profile-gen-stamp >make.log 2>&1 || { tail -n 40 make.log >&2; exit 1; }
# What counts is what the training ran, not whether its tests passed: some
# fail here for want of the test-only modules this build leaves out, as
# the wasm build does.
make run_profile_task >train.log 2>&1 || true
compgen -G './*.profclangr' >/dev/null || { tail -n 40 train.log >&2; exit 1; }
llvm-profdata-14 merge -text -o "$work/cpython.proftext" ./*.profclangr
xz -9 -T1 -c "$work/cpython.proftext" >"$here/cpython.proftext.xz.tmp"
mv "$here/cpython.proftext.xz.tmp" "$here/cpython.proftext.xz"
echo "$version" >"$here/TRAINED_ON"
echo "profile.sh: wrote $here/cpython.proftext.xz ($(stat -c %s "$here/cpython.proftext.xz") bytes) for python3.11 $version"
