# SPDX-License-Identifier: BSD-3-Clause
# Writes the seed inputs of fuzz/{udp,tcp,icmp,icmp6}_fuzz.c into fuzz/corpus/{udp,tcp,icmp,icmp6}/ from the scapy vectors (deterministic: same bytes every run).
"""Seed inputs for the transport-layer fuzzers.

Every packet of tests/vectors/wire/l4/vectors.txt (made by scapy, valid and
malformed alike) becomes one seed, in the input layout its target reads:

  udp, tcp:  [0] bit 0 IPv6, bit 1 verify; [1..16] source; [17..32]
             destination (an IPv4 address in the first 4 bytes); segment.
  icmp:      [0] bit 1 verify; message.
  icmp6:     [0] bit 1 verify, bit 2 hop limit 255; [1] hop limit;
             [2..17] source; [18..33] destination; message (NDP included).

Seeds from odd lines verify the checksum, seeds from even lines do not (so
that mutations reach the checks behind it). A few hand-made edge cases
follow (empty, one byte short of a header).

Usage: python3 fuzz/corpus/make_l4_seeds.py [VECTORS [OUTDIR]]
  defaults: tests/vectors/wire/l4/vectors.txt and the directory of this script.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

TARGET = {"udp4": "udp", "udp6": "udp", "tcp4": "tcp", "tcp6": "tcp", "icmp4": "icmp",
          "icmp6": "icmp6", "ndp": "icmp6"}


def locate(ip):
    """(family, source, destination, hop limit, transport bytes) of an IP packet."""
    if ip[0] >> 4 == 6:
        return 6, ip[8:24], ip[24:40], ip[7], ip[40:]
    ihl = (ip[0] & 15) * 4
    return 4, ip[12:16], ip[16:20], 0, ip[ihl:]


def seed(kind, ip, verify):
    fam, src, dst, hlim, l4 = locate(ip)
    v = 2 if verify else 0
    target = TARGET[kind]
    if target in ("udp", "tcp"):
        return bytes([(1 if fam == 6 else 0) | v]) + src.ljust(16, b"\0") + dst.ljust(16, b"\0") + l4
    if target == "icmp":
        return bytes([v]) + l4
    return bytes([v | (4 if hlim == 255 else 0), hlim]) + src + dst + l4


def extras():
    z16 = b"\0" * 16
    yield "udp", "empty", b""
    yield "udp", "short-7", b"\x02" + z16 + z16 + b"\x00\x35\x00\x35\x00\x08\x00"
    yield "tcp", "empty", b""
    yield "tcp", "short-19", b"\x00" + z16 + z16 + b"\x00" * 19
    yield "tcp", "doff15-eol", b"\x00" + z16 + z16 + b"\x00\x50\x00\x50" + b"\0" * 8 + b"\xf0\x02" + b"\0" * 46
    yield "icmp", "empty", b""
    yield "icmp", "short-7", b"\x00\x08\x00\xf7\xff\x00\x00\x00"
    yield "icmp6", "empty", b""
    yield "icmp6", "short-7", b"\x04\xff" + z16 + z16 + b"\x87\x00\x00\x00\x00\x00\x00"


def main():
    vectors = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        ROOT, "tests", "vectors", "wire", "l4", "vectors.txt")
    out = sys.argv[2] if len(sys.argv) > 2 else HERE
    written = {}
    seeds = []
    with open(vectors) as f:
        for lineno, line in enumerate(f, 1):
            if line.startswith("#") or not line.strip():
                continue
            kind, hexpkt = line.split()[:2]
            seeds.append((TARGET[kind], "%s-%d" % (kind, lineno),
                          seed(kind, bytes.fromhex(hexpkt), lineno % 2 == 1)))
    seeds.extend(extras())
    for target, name, blob in seeds:
        d = os.path.join(out, target)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "seed-" + name), "wb") as f:
            f.write(blob)
        written[target] = written.get(target, 0) + 1
    for target in sorted(written):
        print("%s: %d seeds" % (os.path.join(out, target), written[target]))


if __name__ == "__main__":
    main()
