# SPDX-License-Identifier: BSD-3-Clause
# Writes the seed inputs of fuzz/memif_fuzz.c into fuzz/corpus/memif/ (deterministic: same bytes every run).
"""Seed inputs for the memif fuzzer (see the comment at the top of
fuzz/memif_fuzz.c for the input's layout): whole handshakes of both roles
as DPDK 22.11 and hotpath send them, hostile variants, and descriptors and
ring indices at the edges of their ranges.

Usage: python3 fuzz/corpus/make_memif_seeds.py [OUTDIR]   (default: memif/ next to this script)
"""
import os
import struct
import sys

ACK, HELLO, INIT, ADD_REGION, ADD_RING, CONNECT, CONNECTED, DISCONNECT = range(1, 9)
VERSION = 0x0200


def msg(mtype, body=b""):
    """A 128-byte control message: the type, then the packed fields."""
    m = struct.pack("<H", mtype) + body
    return m + b"\0" * (128 - len(m))


def name(s):
    return s.encode()[:32].ljust(32, b"\0")


def hello(min_v=VERSION, max_v=VERSION, max_region=255, max_s2c=255, max_c2s=255, log2=14):
    return msg(HELLO, name("DPDK 22.11.11") + struct.pack("<HHHHHB", min_v, max_v, max_region,
                                                           max_s2c, max_c2s, log2))


def init(id_=0, version=VERSION, mode=0, secret=b""):
    return msg(INIT, struct.pack("<HIB", version, id_, mode) + secret.ljust(24, b"\0") + name("DPDK 22.11.11"))


def region(index, size):
    return msg(ADD_REGION, struct.pack("<HQ", index, size))


def ring(c2s, index, region_, offset, log2, priv=0):
    return msg(ADD_RING, struct.pack("<HHHIBH", 1 if c2s else 0, index, region_, offset, log2, priv))


def disconnect(reason):
    return msg(DISCONNECT, struct.pack("<I", 0) + reason.encode().ljust(96, b"\0"))


def rec_msg(m, fd=False):
    return bytes([0, 1 if fd else 0]) + m


def rec_regions(sizes):
    return bytes([1, len(sizes)]) + b"".join(struct.pack("<H", s) for s in sizes)


def rec_desc(flags, region_, length, offset):
    return bytes([2]) + struct.pack("<HHIII", flags, region_, length, offset, 0)


def rec_count(frm, to, log2):
    return bytes([3]) + struct.pack("<HHB", frm, to, log2)


def config(server, queues=1, log2=10, zc=False):
    return bytes([(1 if server else 0) | ((queues - 1) << 1) | (log2 << 3) | (0x80 if zc else 0)])


RING = 128 + 16 * 1024  # one ring of 1024 descriptors


def seeds():
    # A DPDK client's whole handshake against our server: one region with
    # two rings and their buffers, as memif_init_regions_and_queues lays it.
    size = 2 * RING + 2 * 1024 * 2048
    yield "server-dpdk-client", config(True) + b"".join([
        rec_msg(init()), rec_msg(region(0, size), True), rec_msg(ring(True, 0, 0, 0, 10), True),
        rec_msg(ring(False, 0, 0, RING, 10), True), rec_msg(msg(CONNECT, name("net_memif")))])
    yield "server-two-queues", config(True, queues=2) + b"".join([
        rec_msg(init()), rec_msg(region(0, 4 * RING), True)]
        + [rec_msg(ring(c2s, i, 0, (i + (0 if c2s else 2)) * RING, 10), True) for c2s in (True, False) for i in (0, 1)]
        + [rec_msg(msg(CONNECT, name("net_memif")))])
    yield "server-zc-two-regions", config(True) + b"".join([
        rec_msg(init()), rec_msg(region(0, 2 * RING), True), rec_msg(region(1, 1 << 22), True),
        rec_msg(ring(True, 0, 0, 0, 10), True), rec_msg(ring(False, 0, 0, RING, 10), True),
        rec_msg(msg(CONNECT, name("net_memif")))])
    yield "server-ring-outside", config(True) + b"".join([
        rec_msg(init()), rec_msg(region(0, RING), True), rec_msg(ring(True, 0, 0, 64, 10), True)])
    yield "server-bad-secret", config(True) + rec_msg(init(secret=b"abc"))
    yield "server-version-mode", config(True) + rec_msg(init(version=0x0100)) + rec_msg(init(mode=2))
    yield "server-region-order", config(True) + rec_msg(init()) + rec_msg(region(1, 4096), True)
    yield "server-fd-on-init", config(True) + rec_msg(init(), True) + rec_msg(msg(ACK))
    yield "server-short-unknown", config(True) + bytes([0, 0]) + msg(INIT)[:40] + rec_msg(msg(99))
    yield "server-disconnect", config(True) + rec_msg(init()) + rec_msg(disconnect("Device closed"))
    # Our client against a DPDK server, then against hostile ones.
    yield "client-dpdk-server", config(False) + b"".join(
        [rec_msg(hello())] + [rec_msg(msg(ACK))] * 4 + [rec_msg(msg(CONNECTED, name("net_memif")))])
    yield "client-zc", config(False, zc=True) + b"".join(
        [rec_msg(hello(max_region=1))] + [rec_msg(msg(ACK))] * 5 + [rec_msg(msg(CONNECTED))])
    yield "client-one-region-only", config(False, zc=True) + rec_msg(hello(max_region=0))
    yield "client-old-server", config(False) + rec_msg(hello(min_v=0x0100, max_v=0x0100))
    yield "client-early-connected", config(False) + rec_msg(hello()) + rec_msg(msg(CONNECTED))
    yield "client-refused", config(False) + rec_msg(hello()) + rec_msg(disconnect("ID not found"))
    # Descriptors and indices at the edges.
    yield "descs-edges", config(True) + rec_regions([4096, 65535]) + b"".join([
        rec_desc(0, 0, 64, 0), rec_desc(0, 0, 64, 4032), rec_desc(0, 0, 65, 4032),
        rec_desc(1, 1, 2047, 63488), rec_desc(0, 1, 0xFFFFFFF0, 32), rec_desc(0, 2, 1, 0),
        rec_desc(0, 0, 0, 4096), rec_desc(0, 0, 1, 0xFFFFFFFF)])
    yield "counts-wrap", config(False) + b"".join([
        rec_count(65530, 4, 10), rec_count(0, 1024, 10), rec_count(0, 1025, 10), rec_count(5, 4, 14),
        rec_count(0, 0, 1)])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "memif")
    os.makedirs(out, exist_ok=True)
    for n, data in seeds():
        with open(os.path.join(out, "seed-" + n), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
