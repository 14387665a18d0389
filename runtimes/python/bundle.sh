#!/usr/bin/env bash
# bundle.sh builds the pure-Python packages that capsule's Python runtime
# bundles (sympy, networkx, jinja2, ...: the list below), from Debian
# bookworm's binary packages. It writes, into runtimes/python/dist/bundle/:
#
#   packages.zip    their dist-packages trees, merged with numpy's Python
#                   package (dist/numpy.zip, which build.sh builds with
#                   numpy's extension modules), without tests,
#                   benchmarks or compiled extensions, patched where
#                   bundle-patches/ says why, every module with its
#                   bytecode (.pyc in __pycache__, for our interpreter) and
#                   its source (for tracebacks), all compressed; the runtime
#                   serves it read-only at /usr/lib/python3/dist-packages
#   ASSETS          its SHA-256 (sha256sum format, named as in dist/), which
#                   the binary carries and `capsule doctor` checks
#   sources/PKG/    one directory per Debian package: SOURCE (name,
#                   version, the .deb and its SHA-256, licence, the modules
#                   it provides) and debian-copyright, its licence text
#   KEY             the cache key the files were built for
#
# It runs after build.sh (the Makefile's python-wasm step): the bytecode is
# compiled by the machine's python3.11, which must have the same bytecode
# magic number as the interpreter build.sh built (checked on its standard
# library).
#
# The result is cached under ${CAPSULE_BUILD_CACHE:-$HOME/.cache/capsule-build}
# /python-bundle/<key>/, where the key covers the package versions, the
# compiling python3.11's version and a hash of this recipe.
#
# Usage: runtimes/python/bundle.sh [--force]
#   --force   rebuild even when dist/bundle or the cache already match the key.
#
# Environment: CAPSULE_BUILD_CACHE (cache root), CAPSULE_BUILD_KEEP=1 (keep
# the build tree for inspection), CAPSULE_BUILD_JOBS (parallel compiles,
# default nproc).
#
# The output is reproducible: sorted names, fixed dates and modes in the
# zip, no build paths in the bytecode, and a fixed hash seed for the
# compiler (see "Reproducibility" in RATIONALE.md).
set -euo pipefail
# Python's set ordering (frozenset constants in .pyc) must not depend on a
# random hash seed.
export PYTHONHASHSEED=0

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=buildlib.sh
. "$here/buildlib.sh"
dist=$here/dist/bundle
cache_root=${CAPSULE_BUILD_CACHE:-$HOME/.cache/capsule-build}/python-bundle
jobs=${CAPSULE_BUILD_JOBS:-$(nproc)}
parse_args "$@"

# Where the guest finds the packages (python.go mounts the zip there):
# Debian's own place for them.
guest_dir=/usr/lib/python3/dist-packages

# --- The packages -----------------------------------------------------------
#
# Each Debian binary package with the licence (SPDX) of its Python code. For
# a machine-readable debian/copyright the build checks it against the
# licence of its "Files: *" stanza; the others (PyYAML, Jinja2, MarkupSafe,
# html5lib) state their licence in prose, as read when the package was
# added here. python3-six: what python3-dateutil and python3-html5lib need.
# Left out although Debian names them as dependencies: python3-pkg-resources
# (networkx and chardet do not import it; pytz only without the system time
# zones, which the runtime has), python3-jdcal and python3-lxml (openpyxl
# uses neither: lxml only when importable, and it is a C extension).
bundled=(
	"python3-sympy BSD-3-Clause"
	"python3-mpmath BSD-3-Clause"
	"python3-networkx BSD-3-Clause"
	"python3-dateutil BSD-3-Clause"
	"python3-tz MIT"
	"python3-yaml MIT"
	"python3-tomli MIT"
	"python3-markdown BSD-3-Clause"
	"python3-jinja2 BSD-3-Clause"
	"python3-markupsafe BSD-3-Clause"
	"python3-bs4 MIT"
	"python3-soupsieve MIT"
	"python3-html5lib MIT"
	"python3-webencodings BSD-3-Clause"
	"python3-openpyxl MIT"
	"python3-et-xmlfile MIT"
	"python3-pypdf BSD-3-Clause"
	"python3-tabulate MIT"
	"python3-more-itertools MIT"
	"python3-sortedcontainers Apache-2.0"
	"python3-toolz BSD-3-Clause"
	"python3-attr MIT"
	"python3-pyparsing MIT"
	"python3-chardet LGPL-2.1-or-later"
	"python3-png MIT"
	"python3-six MIT"
)

