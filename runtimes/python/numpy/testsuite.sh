#!/usr/bin/env bash
# testsuite.sh runs numpy's own test suite inside capsule: each submodule's
# tests through numpy's own runner (numpy.<sub>.test(), pytest underneath)
# in one `capsule exec` call, with the limits raised for a long run, and
# prints a table of tests passed, failed, skipped and errored per submodule,
# then every failure with its first line.
#
# The sandbox gets numpy's Python package with its tests (dist/numpy.zip
# and dist/numpy-tests.zip, which build.sh writes), and pytest and
# hypothesis from Debian bookworm's binary packages, through --python-path
# (bytecode compiled by the machine's python3.11, as bundle.sh does). The
# call imports numpy, so it runs on numpy's own interpreter module, from
# the numpy variant's snapshot, where the bundle's numpy (the same files,
# without the tests) is already imported: each numpy package's __path__
# then gets the --python-path tree's directory first, so that its tests and
# conftest import from there, and pytest is given their directories.
#
# Not part of `make test`: the whole suite takes tens of minutes under
# WebAssembly. Run it after `make build`:
#
#   runtimes/python/numpy/testsuite.sh [SUBMODULE ...]   (default: core lib
#       linalg fft random polynomial ma)
#
# Environment: CAPSULE (the binary, default bin/capsule), OUT (a directory
# for each submodule's full pytest output, default a temporary one),
# PYTEST_ARGS (more arguments for pytest, split at spaces: -v names each
# test as it runs).
set -euo pipefail
export PYTHONHASHSEED=0

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
dist=$repo/runtimes/python/dist
capsule=${CAPSULE:-$repo/bin/capsule}
subs=("$@")
((${#subs[@]})) || subs=(core lib linalg fft random polynomial ma)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"

for f in "$dist/numpy.zip" "$dist/numpy-tests.zip" "$capsule"; do
	[[ -e $f ]] || { echo "testsuite.sh: $f is missing; run make build" >&2; exit 1; }
done

tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
(cd "$tree" && /usr/bin/python3.11 -m zipfile -e "$dist/numpy.zip" . &&
	/usr/bin/python3.11 -m zipfile -e "$dist/numpy-tests.zip" .)

# pytest, hypothesis and what they import that the sandbox's standard
# library lacks, from Debian's packages (the bundled attr, sortedcontainers,
# more_itertools and dateutil come along, since the bundle is off).
debs=$tree/.debs
mkdir -p "$debs"
(cd "$debs" && apt-get download -qq python3-pytest python3-pluggy python3-iniconfig python3-packaging \
	python3-hypothesis python3-exceptiongroup python3-attr python3-sortedcontainers \
	python3-more-itertools python3-dateutil python3-six 2>/dev/null)
for d in "$debs"/*.deb; do
	dpkg-deb -x "$d" "$debs/root"
done
cp -r "$debs/root/usr/lib/python3/dist-packages/." "$tree/"
rm -rf "$debs"
/usr/bin/python3.11 -m compileall -q -j 0 "$tree" >/dev/null
# The workers read it as their own unprivileged user.
chmod -R a+rX "$tree"

# One call per submodule, with the arguments numpy's own runner
# (numpy/_pytesttester.py, numpy.<sub>.test()) gives pytest for its "fast"
# label, the default: slow tests skipped, the same warning filters and
# hypothesis profile. The runner itself is not called: it first imports
# numpy.distutils to print the CPU, which the sandbox's numpy leaves out.
# -rfE lists the failures. faulthandler needs a file descriptor to dup,
# which WASI has not, and so does pytest's capture by file descriptor.
printf '%-12s %8s %8s %8s %8s %8s %10s %9s\n' submodule passed failed skipped xfailed errors deselected seconds
for sub in "${subs[@]}"; do
	start=$SECONDS
	set +e
	"$capsule" exec python --python-path "$tree" \
		--timeout 30m --memory 2GiB --scratch 512MiB --max-output 16MiB -c "
import sys, numpy
tree = '/usr/local/lib/python3.11/site-packages'
for name, module in list(sys.modules.items()):
    if (name == 'numpy' or name.startswith('numpy.')) and hasattr(module, '__path__'):
        module.__path__.insert(0, tree + '/' + name.replace('.', '/'))
sys.path.insert(0, tree)
import pytest, hypothesis
hypothesis.settings.register_profile(name='np.test() profile', deadline=None, print_blob=True,
    database=None, derandomize=True, suppress_health_check=hypothesis.HealthCheck.all())
pytest.main(['-l', '-q', '-W', 'ignore:Not importing directory', '-W', 'ignore:numpy.dtype size changed',
    '-W', 'ignore:numpy.ufunc size changed', '-W', 'ignore:the matrix subclass is not',
    '-W', 'ignore:Importing from numpy.matlib is', '-m', 'not slow',
    '-p', 'no:faulthandler', '-p', 'no:cacheprovider', '--capture=sys', '-rfE', '--tb=line', '--continue-on-collection-errors',
    '--rootdir', tree, tree + '/numpy/$sub'] + '${PYTEST_ARGS:-}'.split())
" >"$out/$sub.log" 2>&1
	set -e
	summary=$(grep -E '^(=+ )?[0-9]+ (passed|failed|errors?|skipped|deselected|xfailed).* in [0-9.]+s' "$out/$sub.log" |
		tail -n 1 || true)
	count() { grep -oE "[0-9]+ $1" <<<"$summary" | cut -d' ' -f1 | grep . || echo 0; }
	printf '%-12s %8s %8s %8s %8s %8s %10s %9s\n' "$sub" "$(count passed)" "$(count failed)" "$(count skipped)" \
		"$(count xfailed)" "$(count error)" "$(count deselected)" "$((SECONDS - start))"
	[[ -n $summary ]] || { echo "  no pytest summary: the end of $out/$sub.log:"; tail -n 5 "$out/$sub.log" | sed 's/^/  /'; }
done
echo
echo "failures (the full output of each submodule is in $out):"
# Named from the submodule's directory, as numpy's own runner names them.
grep -hE '^(FAILED|ERROR) ' "$out"/*.log | sed -E 's#[./]*usr/local/lib/python3\.11/site-packages/numpy/[a-z]+/##' ||
	echo "none"
