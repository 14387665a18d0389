#!/usr/bin/env bash
# Writes the runtimes' compiled images for each linux architecture named in
# its arguments (default: this machine's) into
# runtimes/compiled/dist/linux-ARCH (see the package's doc and
# write/main.go): python.image, python-numpy.image, javascript.image and
# ASSETS, their SHA-256
# (sha256sum format). Run by make after the runtime builds; quick when an
# architecture's directory is already right.
#
#	write.sh              this machine's architecture (make build)
#	write.sh amd64 arm64  every release architecture (make test, make dist)
#
# Images are machine code for one GOARCH, so they are written by the write
# tool built for that GOARCH: natively for this machine's, under Debian's
# qemu-user-static for another (qemu-aarch64-static on an amd64 machine),
# which runs the same wazevo compiler on the same input and so writes the
# bytes the tool writes on that hardware (wazevo's output depends on
# nothing else: the images are compiled for the baseline CPU features). As
# root, a missing qemu-user-static is installed, as the runtime builds
# install their tools.
#
# The images depend on the modules, wazero with its patches and how the
# runtimes compile: on exactly what the write tool is built from. Its
# binary, built reproducibly, embeds the modules, so its SHA-256 is the
# key: dist/linux-ARCH/KEY.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
GO=${GO:-go}
# As make builds everything (the Makefile says why): the key is then the same
# whether make or a person runs this.
export CGO_ENABLED=0
say() { echo "compiled images: $*" >&2; }

host_os=$($GO env GOHOSTOS)
host_arch=$($GO env GOHOSTARCH)
if [[ $host_os != linux ]]; then
	say "not written on $host_os (linux only): the binary compiles its modules at first start"
	exit 0
fi
archs=("$@")
((${#archs[@]})) || archs=("$host_arch")

# qemu_for prints the qemu-user command that runs a linux/$1 binary here,
# installing Debian's qemu-user-static as root when it is missing.
qemu_for() {
	local cmd
	case $1 in
	amd64) cmd=qemu-x86_64-static ;;
	arm64) cmd=qemu-aarch64-static ;;
	*)
		say "no images for linux/$1: capsule builds images for amd64 and arm64"
		return 1
		;;
	esac
	if ! command -v "$cmd" >/dev/null; then
		if ((EUID != 0)); then
			say "$cmd runs the linux/$1 image writer on this $host_arch machine; install it with:"
			say "  apt-get install -y --no-install-recommends qemu-user-static"
			return 1
		fi
		say "installing qemu-user-static (for $cmd)"
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y --no-install-recommends qemu-user-static >&2 ||
			{ apt-get update >&2 && apt-get install -y --no-install-recommends qemu-user-static >&2; }
	fi
	command -v "$cmd"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for arch in "${archs[@]}"; do
	dist=$here/dist/linux-$arch
	(cd "$repo" && GOOS=linux GOARCH=$arch $GO build -trimpath -buildvcs=false -o "$tmp/write-$arch" ./runtimes/compiled/write)
	key=$(sha256sum "$tmp/write-$arch" | cut -d' ' -f1)
	if [[ -f $dist/KEY && $(cat "$dist/KEY") == "$key" && -f $dist/ASSETS ]] &&
		(cd "$dist" && sha256sum --quiet --check ASSETS 2>/dev/null); then
		continue
	fi
	runner=()
	how=natively
	if [[ $arch != "$host_arch" ]]; then
		# qemu's default x86-64 CPU lacks SSE4.1, which wazero's amd64
		# compiler requires; "max" has every feature qemu emulates (the
		# images are compiled for the baseline, whatever the CPU has).
		qemu=$(qemu_for "$arch")
		runner=(env QEMU_CPU=max "$qemu")
		how="under ${qemu##*/}"
	fi
	say "compiling the runtimes' modules for linux/$arch's baseline CPU features ($how)"
	start=$SECONDS
	rm -rf "$tmp/out"
	mkdir -p "$tmp/out"
	"${runner[@]}" "$tmp/write-$arch" -out "$tmp/out"
	say "linux/$arch written in $((SECONDS - start)) s"
	echo "$key" >"$tmp/out/KEY"
	rm -rf "$dist"
	mkdir -p "$here/dist"
	mv "$tmp/out" "$dist"
done
