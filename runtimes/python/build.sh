#!/usr/bin/env bash
# build.sh builds the Python runtime that capsule embeds: CPython 3.11 for
# wasm32-wasi at -O2, from Debian's own python3.11 source package (with all of
# Debian's patches, security fixes included), with zlib, sqlite3, liblzma
# (xz-utils) and libbz2 (bzip2) from their Debian source packages, compiled by
# Debian's clang/lld against Debian's wasi-libc, and the IANA time zone
# database compiled from Debian's tzdata source package. It writes, into
# runtimes/python/dist/:
#
#   python.snap.wasm  the interpreter, a WASI reactor with reactor/capsule.c's
#                   entry points, stripped of custom sections, its data
#                   segments moved to python.data (runtimes/internal/snapshot)
#   python-numpy.snap.wasm, python-numpy.data
#                   the same interpreter with numpy's extension modules
#                   linked in, for the numpy snapshot variant
#   python311.zip   the standard library (.pyc for speed, .py for tracebacks)
#   tzdata.zip      the compiled time zones (TZif files), served read-only
#                   at /usr/share/zoneinfo
#   VERSION         cpython=3.11.x / debian=<python3.11 source version> / ...
#   ASSETS          the SHA-256 of each file above (sha256sum format), which
#                   the binary carries and `capsule doctor` checks
#   sources/PKG/    one directory per component built in: SOURCE (name,
#                   version, the .dsc and its SHA-256) and its licence texts,
#                   from which the release's SBOM and notices are generated
#   KEY             the cache key the files were built for
#
# The result is cached under ${CAPSULE_BUILD_CACHE:-$HOME/.cache/capsule-build}
# /python/<key>/, where the key covers the Debian source versions, the
# toolchain's package versions and a hash of this recipe, so a repeated run
# (from any clone) only copies files.
#
# Usage: runtimes/python/build.sh [--force]
#   --force   rebuild even when dist/ or the cache already match the key.
#
# Environment: CAPSULE_BUILD_CACHE (cache root), CAPSULE_BUILD_KEEP=1 (keep
# the build tree for inspection), CAPSULE_BUILD_JOBS (make -j, default nproc).
#
# The output is reproducible: the same sources, toolchain and recipe give the
# same bytes in any directory at any time (no build paths, dates or hash
# seeds reach the output; see "Reproducibility" in RATIONALE.md).
set -euo pipefail
# Python's set ordering (frozenset constants in .pyc and frozen modules)
# must not depend on a random hash seed.
export PYTHONHASHSEED=0

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=buildlib.sh
. "$here/buildlib.sh"
repo=$(cd "$here/../.." && pwd)
dist=$here/dist
cache_root=${CAPSULE_BUILD_CACHE:-$HOME/.cache/capsule-build}/python
jobs=${CAPSULE_BUILD_JOBS:-$(nproc)}
parse_args "$@"

# --- Tuning that goes into the binary ------------------------------------
#
# Stack. CPython's configure gives WASI a 512 KiB stack, and CPython lowers
# the recursion limit to 600 and the parser's MAXSTACK to 4000 to fit it;
# even so ~150 nested parentheses end in a parser MemoryError. Measured here
# (wazero v1.12, this -O2 build, recursion limit 1000) the deepest recursion
# CPython allows through C code uses at most ~0.7 MiB of wasm stack: sorted()
# with a recursive key 706 KiB, __getattr__ chains 620 KiB, yield from
# chains 546 KiB, exec chains 326 KiB, repr/json/pickle of nested lists and
# the parser at 200 nested parentheses under 100 KiB. We take 8 MiB: more
# than ten times that, costing only untouched address space, so the native
# defaults apply (recursion limit 1000, MAXSTACK 6000: 200 nested
# parentheses parse) and deep recursion ends in RecursionError; even a
# guest that raises the recursion limit several-fold stays inside it.
# --stack-first stays: the stack sits below the data, so an overflow runs
# off address 0 and traps instead of silently overwriting the heap.
stack_size=$((8 * 1024 * 1024))
# Initial memory must hold the stack plus static data (numpy's tables
# bring the data to about 5 MiB); the heap grows from there with
# memory.grow up to the host's limit.
initial_memory=$((16 * 1024 * 1024))
recursion_limit=1000
parser_maxstack=6000

# --- Packages ------------------------------------------------------------
#
# clang/lld/llvm/wasi-libc/libclang-rt-14-dev-wasm32: the wasm toolchain.
# python3.11: the build Python (same 3.11.2 as the sources). dpkg-dev:
# dpkg-source. tcl, gcc, libc6-dev, make: sqlite's native amalgamation
# generator. xz-utils, bzip2: the source tarballs. libc-bin: zic, the time
# zone compiler. unifdef: musl's time zone code out of wasi-libc's source.
# cython3, python3-setuptools, python3-distutils: numpy's own build_src
# (numpy/extensions.py), which regenerates numpy.random's C with bookworm's
# Cython.
packages=(clang lld llvm wasi-libc libclang-rt-14-dev-wasm32 python3.11
	dpkg-dev tcl gcc libc6-dev make xz-utils bzip2 patch libc-bin unifdef
	cython3 python3-setuptools python3-distutils)

missing=()
for p in "${packages[@]}"; do
	if [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) != ii* ]]; then
		missing+=("$p")
	fi
