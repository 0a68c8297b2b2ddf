#!/usr/bin/env bash
# The Debian 12 packages the project needs (the one list of them), installed
# when some are missing: make demo, make check and the other entry points
# run this first, so a fresh machine needs no step of its own.
#
#   install-deps.sh [GROUP...]   base (always): build, boot and test kernels
#                                bench: make bench's chart
#                                peer: make bench's peer kernel, 6.12
#                                docs: make check-series' documentation build
#                                clients: make check-clients' real clients
#
# Reads dpkg's database. When every package is there it does nothing (and
# needs no root). Otherwise it runs apt-get update and apt-get install for
# the missing ones: as root, or through sudo, saying so first; without
# either it stops and prints the command to run.
set -euo pipefail

BASE=(
	linux-source-6.1			# the kernel tree we patch
	build-essential flex bison bc perl cpio rsync xz-utils git
	libelf-dev libssl-dev zlib1g-dev	# kernel and tools/ build deps
	pahole					# DEBUG_INFO_BTF
	ccache
	clang-19 llvm-19 lld-19			# BPF C with type-tag BTF
	qemu-system-x86 busybox-static		# the guest
	python3
)
BENCH=(gnuplot-nox)
# make bench's peer kernel, upstream612 (scripts/prepare-tree.sh)
PEER=(linux-source-6.12)
# the kernel's Sphinx build of Documentation/bpf (scripts/check-docs.sh)
DOCS=(python3-sphinx python3-sphinx-rtd-theme)
# Debian 12's BPF tools, run in the guest from the host's root
CLIENTS=(bpftool bpftrace bpfcc-tools python3-bpfcc)

wanted=("${BASE[@]}")
for group in "$@"; do
	case "$group" in
	base) ;;
	bench) wanted+=("${BENCH[@]}") ;;
	peer) wanted+=("${PEER[@]}") ;;
	docs) wanted+=("${DOCS[@]}") ;;
	clients) wanted+=("${CLIENTS[@]}") ;;
	*) echo "install-deps.sh: unknown group '$group' (base, bench, peer, docs, clients)" >&2; exit 2 ;;
	esac
done

# dpkg-query lists the packages it knows with their state, in one call
installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${wanted[@]}" 2>/dev/null |
	awk '$2 == "installed" { print $1 }' || true)
missing=()
for p in "${wanted[@]}"; do
	grep -qxF "$p" <<< "$installed" || missing+=("$p")
done
[ ${#missing[@]} -gt 0 ] || exit 0

echo "install-deps: missing Debian packages: ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null; then
		echo "install-deps: installing them needs root; run as root:" >&2
		echo "    apt-get update && apt-get install --no-install-recommends ${missing[*]}" >&2
		exit 1
	fi
	echo "install-deps: installing them needs root: running apt-get through sudo"
	sudo=(sudo)
fi
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -q --no-install-recommends "${missing[@]}"
