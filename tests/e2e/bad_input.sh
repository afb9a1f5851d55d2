#!/usr/bin/env bash
# The catalogue of bad input (docs/bad-input.md): each case must print one
# clear sentence, exit non-zero, leave no output file (nor a temporary
# one), and leave the target as it was.  A few cases are not failures
# (a PT stream with garbage inside, Ctrl-C while recording): they say
# what they do instead.
. "$(dirname "$0")/lib.sh"
S=$PTSCOPE_BUILD/samples
R=${PTSCOPE_TESTDATA:-}/real-pt
B=${BACKEND:-step}
P=$PTSCOPE
cd "$T" || exit 1
# The small file systems the output cases mount go away whatever happens.
trap 'umount "$T/ro" "$T/full" 2>/dev/null' EXIT

# check NAME PATTERN CMD...: CMD fails, stderr has PATTERN in one line, no
# o.* nor .o.* (temporary) file is left in $T or in $OUTDIR.
OUTDIR=$T
check() {
	local name=$1 pat=$2 rc
	shift 2
	rm -f "$T"/o.* "$T"/.o.* "$OUTDIR"/o.* "$OUTDIR"/.o.*
	"$@" >"$T/$name.out" 2>"$T/$name.err"
	rc=$?
	if [ $rc -eq 0 ]; then
		fail "$name" "exit status 0"
	elif [ $rc -ge 128 ] && [ $rc -ne 130 ]; then
		fail "$name" "died of signal $((rc - 128))"
	elif ! grep -qE "$pat" "$T/$name.err"; then
		fail "$name" "stderr was: $(tr '\n' '|' <"$T/$name.err")"
	elif ls "$T"/o.* "$T"/.o.* "$OUTDIR"/o.* "$OUTDIR"/.o.* >/dev/null 2>&1; then
		fail "$name" "a file was left: $(ls -a "$T" "$OUTDIR" | grep 'o\.' | tr '\n' ' ')"
	else
		pass "$name"
	fi
}

# one_line NAME: what check NAME's command printed is its one sentence,
# not after a notice (the backend chosen when -b is not given).
one_line() {
	if [ "$(wc -l <"$T/$1.err")" -eq 1 ]; then
		pass "$1_one_line"
	else
		fail "$1_one_line" "stderr was: $(tr '\n' '|' <"$T/$1.err")"
	fi
}

# untouched NAME PID REF_STATUS: the target is not traced, not stopped,
# and ends with the status and output of an untraced run.
untouched() {
	local name=$1 pid=$2 want=$3 tracer state rc
	tracer=$(awk '/^TracerPid/ {print $2}' "/proc/$pid/status" 2>/dev/null)
	state=$(awk '/^State/ {print $2}' "/proc/$pid/status" 2>/dev/null)
	wait "$pid"
	rc=$?
	if [ "${tracer:-0}" != 0 ]; then
		fail "$name" "target still traced by $tracer"
	elif [ "$state" = t ] || [ "$state" = T ]; then
		fail "$name" "target left stopped ($state)"
	elif [ "$rc" != "$want" ]; then
		fail "$name" "target ended with status $rc, untraced $want"
	else
		pass "$name"
	fi
}

# ---- processes ----
check pid_does_not_exist "no process with pid 999999999" \
	"$P" attach -p 999999999 -o "$T/o.fxt"
one_line pid_does_not_exist
# A zombie: the process exited and its parent has not collected it.
bash -c 'sleep 0.01 & exec sleep 5' &
parent=$!
sleep 0.3
zombie=$(pgrep -P $parent)
check pid_exited_zombie "process $zombie has exited|exited before ptscope could trace" \
	"$P" attach -b step -p "$zombie" -o "$T/o.fxt"
kill $parent 2>/dev/null
wait $parent 2>/dev/null
# A process that exits while ptscope attaches: whichever way the race
# goes, a sentence and no file.
ok=1
for i in 1 2 3 4 5; do
	true &
	pid=$!
	rm -f "$T"/o.*
	if "$P" attach -q -b step -p $pid -o "$T/o.fxt" 2>"$T/race.err"; then
		ok=0 && echo "  attach to an exiting process succeeded"
	elif ! grep -qE "no process with pid $pid|exited" "$T/race.err"; then
		ok=0 && echo "  said: $(cat "$T/race.err")"
	elif ls "$T"/o.* >/dev/null 2>&1; then
		ok=0 && echo "  left a file"
	fi
done
[ $ok = 1 ] && pass pid_exits_during_attach || fail pid_exits_during_attach "see above"

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	"$S/busy" 2 >/dev/null &
	victim=$!
	OUTDIR=/tmp check no_permission "not allowed to trace process $victim" \
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$P" attach -p $victim -o /tmp/o.bad-input-never.fxt
	untouched no_permission_target_untouched $victim 7
