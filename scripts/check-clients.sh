#!/usr/bin/env bash
# make check-clients: the real clients, Debian 12's own bpftool (7.1.0),
# bpftrace (0.17) and BCC tools (0.26), on upstream 6.1 and on our series,
# and the two kernels' outputs compared.
#
#   check-clients.sh [KERNEL...]     (default: upstream-full patched-full)
#
# The tools are not copied into the guest: run-guest.sh shares the host's
# root read-only (GUEST_HOST_ROOT) and tests/clients/run-clients.sh runs
# chrooted into it, so each tool runs from its package with its own
# libraries. That takes 9P over virtio-pci, kprobes and BTF, which the
# *-full variants' config (the selftests' own) has and the minimal one
# does not; make check-full runs this after its suites.
#
# Reads: the kernels' builds (built if missing), upstream-full's selftest
# object map_kptr.bpf.o, on patched-full our kptr_objs.bpf.o (lib.sh's
# build_own_full_tests), tests/clients/. Writes build/runs/clients-DATE/
# KERNEL/ (console.log, clients.log: the TAP of the checks) and, for each
# kernel, build/KERNEL/bcc-headers (the headers BCC compiles with).
# Exit status 0 when every check passed on every kernel and, with two
# kernels, their normalized outputs are the same (scripts/clients.py).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# shellcheck disable=SC2206
KERNELS=(${*:-upstream-full patched-full})
RUNS=${CLIENTS_RUNS:-$BUILD/runs/clients-$(date +%Y%m%d-%H%M%S)}
need python3 python3
need bpftool bpftool
need bpftrace bpftrace
need funccount-bpfcc bpfcc-tools

for k in "${KERNELS[@]}"; do
	is_full_variant "$k" || die "$k: the clients need the full config (upstream-full, patched-full)"
done

# BCC compiles against an in-tree layout (BCC_KERNEL_SOURCE): one tree
# with the sources' headers and the build's generated ones side by side,
# as a distribution's headers package has them. Our builds keep the two
# apart (O=).
bcc_headers() {
	local k=$1 src obj out
	src=$(src_dir "$k") obj=$(obj_dir "$k") out=$BUILD/$k/bcc-headers
	rm -rf "$out"
	mkdir -p "$out/arch/x86"
	cp -a "$src/include" "$out/include"
	cp -a "$src/arch/x86/include" "$out/arch/x86/include"
	cp -a "$obj/include/generated" "$out/include/"
	cp -a "$obj/arch/x86/include/generated" "$out/arch/x86/include/"
	echo "$out"
}

VARIANT=upstream-full "$ROOT/scripts/build-kernel.sh" upstream-full
VARIANT=upstream-full "$ROOT/scripts/build-tests.sh" upstream-full
objs=$(test_dir upstream-full)
[ -f "$objs/map_kptr.bpf.o" ] || die "$objs/map_kptr.bpf.o missing"

args=()
for k in "${KERNELS[@]}"; do
	VARIANT=$k "$ROOT/scripts/build-kernel.sh" "$k"
	run=$RUNS/$k
	mkdir -p "$run"
	hdrs=$(bcc_headers "$k")
	# our series' own maps too, on its kernel
	ours=
	if [ "$k" = patched-full ]; then
		build_own_full_tests
		ours=$OWN_FULL_TESTS
	fi
	# env -i: the chroot gets the host's PATH, not the guest's
	cat > "$run/plan.sh" <<-PLAN
		host_root || echo "guest: the host's root could not be mounted"
		run_suite clients 4800 /host chroot /host /usr/bin/env -i \
			PATH=/usr/sbin:/usr/bin:/sbin:/bin BCC_KERNEL_SOURCE=$hdrs \
			/bin/bash $ROOT/tests/clients/run-clients.sh $objs $ours
	PLAN
	# thread=single: the tools arm and disarm probes on functions that the
	# other vCPU runs all the time, and QEMU's multi-threaded TCG can then
	# run stale code (docs/open-findings.md). Time: 6-7 minutes alone,
	# but 18-38 beside check-full's two suite guests (BCC compiles with
	# clang in the guest), so a dead guest is told by its silence instead.
	GUEST_TCG_THREAD=${GUEST_TCG_THREAD:-single} GUEST_HOST_ROOT=1 VARIANT=$k \
		GUEST_TIMEOUT=${CLIENTS_GUEST_TIMEOUT:-5400} GUEST_IDLE_TIMEOUT=600 \
		"$ROOT/scripts/run-guest.sh" "$k" "$run" "$run/plan.sh" ||
		{ echo "[$k] the guest run failed (see $run)"; touch "$run/guest-failed"; }
	args+=("$k=$run")
done
python3 "$ROOT/scripts/clients.py" --differences "$ROOT/tests/clients/differences" "${args[@]}"
