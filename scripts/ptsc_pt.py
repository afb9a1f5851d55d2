#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The PT bytes of a ptscope recording (.ptsc), all its PT sections one
after the other, for tools that take a raw PT stream (the bench, tests).

    scripts/ptsc_pt.py RECORDING.ptsc OUT.pt [CODE-DIR]

With CODE-DIR, also the code the stream runs through, as arguments for
build/tools/bare_blk and `ptscope decode --pt` on standard output, one
per line: `--elf FILE:BASE` for each module file mapped executable (BASE:
where its file offset 0 is mapped, so the lowest PT_LOAD segment goes
there), `--raw FILE:ADDR` for each raw code image, written into CODE-DIR.

A PT section's payload is u64 pid, u64 tid, i32 cpu, u32 snapshot,
u64 length, then the bytes; a MODULE's u64 pid, start, end, file offset,
u32 prot, u64 inode, str path, ...; a RAW_CODE's u64 pid, u64 vaddr, str
name, blob bytes (include/ptscope/recording.h; str: u32 length + bytes,
blob: u64 length + bytes)."""
import os
import struct
import sys

MODULE, PT_SECTION, RAW_CODE = 2, 4, 6
PROT_EXEC = 4


def epoch(d, at, end):
    """The u32 exec epoch appended at @at, if the section has one."""
    return struct.unpack_from('<I', d, at)[0] if at + 4 <= end else 0


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: ptsc_pt.py RECORDING.ptsc OUT.pt [CODE-DIR]")
    d = open(sys.argv[1], 'rb').read()
    if d[:8] != b'PTSCREC\n':
        sys.exit("ptsc_pt.py: %s is not a ptscope recording" % sys.argv[1])
    code_dir = sys.argv[3] if len(sys.argv) == 4 else None
    o = struct.unpack_from('<I', d, 12)[0]
    pt = bytearray()
    bases = {}  # path -> where file offset 0 is mapped
    raws = []
    images = set()  # (pid, exec epoch) of the PT sections
    while o + 16 <= len(d):
        kind, _crc, n = struct.unpack_from('<IIQ', d, o)
        p = o + 16
        if kind == PT_SECTION:
            pid = struct.unpack_from('<Q', d, p)[0]
            length = struct.unpack_from('<Q', d, p + 24)[0]
            pt += d[p + 32:p + 32 + length]
            images.add((pid, epoch(d, p + 32 + length, p + n)))
        elif kind == MODULE:
            _pid, start, _end, off, prot = struct.unpack_from('<QQQQI', d, p)
            plen = struct.unpack_from('<I', d, p + 44)[0]
            path = d[p + 48:p + 48 + plen].decode()
            if prot & PROT_EXEC and path.startswith('/'):
                bases.setdefault(path, start - off)
        elif kind == RAW_CODE:
            _pid, vaddr, nlen = struct.unpack_from('<QQI', d, p)
            blen = struct.unpack_from('<Q', d, p + 20 + nlen)[0]
            b = p + 28 + nlen
            raws.append((vaddr, d[b:b + blen]))
        o += 16 + n
    open(sys.argv[2], 'wb').write(pt)
    if code_dir is None:
        return
    if len(images) > 1:
        sys.exit("ptsc_pt.py: %s traced %d process images (a fork or exec):"
                 " code arguments describe one; record the program"
                 " itself" % (sys.argv[1], len(images)))
    for path, base in sorted(bases.items(), key=lambda kv: kv[1]):
        print("--elf\n%s:0x%x" % (path, base))
    for i, (vaddr, code) in enumerate(raws):
        f = os.path.join(code_dir, "raw%d.bin" % i)
        open(f, 'wb').write(code)
        print("--raw\n%s:0x%x" % (f, vaddr))


main()
