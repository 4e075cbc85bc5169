# SPDX-License-Identifier: BSD-3-Clause
# Writes the seed inputs of fuzz/cksum_fuzz.c into fuzz/corpus/cksum/ (deterministic: same bytes every run).
"""Seed inputs for the checksum fuzzer.

Each input is a 24-byte header followed by the data (see the comment at the
top of fuzz/cksum_fuzz.c):

  [0] offset, [1..4] incoming sum (LE), [5] segment count - 1 and flags,
  [6..19] seven 16-bit cut lengths (LE), [20..21] field position,
  [22..23] field's new value, [24..] data.

Usage: python3 fuzz/corpus/make_seeds.py [OUTDIR]   (default: cksum/ next to this script)
"""
import os
import random
import struct
import sys


def header(offset=0, isum=0, segs=1, null_empty=False, cuts=(0,) * 7, field=0, new=0):
    flags = ((segs - 1) & 7) | (8 if null_empty else 0)
    return struct.pack("<BIB7HHH", offset & 63, isum, flags, *cuts, field, new)


def seeds():
    rng = random.Random(1071)  # RFC 1071
    yield "empty", header()
    yield "empty-odd-offset-sum", header(offset=1, isum=0xFFFFFFFF, segs=3, null_empty=True)
    yield "ones-2000", header(segs=4, cuts=(1, 0, 999, 0, 0, 0, 0), field=7, new=0) + b"\xff" * 2000
    yield "zeros-1500", header(offset=2, segs=2, cuts=(750,) + (0,) * 6) + b"\x00" * 1500
    yield "odd-1501", header(offset=1, isum=0x0001FFFF, segs=5,
                             cuts=(20, 21, 100, 101, 0, 0, 0), field=33, new=0xFFFF) \
        + bytes(rng.randrange(256) for _ in range(1501))
    yield "random-9000", header(offset=37, isum=rng.getrandbits(32), segs=8,
                                cuts=tuple(rng.randrange(1, 3000) for _ in range(7)),
                                field=rng.getrandbits(16), new=rng.getrandbits(16)) \
        + bytes(rng.randrange(256) for _ in range(9000))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "cksum")
    os.makedirs(out, exist_ok=True)
    for name, blob in seeds():
        path = os.path.join(out, "seed-" + name)
        with open(path, "wb") as f:
            f.write(blob)
        print(f"{path}: {len(blob)} bytes")


if __name__ == "__main__":
    main()
