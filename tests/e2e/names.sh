#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Names a user recognises: a program that calls glibc's aliased functions
# (samples/aliases.c), traced with the single-step backend (works on any
# x86-64 Linux), shows puts, write, calloc, mprotect, brk, not _IO_puts,
# __libc_write, __calloc, __mprotect, __brk; the other names stay in the
# span's "aliases" argument and in tools/symbols.  Built static, its
# start-up runs GNU IFUNC resolvers, shown as "strchr [ifunc resolver]".
. "$(dirname "$0")/lib.sh"
P=${PTSCOPE:-build/ptscope}
B=${PTSCOPE_BUILD:-build}
S=$B/samples/aliases
if [ ! -x "$P" ] || [ ! -x "$S" ]; then
	skip names "no ptscope or samples/aliases in $B (run make first)"
	exit 0
fi
if ! "$P" run -q -b step -o "$T/dyn.json" -- "$S" >"$T/out" 2>"$T/err"; then
	skip names "the step backend cannot trace here: $(head -c 300 "$T/err")"
	exit 0
fi
"$P" dump --slices "$T/dyn.json" >"$T/dyn.slices"
libc_slice() { grep "name=\"$1\" cat=\"function\" .*module=\"libc.so.6\"" "$T/dyn.slices" | head -1; }
for f in puts write calloc mprotect brk; do
	line=$(libc_slice "$f")
	if [ -n "$line" ]; then
		pass "names_${f}_is_shown_as_$f"
	else
		fail "names_${f}_is_shown_as_$f" "$(grep -E "name=\"[_A-Za-z]*$f\"" "$T/dyn.slices" | head -2 | cut -c1-200)"
	fi
done
if grep -qE 'name="(_IO_puts|__libc_write|__write|__calloc|__libc_calloc|__mprotect|__brk)"' "$T/dyn.slices"; then
	fail names_no_internal_aliases "$(grep -oE 'name="(_IO_puts|__libc_write|__write|__calloc|__libc_calloc|__mprotect|__brk)"' "$T/dyn.slices" | sort -u | tr '\n' ' ')"
else
	pass names_no_internal_aliases
fi
if libc_slice puts | grep -q 'aliases="_IO_puts' &&
	libc_slice write | grep -q 'aliases="[^"]*__libc_write'; then
	pass names_aliases_argument_keeps_the_others
else
	fail names_aliases_argument_keeps_the_others "$(libc_slice puts | cut -c1-250)"
fi
libc_path=$(ldd "$S" | awk '/libc.so.6/{print $3}')
if [ -x "$B/tools/symbols" ] && [ -n "$libc_path" ]; then
	if "$B/tools/symbols" "$libc_path" 2>/dev/null | grep -E '  puts  .*\(aliases: _IO_puts' >/dev/null; then
		pass names_tools_symbols_lists_aliases
	else
		fail names_tools_symbols_lists_aliases "$("$B/tools/symbols" "$libc_path" 2>&1 | grep -w puts | head -2)"
	fi
fi

if "$P" symbols "$libc_path" | grep -E '  puts  .*\(aliases: _IO_puts' >/dev/null &&
	"$P" symbols "$libc_path" "$(printf '%#x' $(("0x$("$P" symbols "$libc_path" | awk '$3=="write"{print substr($1,3)}')" + 4)))" |
	grep -q '  write  .*aliases: .*__libc_write'; then
	pass names_ptscope_symbols_lists_and_resolves
else
	fail names_ptscope_symbols_lists_and_resolves "$("$P" symbols "$libc_path" 2>&1 | grep -wE 'puts|write' | head -3)"
fi
if ! "$P" symbols "$libc_path" 12zz >/dev/null 2>"$T/err" && grep -q "is not an address" "$T/err"; then
	pass names_ptscope_symbols_bad_address
else
	fail names_ptscope_symbols_bad_address "$(cat "$T/err")"
fi

# static: the IFUNC resolvers run while relocations are applied
if ! gcc -g -O1 -static -o "$T/aliases_static" "${PTSCOPE_TOP:-.}/samples/aliases.c" 2>"$T/cc.err"; then
	skip names_ifunc "cannot link statically here: $(head -c 200 "$T/cc.err")"
	exit 0
fi
"$P" run -q -b step -o "$T/st.json" -- "$T/aliases_static" >/dev/null 2>"$T/err"
"$P" dump --slices "$T/st.json" >"$T/st.slices" 2>>"$T/err"
if grep -q 'name="strchr \[ifunc resolver\]" .*aliases="[^"]*strchr_ifunc' "$T/st.slices" &&
	grep -q 'name="strlen \[ifunc resolver\]"' "$T/st.slices"; then
	pass names_ifunc_resolvers_are_named_as_such
else
	fail names_ifunc_resolvers_are_named_as_such "$(grep -i ifunc "$T/st.slices" | head -3 | cut -c1-200; head -c 300 "$T/err")"
fi