else
	skip no_permission "needs root, the nobody user and setpriv"
fi
if [ -r /proc/sys/kernel/yama/ptrace_scope ]; then
	skip ptrace_scope "Yama is present: covered by no_permission's sentence (it names kernel.yama.ptrace_scope)"
else
	skip ptrace_scope "this kernel has no Yama LSM (no kernel.yama.ptrace_scope)"
fi

# ---- triggers ----
check trigger_missing "no function 'handle_requst'.*did you mean.*handle_request" \
	"$P" run -b "$B" -t handle_requst -o "$T/o.fxt" -- "$S/demo" 5
cat >"$T/amb1.c" <<'C'
static int helper(int x) { return x + 1; }
int one(int x) { return helper(x); }
C
cat >"$T/amb2.c" <<'C'
int one(int);
static int helper(int x) { return x * 2; }
int main(void) { return helper(one(1)) == 4 ? 0 : 1; }
C
if gcc -g -O0 -o "$T/amb" "$T/amb1.c" "$T/amb2.c" 2>/dev/null; then
	check trigger_ambiguous "'helper' names 2 functions.*pick one with NAME@MODULE, FILE:LINE or addr:0xADDR" \
		"$P" run -b "$B" -t helper -o "$T/o.fxt" -- "$T/amb"
else
	skip trigger_ambiguous "gcc cannot build the two-file program"
fi
strip -o "$T/demo.stripped" "$S/demo"
check trigger_stripped "demo.stripped is stripped \(it has no symbol table\)" \
	"$P" run -b "$B" -t handle_request -o "$T/o.fxt" -- "$T/demo.stripped" 5

# ---- commands ----
check command_not_found "cannot run 'no-such-cmd-xyz': no such file or command in PATH" \
	"$P" run -b "$B" -o "$T/o.fxt" -- no-such-cmd-xyz
check command_not_executable "permission denied" \
	"$P" run -b "$B" -o "$T/o.fxt" -- "$PTSCOPE_TOP/samples/demo.c"
check command_not_found_any_backend "cannot run 'no-such-cmd-xyz': no such file or command in PATH" \
	"$P" run -o "$T/o.fxt" -- no-such-cmd-xyz
one_line command_not_found_any_backend

# ---- ptscope's own files, named by the environment ----
if command -v qemu-x86_64 >/dev/null; then
	check qemu_plugin_env_wrong "PTSCOPE_QEMU_PLUGIN is set to '/no/such/plugin.so', which is not there" \
		env PTSCOPE_QEMU_PLUGIN=/no/such/plugin.so "$P" run -b qemu -o "$T/o.fxt" -- /bin/true
	one_line qemu_plugin_env_wrong
else
	skip qemu_plugin_env_wrong "qemu-x86_64 is not installed"
fi
check samples_env_wrong "PTSCOPE_SAMPLES is set to '/no/such/dir', which is not there" \
	env PTSCOPE_SAMPLES=/no/such/dir "$P" selftest
one_line samples_env_wrong

