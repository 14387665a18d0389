#!/bin/sh
# check.sh: runs the tests that the patches in patches/ add, inside the
# prepared wazero tree (prepare.sh, which make runs first), in every package a
# patch touches; and refuses a prepared tree that holds changes in no patch,
# so that what is tested is what a fresh clone builds. Run by `make test`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$here/prepared-by-make
GO=${GO:-go}

if [ ! -f "$out/.prepared" ]; then
	echo "check.sh: $out is missing: run make (it runs prepare.sh)" >&2
	exit 1
fi
if [ -n "$(git -C "$out" status --porcelain)" ]; then
	git -C "$out" status --short >&2
	echo "check.sh: $out has changes that are in no patch: regenerate the patch (README.md) or discard them" >&2
	exit 1
fi
pkgs=$(sed -n 's|^+++ b/\(.*\)/[^/]*$|./\1|p; s|^+++ b/[^/]*$|.|p' "$here"/patches/*.patch | LC_ALL=C sort -u)
(cd "$out" && "$GO" test -count=1 $pkgs)
