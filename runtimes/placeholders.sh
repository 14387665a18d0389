#!/usr/bin/env bash
# Placeholders for the runtimes' built assets, so that a fresh clone
# type-checks and runs the unit tests of the packages that do not run code
# without the runtime builds (minutes, and a CPython toolchain).
#
#	placeholders.sh                 write an empty placeholder for each
#	                                asset runtimes/python, runtimes/javascript
#	                                and runtimes/compiled embed (//go:embed)
#	                                that no build has written yet
#	placeholders.sh --remove NAME   remove the placeholders written in
#	                                runtimes/NAME/dist, before its build
#	                                writes the real assets there
#
# `make wazero` writes them; each runtime's make target removes its own
# before it builds. Each dist directory lists the placeholders written in
# it in dist/PLACEHOLDERS, so that only they are ever removed. A binary
# built with a placeholder refuses to start (the runtime packages' Built):
# it cannot run that language, and says to run make build.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)

# assets NAME prints the built files runtimes/NAME embeds, relative to its
# directory: the //go:embed patterns under dist/, as go list reads them from
# the package for this GOOS and GOARCH (-e: they match nothing yet), so that
# a new embed needs no line here. A "*" stands for one directory name, and
# the placeholder takes "unbuilt" for it.
assets() {
	local patterns
	patterns=$(cd "$here" && ${GO:-go} list -e -f '{{join .EmbedPatterns "\n"}}' "./$1") ||
		{ echo "placeholders.sh: go list ./runtimes/$1 failed (run make wazero first)" >&2; exit 1; }
	grep '^dist/' <<<"$patterns" || true
}

if [[ ${1:-} == --remove ]]; then
	dir=$here/${2:?usage: placeholders.sh --remove python|javascript|compiled}
	list=$dir/dist/PLACEHOLDERS
	[[ -f $list ]] || exit 0
	while IFS= read -r f; do
		rm -f "$dir/$f"
		# The directories made for a placeholder only (sources/unbuilt).
		rmdir -p --ignore-fail-on-non-empty "$(dirname "$dir/$f")" 2>/dev/null || true
	done <"$list"
	rm -f "$list"
	exit 0
fi

for name in python javascript compiled; do
	dir=$here/$name
	list=$(assets "$name")
	mapfile -t patterns <<<"$list"
	for pattern in "${patterns[@]}"; do
		[[ -n $pattern ]] || continue
		# An asset a build wrote stays as it is.
		if compgen -G "$dir/$pattern" >/dev/null; then
			continue
		fi
		f=${pattern//\*/unbuilt}
		mkdir -p "$dir/$(dirname "$f")"
		: >"$dir/$f"
		mkdir -p "$dir/dist"
		echo "$f" >>"$dir/dist/PLACEHOLDERS"
		wrote=1
	done
done
if [[ ${wrote:-0} == 1 ]]; then
	echo "placeholders.sh: empty placeholders written for the runtime assets not built yet" \
		"(enough for go vet and the unit tests; make build builds the runtimes)" >&2
fi
