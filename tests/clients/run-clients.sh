#!/bin/bash
# The real clients' checks (make check-clients): Debian 12's own bpftool,
# bpftrace and BCC tools against the running kernel. Runs in the guest,
# chrooted into the host's root (guest/init's host_root), so every tool is
# the host's package with its own libraries.
#
#   run-clients.sh OBJ_DIR [OUR_OBJ_DIR]
#
# OBJ_DIR holds upstream 6.1's selftest object map_kptr.bpf.o (array, hash,
# no-prealloc hash and LRU maps whose values hold a __kptr and a
# __kptr_ref). OUR_OBJ_DIR, given on a kernel with our series, holds our
# kptr_objs.bpf.o: its percpu hash maps, whose kptrs only the series has,
# get the ours_* checks. Prints TAP: each check's output as "# " lines, normalized
# (ids, times, sizes and counts that differ from run to run become
# placeholders) so that two kernels' outputs can be compared line by line,
# then "ok N - NAME" or "not ok N - NAME (why)", and "1..N" at the end.
# Exit status 1 when a check failed. Writes only in the guest: the objects'
# pins under /sys/fs/bpf/clients_progs and clients_maps (removed after
# each group of checks) and the tools' scratch files in /tmp.
set -u
OBJ=$1/map_kptr.bpf.o
OURS=${2:+$2/kptr_objs.bpf.o}
PROGS=/sys/fs/bpf/clients_progs
MAPS=/sys/fs/bpf/clients_maps
export HOME=/tmp TMPDIR=/tmp
n=0 failed=0

# Placeholders for what is allowed to differ between runs and kernels. A
# program's tag hashes its instructions as loaded, and those hold BTF ids
# that libbpf resolved in the running kernel's BTF: map_kptr's kfuncs, and
# the __ksym bpf_map_fops of bpftool's own dump_bpf_map iterator. The
# series adds types and functions, so the ids, and the tags, differ.
normalize() {
	sed -E \
		-e 's/\btag [0-9a-f]{16}\b/tag H/g' \
		-e 's/\b(id|map_ids|prog_ids|btf_id|prog_id|map_id|pids|uid|run_cnt|run_time_ns|recursion_misses)([ :"]+)[0-9][0-9,]*/\1\2N/g' \
		-e 's/"?loaded_at"?[": ]+[^ ,]*( [0-9:]+)?/loaded_at T/' \
		-e 's/\b(xlated|jited|memlock)([ :"]+)[0-9]+B?/\1\2N/g' \
		-e 's/^[0-9]+: /N: /' \
		-e 's/\bsize [0-9]+B/size NB/g' \
		-e 's/duration( \(average\))?: [0-9]+ns/duration: Nns/' \
		-e 's/\[[0-9]{6,}\]/[T]/g' \
		-e 's/Attaching [0-9]+ probes/Attaching N probes/' \
		-e 's/(bpftrace|cat|bash|sh|python3)\([0-9]+\)/\1(N)/g'
}

# report NAME OUTPUT_FILE STATUS [WHY]: the TAP lines of one check
report() {
	n=$((n + 1))
	normalize < "$2" | sed 's/^/# /'
	if [ "$3" -eq 0 ]; then
		echo "ok $n - $1"
	else
		echo "not ok $n - $1${4:+ ($4)}"
		failed=$((failed + 1))
	fi
}

# progress NAME: a line on the kernel console (the run's console.log
# shows which check a slow or stuck run is in)
progress() {
	echo "clients: check $((n + 1)): $1" > /dev/kmsg 2>/dev/null || true
}

# check NAME EXPECT CMD...: CMD must exit 0 and its output (stdout and
# stderr) must have a line matching the extended regex EXPECT (unless
# EXPECT is empty).
check() {
	local name=$1 expect=$2 rc=0 out=/tmp/out.$$
	shift 2
	progress "$name"
	"$@" > "$out" 2>&1 || rc=$?
	if [ $rc -ne 0 ]; then
		report "$name" "$out" 1 "exit status $rc"
	elif [ -n "$expect" ] && ! grep -Eq -- "$expect" "$out"; then
		report "$name" "$out" 1 "no line matches /$expect/"
	else
		report "$name" "$out" 0
	fi
}

