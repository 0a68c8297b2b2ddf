#!/usr/bin/env bash
# Boot a variant's kernel in QEMU (KVM when a kernel boots under it, else TCG) with an
# initramfs that holds busybox, bpftool, the test binaries of the given test
# dirs and a plan, and collect what the guest reports.
#
#   run-guest.sh KERNEL_VARIANT RUN_DIR PLAN [TEST_VARIANT...]
#
# Reads: build/KERNEL_VARIANT/obj's bzImage (or KERNEL_IMAGE), guest/init,
# PLAN, the test dirs, tests/kernel-splats (through judge.py). Writes RUN_DIR
# (below).
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
#
# GUEST_HOST_TOOLS: names of host programs (iproute2's ip and tc for make
# check-full) put in the guest's /bin, where they win over busybox's
# applets of the same name (with GUEST_SH=dash, or busybox's sh runs its
# applets first). GUEST_IDLE_TIMEOUT: stop the guest when it has
# reported nothing on its channel for that many seconds (a machine that
# hangs as a whole; its suites' own limits must be shorter).
# GUEST_HOST_ROOT=1: the host's root directory shared read-only with the
# guest over virtio-9p (the kernel needs 9P and VIRTIO_PCI, as the *-full
# variants have), which guest/init's host_root mounts at /host: the real
# clients (make check-clients) run there from the host's own packages, with
# their libraries, instead of being copied into the initramfs.
# GUEST_CONSOLE=stdio: the kernel console on this terminal instead of
# RUN_DIR/console.log, for a plan that runs a shell there (make shell);
# Ctrl-A x stops QEMU. QEMU_ACCEL=kvm|tcg: no detection, use that one.
# GUEST_TCG_THREAD=single: under TCG, all vCPUs in one host thread, taking
# turns. QEMU 7.2's multi-threaded TCG can go on running a stale
# translation of kernel text that another vCPU has just patched (see
# docs/open-findings.md, "patched-full panicked under BCC's cpudist"):
# make check-clients, which patches the hottest functions, needs this.
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

# Why KVM cannot be used here, or nothing: /dev/kvm must open read-write and
# answer KVM_GET_API_VERSION with 12 (a node that exists is not enough: no
# permission, or no virtualisation under it).
kvm_problem() {
	python3 - 2>&1 <<-'EOF' || true
		import fcntl, os, sys
		try:
		    fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
		    version = fcntl.ioctl(fd, 0xAE00)   # KVM_GET_API_VERSION
		except OSError as e:
		    sys.exit(f"/dev/kvm: {e.strerror}")
		if version != 12:
		    sys.exit(f"/dev/kvm: KVM API version {version}, not 12")
	EOF
}

# A kernel must also boot under KVM: a /dev/kvm that answers can still hang
# every guest (seen here: -cpu host stops a guest before its first console
# line, the MSR 0x10a problem of nested virtualisation). The probe boots
# KERNEL with no root file system, which under KVM reaches its panic in a
# few seconds; no panic within KVM_PROBE_SECONDS (30) means no KVM. The
# answer is kept for this boot of the host (build/kvm-probe, by boot id),
# so only the first guest pays for it.
kvm_boot_problem() {
	local cache=$BUILD/kvm-probe boot_id log
	boot_id=$(cat /proc/sys/kernel/random/boot_id)
	if [ -f "$cache" ] && [ "$(head -1 "$cache")" = "$boot_id" ]; then
		tail -n +2 "$cache"
		return
	fi
	log=$(mktemp)
	# stderr: stdout is the answer; the probe may be silent for 30 s
	echo "[$VARIANT] qemu: /dev/kvm answers; trying a kernel under KVM (${KVM_PROBE_SECONDS:-30} s at most, once per host boot)" >&2
	timeout -k 5 "${KVM_PROBE_SECONDS:-30}" qemu-system-x86_64 -enable-kvm -cpu host \
		-m 256 -no-reboot -display none -nodefaults -monitor none \
		-serial "file:$log" -kernel "$KERNEL" -append "console=ttyS0 panic=-1" \
		> /dev/null 2>&1 || true
	{
		echo "$boot_id"
		grep -q "Kernel panic" "$log" ||
			echo "/dev/kvm answers, but a kernel did not boot under -enable-kvm -cpu host within ${KVM_PROBE_SECONDS:-30}s"
	} > "$cache.$$"
	mv "$cache.$$" "$cache"
	rm -f "$log"
	tail -n +2 "$cache"
}

