#!/bin/sh
# prepare.sh: makes runtimes/wazero/prepared-by-make, the wazero module that
# capsule builds against (go.mod's replace points there): the release named in
# go.mod, downloaded through the Go module proxy, its h1: hash checked against
# the pin below, filtered by filter.sh, with patches/*.patch applied in order.
# Run by make before anything is compiled; see README.md.
#
# The result is a git repository with one commit for the filtered release and
# one per patch, so that a patch can be worked on there and regenerated
# (README.md, "Changing a patch"). It is made again only when its inputs (this
# script, filter.sh, the patches, the version) change; a tree with changes
# that are in no patch is then refused rather than overwritten.
set -eu
module=github.com/tetratelabs/wazero
pinned_h1='h1:DuWcpNu/FzgEXgGBDp8J1Spc+CWOvvtvVyjKlaZopYU='

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$here/prepared-by-make
GO=${GO:-go}
say() { echo "prepare.sh: $*" >&2; }

# The version is go.mod's require line: one place names it.
version=$(sed -n 's/^[[:space:]]*\(require[[:space:]]\{1,\}\)\{0,1\}github\.com\/tetratelabs\/wazero[[:space:]]\{1,\}\(v[^[:space:]]*\).*/\2/p' "$root/go.mod")
[ -n "$version" ] || { say "go.mod requires no version of $module"; exit 1; }

# What the prepared tree is made from: if this matches its stamp, it is current.
inputs=$(
	{
		echo "$module@$version $pinned_h1"
		cat "$here/prepare.sh" "$here/filter.sh"
		for p in "$here"/patches/*.patch; do echo "$(basename "$p")"; cat "$p"; done
	} | sha256sum | cut -d' ' -f1
)
stamp=$out/.prepared
git_out() { git -C "$out" -c core.hooksPath=/dev/null "$@"; }
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$inputs" ]; then
	if [ -n "$(git_out status --porcelain 2>/dev/null)" ]; then
		say "note: $out has changes that are in no patch (building with them; regenerate the patch, README.md)"
	fi
	exit 0
fi
if [ -d "$out/.git" ] && [ -n "$(git_out status --porcelain)" ]; then
	say "$out has changes that are in no patch, and its inputs changed:"
	git_out status --short >&2
	say "regenerate the patch from them (runtimes/wazero/README.md) or discard them (git -C $out checkout -- . && git -C $out clean -fd), then run make again"
	exit 1
fi

tmp=$(mktemp -d "$here/.prepare.XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

# Outside any module, so that capsule's replace directive does not apply.
say "$module@$version from the Go module proxy"
zip=$(cd "$tmp" && GOFLAGS= GO111MODULE=on "$GO" mod download -json "$module@$version" |
	sed -n 's/^\t"Zip": "\(.*\)",$/\1/p')
[ -n "$zip" ] || { say "go mod download gave no zip for $module@$version"; exit 1; }

# Recompute the h1: hash (golang.org/x/mod/sumdb/dirhash.Hash1) of the zip
# itself rather than trusting the module cache's extracted copy.
mkdir "$tmp/zip"
(cd "$tmp/zip" && unzip -q "$zip")
# sha256sum prints the "<hex>  <name>" lines that Hash1 hashes.
h1=$(cd "$tmp/zip" && find . -type f | sed 's|^\./||' | LC_ALL=C sort | tr '\n' '\0' |
	xargs -0 sha256sum | sha256sum | cut -d' ' -f1 | xxd -r -p | base64)
if [ "h1:$h1" != "$pinned_h1" ]; then
	say "$module@$version hashes to h1:$h1, but prepare.sh pins $pinned_h1: refusing it"
	exit 1
fi

new=$tmp/tree
"$here/filter.sh" "$tmp/zip/$module@$version" "$new"
git_new() {
	git -C "$new" -c core.hooksPath=/dev/null -c user.name=capsule -c user.email=capsule@localhost \
		-c commit.gpgsign=false "$@"
}
git_new init -q
git_new add -A
git_new commit -q -m "$module $version, filtered by filter.sh"
for p in "$here"/patches/*.patch; do
	if ! git_new apply --whitespace=nowarn "$p"; then
		rm -rf "$out.partial"
		mv "$new" "$out.partial"
		say "$(basename "$p") does not apply; the tree with the patches before it is in $out.partial (README.md, rebasing)"
		exit 1
	fi
	git_new add -A
	git_new commit -q -m "$(basename "$p")"
done
echo "$inputs" >"$new/.prepared"
echo /.prepared >"$new/.git/info/exclude"

rm -rf "$out"
mv "$new" "$out"
say "$out is $module@$version + $(ls "$here"/patches/*.patch | wc -l) patches"