# kptrs_read_as_zero NAME MAP [FIELD=VALUE]: bpftool's dump of MAP (JSON:
# raw bytes and BTF-formatted fields, of every CPU for a percpu map) shows
# every kptr slot (a field named *ptr or obj) as zero, and so FIELD, if
# given, as VALUE: the bytes user space wrote beside the slots.
kptrs_read_as_zero() {
	local out=/tmp/dump.$$ why=
	progress "$1"
	bpftool -j -p map dump pinned "$MAPS/$2" > "$out.json" 2>&1 || why="bpftool failed"
	cp "$out.json" "$out"
	python3 - "$out.json" "${3:-}" <<-'PY' >> "$out" 2>&1 || why=${why:-"a kptr slot is not zero"}
		import json, sys
		elems = json.load(open(sys.argv[1]))
		field, _, want = sys.argv[2].partition("=")
		assert elems, "no element"
		values = 0
		for e in elems:
		    raw = [e["value"]] if "value" in e else [c["value"] for c in e["values"]]
		    fmt = e["formatted"]
		    fmt = [fmt["value"]] if "value" in fmt else [c["value"] for c in fmt["values"]]
		    for r, v in zip(raw, fmt):
		        values += 1
		        slots = {k: x for k, x in v.items() if k.endswith("ptr") or k == "obj"}
		        assert slots and not any(slots.values()), f"kptr slots {v}"
		        if field:
		            assert str(v[field]) == want, f"{field} is {v[field]}, not {want}"
		        else:
		            assert all(int(b, 16) == 0 for b in r), f"raw value {r}"
		print(f"{len(elems)} element(s), {values} value(s), kptr slots zero")
	PY
	report "$1" "$out" "$([ -z "$why" ] && echo 0 || echo 1)" "$why"
}

# test_run PROG [DIR]: run a pinned tc program once on a zeroed packet
test_run() {
	bpftool prog run pinned "${2:-$PROGS}/$1" data_in /tmp/pkt repeat 1
}

head -c 64 /dev/zero > /tmp/pkt
rm -rf "$PROGS" "$MAPS"

# --- bpftool
check bpftool_version 'bpftool v7' bpftool version
check bpftool_loadall 'test_map_kptr_ref' sh -c \
	"bpftool prog loadall $OBJ $PROGS pinmaps $MAPS && ls $PROGS $MAPS"
check bpftool_btf_kptr_tags "TYPE_TAG 'kptr_ref'" \
	bpftool btf dump map pinned "$MAPS/array_map" all
check bpftool_prog_show 'name test_map_kptr_ref' bpftool prog show
check bpftool_map_show 'name array_map' bpftool map show
# user space writes all ones into every value: the kptr slots must ignore it
for m in array_map hash_map hash_malloc_map lru_hash_map; do
	check "bpftool_update_$m" '' bpftool map update pinned "$MAPS/$m" \
		key 0 0 0 0 value 0xff 0xff 0xff 0xff 0xff 0xff 0xff 0xff \
		0xff 0xff 0xff 0xff 0xff 0xff 0xff 0xff
	kptrs_read_as_zero "bpftool_dump_after_update_$m" "$m"
done
# the program loads, exchanges and releases what each map's slots hold
check bpftool_run_test_map_kptr 'Return value: 0,' test_run test_map_kptr
# a referenced kptr stays in array_map: bpftool still reads zeros
check bpftool_run_test_map_kptr_ref 'Return value: 0,' test_run test_map_kptr_ref
kptrs_read_as_zero bpftool_dump_holding_ref array_map
check bpftool_run_test_map_kptr_ref2 'Return value: 0,' test_run test_map_kptr_ref2
check bpftool_btf_show 'name <anon>|name' bpftool btf show
# unpinned, the maps are freed and their destructor puts the reference
# held in array_map: test_map_kptr_ref, loaded afresh, checks that the
# object's count is back to its own (deferred: the map's free work runs
# after an RCU grace period)
rm -rf "$PROGS" "$MAPS"
released() {
	local i
	for i in $(seq 30); do
		rm -rf "$PROGS" "$MAPS"
		bpftool prog loadall "$OBJ" "$PROGS" pinmaps "$MAPS" &&
			test_run test_map_kptr_ref | grep -q 'Return value: 0,' &&
			{ echo "reference released"; return 0; }
		sleep 1
	done
	return 1
}
check bpftool_map_free_releases_ref 'reference released' released
rm -rf "$PROGS" "$MAPS"