# ACCEL: QEMU's options for the accelerator, and a line that says which.
pick_accel() {
	local why
	case "${QEMU_ACCEL:-}" in
	kvm) why= ;;
	tcg) why="QEMU_ACCEL=tcg" ;;
	'') why=$(kvm_problem)
	    [ -n "$why" ] || why=$(kvm_boot_problem) ;;
	*) die "QEMU_ACCEL=$QEMU_ACCEL: kvm or tcg" ;;
	esac
	if [ -z "$why" ]; then
		ACCEL=(-enable-kvm -cpu host)
		ACCEL_SAYS="KVM (-enable-kvm -cpu host)"
	else
		# TCG emulates: -cpu max gives the guest every feature it can
		ACCEL=(-accel "tcg${GUEST_TCG_THREAD:+,thread=$GUEST_TCG_THREAD}" -cpu max)
		ACCEL_SAYS="TCG (-cpu max${GUEST_TCG_THREAD:+, thread=$GUEST_TCG_THREAD}), no KVM: $why"
	fi
}

make_initramfs() {
	local stage=$RUN/initramfs t dir lib
	rm -rf "$stage"
	mkdir -p "$stage"/{bin,sbin,dev,proc,sys,tmp,lib,lib64,tests,etc,run,var,mnt,host}
	# ip netns keeps its namespaces in /var/run; the selftests' cgroup
	# helpers mount their cgroup2 on /mnt
	ln -s ../run "$stage/var/run"
	cp "$BUSYBOX" "$stage/bin/busybox"
	# The host's rm always: 6.1's test_local_storage copies /bin/rm and
	# runs the copy, which as busybox would not know its applet's name.
	for t in rm ${GUEST_HOST_TOOLS:-}; do
		cp -L "$(command -v "$t" || die "GUEST_HOST_TOOLS: no $t on this machine")" "$stage/bin/"
	done
	# GUEST_SH: a host shell (dash) as /bin/sh, also for system(): busybox's
	# sh runs its own applets before any program of PATH, so the host
	# tools above would never run from a test's system("ip ...")
	if [ -n "${GUEST_SH:-}" ]; then
		cp -L "$(command -v "$GUEST_SH" || die "GUEST_SH: no $GUEST_SH on this machine")" \
			"$stage/bin/$GUEST_SH"
		ln -s "$GUEST_SH" "$stage/bin/sh"
	else
		ln -s busybox "$stage/bin/sh"
	fi
	cp "$ROOT/guest/init" "$stage/init"
	cp "$PLAN" "$stage/plan.sh"
	for t in "$@"; do
		case "$t" in
		/*) dir=$t t=$(basename "$t") ;;
		*) dir=$(test_dir "$t") ;;
		esac
		# bpftool, of the first test dir that has one (build-tests.sh
		# builds it from that tree), for make shell and make run
		if [ ! -e "$stage/bin/bpftool" ] && [ -x "$dir/tools/sbin/bpftool" ]; then
			cp "$dir/tools/sbin/bpftool" "$stage/bin/bpftool"
		fi
		mkdir -p "$stage/tests/$t"
		# Everything a runner opens at run time sits beside it: the
		# binaries, BPF objects and bpf_testmod.ko (test_progs loads
		# it from its cwd), not the build's scratch dirs. The btf_dump
		# test compares its output with these C files.
		find "$dir" -maxdepth 1 -type f \
			\( -perm -u+x -o -name '*.bpf.o' -o -name '*.ko' \
			   -o -name 'btf_dump_test_case_*.c' \) \
			-exec cp {} "$stage/tests/$t/" \;
	done
	# Shared libraries of every binary, at the paths the loader expects.
	find "$stage/tests" "$stage/bin" -type f -perm -u+x -exec ldd {} \; 2>/dev/null |
		grep -o '/[^ ]*\.so[^ ]*' | sort -u | while read -r lib; do
			mkdir -p "$stage$(dirname "$lib")"
			cp -L "$lib" "$stage$lib"
		done
	# glibc opens libgcc_s itself, not through the loader, when a
	# thread exits or is cancelled (test_progs' tests do both)
	lib=$(ldconfig -p | sed -n 's|.*libgcc_s\.so\.1 (libc6,x86-64) => ||p' | head -1)
	[ -n "$lib" ] || die "libgcc_s.so.1 missing: apt-get install libgcc-s1"
	mkdir -p "$stage$(dirname "$lib")"
	cp -L "$lib" "$stage$lib"
	(cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1) > "$RUN/initramfs.cpio.gz"
	rm -rf "$stage"
}

# A progress line every PROGRESS_SECONDS (20) while the guest runs: the
# guest's last "guest: suite ..." line on the console, until killed.
boot_progress() {
	local start=$1 last
	set +e
	trap 'kill $! 2>/dev/null; exit 0' TERM
	while sleep "${PROGRESS_SECONDS:-20}" & wait $!; do
		last=$(tr -d '\r' < "$RUN/console.log" | grep -a '^guest: ' | tail -1 | cut -c1-100)
		echo "    [$VARIANT] boot and run: $(elapsed "$start")${last:+, $last}"
	done
}

# Kill this run's QEMU when the guest's channel has not grown for
# GUEST_IDLE_TIMEOUT seconds.
idle_watchdog() {
	local last=-1 size since
	since=$(date +%s)
	while sleep 10; do
		size=$(stat -c %s "$RUN/channel.log" 2>/dev/null || echo 0)
		if [ "$size" != "$last" ]; then
			last=$size since=$(date +%s)
		elif [ $(( $(date +%s) - since )) -ge "$GUEST_IDLE_TIMEOUT" ]; then
			echo "error: the guest reported nothing for ${GUEST_IDLE_TIMEOUT}s: stopping it" >&2
			pkill -f -- "-initrd $RUN/initramfs.cpio.gz" || true
			return 0
		fi
	done
}

boot() {
	local rc=0 console=(-monitor none -serial "file:$RUN/console.log") ticker= idle= share=()
	: > "$RUN/console.log"
	: > "$RUN/channel.log"
	# a terminal's console: its Ctrl-A commands, and no time limit
	if [ "${GUEST_CONSOLE:-}" = stdio ]; then
		console=(-serial mon:stdio)
		GUEST_TIMEOUT=0
	else
		boot_progress "$(date +%s)" &
		ticker=$!
	fi
	[ -z "${GUEST_IDLE_TIMEOUT:-}" ] || { idle_watchdog & idle=$!; }
	# multidevs=remap: the host's root spans several filesystems, whose
	# inode numbers would otherwise collide in the guest
	# shellcheck disable=SC2054	# one -virtfs argument, commas and all
	[ -z "${GUEST_HOST_ROOT:-}" ] ||
		share=(-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap)
	# Two sockets of one core: without ACPI the kernel finds CPUs in the
	# MP table, where QEMU lists only the first core of a socket.
	# GUEST_SMP and GUEST_QEMU_ARGS: bench.sh's instruction-count mode
	# boots one CPU with -icount.
	# shellcheck disable=SC2086
	timeout --foreground -k 10 "$GUEST_TIMEOUT" \
		qemu-system-x86_64 "${ACCEL[@]}" -smp "${GUEST_SMP:-2,sockets=2,cores=1}" \
		-m "$GUEST_MEM" -no-reboot ${GUEST_QEMU_ARGS:-} \
		-display none -nodefaults \
		"${console[@]}" -serial "file:$RUN/channel.log" "${share[@]}" \
		-kernel "$KERNEL" -initrd "$RUN/initramfs.cpio.gz" \
		-append "console=ttyS0 panic=-1 oops=panic loglevel=6 ${GUEST_CMDLINE:-}" ||
		rc=$?
	if [ -n "$ticker" ]; then
		kill "$ticker" 2>/dev/null || true
		wait "$ticker" 2>/dev/null || true
	fi
	if [ -n "$idle" ]; then
		# the watchdog is gone when it stopped the guest itself: under
		# set -e a failed kill would end this run before its reports
		# are split out of the channel
		kill "$idle" 2>/dev/null || true
		wait "$idle" 2>/dev/null || true
	fi
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
	pick_accel
	echo "[$VARIANT] qemu: $ACCEL_SAYS"
	echo "$ACCEL_SAYS" > "$RUN/accel"
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
