#!/usr/bin/env bash
# arm64-tests.sh (make test-arm64, part of make test): on an amd64 machine,
# the guard-page tests built for linux/arm64 and run under Debian's
# qemu-user-static, so that the arm64 fault handler and compiler are tested
# where no arm64 hardware is at hand:
#   - wazero's patch tests for guard pages (runtimes/wazero/prepared-by-make:
#     every load and store kind at and past the end of memory, against the
#     same module with bounds checks; internal/guardpage);
#   - runtimes/memprobe: the differential fuzz target FuzzGuardPages over its
#     seeds and saved corpus, and the programs that must trap (not fuzzing
#     proper: qemu-user keeps host memory for each 8 GiB reservation a
#     program maps, so a fuzzing run exhausts the machine's memory after a
#     few hundred programs; docs/arm64.md);
#   - runtimes/compiled: the embedded arm64 images are those recorded,
#     compiled for arm64's baseline and guard pages;
#   - cmd/capsule's TestOutOfBoundsAccessesTrap: out-of-bounds accesses
#     through a real arm64 worker (its workers are the arm64 binary started
#     again, so the kernel must hand arm64 binaries to qemu: binfmt_misc,
#     registered here as qemu-user-static's own entry when run as root).
# On an arm64 machine every test runs natively in make test: nothing to do.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
GO=${GO:-go}
say() { echo "arm64-tests: $*" >&2; }

if [[ $($GO env GOHOSTARCH) != amd64 ]]; then
	say "this machine is $($GO env GOHOSTARCH): make test runs its own architecture's tests natively"
	exit 0
fi
qemu=$(command -v qemu-aarch64-static || true)
if [[ -z $qemu ]]; then
	# The image writer for arm64 (runtimes/compiled/write.sh) installs it as
	# root; make test runs that first.
	say "qemu-aarch64-static is missing: apt-get install qemu-user-static"
	exit 1
fi
export GOARCH=arm64 CGO_ENABLED=0

say "wazero's guard-page tests for arm64 under $qemu"
(cd "$repo/runtimes/wazero/prepared-by-make" &&
	$GO test -count=1 -exec "$qemu" -run 'GuardPages' . &&
	$GO test -count=1 -exec "$qemu" ./internal/guardpage/)

say "memory probe (FuzzGuardPages' corpus), guest memories and the embedded images, for arm64 under $qemu"
(cd "$repo" && $GO test -count=1 -exec "$qemu" ./runtimes/memprobe/ ./runtimes/compiled/)
# guestmem's TestDataLimit is left out: under qemu-user RLIMIT_DATA applies
# to qemu's own mappings, which do not follow the guest's, so it cannot
# hold there (it runs natively on each architecture).
(cd "$repo" && $GO test -count=1 -exec "$qemu" -run '^(TestMemory|TestGuardMemory)$' ./runtimes/internal/guestmem/)

# Workers are started as /proc/self/exe: the kernel must run arm64 binaries.
binfmt=/proc/sys/fs/binfmt_misc
if [[ ! -e $binfmt/qemu-aarch64 ]] && ((EUID == 0)); then
	[[ -e $binfmt/register ]] || mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null || true
	if [[ -e $binfmt/register && -f /usr/lib/binfmt.d/qemu-aarch64.conf ]]; then
		tr -d '\n' </usr/lib/binfmt.d/qemu-aarch64.conf >"$binfmt/register" || true
	fi
fi
if [[ $(head -1 "$binfmt/qemu-aarch64" 2>/dev/null) != enabled ]]; then
	say "binfmt_misc runs no arm64 binaries here (not root, or no binfmt_misc): the out-of-bounds test through an arm64 worker is left out"
	exit 0
fi
say "out-of-bounds accesses through an arm64 worker under $qemu (minutes)"
(cd "$repo" && $GO test -count=1 -timeout 20m -exec "$qemu" -run '^TestOutOfBoundsAccessesTrap$' ./cmd/capsule/)
