#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A distribution's view: `make install DESTDIR=$root PREFIX=/usr` into an
# empty root, then the installed ptscope is used from there as a user
# would (help, version, a conversion, its man page, the trigger header in
# a program, bash completion), and `make uninstall` takes it all away.
. "$(dirname "$0")/lib.sh"
TOP=${PTSCOPE_TOP:-.}
BLD=${BUILD:-build}
root="$T/root"
mkdir -p "$root"
if ! make -s -C "$TOP" install BUILD="$BLD" DESTDIR="$root" PREFIX=/usr >"$T/make.out" 2>&1; then
	fail install_runs "$(tail -5 "$T/make.out")"
	exit 0
fi
pass install_runs
P="$root/usr/bin/ptscope"
for f in usr/bin/ptscope usr/share/man/man1/ptscope.1 usr/include/ptscope/trigger.h \
	usr/share/bash-completion/completions/ptscope usr/share/doc/ptscope/LICENSE \
	usr/share/doc/ptscope/README.md; do
	[ -e "$root/$f" ] || fail install_files "missing $f"
done
if [ -n "$(find "$root" -path "$root/usr" -prune -o -print | grep -v "^$root\$")" ]; then
	fail install_stays_under_prefix "$(find "$root" -maxdepth 1)"
else
	pass install_stays_under_prefix
fi

# the installed program works on its own (from another directory)
if (cd "$T" && "$P" --version) | grep -qE '^ptscope [0-9]' &&
	(cd "$T" && "$P" --help) | grep -q '^  convert'; then
	pass installed_ptscope_runs
else
	fail installed_ptscope_runs "$("$P" --version 2>&1)"
fi
if (cd "$T" && "$P" convert -q "$TOP/tests/data/producers/viztracer.json" -o viz.fxt &&
	"$P" dump --slices viz.fxt) | grep -q 'name="main (/home/u/app.py:20)"'; then
	pass installed_ptscope_converts
else
	fail installed_ptscope_converts "convert/dump with the installed binary failed"
fi
if head -5 "$root/usr/share/man/man1/ptscope.1" | grep -q '^\.TH PTSCOPE 1' &&
	grep -q '^\.B symbols' "$root/usr/share/man/man1/ptscope.1"; then
	pass installed_man_page
else
	fail installed_man_page "$(head -3 "$root/usr/share/man/man1/ptscope.1")"
fi
if command -v man >/dev/null && man -l "$root/usr/share/man/man1/ptscope.1" >/dev/null 2>&1; then
	pass installed_man_page_renders
fi

# the header-only trigger API builds with nothing but its include dir
cat >"$T/trig.c" <<'EOF'
#include <ptscope/trigger.h>
int main(void) { ptscope_trigger("installed"); return 0; }
EOF
if cc -Wall -Werror -I"$root/usr/include" -o "$T/trig" "$T/trig.c" && "$T/trig"; then
	pass installed_trigger_header_builds
else
	fail installed_trigger_header_builds "cc failed"
fi

# completion from the installed file
got=$(bash -c '. "$1"; COMP_WORDS=("$2" con); COMP_CWORD=1; _ptscope; echo "${COMPREPLY[*]}"' _ \
	"$root/usr/share/bash-completion/completions/ptscope" "$P")
if [ "$got" = convert ]; then
	pass installed_completion
else
	fail installed_completion "got '$got'"
fi

# the QEMU plugin goes to lib/ptscope when it was built
if [ -f "$TOP/$BLD/qemu/libptscope-qemu.so" ]; then
	if [ -f "$root/usr/lib/ptscope/libptscope-qemu.so" ]; then
		pass installed_qemu_plugin
	else
		fail installed_qemu_plugin "not installed"
	fi
	# the installed ptscope finds it there (not in the build tree)
	if command -v qemu-x86_64 >/dev/null; then
		if "$P" run -b qemu -q -o "$T/inst.fxt" -- "$TOP/$BLD/samples/recursion" >/dev/null 2>"$T/inst.err" &&
			[ -s "$T/inst.fxt" ]; then
			pass installed_qemu_backend_runs
		else
			fail installed_qemu_backend_runs "$(tail -n1 "$T/inst.err")"
		fi
	fi
fi

# selftest finds the installed samples (lib/ptscope/samples), not the
# build tree's
if [ -x "$root/usr/lib/ptscope/samples/crash" ] &&
	(cd "$T" && PTSCOPE_SAMPLES= "$P" selftest crash) >"$T/self.out" 2>&1 &&
	grep -q "samples in $root/usr/bin/../lib/ptscope/samples" "$T/self.out" &&
	grep -q '^  crash  *ok' "$T/self.out"; then
	pass installed_selftest_finds_its_samples
else
	fail installed_selftest_finds_its_samples "$(tr '\n' '|' <"$T/self.out")"
fi

if make -s -C "$TOP" uninstall BUILD="$BLD" DESTDIR="$root" PREFIX=/usr >"$T/make.out" 2>&1 &&
	[ -z "$(find "$root" -type f)" ]; then
	pass uninstall_removes_everything
else
	fail uninstall_removes_everything "$(find "$root" -type f | head -5)"
fi
