# SPDX-License-Identifier: BSD-3-Clause
# Writes the seed inputs of fuzz/{eth,arp,ipv4,ipv6}_fuzz.c into fuzz/corpus/{eth,arp,ipv4,ipv6}/ (deterministic: same bytes every run).
"""Seed inputs for the link and network layer fuzzers.

Each input is one packet, from the first byte of its header: an Ethernet
frame for eth, an ARP packet for arp, an IP packet for ipv4 and ipv6. A few
valid packets with the features each view handles (802.1Q tags, IPv4
options and fragments, IPv6 extension header chains) and a few edge cases
just past what is accepted, from which the fuzzer mutates.

Built with struct alone (no scapy), so that the corpus can be rebuilt
anywhere; addresses come from the benchmarking ranges (RFC 2544, RFC 5180).

Usage: python3 fuzz/corpus/make_l2l3_seeds.py [OUTDIR]   (default: the directory of this script)
"""
import os
import struct
import sys

MAC_A = bytes.fromhex("02000a000001")
MAC_B = bytes.fromhex("02000b000002")
BCAST = b"\xff" * 6
IP_A = bytes([198, 18, 0, 1])
IP_B = bytes([198, 18, 0, 2])
IP6_A = bytes.fromhex("20010002000000000000000000000001")
IP6_B = bytes.fromhex("20010002000000000000000000000002")


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return 0xFFFF ^ s


# ---- builders ---------------------------------------------------------------


def eth(dst, src, etype, payload=b"", tci=None):
    tag = b"" if tci is None else struct.pack("!HH", 0x8100, tci)
    return dst + src + tag + struct.pack("!H", etype) + payload


def arp(op, sha, spa, tha, tpa, htype=1, ptype=0x0800):
    return struct.pack("!HHBBH", htype, ptype, 6, 4, op) + sha + spa + tha + tpa


def ipv4(payload=b"", proto=17, options=b"", flags_off=0, ttl=64, ident=0x1234, tos=0,
         src=IP_A, dst=IP_B, good_cksum=True):
    hlen = 20 + len(options)
    assert hlen % 4 == 0
    hdr = bytearray(struct.pack("!BBHHHBBH4s4s", 0x40 | hlen // 4, tos, hlen + len(payload), ident,
                                flags_off, ttl, proto, 0, src, dst) + options)
    c = csum(bytes(hdr))
    hdr[10:12] = struct.pack("!H", c if good_cksum else c ^ 0x5A5A)
    return bytes(hdr) + payload


def udp(n):
    return struct.pack("!HHHH", 40000, 53, 8 + n, 0) + bytes(range(n))


def ipv6(nh, payload=b"", plen=None, hlim=64, tc=0, fl=0x12345, src=IP6_A, dst=IP6_B):
    plen = len(payload) if plen is None else plen
    return struct.pack("!IHBB", 6 << 28 | tc << 20 | fl, plen, nh, hlim) + src + dst + payload


