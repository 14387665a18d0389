#!/bin/sh
# check.sh: proves that runtimes/wazero/src is exactly wazero v1.12.0 as
# published (its h1: hash pinned below), filtered by filter.sh, with the
# patches in patches/ applied in order; then runs the patched packages' tests
# inside the copy. Run by `make test`; see README.md.
set -eu
module=github.com/tetratelabs/wazero
version=v1.12.0
pinned_h1='h1:DuWcpNu/FzgEXgGBDp8J1Spc+CWOvvtvVyjKlaZopYU='

here=$(cd "$(dirname "$0")" && pwd)
GO=${GO:-go}
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT

# Outside any module, so that capsule's replace directive does not apply.
zip=$(cd "$tmp" && GOFLAGS= GO111MODULE=on "$GO" mod download -json "$module@$version" | sed -n 's/^\t"Zip": "\(.*\)",$/\1/p')
[ -n "$zip" ] || { echo "check.sh: go mod download gave no zip for $module@$version" >&2; exit 1; }

# Recompute the h1: hash (golang.org/x/mod/sumdb/dirhash.Hash1) of the zip
# rather than trusting the module cache's extracted copy.
mkdir "$tmp/zip"
(cd "$tmp/zip" && unzip -q "$zip")
# sha256sum prints the "<hex>  <name>" lines that Hash1 hashes.
h1=$(cd "$tmp/zip" && find . -type f | sed 's|^\./||' | LC_ALL=C sort | tr '\n' '\0' |
	xargs -0 sha256sum | sha256sum | cut -d' ' -f1 | xxd -r -p | base64)
if [ "h1:$h1" != "$pinned_h1" ]; then
	echo "check.sh: $module@$version hashes to h1:$h1, pinned $pinned_h1" >&2
	exit 1
fi

"$here/filter.sh" "$tmp/zip/$module@$version" "$tmp/want"
for p in "$here"/patches/*.patch; do
	(cd "$tmp/want" && git apply --whitespace=nowarn "$p") ||
		{ echo "check.sh: $(basename "$p") does not apply" >&2; exit 1; }
done
if ! diff -r "$tmp/want" "$here/src" >"$tmp/diff"; then
	head -50 "$tmp/diff" >&2
	echo "check.sh: runtimes/wazero/src is not $module@$version + filter.sh + patches/: regenerate it (README.md)" >&2
	exit 1
fi
echo "check.sh: runtimes/wazero/src is $module@$version + $(ls "$here"/patches/*.patch | wc -l) patches"

# The patches' own tests, in the packages they touch.
pkgs=$(sed -n 's|^+++ b/\(.*\)/[^/]*$|./\1|p; s|^+++ b/[^/]*$|.|p' "$here"/patches/*.patch | LC_ALL=C sort -u)
(cd "$here/src" && "$GO" test -count=1 $pkgs)
