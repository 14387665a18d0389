#!/usr/bin/env bash
# Writes the runtimes' compiled images into runtimes/compiled/dist (see the
# package's doc and write/main.go): python.image, javascript.image and
# ASSETS, their SHA-256 (sha256sum format). Run by make after the runtime
# builds; quick when dist/ is already right.
#
# The images depend on the modules, wazero with its patches and how the
# runtimes compile: on exactly what the write tool is built from. Its
# binary, built reproducibly, embeds the modules, so its SHA-256 is the
# key: dist/KEY.
#
# Images are written on linux/amd64 only (they are machine code for the
# build's GOARCH); a linux/amd64 binary needs them to build.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
dist=$here/dist
GO=${GO:-go}

if [[ $($GO env GOHOSTOS)/$($GO env GOHOSTARCH) != linux/amd64 ]]; then
	echo "compiled images: not written on $($GO env GOHOSTOS)/$($GO env GOHOSTARCH) (linux/amd64 only): the binary compiles its modules at first start" >&2
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$repo" && GOOS= GOARCH= $GO build -trimpath -buildvcs=false -o "$tmp/write" ./runtimes/compiled/write)
key=$(sha256sum "$tmp/write" | cut -d' ' -f1)
if [[ -f $dist/KEY && $(cat "$dist/KEY") == "$key" && -f $dist/ASSETS ]] &&
	(cd "$dist" && sha256sum --quiet --check ASSETS 2>/dev/null); then
	exit 0
fi

echo "compiled images: compiling the runtimes' modules for the baseline CPU features" >&2
mkdir -p "$tmp/out"
"$tmp/write" -out "$tmp/out"
echo "$key" >"$tmp/out/KEY"
rm -rf "$dist"
mv "$tmp/out" "$dist"