# What is dropped from the trees, besides compiled extensions (*.so: the
# sandbox runs WebAssembly only; PyYAML and MarkupSafe fall back to their
# pure-Python code without them) and type stubs (*.pyi): test suites and
# benchmarks; sympy's Rubi integrator (about half of sympy's bytecode),
# which does nothing without matchpy, a package Debian does not have; and
# _yaml, PyYAML's stand-in for its compiled extension, which only imports
# that extension; isympy.py, the isympy command's script.
drop_dirs=(tests test benchmarks)
drop_paths=(sympy/integrals/rubi sympy/parsing/autolev/test-examples _yaml isympy.py)

# python3.11 compiles the bytecode, patch applies bundle-patches/ (both
# build.sh's too, which installs them).
for p in python3.11 patch; do
	if [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) != ii* ]]; then
		echo "bundle.sh: $p is missing; install it with: apt-get install -y --no-install-recommends $p" >&2
		exit 1
	fi
done
stdlib_zip=$here/dist/python311.zip
numpy_zip=$here/dist/numpy.zip
for f in "$stdlib_zip" "$numpy_zip"; do
	if [[ ! -f $f ]]; then
		echo "bundle.sh: $f is missing; run runtimes/python/build.sh first" >&2
		exit 1
	fi
done

mkdir -p "$cache_root"
# One build at a time per cache: concurrent runs share the apt state, the
# downloads and the output directory.
exec 9>"$cache_root/.lock"
flock 9

# --- Bytecode: ours ---------------------------------------------------------
#
# CPython loads a .pyc only if its magic number is the interpreter's own.
magic=$(/usr/bin/python3.11 - "$stdlib_zip" <<'PY'
import importlib.util, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    pyc = next(n for n in z.namelist() if n.endswith(".pyc"))
    ours = z.read(pyc)[:4]
if ours != importlib.util.MAGIC_NUMBER:
    sys.exit("bundle.sh: /usr/bin/python3.11 writes bytecode with magic number %s, the runtime's "
             "interpreter wants %s (%s): install the python3.11 the runtime is built from"
             % (importlib.util.MAGIC_NUMBER.hex(), ours.hex(), pyc))
print(ours.hex())
PY
)

# --- The packages through a private apt state -------------------------------
aptdir=$cache_root/apt
apt_state "$aptdir" deb
debdir=$cache_root/debs
mkdir -p "$debdir"