def opts_hdr(nh, options):
    """A Hop-by-Hop or Destination Options header with the given options,
    padded with PadN (or Pad1) to a multiple of 8."""
    body = options
    pad = (8 - (len(body) + 2) % 8) % 8
    if pad == 1:
        body += b"\0"
    elif pad:
        body += bytes([1, pad - 2]) + b"\0" * (pad - 2)
    return bytes([nh, (len(body) + 2) // 8 - 1]) + body


ROUTER_ALERT = bytes([5, 2, 0, 0])


def frag_hdr(nh, off, m, ident):
    return struct.pack("!BBHI", nh, 0, off | m, ident)


def routing_hdr(nh, rtype, segleft, addrs):
    return struct.pack("!BBBBI", nh, 2 * len(addrs), rtype, segleft, 0) + b"".join(addrs)


def ah_hdr(nh, icv_len=12):
    return struct.pack("!BBHII", nh, (12 + icv_len) // 4 - 2, 0, 0x1000, 1) + b"\0" * icv_len


# ---- the seeds ----------------------------------------------------------------


def seeds():
    ip4_udp = ipv4(udp(20))
    yield "eth", "ipv4-padded", eth(MAC_B, MAC_A, 0x0800, ipv4(udp(4))).ljust(60, b"\0")
    yield "eth", "vlan-ipv6", eth(bytes.fromhex("333300000001"), MAC_A, 0x86DD,
                                  ipv6(17, udp(8)), tci=0xA064)
    yield "eth", "arp-broadcast", eth(BCAST, MAC_A, 0x0806,
                                      arp(1, MAC_A, IP_A, b"\0" * 6, IP_B)).ljust(60, b"\0")
    yield "eth", "header-only", eth(MAC_B, MAC_A, 0x0800)
    yield "eth", "vlan-header-only", eth(MAC_B, MAC_A, 0x0800, tci=0x0001)
    yield "eth", "qinq", MAC_B + MAC_A + struct.pack("!HHHH", 0x88A8, 10, 0x8100, 20) \
        + struct.pack("!H", 0x0800) + ip4_udp
    yield "eth", "llc-length", eth(MAC_B, MAC_A, 46, b"\xaa\xaa\x03" + b"\0" * 43)
    yield "eth", "vlan-truncated", eth(MAC_B, MAC_A, 0x0800, tci=7)[:17]

    yield "arp", "request", arp(1, MAC_A, IP_A, b"\0" * 6, IP_B)
    yield "arp", "reply-padded", arp(2, MAC_B, IP_B, MAC_A, IP_A) + b"\0" * 18
    yield "arp", "probe", arp(1, MAC_A, b"\0" * 4, b"\0" * 6, IP_B)
    yield "arp", "gratuitous", arp(1, MAC_A, IP_A, BCAST, IP_A)
    yield "arp", "rarp", arp(3, MAC_A, IP_A, MAC_A, IP_A)
    yield "arp", "ieee802", arp(1, MAC_A, IP_A, b"\0" * 6, IP_B, htype=6)
    yield "arp", "truncated", arp(1, MAC_A, IP_A, b"\0" * 6, IP_B)[:27]

    yield "ipv4", "udp", ip4_udp
    yield "ipv4", "header-only", ipv4(proto=253)
    yield "ipv4", "options-ra-rr", ipv4(udp(8), options=b"\x94\x04\x00\x00"
                                        + b"\x07\x0b\x04" + b"\0" * 8 + b"\x00")
    yield "ipv4", "ihl15-nops", ipv4(udp(0), options=b"\x01" * 39 + b"\x00")
    yield "ipv4", "frag-first", ipv4(bytes(range(16)), flags_off=0x2000)
    yield "ipv4", "frag-middle", ipv4(bytes(range(24)), flags_off=0x2000 | 185)
    yield "ipv4", "frag-last", ipv4(bytes(range(13)), flags_off=370)
    yield "ipv4", "frag-max", ipv4(bytes(range(3)), flags_off=8189)  # reassembles to 65535
    yield "ipv4", "ethernet-padding", ipv4(udp(2)) + b"\0" * 16
    yield "ipv4", "bad-checksum", ipv4(udp(8), good_cksum=False)
    yield "ipv4", "option-overrun", ipv4(udp(0), options=b"\x83\x0c\x04\x00")

    yield "ipv6", "udp", ipv6(17, udp(20))
    yield "ipv6", "hbh-ra-udp", ipv6(0, opts_hdr(17, ROUTER_ALERT) + udp(8))
    chain = (opts_hdr(60, ROUTER_ALERT) + opts_hdr(43, b"\x1e\x02ab")
             + routing_hdr(44, 4, 0, [IP6_B]) + frag_hdr(51, 0, 0, 7) + ah_hdr(58)
             + bytes([128, 0, 0, 0, 0, 1, 0, 1]))
    yield "ipv6", "chain-hbh-do-rt-frag-ah-icmp", ipv6(0, chain)
    yield "ipv6", "frag-first", ipv6(44, frag_hdr(17, 0, 1, 0xABCD) + udp(8))
    yield "ipv6", "frag-last", ipv6(44, frag_hdr(17, 1448, 0, 0xABCD) + bytes(range(5)))
    yield "ipv6", "no-next-header", ipv6(59, b"ignored bytes")
    yield "ipv6", "padded", ipv6(17, udp(0)) + b"\0" * 6
    yield "ipv6", "jumbo", ipv6(0, opts_hdr(17, b"\xc2\x04\x00\x01\x11\x70") + udp(8), plen=0)
    do16 = b"".join(opts_hdr(60 if i < 15 else 17, b"") for i in range(16))
    yield "ipv6", "sixteen-dstopts", ipv6(60, do16 + udp(0))
    yield "ipv6", "routing-segleft", ipv6(43, routing_hdr(17, 4, 1, [IP6_B]) + udp(0))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for kind, name, blob in seeds():
        d = os.path.join(out, kind)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "seed-" + name)
        with open(path, "wb") as f:
            f.write(blob)
        print(f"{path}: {len(blob)} bytes")


if __name__ == "__main__":
    main()
