#!/usr/bin/env bash
# Fetches the pinned QuickJS-NG wasm build from npm, checks it, rewrites it
# to own its memory (internal/ownmemory) and leaves in dist/:
#   quickjs.wasm           the rewritten module
#   quickjs.snap.wasm      it without its data segments, which the Go package
#   quickjs.data           embeds with the data apart (internal/snapshot)
#   emscripten-module.cjs  the package's glue, for the name-map test
#   VERSION                package and QuickJS-NG versions
#   ASSETS                 the SHA-256 of quickjs.wasm and VERSION (sha256sum
#                          format), which the binary carries and doctor checks
#   sources/PKG/           the npm package as a component: SOURCE (name,
#                          version, integrity) and the tarball's LICENSE, from
#                          which the release's SBOM and notices are generated
# Run it from anywhere; it is quick when dist/ is already right. The tarball
# is cached in ${CAPSULE_BUILD_CACHE:-$HOME/.cache/capsule-build}/javascript.
set -euo pipefail

PKG=@jitl/quickjs-ng-wasmfile-release-sync
PKG_VERSION=0.32.0
TARBALL=jitl-quickjs-ng-wasmfile-release-sync-$PKG_VERSION.tgz
TARBALL_SHA256=feb879d9c539f03717afe939d798defc40632642e91eccccbcabe54fafbe0025
# The registry's dist.integrity for the same tarball, for the SBOM.
TARBALL_INTEGRITY=sha512-XAX2jjZWWh3M0YaRqi82xMKNW/gkF6mo3MpW3UY2cmVxnQai1JuboVsJQVoLU629iEL4XWvHtO4h5lo7NRnAcg==
# The rewritten module: the rewrite is deterministic, so this pins its output.
WASM_SHA256=17be58d4bb9a65434b73fcee2c5a7a32feb8eb293df19b4103fcda2924307a3f

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
dist=$here/dist
cache=${CAPSULE_BUILD_CACHE:-$HOME/.cache/capsule-build}/javascript

sha256() { sha256sum "$1" | cut -d' ' -f1; }

component=$dist/sources/${TARBALL%-"$PKG_VERSION".tgz}
if [[ -f $dist/VERSION && -f $dist/emscripten-module.cjs && -f $dist/quickjs.wasm ]] &&
	[[ -f $dist/ASSETS && -f $component/SOURCE && -f $dist/quickjs.snap.wasm && -f $dist/quickjs.data ]] &&
	grep -q " quickjs.snap.wasm$" "$dist/ASSETS" &&
	grep -qx "quickjs-ng-wasmfile=$PKG_VERSION" "$dist/VERSION" &&
	[[ $(sha256 "$dist/quickjs.wasm") == "$WASM_SHA256" ]]; then
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$cache"
if [[ ! -f $cache/$TARBALL || $(sha256 "$cache/$TARBALL") != "$TARBALL_SHA256" ]]; then
	echo "javascript: fetching $PKG@$PKG_VERSION" >&2
	(cd "$tmp" && npm pack --silent "$PKG@$PKG_VERSION" >/dev/null)
	got=$(sha256 "$tmp/$TARBALL")
	if [[ $got != "$TARBALL_SHA256" ]]; then
		echo "javascript: $TARBALL has SHA-256 $got, want $TARBALL_SHA256" >&2
		exit 1
	fi
	mv "$tmp/$TARBALL" "$cache/$TARBALL"
fi

integrity=$(node -e 'const c = require("crypto"), fs = require("fs");
	console.log("sha512-" + c.createHash("sha512").update(fs.readFileSync(process.argv[1])).digest("base64"))' "$cache/$TARBALL")
if [[ $integrity != "$TARBALL_INTEGRITY" ]]; then
	echo "javascript: $TARBALL has integrity $integrity, want $TARBALL_INTEGRITY" >&2
	exit 1
fi

tar -xzf "$cache/$TARBALL" -C "$tmp" package/dist/emscripten-module.wasm package/dist/emscripten-module.cjs \
	package/README.md package/LICENSE package/package.json
quickjs=$(sed -n 's/^Version \[v\([0-9][0-9.]*\)\].*/\1/p' "$tmp/package/README.md" | head -n1)
if [[ -z $quickjs ]]; then
	echo "javascript: no QuickJS-NG version in the package README" >&2
	exit 1
fi

(cd "$repo" && go run ./runtimes/javascript/internal/ownmemory \
	-in "$tmp/package/dist/emscripten-module.wasm" -out "$tmp/quickjs.wasm")
got=$(sha256 "$tmp/quickjs.wasm")
if [[ $got != "$WASM_SHA256" ]]; then
	echo "javascript: rewritten quickjs.wasm has SHA-256 $got, want $WASM_SHA256" >&2
	exit 1
fi

mkdir -p "$dist"
cp "$tmp/package/dist/emscripten-module.cjs" "$dist/emscripten-module.cjs"
printf 'quickjs-ng-wasmfile=%s\nquickjs-ng=%s\n' "$PKG_VERSION" "$quickjs" >"$tmp/VERSION"
# The package is the one component: its LICENSE holds quickjs-emscripten's
# and QuickJS-NG's licences.
rm -rf "$component"
mkdir -p "$component"
{
	echo "name=$PKG"
	echo "kind=npm"
	echo "version=$PKG_VERSION"
	echo "integrity=$TARBALL_INTEGRITY"
	echo "tarball_sha256=$TARBALL_SHA256"
	echo "contains=quickjs-ng $quickjs"
	echo "license=$(node -p 'require(process.argv[1]).license' "$tmp/package/package.json")"
} >"$component/SOURCE"
cp "$tmp/package/LICENSE" "$component/LICENSE"
# What the binary embeds: the module without its data segments, and the
# data apart (runtimes/internal/snapshot says why).
(cd "$repo" && go run ./runtimes/internal/snapshot/prepare \
	-in "$tmp/quickjs.wasm" -out "$tmp/quickjs.snap.wasm" -data "$tmp/quickjs.data")
(cd "$tmp" && sha256sum VERSION quickjs.data quickjs.snap.wasm) >"$dist/ASSETS.tmp"
mv "$tmp/quickjs.wasm" "$dist/quickjs.wasm"
mv "$tmp/quickjs.snap.wasm" "$dist/quickjs.snap.wasm"
mv "$tmp/quickjs.data" "$dist/quickjs.data"
mv "$tmp/VERSION" "$dist/VERSION"
mv "$dist/ASSETS.tmp" "$dist/ASSETS"
echo "javascript: dist/ ready (QuickJS-NG $quickjs)" >&2
