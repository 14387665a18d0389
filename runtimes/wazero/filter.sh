#!/bin/sh
# filter.sh SRC DST: copy into DST the part of a wazero module tree SRC that
# building needs. The rule (documented in README.md) is fixed:
#   keep LICENSE, NOTICE, go.mod, go.sum, and every *.go file that is not a
#   *_test.go, and every *.s file,
#   except files below a directory named cmd, examples, example, site,
#   testdata, testing, testcases or integration_test.
set -eu
src=$1 dst=$2
mkdir -p "$dst"
dst=$(cd "$dst" && pwd)
cd "$src"
find . -type f \( -name '*.go' ! -name '*_test.go' -o -name '*.s' \
	-o -path ./LICENSE -o -path ./NOTICE -o -path ./go.mod -o -path ./go.sum \) \
	! -regex '.*/\(cmd\|examples\|example\|site\|testdata\|testing\|testcases\|integration_test\)/.*' \
	-print | LC_ALL=C sort | while IFS= read -r f; do
	mkdir -p "$dst/$(dirname "$f")"
	cp "$f" "$dst/$f"
	chmod 0644 "$dst/$f"
done
