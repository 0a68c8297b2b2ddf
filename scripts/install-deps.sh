#!/usr/bin/env bash
# Install the Debian 12 packages the build, the guest and the tests need.
set -euo pipefail
PACKAGES=(
	linux-source-6.1			# the kernel tree we patch
	build-essential flex bison bc perl cpio rsync xz-utils git
	libelf-dev libssl-dev zlib1g-dev	# kernel and tools/ build deps
	pahole					# DEBUG_INFO_BTF
	ccache
	clang-19 llvm-19 lld-19			# BPF C with type-tag BTF
	qemu-system-x86 busybox-static		# the guest
	python3
	gnuplot-nox				# make bench: the chart
)
if [ "$(id -u)" -ne 0 ]; then
	echo "run as root (or: sudo $0)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"