done
if ((${#missing[@]})); then
	if ((EUID != 0)); then
		echo "build.sh: missing packages; install them with:" >&2
		echo "  apt-get install -y --no-install-recommends ${missing[*]}" >&2
		exit 1
	fi
	echo "build.sh: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y --no-install-recommends "${missing[@]}"; then
		apt-get update
		apt-get install -y --no-install-recommends "${missing[@]}"
	fi
fi

mkdir -p "$cache_root"
# One build at a time per cache: concurrent runs (two clones, make -j) share
# the apt state, the source downloads and the output directory.
exec 9>"$cache_root/.lock"
flock 9

# --- Sources through a private apt state ----------------------------------
#
# See apt_state in buildlib.sh: the deb-src entries copy the machine's own
# apt sources, so apt verifies every file against the signed index.
aptdir=$cache_root/apt
apt_state "$aptdir" deb-src

srcdir=$cache_root/src
mkdir -p "$srcdir"

# fetch PKG sets VERSION_<PKG> to the newest source version of PKG whose
# files can actually be downloaded (a mirror may list a security update in
# its index before it serves the files, or not serve that pool at all), and
# leaves the files in $srcdir.
declare -A src_version
fetch() {
	local pkg=$1 versions=() v
	mapfile -t versions < <(apt-cache "${apt_opts[@]}" showsrc "$pkg" 2>/dev/null |
		awk -v p="$pkg" '/^Package:/{cur=$2} /^Version:/ && cur==p {print $2}' | sort -u)
	if ((${#versions[@]} == 0)); then
		echo "build.sh: no source package $pkg in the apt sources" >&2
		exit 1
	fi
	mapfile -t versions < <(newest_first "${versions[@]}")
	for v in "${versions[@]}"; do
		if (cd "$srcdir" && apt-get "${apt_opts[@]}" -qq source --download-only "$pkg=$v") \
			>"$aptdir/fetch-$pkg.log" 2>&1; then
			src_version[$pkg]=$v
			return
		fi
		echo "build.sh: $pkg $v cannot be downloaded, trying an older version" >&2
	done
	cat "$aptdir/fetch-$pkg.log" >&2
	exit 1
}
for pkg in python3.11 zlib sqlite3; do
	fetch "$pkg"
done
# The compression libraries behind lzma and bz2, and the time zone data
# behind zoneinfo.
for pkg in xz-utils bzip2 tzdata; do
	fetch "$pkg"
done
# musl's time zone code, which wasi-libc carries in its source but leaves
# out of the library, from the source of the very wasi-libc we link.
fetch wasi-libc
if [[ ${src_version[wasi-libc]} != $(dpkg-query -W -f='${Version}' wasi-libc) ]]; then
	echo "build.sh: wasi-libc source ${src_version[wasi-libc]} is not the installed wasi-libc" \
		"$(dpkg-query -W -f='${Version}' wasi-libc); install the matching one" >&2
	exit 1
fi

# numpy, from Debian bullseye's source package: the one numpy source the
# archive serves (bookworm's upstream tarball is missing from it). It is
# pinned: the .dsc's SHA-256 is checked here, and the .dsc names the
# SHA-256 of every other file, which dpkg-source checks. numpy 1.19 was
# written for Python 3.9 and older; numpy/patches/ ports it to 3.11 and
# wasm32 (RATIONALE.md, "numpy").
numpy_version=1:1.19.5-1
numpy_dsc_sha256=9fbfa1c54f7570e5b24776eede49b6c87318c5df02a6d46fb455708745a96831
main_apt_opts=("${apt_opts[@]}")
apt_state "$cache_root/apt-bullseye" deb-src bullseye
if ! (cd "$srcdir" && apt-get "${apt_opts[@]}" -qq source --download-only "numpy=$numpy_version") \
	>"$aptdir/fetch-numpy.log" 2>&1; then
	cat "$aptdir/fetch-numpy.log" >&2
	echo "build.sh: cannot download numpy $numpy_version from bullseye's sources" >&2
	exit 1
fi
apt_opts=("${main_apt_opts[@]}")
src_version[numpy]=$numpy_version
if [[ $(sha256sum "$srcdir/numpy_${numpy_version#*:}.dsc" | cut -d' ' -f1) != "$numpy_dsc_sha256" ]]; then
	echo "build.sh: numpy_${numpy_version#*:}.dsc is not the pinned one (SHA-256 $numpy_dsc_sha256)" >&2
	exit 1
fi

# dsc_path PKG prints the .dsc file of the chosen version (epoch dropped).
dsc_path() {
	local v=${src_version[$1]}
	echo "$srcdir/${1}_${v#*:}.dsc"
}

# --- Cache key ------------------------------------------------------------
recipe_hash=$(cd "$here" && cat build.sh buildlib.sh reactor/capsule.c wasi/*.h wasi/*.c pgo/* numpy/*.py numpy/patches/*.patch \
	../internal/snapshot/*.go ../internal/wasmbin/*.go | sha256sum | cut -c1-16)
toolchain=$(dpkg-query -W -f='${Package}=${Version}\n' clang-14 lld-14 wasi-libc \
	libclang-rt-14-dev-wasm32 python3.11 llvm-14 zlib1g cython3 python3-setuptools python3-distutils |
	sha256sum | cut -c1-8)
key="py-${src_version[python3.11]#*:}_zlib-${src_version[zlib]#*:}_sqlite-${src_version[sqlite3]#*:}_tc-${toolchain}_r-${recipe_hash}"
key+="_xz-${src_version[xz-utils]#*:}_bz2-${src_version[bzip2]#*:}_tz-${src_version[tzdata]#*:}"
key+="_np-${src_version[numpy]#*:}"
key=${key//[^A-Za-z0-9._+-]/_}
out=$cache_root/$key
outputs=(python.snap.wasm python.data python-numpy.snap.wasm python-numpy.data python311.zip tzdata.zip VERSION ASSETS sources numpy.zip numpy-tests.zip)

# Nothing to build when dist/ or the cache has this key's outputs.
((force)) || dist_from_cache

# --- Build ----------------------------------------------------------------
new_work
prefix=$work/prefix
mkdir -p "$prefix/include" "$prefix/lib"

cd "$work"
extract() {
	dpkg-source -q -x "$(dsc_path "$1")" "$work/$1" >"$work/extract-$1.log" 2>&1 ||
		{ cat "$work/extract-$1.log" >&2; exit 1; }
	record_source "$1"
}
# extract_linked PKG unpacks the source of a Debian binary package that
# record_linked declared, and adds the source's .dsc to that record.
extract_linked() {
	local dsc
	dsc=$(dsc_path "$1")
	dpkg-source -q -x "$dsc" "$work/$1" >"$work/extract-$1.log" 2>&1 ||
		{ cat "$work/extract-$1.log" >&2; exit 1; }
	{
		echo "source_dsc=$(basename "$dsc")"
		echo "source_dsc_sha256=$(sha256sum "$dsc" | cut -d' ' -f1)"
	} >>"$work/sources/$1/SOURCE"
}
# record_source PKG declares a Debian source package as a component of the
# runtime, in $work/sources/PKG/: SOURCE (name, version, .dsc and its
# SHA-256, homepage) and its licence texts (debian/copyright and the
# upstream LICENSE/COPYING files at the top of the tree). extract calls it,
# so a package that is unpacked is declared, once; cmd/capsule-release
# builds the SBOM and THIRD_PARTY_NOTICES from these directories, and its
# test fails for a component without a licence text.
record_source() {
	local pkg=$1 dsc d f
	dsc=$(dsc_path "$pkg")
	d=$work/sources/$pkg
	mkdir -p "$d"
	{
		echo "name=$pkg"
		echo "kind=debian-source"
		echo "version=${src_version[$pkg]}"
		echo "dsc=$(basename "$dsc")"
		echo "dsc_sha256=$(sha256sum "$dsc" | cut -d' ' -f1)"
		echo "homepage=$(sed -n 's/^Homepage:[[:space:]]*//p' "$dsc" | head -n 1)"
	} >"$d/SOURCE"
	[[ -f $work/$pkg/debian/copyright ]] &&
		cp "$work/$pkg/debian/copyright" "$d/debian-copyright"
	for f in "$work/$pkg"/{LICENSE,LICENCE,COPYING,COPYRIGHT}*; do
		[[ -f $f ]] && cp "$f" "$d/$(basename "$f")"
	done
	return 0
}
# record_linked PKG declares an installed Debian binary package whose code
# is linked into python.wasm (the C library, the compiler's runtime), with
# its version, the SHA-256 of its .deb from the signed apt index, and its
# copyright file.
record_linked() {
	local pkg=$1 v d
	v=$(dpkg-query -W -f='${Version}' "$pkg")
	d=$work/sources/$pkg
	mkdir -p "$d"
	{
		echo "name=$pkg"
		echo "kind=debian-binary"
		echo "version=$v"
		echo "source=$(dpkg-query -W -f='${source:Package}' "$pkg")"
		echo "deb_sha256=$(apt-cache show "$pkg=$v" 2>/dev/null | sed -n 's/^SHA256: //p' | head -n 1)"
	} >"$d/SOURCE"
	cp "/usr/share/doc/$pkg/copyright" "$d/debian-copyright"
}

wasm_cc="clang --target=wasm32-wasi"
export AR=llvm-ar RANLIB=llvm-ranlib
# Build paths must not reach the output (__FILE__ in messages): every
# compile names the build tree and this directory by fixed paths.
repro_cflags="-ffile-prefix-map=$work=/capsule-build -ffile-prefix-map=$here=/capsule-recipe"
# What the toolchain links into python.wasm besides the sources we build.
for pkg in wasi-libc libclang-rt-14-dev-wasm32; do
	record_linked "$pkg"
done

build_zlib() {
	cd "$work/zlib"
	CC=$wasm_cc CFLAGS="-O2 -g0 $repro_cflags" CHOST=wasm32 ./configure --static --prefix="$prefix" >configure.log 2>&1 ||
		{ cat configure.log >&2; exit 1; }
	make -j"$jobs" libz.a >make.log 2>&1 || { tail -n 40 make.log >&2; exit 1; }
	cp libz.a "$prefix/lib/"
	cp zlib.h zconf.h "$prefix/include/"
	phase "zlib done"
}

build_sqlite() {
	cd "$work/sqlite3"
	# The amalgamation is generated natively (lemon, mksourceid, tclsh).
	mkdir -p native
	cd native
	../configure --disable-tcl >configure.log 2>&1 || { cat configure.log >&2; exit 1; }
	make -j"$jobs" sqlite3.c >make.log 2>&1 || { tail -n 40 make.log >&2; exit 1; }
	# Threads, extension loading, WAL and mmap do not exist in the sandbox;
	# the default "unix" VFS locks connections of one call against each
	# other in its own tables (sqlite-wasi.h says why that is all a guest
	# needs); temporary tables live in memory.
	$wasm_cc -O2 -g0 $repro_cflags -c sqlite3.c -o sqlite3.o \
		-include "$here/wasi/sqlite-wasi.h" \
		-DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION -DSQLITE_OMIT_WAL \
		-DSQLITE_MAX_MMAP_SIZE=0 -DSQLITE_TEMP_STORE=3 -DSQLITE_ENABLE_MATH_FUNCTIONS \
		-D_WASI_EMULATED_MMAN -D_WASI_EMULATED_GETPID 2>cc.log || { cat cc.log >&2; exit 1; }
	llvm-ar rcs "$prefix/lib/libsqlite3.a" sqlite3.o
	cp sqlite3.h sqlite3ext.h "$prefix/include/"
	phase "sqlite3 done"
}

build_xz() {
	cd "$work/xz-utils"
	# liblzma alone, single-threaded. Its shared header declares a signal
	# mask helper for the xz program, and WASI has no signals.
	sed -i 's/^#if !(defined(_WIN32) \&\& !defined(__CYGWIN__))$/& \&\& !defined(__wasi__)/' src/common/mythread.h
	grep -q '!defined(__CYGWIN__)) && !defined(__wasi__)$' src/common/mythread.h ||
		{ echo "build.sh: xz-utils' mythread.h changed; update build.sh" >&2; exit 1; }
	CC=$wasm_cc CFLAGS="-O2 -g0" ./configure --host=wasm32-unknown-wasi --prefix="$prefix" \
		--enable-static --disable-shared --disable-threads --disable-xz --disable-xzdec \
		--disable-lzmadec --disable-lzmainfo --disable-lzma-links --disable-scripts \
		--disable-doc --disable-nls --disable-rpath >configure.log 2>&1 ||
		{ cat configure.log >&2; exit 1; }
	make -j"$jobs" -C src/liblzma >make.log 2>&1 || { tail -n 40 make.log >&2; exit 1; }
	cp src/liblzma/.libs/liblzma.a "$prefix/lib/"
	cp -r src/liblzma/api/lzma.h src/liblzma/api/lzma "$prefix/include/"
	phase "liblzma done"
}

build_bzip2() {
	cd "$work/bzip2"
	# The library's sources, as bzip2's own Makefile lists them (OBJS).
	local f objs=()
	for f in blocksort huffman crctable randtable compress decompress bzlib; do
		$wasm_cc -O2 -g0 -D_FILE_OFFSET_BITS=64 -c "$f.c" -o "$f.o" 2>>cc.log || { cat cc.log >&2; exit 1; }
		objs+=("$f.o")
	done
	llvm-ar rcs "$prefix/lib/libbz2.a" "${objs[@]}"
	cp bzlib.h "$prefix/include/"
	phase "libbz2 done"
}

# build_tz compiles musl's time zone code (src/time/__tz.c: TZ, tzset,
# TZif files, POSIX rules) from wasi-libc's source, where it sits behind
# __wasilibc_unmodified_upstream, with wasi/tzfile.c for the file reading it
# needs, into $prefix/lib/tz.o and tzfile.o. Linked before libc (through
# configure's LIBS), they take the place of wasi-libc's stub (__tz.o,
# always UTC). Changed: musl's setuid "secure" mode, which WASI's libc
# struct lacks, is off, as for any unprivileged process; strftime's %Z
# prints tm_zone as glibc does (wasi/tzfile.c).
build_tz() {
	local musl=$work/wasi-libc/libc-top-half/musl d=$work/tz
	mkdir -p "$d"
	# unifdef exits 1 when it changed the file, 2 on trouble.
	unifdef_upstream() { unifdef -D__wasilibc_unmodified_upstream -o "$2" "$1" || (($? == 1)); }
	unifdef_upstream "$musl/src/time/__tz.c" "$d/tz.c"
	unifdef_upstream "$musl/src/time/time_impl.h" "$d/time_impl.h"
	sed -i 's/if (!libc\.secure || /if (1 || /' "$d/tz.c"
	if grep -q 'libc\.secure' "$d/tz.c" || ! grep -q 'if (1 || !strcmp(s, "/etc/localtime"))' "$d/tz.c"; then
		echo "build.sh: wasi-libc's __tz.c changed; update build_tz" >&2
		exit 1
	fi
	# musl's own build flags: C99 with POSIX names only (its static index
	# would clash with BSD's index()), its internal headers first.
	# __tm_to_tzname gets another name: wasi/tzfile.c says why.
	$wasm_cc -std=c99 -D_XOPEN_SOURCE=700 -D_WASI_EMULATED_MMAN -O2 -g0 $repro_cflags \
		-D__tm_to_tzname=__musl_tm_to_tzname \
		-I"$d" -I"$musl/src/include" -I"$musl/src/internal" -I"$musl/arch/wasm32" \
		-I"$musl/arch/generic" -c "$d/tz.c" -o "$prefix/lib/tz.o" 2>"$d/cc.log" ||
		{ cat "$d/cc.log" >&2; exit 1; }
	$wasm_cc -O2 -g0 $repro_cflags -Wall -Werror -c "$here/wasi/tzfile.c" -o "$prefix/lib/tzfile.o" ||
		exit 1
	phase "musl time zone code done"
}

# build_tzdata compiles the time zones as Debian's tzdata package does
# (debian/rules: tzdata.zi with the backzone data, then zic without leap
# seconds), into $work/zoneinfo. Links become copies: zip has no links.
build_tzdata() {
	cd "$work/tzdata"
	make AWK=awk BACKWARD=backward PACKRATDATA=backzone PACKRATLIST=zone.tab VERSION_DEPS= \
		tzdata.zi >make.log 2>&1 || { tail -n 40 make.log >&2; exit 1; }
	mkdir -p "$work/zoneinfo"
	/usr/sbin/zic -d "$work/zoneinfo" -L /dev/null tzdata.zi >zic.log 2>&1 ||
		{ cat zic.log >&2; exit 1; }
	# zoneinfo.available_timezones() reads zone.tab-like files only to
	# skip them; tzdata.zi and the tables are what other readers expect.
	cp tzdata.zi zone.tab zone1970.tab iso3166.tab "$work/zoneinfo/"
	[[ -f $work/zoneinfo/America/New_York && -f $work/zoneinfo/UTC ]] ||
		{ echo "build.sh: zic did not produce America/New_York and UTC" >&2; exit 1; }
	phase "tzdata $(<version) done"
}

# build_numpy compiles numpy's extension modules for wasm32-wasi into
# $work/numpy-build: libnumpy.a and numpy_inittab.o, which python.wasm links
# (the interpreter has no dynamic loading), after CPython's configure (it
# needs pyconfig.h). numpy/extensions.py runs numpy's own build_src with the
# wasm compiler, so numpy's configuration checks (config.h) and code
# generators run as in a native build; numpy/compile.py compiles what it
# describes. No BLAS: numpy's own lapack_lite and loops serve linear algebra.
build_numpy() {
	local np=$work/numpy out=$work/numpy-build
	local py_includes="-I$pysrc/Include -I$pysrc/builddir/wasi"
	mkdir -p "$out"
	cd "$np"
	# BLAS/LAPACK/ATLAS=None: numpy.distutils would otherwise look for the
	# build machine's libraries.
	CC=$wasm_cc CPPFLAGS="$py_includes" SETUPTOOLS_USE_DISTUTILS=stdlib BLAS=None LAPACK=None ATLAS=None \
		/usr/bin/python3.11 "$here/numpy/extensions.py" "$out/extensions.json" >"$out/build_src.log" 2>&1 ||
		{ tail -n 40 "$out/build_src.log" >&2; echo "build.sh: numpy's build_src failed" >&2; exit 1; }
	phase "numpy: sources generated"
	# Compiled as numpy.distutils compiles (-DNDEBUG -fwrapv, the building
	# Python's flags), at -O2.
	# shellcheck disable=SC2086
	/usr/bin/python3.11 "$here/numpy/compile.py" "$out/extensions.json" "$np" "$out" "$jobs" \
		clang --target=wasm32-wasi -O2 -g0 -DNDEBUG -fwrapv $repro_cflags $py_includes \
		>"$out/compile.log" 2>&1 || { tail -n 60 "$out/compile.log" >&2; exit 1; }
	# shellcheck disable=SC2086
	$wasm_cc -O2 -g0 $repro_cflags $py_includes -c "$out/numpy_inittab.c" -o "$out/numpy_inittab.o" || exit 1
	phase "numpy: $(tail -n 1 "$out/compile.log")"
}

# numpy_python writes numpy's Python package, as the guest imports it, into
# $stage: numpy.zip, the .py files of the source tree with those build_src
# generated, which bundle.sh compiles and adds to the bundled packages; and
# numpy-tests.zip, numpy's test suites, which only numpy's own test run
# (numpy/testsuite) uses. Left out: f2py and numpy.distutils, which build
# native extensions (nothing the sandbox can run), and the C sources.
numpy_python() {
	local np=$work/numpy tree=$work/numpy-python tests=$work/numpy-tests
	mkdir -p "$tree" "$tests"
	(cd "$np" && find numpy -name '*.py' ! -path 'numpy/f2py/*' ! -path 'numpy/distutils/*' -print0 |
		xargs -0 cp --parents -t "$tree")
	cp "$np"/build/src.*/numpy/__config__.py "$tree/numpy/__config__.py"
	# The tests, apart; numpy.testing stays in the package.
	(cd "$tree" && find numpy -type d -name tests -prune -print0 | xargs -0 cp -r --parents -t "$tests")
	find "$tree/numpy" -depth -type d -name tests -exec rm -rf {} +
	(cd "$np" && find numpy -path '*/tests/*' -type f ! -name "*.py" -print0 | xargs -0 cp --parents -t "$tests")
	zip_tree "$tree" "$stage/numpy.zip" none
	zip_tree "$tests" "$stage/numpy-tests.zip" none
}

# zlib and sqlite3 build while CPython's larger source tree unpacks and is
# patched: on two cores that overlap saves most of a minute.
phase "unpacking; zlib ${src_version[zlib]}; sqlite3 ${src_version[sqlite3]}"
(extract python3.11) &
extract_pid=$!
extract zlib
extract sqlite3
extract xz-utils
extract bzip2
extract tzdata
extract_linked wasi-libc
extract numpy
for p in "$here"/numpy/patches/*.patch; do
	patch -s -p1 -F0 -N --no-backup-if-mismatch -d "$work/numpy" <"$p" >"$work/patch-numpy.log" 2>&1 ||
		{ cat "$work/patch-numpy.log" >&2; echo "build.sh: numpy/patches/$(basename "$p") does not apply" >&2; exit 1; }
done
(build_zlib) &
zlib_pid=$!
(build_sqlite) &
sqlite_pid=$!
(build_xz) &
xz_pid=$!
(build_bzip2 && build_tzdata && build_tz) &
bzip2_pid=$!
wait "$extract_pid"
pysrc=$work/python3.11
(
	cd "$pysrc"
	# See the stack comment at the top: with 8 MiB of stack the native
	# parser depth applies.
	sed -i "s/^#  define MAXSTACK 4000\$/#  define MAXSTACK $parser_maxstack/" Parser/parser.c
	grep -q "^#  define MAXSTACK $parser_maxstack\$" Parser/parser.c
	if grep -q "define MAXSTACK 4000" Parser/parser.c; then
		echo "build.sh: Parser/parser.c still has MAXSTACK 4000" >&2
		exit 1
	fi
	grep -q 'stack-size=524288 -Wl,--stack-first -Wl,--initial-memory=10485760' configure ||
		{ echo "build.sh: configure's WASI link flags changed; update build.sh" >&2; exit 1; }
	sed -i "s/stack-size=524288 -Wl,--stack-first -Wl,--initial-memory=10485760/stack-size=$stack_size -Wl,--stack-first -Wl,--initial-memory=$initial_memory/" configure
	touch Modules/Setup.local
	# time.thread_time: CPython leaves it out on WASI, whose libc has the
	# thread CPU clock; the runtime's clock_time_get serves it (wasi.go).
	sed -i '/defined(CLOCK_PROCESS_CPUTIME_ID) && \\$/{n;s/^      !defined(__EMSCRIPTEN__) && !defined(__wasi__)$/      !defined(__EMSCRIPTEN__)/}' Modules/timemodule.c
	if grep -q '!defined(__EMSCRIPTEN__) && !defined(__wasi__)$' Modules/timemodule.c; then
		echo "build.sh: Modules/timemodule.c still leaves thread_time out on WASI" >&2
		exit 1
	fi
	# time.tzset: wasi-libc's <time.h> hides tzset's declaration, because
	# its library has none; build_tz links musl's.
	sed -i 's|^static int init_timezone(PyObject \*module);$|&\n#ifdef __wasi__\nvoid tzset(void);\n#endif|' Modules/timemodule.c
	grep -q '^void tzset(void);$' Modules/timemodule.c ||
		{ echo "build.sh: could not declare tzset in Modules/timemodule.c" >&2; exit 1; }
)
wait "$zlib_pid"
wait "$sqlite_pid"
wait "$xz_pid"
wait "$bzip2_pid"
phase "cpython ${src_version[python3.11]}: configure"
# Profile-guided optimisation: pgo/cpython.proftext.xz, a native training
# run's profile (pgo/profile.sh says how it is made and why it is
# committed), steers clang's inlining and code layout for CPython's
# objects. It goes in at make time, so configure's tests and sysconfig's
# record do not see it.
pgo_profile=$work/cpython.profdata
xz -dc "$here/pgo/cpython.proftext.xz" >"$work/cpython.proftext"
llvm-profdata-14 merge -o "$pgo_profile" "$work/cpython.proftext"
if [[ $(<"$here/pgo/TRAINED_ON") != "${src_version[python3.11]}" ]]; then
	echo "build.sh: the CPython profile was trained on python3.11 $(<"$here/pgo/TRAINED_ON")," \
		"this is ${src_version[python3.11]}: functions that changed go unoptimised;" \
		"run runtimes/python/pgo/profile.sh and commit pgo/" >&2
fi
pgo_cflags="-fprofile-instr-use=$pgo_profile -Wno-profile-instr-out-of-date -Wno-profile-instr-unprofiled"
(
	mkdir -p "$pysrc/builddir/wasi"
	cd "$pysrc/builddir/wasi"
	# --with-pymalloc: CPython's small-object allocator, as in native
	# builds (configure leaves it out on WASI, where every int and float
	# then goes through wasi-libc's dlmalloc): 15-20 % off the integer and
	# string/dict snippets of `make bench` (RATIONALE.md, "Interpreter
	# speed").
	# CFLAGS stays free of -O: with an optimisation level on the link
	# command, clang runs binaryen's wasm-opt (when installed), which breaks
	# configure's sqlite link test. -O2 goes in through CFLAGS_NODIST,
	# which comes last on the compile line.
	run_configure() {
		CONFIG_SITE=$pysrc/Tools/wasm/config.site-wasm32-wasi \
			PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH= \
			CC=$wasm_cc CPP="$wasm_cc -E" \
			CFLAGS="-g0" CFLAGS_NODIST="-O2 -DPy_DEFAULT_RECURSION_LIMIT=$recursion_limit" \
			ZLIB_CFLAGS="-I$prefix/include" ZLIB_LIBS="-L$prefix/lib -lz" \
			LIBSQLITE3_CFLAGS="-I$prefix/include" \
			LIBSQLITE3_LIBS="-L$prefix/lib -lsqlite3 -lwasi-emulated-mman" \
			LIBLZMA_CFLAGS="-I$prefix/include" LIBLZMA_LIBS="-L$prefix/lib -llzma" \
			BZIP2_CFLAGS="-I$prefix/include" BZIP2_LIBS="-L$prefix/lib -lbz2" \
			LIBS="$prefix/lib/tz.o $prefix/lib/tzfile.o" \
			../../configure --host=wasm32-unknown-wasi --build="$(../../config.guess)" \
			--with-build-python=/usr/bin/python3.11 --disable-test-modules \
			--with-pymalloc \
			ac_cv_working_tzset=yes \
			--cache-file=config.cache >configure.log 2>&1
	}
	# configure runs some 900 compile-and-link tests one after another,
	# the longest step of a cold build. Its answers depend only on the
	# sources, the toolchain and the invocation, so they are kept (keyed by
	# those) for the next build after a recipe change.
	conf_cache=$cache_root/configure-$(
		{
			printf '%s\n' "${src_version[python3.11]}" "${src_version[zlib]}" "${src_version[sqlite3]}" "$toolchain" "$prefix"
			printf '%s\n' "${src_version[xz-utils]}" "${src_version[bzip2]}"
			declare -f run_configure
		} | sha256sum | cut -c1-16
	).cache
	if [[ -f $conf_cache ]]; then
		cp "$conf_cache" config.cache
		run_configure || { rm -f config.cache; run_configure; } ||
			{ tail -n 60 configure.log >&2; exit 1; }
	else
		run_configure || { tail -n 60 configure.log >&2; exit 1; }
	fi
	cp config.cache "$conf_cache.tmp"
	mv "$conf_cache.tmp" "$conf_cache"
	(build_numpy) &
	numpy_pid=$!
	phase "cpython: make"
	# sys.version's build date is the Debian changelog's, as in Debian's
	# own build, instead of the compiler's clock.
	changed=$(dpkg-parsechangelog -l "$pysrc/debian/changelog" -S Date)
	# Both makes below compile CPython's objects the same way.
	make_vars=(EXTRA_CFLAGS="$repro_cflags" CFLAGS_NODIST="$pgo_cflags"
		BUILD_DATE="$(LC_ALL=C date -u +'%b %e %Y' -d "$changed")"
		BUILD_TIME="$(LC_ALL=C date -u +'%H:%M:%S' -d "$changed")")
	make -j"$jobs" "${make_vars[@]}" >make.log 2>&1 || { tail -n 60 make.log >&2; exit 1; }
	# capsule's module: the objects of python.wasm linked as a WASI reactor
	# with reactor/capsule.c's entry points instead of CPython's main(), so that
	# the interpreter's start-up and the run are separate calls (capsule.c
	# says why).
	cat >capsule.mk <<'MK'
include Makefile
Programs/capsule.o: $(CAPSULE_C)
	$(MAINCC) -c $(PY_CORE_CFLAGS) -o $@ $(CAPSULE_C)
python-reactor.wasm: Programs/capsule.o $(LINK_PYTHON_DEPS)
	$(LINKCC) $(PY_CORE_LDFLAGS) $(LINKFORSHARED) -mexec-model=reactor -o $@ Programs/capsule.o $(LINK_PYTHON_OBJS) $(LIBS) $(MODLIBS) $(SYSLIBS)
python-numpy-reactor.wasm: Programs/capsule.o $(LINK_PYTHON_DEPS)
	$(LINKCC) $(PY_CORE_LDFLAGS) $(LINKFORSHARED) -mexec-model=reactor -o $@ Programs/capsule.o $(NUMPY_LIBS) $(LINK_PYTHON_OBJS) $(LIBS) $(MODLIBS) $(SYSLIBS)
MK
	make -f capsule.mk "${make_vars[@]}" CAPSULE_C="$here/reactor/capsule.c" \
		python-reactor.wasm >>make.log 2>&1 || { tail -n 60 make.log >&2; exit 1; }
	wait "$numpy_pid" || { echo "build.sh: the numpy build failed" >&2; exit 1; }
	# The numpy variant's module: the same interpreter with numpy's
	# modules, and wasi-libc's printf of long double (numpy prints its
	# float128; the plain printf aborts on it). A module of its own, so that
	# a plain worker does not load, map and restore numpy's code and data
	# (RATIONALE.md, "numpy").
	numpy_libs="$work/numpy-build/numpy_inittab.o $work/numpy-build/libnumpy.a -lc-printscan-long-double"
	make -f capsule.mk "${make_vars[@]}" CAPSULE_C="$here/reactor/capsule.c" NUMPY_LIBS="$numpy_libs" \
		python-numpy-reactor.wasm >>make.log 2>&1 || { tail -n 60 make.log >&2; exit 1; }
	# A module whose dependency configure did not find is silently left
	# out; fail instead.
	for mod in zlib _sqlite3 _lzma _bz2 _decimal _json _sha256 _blake2 _sha3 math _datetime _struct; do
		grep -q "PyInit_$mod(void)" Modules/config.c ||
			{ echo "build.sh: module $mod was not built" >&2; exit 1; }
	done
)
pybuild=$pysrc/builddir/wasi
stage=$work/stage
mkdir -p "$stage"
# What the binary embeds: each module without its data segments, and the
# data apart (runtimes/internal/snapshot says why).
for module in python python-numpy; do
	llvm-strip --strip-all -o "$work/$module.wasm" "$pybuild/$module-reactor.wasm"
	(cd "$repo" && go run ./runtimes/internal/snapshot/prepare \
		-in "$work/$module.wasm" -out "$stage/$module.snap.wasm" -data "$stage/$module.data")
done

cpython_version=$(sed -n 's/^#define PY_VERSION[[:space:]]*"\(.*\)"/\1/p' "$pysrc/Include/patchlevel.h")
{
	echo "cpython=$cpython_version"
	echo "debian=${src_version[python3.11]}"
	echo "zlib=${src_version[zlib]}"
	echo "sqlite3=${src_version[sqlite3]}"
	echo "xz-utils=${src_version[xz-utils]}"
	echo "bzip2=${src_version[bzip2]}"
	echo "tzdata=${src_version[tzdata]}"
	echo "numpy=${src_version[numpy]}"
} >"$stage/VERSION"

phase "standard library"
lib=$work/lib
cp -a "$pysrc/Lib" "$lib"
# Tests, the IDE, Tk and the pip bootstrapper are dead weight in a sandbox
# without a display or network.
rm -rf "$lib"/{test,idlelib,tkinter,turtledemo,ensurepip,site-packages} "$lib/turtle.py"
find "$lib" -depth -type d \( -name test -o -name tests -o -name idle_test -o -name __pycache__ \) \
	-exec rm -rf {} +
sysconfigdata=$(find "$pybuild/build" -name '_sysconfigdata__wasi_wasm32-wasi.py' | head -n 1)
[[ -n $sysconfigdata ]] || { echo "build.sh: no _sysconfigdata__wasi_wasm32-wasi.py" >&2; exit 1; }
# The build variables name the build tree; they get the fixed names the
# compiler flags use, so the zip does not depend on where it was built. The
# file is written anew as sysconfig writes it (pprint), because its line
# breaks depend on the length of the paths.
/usr/bin/python3.11 - "$sysconfigdata" "$lib/_sysconfigdata__wasi_wasm32-wasi.py" "$work" "$here" <<'PY'
import pprint, sys
src, dst, work, here = sys.argv[1:5]
ns = {}
exec(open(src, encoding="utf8").read(), ns)
def fixed(v):
    return v.replace(work, "/capsule-build").replace(here, "/capsule-recipe") if isinstance(v, str) else v
build_time_vars = {k: fixed(v) for k, v in ns["build_time_vars"].items()}
with open(dst, "w", encoding="utf8") as f:
    f.write("# system configuration generated and used by the sysconfig module\n")
    f.write("build_time_vars = ")
    pprint.pprint(build_time_vars, stream=f)
PY
# Debian's sysconfig patch looks the module up without the OS part.
cp "$lib/_sysconfigdata__wasi_wasm32-wasi.py" "$lib/_sysconfigdata__wasm32-wasi.py"
# The zip is laid out as the library directory itself: the runtime serves
# its entries as a read-only directory tree at /usr/local/lib/python3.11
# (CPython's ordinary path finder, no zipimport: reading a zip's directory
# in Python at every start-up costs tens of milliseconds under wasm).
# Unchecked-hash .pyc files in __pycache__ are used without looking at
# timestamps; the .py files stay for traceback source lines.
/usr/bin/python3.11 -m compileall -q -j "$jobs" --invalidation-mode unchecked-hash \
	-d /usr/local/lib/python3.11 "$lib" >"$work/compileall.log" 2>&1 ||
	{ tail -n 40 "$work/compileall.log" >&2; exit 1; }
zip_tree "$lib" "$stage/python311.zip" .pyc
# The time zones are small (about 600 KB) and read whole: all stored.
zip_tree "$work/zoneinfo" "$stage/tzdata.zip" all

cp -a "$work/sources" "$stage/sources"
# Every package fetched must have been unpacked, and so declared.
for pkg in "${!src_version[@]}"; do
	[[ -f $stage/sources/$pkg/SOURCE ]] ||
		{ echo "build.sh: $pkg was fetched but not unpacked with extract" >&2; exit 1; }
done
# The hashes of what the binary embeds: every file staged so far.
(cd "$stage" && find . -maxdepth 1 -type f -printf '%f\n' | LC_ALL=C sort | xargs sha256sum) >"$work/ASSETS"
mv "$work/ASSETS" "$stage/ASSETS"
# After ASSETS: the binary embeds numpy's Python files through the bundle.
numpy_python
keep_outputs "$stage" py-
echo "build.sh: built in $((SECONDS - start)) s; dist/ and $out are up to date"