# --- our series' maps: percpu hash, no-prealloc and LRU percpu hash with a
# referenced kptr beside 8 bytes of data (kptr_objs.bpf.o's obj_slot)
if [ -n "$OURS" ]; then
	check ours_loadall 'pcpu_store' sh -c \
		"bpftool prog loadall $OURS $PROGS pinmaps $MAPS && ls $PROGS $MAPS"
	for m in pcpu_hash pcpu_hash_np lru_pcpu_hash; do
		check "ours_update_$m" '' bpftool map update pinned "$MAPS/$m" \
			key 0 0 0 0 value 0xff 0xff 0xff 0xff 0xff 0xff 0xff 0xff \
			0xff 0xff 0xff 0xff 0xff 0xff 0xff 0xff
		kptrs_read_as_zero "ours_dump_after_update_$m" "$m" data=18446744073709551615
	done
	# pcpu_hash (map_sel 0) gets a test object on this CPU's value
	check ours_run_pcpu_store 'Return value: 0,' test_run pcpu_store
	kptrs_read_as_zero ours_dump_holding_ref_pcpu_hash pcpu_hash data=18446744073709551615
	rm -rf "$PROGS" "$MAPS"
fi

# --- bpftrace: probes of every kind, maps and their printing. cat is the
# traced command (-c): the same binary on both kernels, so counts match.
bt() { bpftrace "$@" 2>&1 | grep -v '^Attaching'; }
check bpftrace_begin '^hello$' bt -e 'BEGIN { printf("hello\n"); exit(); }'
check bpftrace_kprobe '^@reads: [1-9]' bt -c '/bin/cat /etc/os-release' \
	-e 'kprobe:vfs_read /comm == "cat"/ { @reads = count(); }'
check bpftrace_kretprobe_hist '^@bytes:' bt -c '/bin/cat /etc/os-release' \
	-e 'kretprobe:vfs_read /comm == "cat"/ { @bytes = hist(retval); }'
check bpftrace_tracepoint '^@opens: [1-9]' bt -c '/bin/cat /etc/os-release' \
	-e 'tracepoint:syscalls:sys_enter_openat /comm == "cat"/ { @opens = count(); }'
check bpftrace_kfunc '^@asked: [1-9]' bt -c '/bin/cat /etc/os-release' \
	-e 'kfunc:vfs_read /comm == "cat"/ { @asked = sum(args->count); }'
check bpftrace_maps '^@m\[2\]: 20$' bt -e 'BEGIN { @m[1] = 10; @m[2] = 20;
	delete(@m[1]); print(@m); clear(@m); @s = stats(5); exit(); }'

# --- BCC: its Python tools compile their programs with the running
# kernel's headers (BCC_KERNEL_SOURCE, set by check-clients.sh). What they
# count depends on timing, so their output is printed (and compared) only
# in its lines that do not: bcc KEEP CMD... prints the lines matching the
# extended regex KEEP, numbers as N and spaces collapsed.
busy() { while :; do cat /etc/os-release > /dev/null; sleep 0.2; done; }
bcc() {
	local keep=$1 pid rc=0
	shift
	busy & pid=$!
	"$@" > /tmp/bcc.$$ 2>&1 || rc=$?
	kill $pid
	sed -E 's/[0-9]+/N/g; s/[[:space:]]+/ /g; s/ $//' /tmp/bcc.$$ | grep -E -- "$keep"
	return $rc
}
check bcc_funccount '^vfs_read N$' bcc '^(FUNC|vfs_read)' funccount-bpfcc -d 5 vfs_read
check bcc_syscount '^SYSCALL COUNT$' bcc '^SYSCALL' syscount-bpfcc -d 5
check bcc_cpudist 'usecs : count distribution' bcc 'usecs' cpudist-bpfcc 2 1

echo "1..$n"
[ $failed -eq 0 ]