# choose sets version[PKG] and deb_sha256[PKG] for every bundled package:
# its newest version in the signed index, and the SHA-256 the index gives
# that version's .deb. (One apt-cache call: each loads the whole index.)
declare -A version deb_sha256
choose() {
	local entry pkg v sum versions=() index
	index=$(apt-cache "${apt_opts[@]}" show "${bundled[@]%% *}" 2>/dev/null |
		awk '/^Package:/{p=$2} /^Version:/{v=$2} /^SHA256:/{print p, v, $2}')
	for entry in "${bundled[@]}"; do
		pkg=${entry%% *}
		mapfile -t versions < <(awk -v p="$pkg" '$1==p {print $2}' <<<"$index" | sort -u)
		if ((${#versions[@]} == 0)); then
			echo "bundle.sh: no binary package $pkg in the apt sources" >&2
			exit 1
		fi
		mapfile -t versions < <(newest_first "${versions[@]}")
		v=${versions[0]}
		sum=$(awk -v p="$pkg" -v v="$v" '$1==p && $2==v {print $3; exit}' <<<"$index")
		[[ $sum =~ ^[0-9a-f]{64}$ ]] ||
			{ echo "bundle.sh: the apt index gives no SHA-256 for $pkg $v" >&2; exit 1; }
		version[$pkg]=$v
		deb_sha256[$pkg]=$sum
	done
}

# cached_deb PKG prints the path of the chosen version's .deb if a file
# with the index's SHA-256 is in $debdir.
cached_deb() {
	local pkg=$1 v=${version[$1]} f
	for f in "$debdir/${pkg}_${v#*:}_"*.deb; do
		if [[ -f $f && $(sha256sum "$f" | cut -d' ' -f1) == "${deb_sha256[$pkg]}" ]]; then
			echo "$f"
			return 0
		fi
	done
	return 1
}

# download_debs downloads the chosen versions not in $debdir yet, in one
# apt call (which checks each against the index; one call, since each
# loads the whole index).
download_debs() {
	local entry pkg missing=()
	for entry in "${bundled[@]}"; do
		pkg=${entry%% *}
		cached_deb "$pkg" >/dev/null || missing+=("$pkg=${version[$pkg]}")
	done
	((${#missing[@]})) || return 0
	(cd "$debdir" && apt-get "${apt_opts[@]}" -qq download "${missing[@]}") >"$aptdir/download.log" 2>&1 ||
		{ cat "$aptdir/download.log" >&2; exit 1; }
}

# deb_file PKG prints the path of the chosen version's .deb, which
# download_debs fetched.
deb_file() {
	cached_deb "$1" || {
		echo "bundle.sh: apt downloaded $1 ${version[$1]}, but no file with the index's SHA-256 ${deb_sha256[$1]}" >&2
		exit 1
	}
}

choose

# --- Cache key --------------------------------------------------------------
recipe_hash=$(cd "$here" && cat bundle.sh buildlib.sh bundle-patches/*.patch | sha256sum | cut -c1-16)
key=$(
	for entry in "${bundled[@]}"; do
		echo "${entry%% *}=${version[${entry%% *}]}"
	done
	echo "python3.11=$(dpkg-query -W -f='${Version}' python3.11) magic=$magic"
	echo "numpy=$(sha256sum "$numpy_zip" | cut -d' ' -f1)"
)
key="bundle-$(sha256sum <<<"$key" | cut -c1-16)_r-$recipe_hash"
out=$cache_root/$key
outputs=(packages.zip ASSETS sources)

# Nothing to build when dist/bundle or the cache has this key's outputs.
((force)) || dist_from_cache

# --- Build ------------------------------------------------------------------
new_work
lib=$work/lib
stage=$work/stage
mkdir -p "$lib" "$stage/sources"

# unpack PKG LICENCE extracts the package, moves its dist-packages tree into
# $lib and records it in $stage/sources/PKG.
unpack() {
	local pkg=$1 licence=$2 deb root tree name modules=() d
	deb=$(deb_file "$pkg")
	root=$work/deb/$pkg
	mkdir -p "$root"
	dpkg-deb -x "$deb" "$root"
	tree=$root$guest_dir
	[[ -d $tree ]] || { echo "bundle.sh: $pkg has no $guest_dir" >&2; exit 1; }
	if [[ -n $(find "$tree" ! -type f ! -type d) ]]; then
		echo "bundle.sh: $pkg has links or special files in $guest_dir:" >&2
		find "$tree" ! -type f ! -type d >&2
		exit 1
	fi
	for name in $(cd "$tree" && LC_ALL=C ls); do
		if [[ -e $lib/$name ]]; then
			echo "bundle.sh: $pkg and an earlier package both provide $name" >&2
			exit 1
		fi
		mv "$tree/$name" "$lib/$name"
		case $name in
		# Metadata, and what is dropped below.
		*.dist-info | *.egg-info | _yaml | isympy.py) ;;
		*.py) modules+=("${name%.py}") ;;
		*) [[ -d $lib/$name ]] && modules+=("$name") ;;
		esac
	done
	((${#modules[@]})) || { echo "bundle.sh: $pkg provides no module" >&2; exit 1; }
	d=$stage/sources/$pkg
	mkdir -p "$d"
	cp "$root/usr/share/doc/$pkg/copyright" "$d/debian-copyright" ||
		{ echo "bundle.sh: $pkg has no /usr/share/doc/$pkg/copyright" >&2; exit 1; }
	check_licence "$pkg" "$licence" "$d/debian-copyright"
	{
		echo "name=$pkg"
		echo "kind=debian-bundled"
		echo "version=${version[$pkg]}"
		echo "source=$(dpkg-deb -f "$deb" Source | cut -d' ' -f1)"
		echo "deb=$(basename "$deb")"
		echo "deb_sha256=${deb_sha256[$pkg]}"
		echo "homepage=$(dpkg-deb -f "$deb" Homepage)"
		echo "license=$licence"
		echo "license_from=$licence_from"
		echo "modules=$(IFS=,; echo "${modules[*]}")"
	} >"$d/SOURCE"
}

# check_licence PKG LICENCE COPYRIGHT checks LICENCE against a
# machine-readable debian/copyright's "Files: *" stanza, and sets
# licence_from to where the licence in SOURCE comes from.
check_licence() {
	local said
	said=$(/usr/bin/python3.11 - "$3" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
if not re.match(r"Format:\s*https?://(www\.)?debian\.org/doc/packaging-manuals/copyright-format/", text):
    sys.exit(0)
for stanza in re.split(r"\n\s*\n", text):
    if re.search(r"^Files:\s*\*\s*$", stanza, re.M):
        m = re.search(r"^License:\s*(\S+)", stanza, re.M)
        print(m.group(1) if m else "")
        break
PY
	)
	if [[ -z $said ]]; then
		licence_from="recipe"
		return
	fi
	licence_from="debian-copyright"
	# Debian's short names for the SPDX ones used above.
	local spdx
	case ${said,,} in
	expat | mit | mit-style) spdx=MIT ;;
	bsd-3-clause) spdx=BSD-3-Clause ;;
	apache-2.0) spdx=Apache-2.0 ;;
	lgpl-2.1+) spdx=LGPL-2.1-or-later ;;
	*) spdx=$said ;;
	esac
	if [[ $spdx != "$2" ]]; then
		echo "bundle.sh: $1's debian/copyright gives its files the licence $said, the recipe says $2;" \
			"check the licence and update the list in bundle.sh" >&2
		exit 1
	fi
}

phase "downloading"
download_debs
phase "unpacking ${#bundled[@]} packages"
for entry in "${bundled[@]}"; do
	unpack "${entry%% *}" "${entry#* }"
done

# numpy's Python package: build.sh records its source (numpy links C into
# the interpreter), so it has no record here.
(cd "$lib" && /usr/bin/python3.11 -m zipfile -e "$numpy_zip" .)

phase "pruning"
for d in "${drop_dirs[@]}"; do
	find "$lib" -depth -type d -name "$d" -exec rm -rf {} +
done
for p in "${drop_paths[@]}"; do
	[[ -e $lib/$p ]] || { echo "bundle.sh: $p is gone from the packages; update drop_paths" >&2; exit 1; }
	rm -rf "${lib:?}/$p"
done
find "$lib" -type f \( -name '*.so' -o -name '*.so.*' -o -name '*.pyi' \) -delete
find "$lib" -depth -type d -name __pycache__ -exec rm -rf {} +

# Patches (bundle-patches/*.patch, each saying why), applied without fuzz:
# a package update that moves the patched lines fails here, not at run time.
for p in "$here"/bundle-patches/*.patch; do
	patch -s -p1 -F0 -N --no-backup-if-mismatch -d "$lib" <"$p" >"$work/patch.log" 2>&1 ||
		{ cat "$work/patch.log" >&2; echo "bundle.sh: $(basename "$p") does not apply" >&2; exit 1; }
done

phase "compiling bytecode"
# Unchecked-hash .pyc files are used without looking at the source's
# timestamp; -d names the sources where the guest finds them, so
# tracebacks show their lines.
/usr/bin/python3.11 -m compileall -q -j "$jobs" --invalidation-mode unchecked-hash \
	-d "$guest_dir" "$lib" >"$work/compileall.log" 2>&1 ||
	{ tail -n 40 "$work/compileall.log" >&2; exit 1; }
# Every module must import from the tree alone (nothing pruned that is
# needed), here with the machine's interpreter and no site-packages.
modules=$(cat "$stage"/sources/*/SOURCE | sed -n 's/^modules=//p' | tr ',' ' ')
(cd "$work" && /usr/bin/python3.11 -I -S -B -c '
import importlib, sys
sys.path.insert(1, sys.argv[1])
for name in sys.argv[2:]:
    mod = importlib.import_module(name)
    if not mod.__file__.startswith(sys.argv[1]):
        sys.exit("bundle.sh: %s was imported from %s, not from the bundle" % (name, mod.__file__))
' "$lib" $modules) || { echo "bundle.sh: a bundled module does not import" >&2; exit 1; }

phase "zip"
# Everything compressed: stored bytecode would be 35 MB more in the binary
# (RATIONALE.md, "Bundled packages").
zip_tree "$lib" "$stage/packages.zip" none
(cd "$stage/.." && sha256sum stage/packages.zip | sed 's|  stage/|  bundle/|') >"$stage/ASSETS"
keep_outputs "$stage" bundle-
echo "bundle.sh: built in $((SECONDS - start)) s ($(du -k "$dist/packages.zip" | cut -f1) KiB); dist/bundle and $out are up to date"
