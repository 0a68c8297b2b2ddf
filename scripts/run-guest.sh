#!/usr/bin/env bash
# Boot a variant's kernel in QEMU (TCG) with an initramfs that holds busybox,
# the test binaries of the given test dirs and a plan, and collect what the
# guest reports.
#
#   run-guest.sh KERNEL_VARIANT RUN_DIR PLAN [TEST_VARIANT...]
#
# PLAN is a shell fragment of run_suite lines (see guest/init); test binaries
# of TEST_VARIANT are in the guest at /tests/TEST_VARIANT. A TEST_VARIANT
# given as an absolute path is a directory of binaries of its own, put at
# /tests/$(basename DIR) (for programs under development). Afterwards RUN_DIR
# holds console.log, channel.log, one NAME.log and NAME.rc per suite (and
# NAME.timeout for a suite the guest stopped at its time limit), and verdict
# (the guest's exit code). Exit status: 0 when the guest reported a verdict
# and the console shows no kernel splat (tests/kernel-splats); the suites'
# own results are judged by the caller.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

VARIANT=$1 RUN=$2 PLAN=$3
shift 3
# KERNEL_IMAGE: boot this bzImage instead of the variant's (bug injections)
[ -n "${KERNEL_IMAGE:-}" ] || check_variant "$VARIANT"
need qemu-system-x86_64 qemu-system-x86
need python3 python3
need cpio cpio
need gzip gzip
BUSYBOX=${BUSYBOX:-/bin/busybox}
# grep reads the whole list: with -q it could exit first, and pipefail
# would see busybox die of SIGPIPE
[ -x "$BUSYBOX" ] && "$BUSYBOX" --list | grep -x stty >/dev/null ||
	die "$BUSYBOX missing or incomplete: apt-get install busybox-static"
KERNEL=${KERNEL_IMAGE:-$(obj_dir "$VARIANT")/arch/x86/boot/bzImage}
[ -f "$KERNEL" ] || die "$KERNEL missing: build the $VARIANT kernel first"
# The boot's own limit, for a guest that stops responding as a whole; a
# hung suite is stopped by the guest at its own limit (guest/init) long
# before. Kept well inside CI's 90 minutes for the three boots and builds.
GUEST_TIMEOUT=${GUEST_TIMEOUT:-2400}
GUEST_MEM=${GUEST_MEM:-2048}

make_initramfs() {
	local stage=$RUN/initramfs t dir lib
	rm -rf "$stage"
	mkdir -p "$stage"/{bin,sbin,dev,proc,sys,tmp,lib,lib64,tests,etc}
	cp "$BUSYBOX" "$stage/bin/busybox"
	ln -s busybox "$stage/bin/sh"
	cp "$ROOT/guest/init" "$stage/init"
	cp "$PLAN" "$stage/plan.sh"
	for t in "$@"; do
		case "$t" in
		/*) dir=$t t=$(basename "$t") ;;
		*) dir=$(test_dir "$t") ;;
		esac
		mkdir -p "$stage/tests/$t"
		# Everything a runner opens at run time sits beside it: the
		# binaries, BPF objects and bpf_testmod.ko (test_progs loads
		# it from its cwd), not the build's scratch dirs.
		find "$dir" -maxdepth 1 -type f \
			\( -perm -u+x -o -name '*.bpf.o' -o -name '*.ko' \) \
			-exec cp {} "$stage/tests/$t/" \;
	done
	# Shared libraries of every binary, at the paths the loader expects.
	find "$stage/tests" -type f -perm -u+x -exec ldd {} \; 2>/dev/null |
		grep -o '/[^ ]*\.so[^ ]*' | sort -u | while read -r lib; do
			mkdir -p "$stage$(dirname "$lib")"
			cp -L "$lib" "$stage$lib"
		done
	(cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1) > "$RUN/initramfs.cpio.gz"
	rm -rf "$stage"
}

boot() {
	local rc=0
	: > "$RUN/console.log"
	: > "$RUN/channel.log"
	# Two sockets of one core: without ACPI the kernel finds CPUs in the
	# MP table, where QEMU lists only the first core of a socket.
	timeout --foreground -k 10 "$GUEST_TIMEOUT" \
		qemu-system-x86_64 -cpu max -smp 2,sockets=2,cores=1 -m "$GUEST_MEM" -no-reboot \
		-display none -monitor none -nodefaults \
		-serial "file:$RUN/console.log" -serial "file:$RUN/channel.log" \
		-kernel "$KERNEL" -initrd "$RUN/initramfs.cpio.gz" \
		-append "console=ttyS0 panic=-1 oops=panic loglevel=6 ${GUEST_CMDLINE:-}" ||
		rc=$?
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		echo "error: guest did not finish within ${GUEST_TIMEOUT}s" >&2
	elif [ $rc -ne 0 ]; then
		echo "error: qemu exited with $rc" >&2
	fi
	return 0
}

main() {
	local bad=0 start
	mkdir -p "$RUN"
	stage initramfs make_initramfs "$@"
	echo "[$VARIANT] initramfs: $(du -h "$RUN/initramfs.cpio.gz" | cut -f1)"
	start=$(date +%s)
	stage "boot and run in QEMU" boot
	echo "$(( $(date +%s) - start ))" > "$RUN/boot-seconds"
	split_channel "$RUN/channel.log" "$RUN"
	if [ ! -s "$RUN/verdict" ]; then
		echo "error: the guest never reported a verdict" >&2
		bad=1
	fi
	if ! python3 "$ROOT/scripts/judge.py" splats "$RUN/console.log" > "$RUN/splats"; then
		echo "error: kernel splat on the console (tests/kernel-splats):" >&2
		head -20 "$RUN/splats" >&2
		bad=1
	fi
	if [ $bad -ne 0 ]; then
		echo "--- last 40 lines of $RUN/console.log:" >&2
		tail -40 "$RUN/console.log" >&2
		return 1
	fi
	echo "[$VARIANT] guest verdict $(cat "$RUN/verdict") after $(cat "$RUN/boot-seconds")s"
}

main "$@"
