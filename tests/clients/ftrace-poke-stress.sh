#!/bin/sh
# Thousands of arm/disarm cycles of an ftrace-based kprobe on
# finish_task_switch, with no BPF at all, while both vCPUs switch tasks
# hard: the experiment of docs/open-findings.md ("patched-full panicked
# under BCC's cpudist"). Runs in the guest, under busybox sh; prints the
# number of cycles. From the host, with the host's root shared:
#
#   echo 'host_root
#   run_suite fts 900 / sh /host'"$PWD"'/tests/clients/ftrace-poke-stress.sh 300' > /tmp/plan.sh
#   GUEST_HOST_ROOT=1 [GUEST_SMP=1 | GUEST_TCG_THREAD=single] \
#       scripts/run-guest.sh patched-full /tmp/fts /tmp/plan.sh
#
# SECONDS_TO_RUN is the first argument (300).
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T || exit 2
pingpong() { while :; do echo x; done | while read -r _; do :; done; }
pingpong & p1=$!
pingpong & p2=$!
echo 'p:fts finish_task_switch.isra.0' > $T/kprobe_events || exit 3
i=0
end=$(( $(date +%s) + ${1:-300} ))
while [ "$(date +%s)" -lt $end ]; do
	echo 1 > $T/events/kprobes/fts/enable
	echo 0 > $T/events/kprobes/fts/enable
	i=$((i + 1))
done
echo "cycles $i"
kill $p1 $p2
echo > $T/kprobe_events
