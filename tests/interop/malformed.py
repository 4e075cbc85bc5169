#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Malformed frames for tests/interop/stack.sh: send a fixed list of bad
frames (scapy) from the kernel's side to `hotpath serve`, then compare serve's
counters (its --json-stats lines) before and after against what each frame
must move, and check what serve answered (sniffed on the same interface).

Run in the kernel's namespace:
  malformed.py --iface IF --serve-mac MAC --stats SERVE-STDOUT
  malformed.py --iface IF --serve-mac MAC --probe
(--probe: broadcast ARP requests and a multicast neighbor solicitation, to
check that serve's address is answered exactly once and nothing else is:
on a veth the kernel behind serve's interface must stay silent.) Both
print "RESULT ok|fail NAME: DETAIL" lines (stack.sh counts them) and
indented detail lines; exits 1 when any result failed.

The expectations come from the code: src/net/{eth,arp,ipv4,ipv6,icmp,icmp6,
ndp,reasm}.c, src/sock/udp.c, src/wire/*.c.
"""
import argparse
import json
import sys
import time

import logging
logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import (ARP, ICMP, IP, UDP, AsyncSniffer, Ether, ICMPv6DestUnreach,  # noqa: E402
                       ICMPv6EchoRequest, ICMPv6ND_NS, ICMPv6NDOptSrcLLAddr,
                       IPv6, IPv6ExtHdrFragment, Raw, conf, get_if_hwaddr, sendp)
from scapy.layers.inet import in4_chksum  # noqa: E402
from scapy.layers.inet6 import in6_chksum  # noqa: E402

# src/net/ip_local.h: HP__REASM_MAX_DGRAMS, datagrams in reassembly at once
# (both families share the table). The oldest gives way to a new one.
REASM_SLOTS = 64
FLOOD = 100

# Counters that must not move at all, beyond those expected below: every
# drop reason and every output a malformed frame must not cause. Counters
# that background traffic moves (the kernel's NUD probes, MLD reports, router
# solicitations: ETH_*, ARP_IN*, NDP_IN_NS, NDP_OUT_NA, IP6_IN_RECEIVES ...)
# are left out.
MUST_NOT_MOVE = """
ETH_IN_MALFORMED ETH_IN_UNKNOWN_TYPE ETH_IN_VLAN ETH_OUT_DROPS ARP_IN_MALFORMED ARP_IN_NOT_FOR_US
NEIGH_QUEUE_DROPS NEIGH_UNRESOLVED_DROPS NEIGH_TABLE_FULL NO_BUFFERS
IP_IN_HDR_ERRORS IP_IN_CSUM_ERRORS IP_IN_TRUNCATED IP_IN_ADDR_ERRORS IP_IN_UNKNOWN_PROTOS
IP_OUT_NO_ROUTES IP_OUT_DISCARDS IP_REASM_OKS IP_REASM_FAILS IP_REASM_TIMEOUTS IP_REASM_OVERLAPS
IP_REASM_OVERSIZE IP_REASM_MEM_DROPS IP_FRAG_OKS IP_FRAG_FAILS
IP6_IN_HDR_ERRORS IP6_IN_TRUNCATED IP6_IN_ADDR_ERRORS IP6_IN_UNKNOWN_PROTOS IP6_OUT_NO_ROUTES
IP6_OUT_DISCARDS IP6_REASM_OKS IP6_REASM_FAILS IP6_REASM_TIMEOUTS IP6_REASM_OVERLAPS
IP6_REASM_OVERSIZE IP6_FRAG_OKS IP6_FRAG_FAILS
ICMP_IN_ERRORS ICMP_IN_CSUM_ERRORS ICMP_IN_ECHOS ICMP_IN_UNSUPPORTED ICMP_OUT_ECHO_REPS
ICMP_OUT_DEST_UNREACHS ICMP_OUT_TIME_EXCEEDS ICMP_OUT_RATE_LIMITED
ICMP6_IN_ERRORS ICMP6_IN_CSUM_ERRORS ICMP6_IN_ECHOS ICMP6_IN_UNSUPPORTED ICMP6_OUT_ECHO_REPS
ICMP6_OUT_DEST_UNREACHS ICMP6_OUT_TIME_EXCEEDS ICMP6_OUT_RATE_LIMITED
NDP_IN_BAD_HOPLIMIT NDP_IN_INVALID NDP_DAD_DUPLICATES
UDP_IN_DATAGRAMS UDP_NO_PORTS UDP_IN_ERRORS UDP_IN_CSUM_ERRORS UDP_RCVBUF_ERRORS
UDP_OUT_DATAGRAMS UDP_OUT_ERRORS
""".split()


def bad(correct):
    """A checksum that is wrong in one's complement too (0 and 0xFFFF are the same)."""
    for mask in (0x5A5A, 0x0101, 0x8000):
        v = correct ^ mask
        if v not in (0, 0xFFFF) and (correct, v) not in ((0, 0xFFFF), (0xFFFF, 0)):
            return v
    return 0x1234


def frames(a):
    """The list: (name, [frames], {counter: expected increment})."""
    eth = Ether(src=a.mac, dst=a.serve_mac)
    eth4 = Ether(src=a.mac, dst=a.serve_mac, type=0x0800)
    eth6 = Ether(src=a.mac, dst=a.serve_mac, type=0x86DD)
    ip = IP(src=a.src, dst=a.dst, id=0x1001)
    ip6 = IPv6(src=a.src6, dst=a.dst6)
    data = Raw(b"hotpath malformed frame test.")
    out = []

    # IPv4 header checksum wrong.
    p = IP(bytes(ip / UDP(sport=40001, dport=a.port) / data))
    p.chksum = bad(p.chksum)
    out.append(("bad IPv4 header checksum", [eth4 / Raw(bytes(p))],
                {"IP_IN_CSUM_ERRORS": 1}))

    # Total Length says 1000 bytes; the frame carries 57 of IP.
    out.append(("truncated IPv4 (total length 1000 > frame)",
                [eth / IP(src=a.src, dst=a.dst, len=1000) / UDP(sport=40002, dport=a.port) / data],
                {"IP_IN_TRUNCATED": 1}))

    # Version 5 with EtherType IPv4 (header checksum right for the bytes sent).
    out.append(("IPv4 header with version 5",
                [eth4 / IP(version=5, src=a.src, dst=a.dst) / UDP(sport=40003, dport=a.port) / data],
                {"IP_IN_HDR_ERRORS": 1}))

    # UDP checksum wrong, to the echo port: must not be echoed.
    good = in4_chksum(17, IP(src=a.src, dst=a.dst), bytes(UDP(sport=40004, dport=a.port, chksum=0) / data))
    u = UDP(sport=40004, dport=a.port, chksum=bad(good)) / data
    out.append(("IPv4 UDP with a bad checksum to the echo port", [eth / ip / u],
                {"UDP_IN_CSUM_ERRORS": 1, "UDP_IN_ERRORS": 1}))

    # IPv6 UDP with checksum 0 (RFC 8200 8.1: must be discarded).
    out.append(("IPv6 UDP with a zero checksum to the echo port",
                [eth / ip6 / UDP(sport=40005, dport=a.port, chksum=0) / data],
                {"UDP_IN_CSUM_ERRORS": 1, "UDP_IN_ERRORS": 1}))

    # Neighbor solicitation for serve's address with hop limit 254: it
    # crossed a router, so it is not from this link (RFC 4861 7.1.1).
    out.append(("NDP NS with hop limit 254",
                [eth / IPv6(src=a.src6, dst=a.dst6, hlim=254) / ICMPv6ND_NS(tgt=a.dst6) /
                 ICMPv6NDOptSrcLLAddr(lladdr=a.mac)],
                {"NDP_IN_BAD_HOPLIMIT": 1}))

    # An ARP reply nobody asked for, from an address serve never resolved.
    out.append(("unsolicited ARP reply (198.18.0.77 is-at 02:00:00:00:00:77)",
                [Ether(src=a.mac, dst=a.serve_mac) /
                 ARP(op=2, hwsrc="02:00:00:00:00:77", psrc=a.stranger, hwdst=a.serve_mac, pdst=a.dst)],
                {"ARP_IN_UNSOLICITED": 1}))

    # To serve's MAC but another host's IP address: a host does not forward.
    out.append(("IPv4 to another host's address (%s)" % a.other,
                [eth / IP(src=a.src, dst=a.other) / UDP(sport=40006, dport=a.port) / data],
                {"IP_IN_ADDR_ERRORS": 1}))
    out.append(("IPv6 to another host's address (%s)" % a.other6,
                [eth / IPv6(src=a.src6, dst=a.other6) / UDP(sport=40007, dport=a.port) / data],
                {"IP6_IN_ADDR_ERRORS": 1}))

    # The fragments below come from addresses of their own (--frag-src,
    # --frag-src6): the datagrams they leave incomplete or refused stay in
    # serve's table until their timers run out (30 s), and a datagram of a
    # later exchange from --src with the same IP ID would meet them there and
    # be dropped as an overlap (seen once: 18 datagrams of the afpacket
    # tx-offload exchange lost, their IDs in the flood's range).
    #
    # Overlapping fragments: [0, 16) with MF, then [8, 24): the datagram is
    # dropped whole (RFC 5722, and the same for IPv4).
    f1 = IP(src=a.frag_src, dst=a.dst, id=0x4242, flags="MF", frag=0, proto=17) / Raw(
        bytes(UDP(sport=40008, dport=a.port, len=32, chksum=0)) + b"A" * 8)
    f2 = IP(src=a.frag_src, dst=a.dst, id=0x4242, flags=0, frag=1, proto=17) / Raw(b"B" * 16)
    out.append(("overlapping IPv4 fragments ([0,16) MF, then [8,24))", [eth / f1, eth / f2],
                {"IP_REASM_REQDS": 2, "IP_REASM_OVERLAPS": 1, "IP_REASM_FAILS": 1}))
    g1 = IPv6(src=a.frag_src6, dst=a.dst6) / IPv6ExtHdrFragment(nh=17, offset=0, m=1, id=0x4243) / Raw(
        bytes(UDP(sport=40009, dport=a.port, len=32, chksum=0x1234)) + b"A" * 8)
    g2 = IPv6(src=a.frag_src6, dst=a.dst6) / IPv6ExtHdrFragment(nh=17, offset=1, m=0, id=0x4243) / Raw(b"B" * 16)
    out.append(("overlapping IPv6 fragments ([0,16) M, then [8,24))", [eth / g1, eth / g2],
                {"IP6_REASM_REQDS": 2, "IP6_REASM_OVERLAPS": 1, "IP6_REASM_FAILS": 1}))

    # A flood of incomplete datagrams: one middle fragment each, MF set. The
    # table holds REASM_SLOTS; the two refused datagrams above (kept until
    # their timers so that their late fragments are dropped too) go first,
    # silently, then the oldest of the flood, each a failure for lack of room.
    flood = [eth / IP(src=a.frag_src, dst=a.dst, id=0x5000 + i, flags="MF", frag=1, proto=17) / Raw(b"F" * 8)
             for i in range(FLOOD)]
    evicted = max(0, FLOOD - REASM_SLOTS)
    out.append(("fragment flood (%d incomplete IPv4 datagrams, %d slots)" % (FLOOD, REASM_SLOTS), flood,
                {"IP_REASM_REQDS": FLOOD, "IP_REASM_FAILS": evicted, "IP_REASM_MEM_DROPS": evicted}))

    # Closed ports: ICMP port unreachable back.
    out.append(("IPv4 UDP to closed port %d" % a.closed,
                [eth / ip / UDP(sport=40010, dport=a.closed) / data],
                {"UDP_NO_PORTS": 1, "ICMP_OUT_DEST_UNREACHS": 1, "ICMP_OUT_MSGS": 1}))
    out.append(("IPv6 UDP to closed port %d" % a.closed,
                [eth / ip6 / UDP(sport=40011, dport=a.closed) / data],
                {"UDP_NO_PORTS": 1, "ICMP6_OUT_DEST_UNREACHS": 1}))

    # ICMP echo requests with bad checksums: no reply.
    e = ICMP(type=8, id=0x4850, seq=1) / data
    e = ICMP(bytes(e))
    e.chksum = bad(e.chksum)
    out.append(("ICMP echo request with a bad checksum",
                [eth / IP(src=a.src, dst=a.dst, proto=1) / Raw(bytes(e))],
                {"ICMP_IN_MSGS": 1, "ICMP_IN_CSUM_ERRORS": 1, "ICMP_IN_ERRORS": 1}))
    e6 = ICMPv6EchoRequest(id=0x4850, seq=1, data=b"hotpath malformed")
    good6 = in6_chksum(58, ip6, bytes(ICMPv6EchoRequest(id=0x4850, seq=1, data=b"hotpath malformed", cksum=0)))
    e6.cksum = bad(good6)
    out.append(("ICMPv6 echo request with a bad checksum", [eth / ip6 / e6],
                {"ICMP6_IN_CSUM_ERRORS": 1, "ICMP6_IN_ERRORS": 1}))

    # IPv6 Payload Length past the frame; version 4 under EtherType IPv6.
    out.append(("truncated IPv6 (payload length 1000 > frame)",
                [eth / IPv6(src=a.src6, dst=a.dst6, plen=1000) / UDP(sport=40012, dport=a.port) / data],
                {"IP6_IN_TRUNCATED": 1}))
    out.append(("IPv6 header with version 4",
                [eth6 / IPv6(version=4, src=a.src6, dst=a.dst6) / UDP(sport=40013, dport=a.port) / data],
                {"IP6_IN_HDR_ERRORS": 1}))
    return out


def read_lines(path):
    """serve's complete --json-stats lines so far (a line being written is left out)."""
    with open(path, "rb") as f:
        text = f.read().decode(errors="replace")
    lines = text.split("\n")[:-1]   # the part after the last newline is unfinished
    return [l for l in lines if l.startswith("{")]


def wait_ticks(path, n, timeout=10.0):
    """The counters of the n-th --json-stats line printed from now on."""
    start = len(read_lines(path))
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        lines = read_lines(path)
        if len(lines) >= start + n:
            return json.loads(lines[start + n - 1])["counters"]
        time.sleep(0.05)
    raise SystemExit("RESULT fail malformed: serve printed no counters for %.0f s" % timeout)


def snmp(path, proto, field):
    """A counter from /proc/net/snmp (proto 'Icmp') or /proc/net/snmp6 (field 'Icmp6InDestUnreachs')."""
    with open(path) as f:
        lines = f.read().splitlines()
    if proto is None:
        for l in lines:
            k, v = l.split()
            if k == field:
                return int(v)
        return 0
    rows = [l.split() for l in lines if l.startswith(proto + ":")]
    names, values = rows[0], rows[1]
    return int(values[names.index(field)])


def probe(a, result):
    """Who answers ARP and NDP on the link: serve for its addresses, once; nobody else."""
    from scapy.all import srp
    from scapy.layers.inet6 import ICMPv6ND_NA, in6_getnsma, in6_getnsmac, inet_pton, inet_ntop, socket
    asks = [(a.dst, 1), ("127.0.0.1", 0), (a.other, 0)]
    for ip, want in asks:
        ans, _ = srp(Ether(src=a.mac, dst="ff:ff:ff:ff:ff:ff") /
                     ARP(op=1, hwsrc=a.mac, psrc=a.src, pdst=ip),
                     iface=a.iface, multi=True, timeout=0.6, verbose=False)
        macs = [r[Ether].src.lower() for _, r in ans if r.haslayer(ARP) and r[ARP].op == 2]
        good = len(macs) == want and all(m == a.serve_mac for m in macs)
        result(good, "ARP who-has %s: %d answer%s" % (ip, want, "" if want == 1 else "s"),
               "got %d (%s)" % (len(macs), ", ".join(macs) or "none"))
    for ip6, want in [(a.dst6, 1), (a.other6, 0)]:
        nsma = inet_ntop(socket.AF_INET6, in6_getnsma(inet_pton(socket.AF_INET6, ip6)))
        ans, _ = srp(Ether(src=a.mac, dst=in6_getnsmac(inet_pton(socket.AF_INET6, nsma))) /
                     IPv6(src=a.src6, dst=nsma, hlim=255) / ICMPv6ND_NS(tgt=ip6) /
                     ICMPv6NDOptSrcLLAddr(lladdr=a.mac),
                     iface=a.iface, multi=True, timeout=0.6, verbose=False)
        macs = [r[Ether].src.lower() for _, r in ans if r.haslayer(ICMPv6ND_NA)]
        good = len(macs) == want and all(m == a.serve_mac for m in macs)
        result(good, "neighbor solicitation for %s: %d answer%s" % (ip6, want, "" if want == 1 else "s"),
               "got %d (%s)" % (len(macs), ", ".join(macs) or "none"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iface", required=True)
    ap.add_argument("--serve-mac", required=True)
    ap.add_argument("--stats", help="serve's stdout (--json-stats)")
    ap.add_argument("--probe", action="store_true", help="only check who answers ARP and NDP")
    ap.add_argument("--src", default="198.18.0.1")
    ap.add_argument("--dst", default="198.18.0.2")
    ap.add_argument("--src6", default="2001:2::1")
    ap.add_argument("--frag-src", default="198.18.0.3", help="source of the fragment tests")
    ap.add_argument("--frag-src6", default="2001:2::3", help="source of the fragment tests")
    ap.add_argument("--dst6", default="2001:2::2")
    ap.add_argument("--other", default="198.18.0.99")
    ap.add_argument("--other6", default="2001:2::99")
    ap.add_argument("--stranger", default="198.18.0.77")
    ap.add_argument("--port", type=int, default=7)
    ap.add_argument("--closed", type=int, default=9)
    a = ap.parse_args()
    a.serve_mac = a.serve_mac.lower()
    a.mac = get_if_hwaddr(a.iface)
    conf.verb = 0
    results = []

    def result(ok, name, detail=""):
        results.append(ok)
        print("RESULT %s %s%s" % ("ok" if ok else "fail", name, (": " + detail) if detail else ""))

    if a.probe:
        probe(a, result)
        return 0 if all(results) else 1
    if not a.stats:
        ap.error("--stats is required")
    lst = frames(a)
    seen = []
    sniffer = AsyncSniffer(iface=a.iface, store=False,
                           lfilter=lambda p: p.haslayer(Ether) and p[Ether].src.lower() == a.serve_mac,
                           prn=seen.append)
    sniffer.start()
    time.sleep(0.3)   # the sniffer's socket is open
    icmp_before = snmp("/proc/net/snmp", "Icmp", "InDestUnreachs")
    icmp6_before = snmp("/proc/net/snmp6", None, "Icmp6InDestUnreachs")
    before = wait_ticks(a.stats, 1)
    t_send = time.monotonic()
    for name, fl, _ in lst:
        sendp(fl, iface=a.iface, verbose=False)
    t_sent = time.monotonic()
    # The second line printed after sending: at least a second of processing.
    after = wait_ticks(a.stats, 2)
    time.sleep(0.2)
    sniffer.stop()
    icmp_after = snmp("/proc/net/snmp", "Icmp", "InDestUnreachs")
    icmp6_after = snmp("/proc/net/snmp6", None, "Icmp6InDestUnreachs")

    print("  sent %d frames of %d kinds in %.2f s" % (sum(len(f) for _, f, _ in lst), len(lst), t_sent - t_send))
    for name, fl, exp in lst:
        print("  %-62s %s" % (name, " ".join("%s+%d" % kv for kv in exp.items())))

    expected = {}
    for _, _, exp in lst:
        for k, v in exp.items():
            expected[k] = expected.get(k, 0) + v
    ip4_frames = sum(1 for _, fl, _ in lst for f in fl if bytes(f)[12:14] == b"\x08\x00")
    expected["IP_IN_RECEIVES"] = ip4_frames
    # IPv4 frames reaching the protocols: the ICMP echo and the UDP ones
    # that got past IP (bad UDP checksum, closed port).
    expected["IP_IN_DELIVERS"] = 3
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in set(before) | set(after)}
    check = sorted(set(expected) | set(MUST_NOT_MOVE))
    wrong = [(k, delta.get(k, 0), expected.get(k, 0)) for k in check if delta.get(k, 0) != expected.get(k, 0)]
    for k in check:
        d, e = delta.get(k, 0), expected.get(k, 0)
        if d or e:
            print("  %-26s %+6d  expected %+d%s" % (k, d, e, "" if d == e else "   <-- differs"))
    others = sorted((k, v) for k, v in delta.items() if v and k not in check)
    print("  other counters that moved (background traffic, not checked): %s"
          % (" ".join("%s%+d" % kv for kv in others) or "none"))
    result(not wrong, "serve's counters move by exactly what the malformed frames should cause",
           "; ".join("%s %+d, expected %+d" % w for w in wrong) if wrong else
           "%d counters checked" % len(check))

    # What serve sent back: port unreachables for the closed ports, nothing else above ARP/NDP.
    unreach4 = [p for p in seen if p.haslayer(ICMP) and p[ICMP].type == 3 and p[ICMP].code == 3
                and p.haslayer(IP) and p[IP].dst == a.src]
    unreach6 = [p for p in seen if p.haslayer(ICMPv6DestUnreach) and p[ICMPv6DestUnreach].code == 4]

    def quoted_port(p):
        # The destination port of the UDP header quoted after the IP header.
        if p.haslayer(ICMPv6DestUnreach):
            q = bytes(p[ICMPv6DestUnreach].payload)
            return int.from_bytes(q[42:44], "big") if len(q) >= 44 and q[6] == 17 else None
        q = bytes(p[ICMP].payload)
        if len(q) < 20 or q[9] != 17:
            return None
        h = (q[0] & 15) * 4
        return int.from_bytes(q[h + 2:h + 4], "big") if len(q) >= h + 4 else None
    result(len(unreach4) == 1 and quoted_port(unreach4[0]) == a.closed,
           "IPv4 port unreachable back for the closed port",
           "%d seen (quoting port %s); kernel Icmp InDestUnreachs %+d"
           % (len(unreach4), quoted_port(unreach4[0]) if unreach4 else "-", icmp_after - icmp_before))
    result(len(unreach6) == 1 and quoted_port(unreach6[0]) == a.closed,
           "IPv6 port unreachable back for the closed port",
           "%d seen; kernel Icmp6InDestUnreachs %+d" % (len(unreach6), icmp6_after - icmp6_before))
    result(icmp_after - icmp_before == 1 and icmp6_after - icmp6_before == 1,
           "the kernel counts them (Icmp InDestUnreachs, Icmp6InDestUnreachs +1 each)",
           "%+d, %+d" % (icmp_after - icmp_before, icmp6_after - icmp6_before))

    def is_background(p):
        if p.haslayer(ARP):
            return True
        if p.haslayer(IPv6) and p[IPv6].nh == 58:
            t = bytes(p[IPv6].payload)[:1]
            return bool(t) and 133 <= t[0] <= 137
        return False
    known = set(id(p) for p in unreach4 + unreach6)
    other = [p for p in seen if not is_background(p) and id(p) not in known]
    result(not other, "serve answered nothing else (no echo of a bad datagram, no ping reply)",
           "; ".join(p.summary() for p in other[:5]) if other else "%d frames from serve seen" % len(seen))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