# ---- the traced binary changes under the running process ----
# Deleted: the process still runs the old file; ptscope reads it through
# /proc/PID/map_files.  Replaced (renamed over, as an upgrade does): the
# file at the path is another program; the trace must show the old one.
for how in deleted replaced; do
	cp "$S/busy" "$T/busy.$how"
	# Long enough to outlive a slow attach on a loaded machine.
	"$T/busy.$how" 6 >"$T/busy.$how.out" &
	pid=$!
	# the file must be changed after the process runs it: on a loaded
	# machine the background job's exec can take longer than a moment
	for _ in $(seq 50); do
		[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$T/busy.$how" ] && break
		sleep 0.1
	done
	sleep 0.3
	if [ $how = deleted ]; then
		rm "$T/busy.$how"
	else
		cp "$S/demo" "$T/busy.new" && mv "$T/busy.new" "$T/busy.$how"
	fi
	# The first trigger comes at once (a worker's is due when it is
	# stopped), so the snapshot holds a few hundred instructions of each
	# thread: any of busy's functions shows its symbols were read.
	"$P" attach -q -b step --no-events -p $pid -t . -s 64K -o "$T/$how.fxt" 2>"$T/$how.err"
	rc=$?
	if [ $rc -ne 0 ]; then
		fail binary_$how "exit status $rc: $(cat "$T/$how.err")"
	elif ! "$P" dump "$T/$how.fxt" |
		grep -q 'name="\(collatz_steps\|sum_to\|worker\|now\|ptscope_trigger\)"'; then
		fail binary_$how "the trace does not show busy's functions"
	elif "$P" dump "$T/$how.fxt" | grep -q 'name="slow_scan\|name="handle_request'; then
		fail binary_$how "the trace shows the replacing program's functions"
	else
		pass binary_$how
	fi
	untouched binary_${how}_target_untouched $pid 7
done

# ---- recordings ----
"$P" record -q -b step -s 64K -t . -o "$T/good.ptsc" -- "$S/demo" 20 >/dev/null 2>&1
if [ -s "$T/good.ptsc" ]; then
	size=$(stat -c %s "$T/good.ptsc")
	head -c $((size / 2)) "$T/good.ptsc" >"$T/trunc.ptsc"
	check recording_truncated "trunc.ptsc is truncated at byte $((size / 2)).*was the recording interrupted" \
		"$P" decode "$T/trunc.ptsc" -o "$T/o.fxt"
	cp "$T/good.ptsc" "$T/corrupt.ptsc"
	printf 'XXXXXXXX' | dd of="$T/corrupt.ptsc" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
	check recording_corrupted "corrupt.ptsc is damaged: the section at byte [0-9]+ fails its checksum" \
		"$P" decode "$T/corrupt.ptsc" -o "$T/o.fxt"
	cp "$T/good.ptsc" "$T/newer.ptsc"
	printf '\x63' | dd of="$T/newer.ptsc" bs=1 seek=8 conv=notrunc 2>/dev/null
	check recording_newer_version "newer.ptsc was written by a newer ptscope \(format 99; this one reads [0-9]+\): update ptscope" \
		"$P" decode "$T/newer.ptsc" -o "$T/o.fxt"
	check recording_not_one "is not a ptscope recording|not a trace|cannot tell" \
		"$P" decode /etc/hostname -o "$T/o.fxt"
else
	fail recordings "cannot make a recording to damage"
fi

# Garbage in the middle of a PT stream is not a failure: the decoder
# resyncs at the next PSB, marks the gap with a decode-error instant and
# says how many there were.
if [ -d "$R" ]; then
	pt=$R/lldb-single-thread/3842849.trace
	{ head -c 2048 "$pt"; head -c 512 /dev/urandom; tail -c +2049 "$pt"; } >"$T/garbage.pt"
	"$P" decode --pt "$T/garbage.pt" --elf "$R/lldb-single-thread/a.out" \
		--cpu 6/79/1 -o "$T/garbage.fxt" 2>"$T/garbage.err"
	rc=$?
	if [ $rc -ne 0 ] || [ ! -s "$T/garbage.fxt" ]; then
		fail pt_garbage_in_middle "exit status $rc: $(cat "$T/garbage.err")"
	elif ! "$P" dump "$T/garbage.fxt" | grep -q '^begin'; then
		fail pt_garbage_in_middle "no spans decoded around the garbage"
	else
		pass pt_garbage_in_middle
	fi
	head -c 4096 /dev/urandom | tr -d '\002' >"$T/noise.pt"
	check pt_only_garbage "no PSB packet" \
		"$P" decode --pt "$T/noise.pt" --elf "$R/lldb-single-thread/a.out" -o "$T/o.fxt"
else
	skip pt_garbage_in_middle "no shared/testdata/real-pt"
	skip pt_only_garbage "no shared/testdata/real-pt"
fi

# ---- output ----
check output_dir_missing "output directory '$T/nodir' does not exist" \
	"$P" run -b "$B" -o "$T/nodir/o.fxt" -- "$S/demo" 5
if [ "$(id -u)" = 0 ] && mkdir -p "$T/ro" "$T/full" &&
	mount -t tmpfs -o ro,size=64k tmpfs "$T/ro" 2>/dev/null; then
	OUTDIR=$T/ro check output_dir_read_only "cannot write in output directory '$T/ro'|cannot create $T/ro/o.fxt: Read-only file system" \
		"$P" run -b "$B" -t . -o "$T/ro/o.fxt" -- "$S/demo" 5
	OUTDIR=$T/ro check output_dir_read_only_decode "cannot create $T/ro/o.fxt: Read-only file system" \
		"$P" decode "$T/good.ptsc" -o "$T/ro/o.fxt"
	umount "$T/ro"
	mount -t tmpfs -o size=16k tmpfs "$T/full"
	OUTDIR=$T/full check disk_full_decode "cannot write $T/full/o.json: No space left on device" \
		"$P" decode "$T/good.ptsc" -o "$T/full/o.json"
	OUTDIR=$T/full check disk_full_run "cannot write $T/full/o.json: No space left on device" \
		"$P" run -b "$B" -s 64K -o "$T/full/o.json" -- "$S/demo" 40
	OUTDIR=$T/full check disk_full_record "No space left on device" \
		"$P" record -b step -s 256K --archive -o "$T/full/o.ptsc" -- "$S/demo" 40
	umount "$T/full"
else
	skip output_dir_read_only "needs root to mount a read-only tmpfs"
	skip disk_full "needs root to mount a small tmpfs"
fi

# ---- limits ----
avail=$(awk '/^MemAvailable/ {print $2}' /proc/meminfo)
if [ "${avail:-0}" -lt $((32 * 1024 * 1024)) ]; then
	check snapshot_beyond_memory "snapshot size of 16384 MiB per thread is more than half of the memory available" \
		"$P" run -b "$B" -s 16G -o "$T/o.fxt" -- "$S/demo" 5
else
	skip snapshot_beyond_memory "this machine has more than 32 GiB free"
fi
check snapshot_size_absurd "bad size '100G'.*up to 16G" \
	"$P" run -b "$B" -s 100G -o "$T/o.fxt" -- "$S/demo" 5
if [ -e /sys/bus/event_source/devices/intel_pt ]; then
	skip snapshot_beyond_mlock "covered by the intel-pt backend's tests"
else
	skip snapshot_beyond_mlock "no Intel PT here: only the intel-pt backend locks its buffer (RLIMIT_MEMLOCK)"
fi
skip tracefs_missing "the eBPF sidecar is not part of this build"
skip no_btf "the eBPF sidecar is not part of this build"

# ---- Ctrl-C ----
# While attached: Ctrl-C takes the snapshot, writes it and detaches; the
# target runs on untouched.
for phase in attach record; do
	"$S/busy" 3 >/dev/null &
	pid=$!
	sleep 0.2
	if [ $phase = attach ]; then
		"$P" attach -q -b step -p $pid -o "$T/int.fxt" 2>"$T/int.err" &
	else
		"$P" record -q -b step -p $pid -o "$T/int.ptsc" 2>"$T/int.err" &
	fi
	pp=$!
	# Once ptscope holds the target (it traces it from then on): at
	# once for the attach, later while recording.  A fixed delay could
	# end before ptscope has even loaded its libraries on a busy machine,
	# and a Ctrl-C there ends a process that has not touched anything.
	for _ in $(seq 500); do
		[ "$(awk '/^TracerPid:/ {print $2}' /proc/$pid/status 2>/dev/null)" = "$pp" ] && break
		kill -0 $pp 2>/dev/null || break
		sleep 0.01
	done
	[ $phase = record ] && sleep 0.5
	kill -INT $pp
	wait $pp
	rc=$?
	out=$T/int.fxt
	[ $phase = record ] && out=$T/int.ptsc
	if [ $rc -ge 128 ]; then
		fail ctrl_c_$phase "ptscope died of signal $((rc - 128))"
	elif [ $rc -ne 0 ] && ! grep -qE "^ptscope" "$T/int.err"; then
		fail ctrl_c_$phase "exit status $rc without a sentence"
	elif [ $rc -eq 0 ] && ! "$P" decode "$out" -o "$T/int.check.fxt" >/dev/null 2>&1 &&
		! "$P" dump "$out" >/dev/null 2>&1; then
		fail ctrl_c_$phase "exit 0 but $out does not read back"
	else
		pass ctrl_c_$phase
	fi
	untouched ctrl_c_${phase}_target_untouched $pid 7
	rm -f "$T"/int.*
done
# While decoding/converting: ptscope stops, no file and no temporary file.
"$PTSCOPE_BUILD/tools/gen_trace" -n 1000000 -t 2 -o "$T/big.fxt" 2>/dev/null
"$P" convert "$T/big.fxt" -o "$T/o.json" 2>/dev/null &
pp=$!
for i in $(seq 100); do
	ls -a "$T" | grep -q '^\.o\.json\.' && break
	sleep 0.01
done
kill -INT $pp
wait $pp
rc=$?
if [ $rc -ne 130 ]; then
	fail ctrl_c_convert "exit status $rc, want 130 (SIGINT)"
elif ls -a "$T" | grep -q 'o\.json'; then
	fail ctrl_c_convert "left $(ls -a "$T" | grep 'o\.json')"
else
	pass ctrl_c_convert
fi
rm -f "$T/big.fxt"
# A second Ctrl-C right after the first, while the snapshot is decoded and
# written: the writing finishes, the trace is whole.
"$S/busy" 3 >/dev/null &
pid=$!
sleep 0.2
"$P" attach -q -b step -p $pid -o "$T/twice.json" 2>"$T/twice.err" &
pp=$!
sleep 0.5
kill -INT $pp
sleep 0.01
kill -INT $pp
wait $pp
rc=$?
if [ $rc -ne 0 ]; then
	fail ctrl_c_twice_while_writing "exit status $rc: $(cat "$T/twice.err")"
elif ! python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$T/twice.json" 2>/dev/null; then
	fail ctrl_c_twice_while_writing "the trace is not whole JSON"
else
	pass ctrl_c_twice_while_writing
fi
untouched ctrl_c_twice_target_untouched $pid 7
