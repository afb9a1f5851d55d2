#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Bash completion (contrib/bash-completion/ptscope), sourced in bash and
# asked as bash-completion would ask it: subcommands, each subcommand's
# options (read from its --help), the values of options that take a known
# set, and file names where a file goes.
. "$(dirname "$0")/lib.sh"
P=${PTSCOPE:-build/ptscope}
C=${PTSCOPE_TOP:-.}/contrib/bash-completion/ptscope
if [ ! -x "$P" ]; then
	skip completion "no ptscope binary at $P (run make first)"
	exit 0
fi
# complete WORDS...: the last word is the one being completed
complete_words() {
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1));
		_ptscope; printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' \
		_ "$C" "$@"
}
expect_completion() { # name, expected (sorted, space-separated), words...
	local name=$1 want=$2 got
	shift 2
	got=$(complete_words "$@")
	if [ "$got" = "$want " ]; then
		pass "$name"
	else
		fail "$name" "got '$got', want '$want'"
	fi
}
cmds=$("$P" --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1}' | sort | tr '\n' ' ')
expect_completion completion_subcommands "$(echo "--help --version $cmds" | tr ' ' '\n' | grep . | sort | tr '\n' ' ' | sed 's/ $//')" "$P" ""
expect_completion completion_subcommand_prefix "convert" "$P" con
expect_completion completion_convert_long_options "--format --help --input-format --output --quiet" "$P" convert in.json --
expect_completion completion_dump_options "--slices" "$P" dump --sl
expect_completion completion_decode_options "--debug-dir" "$P" decode --deb
expect_completion completion_run_options "--trace-loader --trigger" "$P" run --tr
expect_completion completion_format_values "fxt json perfetto text" "$P" convert x -f ""
expect_completion completion_backend_values "step" "$P" run -b st
expect_completion completion_input_format_values "json" "$P" dump --input-format j
expect_completion completion_selftest_cases "threads trigger" "$P" selftest t
expect_completion completion_selftest_options "--backends" "$P" selftest --ba
expect_completion completion_selftest_pairs "qemu,step" "$P" selftest --backends q

# file names where a file goes
mkdir -p "$T/c" && touch "$T/c/trace_one.json" "$T/c/trace_two.fxt"
expect_completion completion_files "$T/c/trace_one.json $T/c/trace_two.fxt" "$P" dump "$T/c/tr"
expect_completion completion_output_file "$T/c/trace_two.fxt" "$P" convert in -o "$T/c/trace_t"
# run: the program to trace after --
got=$(complete_words "$P" run -o x.fxt -- bas)
if echo " $got" | grep -q ' bash '; then
	pass completion_run_command
else
	fail completion_run_command "got '$got'"
fi
# every option each subcommand's --help lists is offered
for c in $cmds; do
	want=$("$P" "$c" --help 2>/dev/null | grep -oE '(^|[ ,])--[a-z][a-z0-9.-]*' | sed 's/^[ ,]//' | sort -u | tr '\n' ' ')
	got=$(complete_words "$P" "$c" --)
	# (a command without options, like info, completes to nothing)
	if [ "$(echo $got)" = "$(echo $want)" ]; then
		pass "completion_all_options_$c"
	else
		fail "completion_all_options_$c" "got '$got', want '$want'"
	fi
done
