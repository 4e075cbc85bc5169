# SPDX-License-Identifier: BSD-3-Clause
# Writes the seed inputs of fuzz/stack_fuzz.c into fuzz/corpus/stack/ with scapy (deterministic: same bytes every run).
"""Seed inputs for the whole-stack fuzzer.

Each seed is a sequence of frames, each a 2-byte big-endian length and the
frame. The stack under test is 198.18.0.2/24 and 2001:2::2/64; the peer is
198.18.0.1 / 2001:2::1. Frames to the stack's own MAC use the placeholder
02:00:00:00:00:01, which the harness replaces with the real one.

Usage: python3 fuzz/corpus/make_stack_seeds.py [OUTDIR]
"""
import os
import struct
import sys

from scapy.all import (ARP, ICMP, IP, UDP, Ether, ICMPv6EchoRequest, ICMPv6ND_NA,
                       ICMPv6ND_NS, ICMPv6NDOptDstLLAddr, ICMPv6NDOptSrcLLAddr, IPv6,
                       IPv6ExtHdrFragment, Raw, fragment, fragment6)

STACK_MAC = "02:00:00:00:00:01"
PEER_MAC = "02:00:00:00:00:02"
BCAST = "ff:ff:ff:ff:ff:ff"
S4, P4 = "198.18.0.2", "198.18.0.1"
S6, P6 = "2001:2::2", "2001:2::1"
SNMC_MAC = "33:33:ff:00:00:02"   # solicited-node group of 2001:2::2
SNMC = "ff02::1:ff00:2"


def eth4(pkt):
    return Ether(dst=STACK_MAC, src=PEER_MAC) / pkt


def eth6(pkt):
    return Ether(dst=STACK_MAC, src=PEER_MAC) / pkt


def arp_request():
    return Ether(dst=BCAST, src=PEER_MAC) / ARP(op=1, hwsrc=PEER_MAC, psrc=P4, pdst=S4)


def arp_reply():
    return Ether(dst=STACK_MAC, src=PEER_MAC) / ARP(op=2, hwsrc=PEER_MAC, psrc=P4,
                                                   hwdst=STACK_MAC, pdst=S4)


def ns6():
    return (Ether(dst=SNMC_MAC, src=PEER_MAC) / IPv6(src=P6, dst=SNMC, hlim=255) /
            ICMPv6ND_NS(tgt=S6) / ICMPv6NDOptSrcLLAddr(lladdr=PEER_MAC))


def na6():
    return (eth6(IPv6(src=P6, dst=S6, hlim=255)) /
            ICMPv6ND_NA(tgt=P6, R=0, S=1, O=1) / ICMPv6NDOptDstLLAddr(lladdr=PEER_MAC))


def ping4():
    return eth4(IP(src=P4, dst=S4, id=1) / ICMP(id=0x4850, seq=1) / Raw(b"hotpath" * 8))


def ping6():
    return eth6(IPv6(src=P6, dst=S6) / ICMPv6EchoRequest(id=0x4850, seq=1, data=b"hotpath" * 8))


def udp4(dport, payload=b"hello", **kw):
    return eth4(IP(src=P4, dst=S4, id=7) / UDP(sport=40000, dport=dport, **kw) / Raw(payload))


def udp6(dport, payload=b"hello", **kw):
    return eth6(IPv6(src=P6, dst=S6) / UDP(sport=40000, dport=dport, **kw) / Raw(payload))


def frags4(dport, size):
    pkt = IP(src=P4, dst=S4, id=0x1234) / UDP(sport=40000, dport=dport) / Raw(bytes(i & 0xFF for i in range(size)))
    return [eth4(f) for f in fragment(pkt, fragsize=1200)]


def frags6(dport, size):
    pkt = (IPv6(src=P6, dst=S6) / IPv6ExtHdrFragment(id=0x5678) / UDP(sport=40000, dport=dport) /
           Raw(bytes(i & 0xFF for i in range(size))))
    return [eth6(f) for f in fragment6(pkt, 1280)]


class Held:
    """A frame the harness transmits without polling: it joins the frames
    after it in one receive burst."""

    def __init__(self, pkt):
        self.pkt = pkt


def burst(*pkts):
    return [Held(p) for p in pkts[:-1]] + [pkts[-1]]


def seed(frames, early=None):
    """The input: each frame as its length (top bit: held) and its bytes. An
    odd-sized input runs with early demultiplexing on: with early True or
    False a byte of padding after the last frame makes the size odd or even;
    with None the size is left as it comes."""
    out = b""
    for f in frames:
        hold = isinstance(f, Held)
        raw = bytes(f.pkt if hold else f)
        out += struct.pack(">H", len(raw) | (0x8000 if hold else 0)) + raw
    if early is not None and early != bool(len(out) & 1):
        out += b"\0"
    return out


SEEDS = {
    "arp-request": [arp_request()],
    "arp-reply": [arp_reply()],
    "ping4": [arp_reply(), ping4()],
    "udp4-echo": [arp_reply(), udp4(7)],
    "udp4-closed": [arp_reply(), udp4(9)],
    "udp4-no-cksum": [arp_reply(), udp4(53, chksum=0)],
    "udp4-bad-cksum": [udp4(7, chksum=0x1234)],
    "udp4-broadcast": [Ether(dst=BCAST, src=PEER_MAC) / IP(src=P4, dst="198.18.0.255") / UDP(sport=1, dport=9)],
    "udp4-frags": [arp_reply()] + frags4(7, 3000),
    "udp4-frags-reversed": [arp_reply()] + frags4(53, 4000)[::-1],
    "ndp-ns": [ns6()],
    "ndp-na": [na6()],
    "ping6": [na6(), ping6()],
    "udp6-echo": [na6(), udp6(7)],
    "udp6-closed": [na6(), udp6(9)],
    "udp6-zero-cksum": [udp6(7, chksum=0)],
    "udp6-frags": [na6()] + frags6(7, 3000),
    "mixed": [arp_request(), ns6(), ping4(), ping6(), udp4(7), udp6(53), udp4(9), udp6(9)],
}

# Bursts (several frames in one poll), with early demultiplexing on (early)
# or off. Each has frames the peek must leave alone: cut after the ports,
# cut inside them, a fragment, another protocol.
BURST4 = [arp_reply()] + burst(udp4(7), udp4(53), udp4(9), ping4(), udp4(7, b"x" * 300),
                               bytes(udp4(53))[:14 + 20 + 4], bytes(udp4(7))[:14 + 20 + 2],
                               *frags4(53, 1500), udp4(53, chksum=0), udp4(7))
BURST6 = [na6()] + burst(udp6(7), udp6(53), udp6(9), ping6(), bytes(udp6(53))[:14 + 40 + 4],
                         bytes(udp6(7))[:14 + 40 + 2], *frags6(7, 1500), udp6(7), udp6(53))
BURSTS = {
    "burst4-early": (BURST4, True),
    "burst4": (BURST4, False),
    "burst6-early": (BURST6, True),
    "burst-mixed-early": ([arp_reply(), na6()] + burst(udp4(7), udp6(7), arp_request(), udp4(53),
                                                       udp6(53), ping4(), ping6(), udp4(9), udp6(9)), True),
}


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "stack")
    os.makedirs(outdir, exist_ok=True)
    for name, frames in SEEDS.items():
        with open(os.path.join(outdir, "seed-" + name), "wb") as f:
            f.write(seed(frames))
    for name, (frames, early) in BURSTS.items():
        with open(os.path.join(outdir, "seed-" + name), "wb") as f:
            f.write(seed(frames, early))


if __name__ == "__main__":
    main()
