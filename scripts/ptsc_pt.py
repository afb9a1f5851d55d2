#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The PT bytes of a ptscope recording (.ptsc), all its PT sections one
after the other, for tools that take a raw PT stream (the bench, tests).

    scripts/ptsc_pt.py RECORDING.ptsc OUT.pt

A PT section's payload is u64 pid, u64 tid, i32 cpu, u32 snapshot,
u64 length, then the bytes (include/ptscope/recording.h)."""
import struct
import sys

PT_SECTION = 4


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: ptsc_pt.py RECORDING.ptsc OUT.pt")
    d = open(sys.argv[1], 'rb').read()
    if d[:8] != b'PTSCREC\n':
        sys.exit("ptsc_pt.py: %s is not a ptscope recording" % sys.argv[1])
    o = struct.unpack_from('<I', d, 12)[0]
    pt = bytearray()
    while o + 16 <= len(d):
        kind, _crc, n = struct.unpack_from('<IIQ', d, o)
        if kind == PT_SECTION:
            length = struct.unpack_from('<Q', d, o + 16 + 24)[0]
            pt += d[o + 16 + 32:o + 16 + 32 + length]
        o += 16 + n
    open(sys.argv[2], 'wb').write(pt)


main()
