# SPDX-License-Identifier: BSD-3-Clause
# Writes the seed inputs of fuzz/tcp_conn_fuzz.c into fuzz/corpus/tcp_conn/ (deterministic: same bytes every run).
"""Seed inputs for the TCP connection fuzzer.

The input format is the harness's own (see the comment at the top of
fuzz/tcp_conn_fuzz.c): two setup bytes, then records of segments (relative
to the live connections' sequence numbers), clock advances, application
actions and repeats. Nothing here depends on the stack's ISNs: the harness
learns them from the handshakes it plays, so plain Python is enough (no
scapy).

Flows: 0 IPv4 -> listener 80 (established), 1 IPv6 -> listener 80
(established), 2 IPv4, the stack's own connection to peer port 7
(established), 3 IPv4 / 4 IPv6 / 7 IPv4 -> 80 (no connection yet),
5 IPv4 / 6 IPv6 -> 81 (no listener).

Usage: python3 fuzz/corpus/make_tcp_conn_seeds.py [OUTDIR]
"""
import os
import struct
import sys

FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 1, 2, 4, 8, 16, 32, 64, 128

# setup[0] bits
S_TS, S_WS, S_SACK = 1, 2, 4
S_MSS536, S_MSS1220, S_MSS88 = 1 << 3, 2 << 3, 3 << 3
S_SMALLBUF, S_CLOSE, S_NODELAY = 0x20, 0x40, 0x80
# setup[1] bits
T_NOTS, T_NOWS, T_NOCOOKIES, T_MSS536 = 1, 2, 4, 8

DEFAULT = S_TS | S_WS | S_SACK


def seg(flow, flags, dseq=0, dack=0, sh=0, win=0xFFFF, plen=0, opts=b"",
        corrupt=False, nodef=False, urg=False):
    """A segment: seq = peer's next + dseq << (sh >> 4), ack = the stack's
    highest + dack << (sh & 15)."""
    op = (flow & 7) << 2 | (0x20 if corrupt else 0) | (0x40 if nodef else 0) | (0x80 if urg else 0)
    return (bytes([op, flags]) + struct.pack(">hhBHHB", dseq, dack, sh, win, plen, len(opts)) + opts)


def wait(ms):
    """Advance the virtual clock by at least ms (the nearest encodable step)."""
    best = None
    for exp in range(8):
        for mant in range(8):
            v = (1 + mant) * 4 ** exp
            if v >= ms and (best is None or v < best[0]):
                best = (v, mant, exp)
    if best is None:
        best = (8 * 4 ** 7, 7, 7)
    return bytes([1 | best[1] << 2 | best[2] << 5])


READ, SEND, SHUT, CLOSE, ABORT, TOGGLE, OPT, CLOSE_LISTENER = range(8)


def app(handle, action, arg=0):
    return bytes([2 | (handle & 7) << 2 | action << 5, arg])


def rep(count, vary=False, complete=False):
    """Repeat the last segment count times (1..64); vary: each copy from a
    flow of its own (peer port 41000 + i); complete: and ACK its SYN-ACK."""
    return bytes([3 | (count - 1) << 2, (1 if vary else 0) | (2 if complete else 0)])


def seed(s0=DEFAULT, s1=0, *records):
    return bytes([s0, s1]) + b"".join(records)


# Option bytes.
NOP, EOL = b"\x01", b"\x00"
def mss(v): return struct.pack(">BBH", 2, 4, v)
def ws(v): return bytes([3, 3, v])
def ts(val, ecr): return struct.pack(">BBII", 8, 10, val, ecr)
def sack(*blocks):
    # The harness reads SACK blocks as signed offsets from the stack's highest sequence number.
    return bytes([5, 2 + 8 * len(blocks)]) + b"".join(struct.pack(">II", a & 0xFFFFFFFF, b & 0xFFFFFFFF)
                                                      for a, b in blocks)


def too_big(flow, mtu_index, back=0):
    """An ICMP too big about flow: MTU {0, 576, 1280, 1400}[mtu_index], quoting max - 1 - back * 4096."""
    return app(flow, CLOSE_LISTENER, 2 | (mtu_index & 3) << 2 | (back & 15) << 4)


SEEDS = {
    # Data in order, echoed, acknowledged; a delayed ACK fires.
    "data-echo": seed(DEFAULT, 0, seg(0, ACK | PSH, plen=100), wait(50), seg(0, ACK), seg(0, ACK | PSH, plen=1000),
                      seg(0, ACK | PSH, plen=1448), wait(50), seg(0, ACK)),
    "data-echo-v6": seed(DEFAULT, 0, seg(1, ACK | PSH, plen=1200), wait(50), seg(1, ACK), seg(1, ACK | FIN)),
    "data-active": seed(DEFAULT, 0, app(2, SEND, 200), seg(2, ACK), seg(2, ACK | PSH, plen=300), wait(50),
                        seg(2, ACK | FIN), wait(3000)),
    # Out of order, then the hole filled; a duplicate; overlap.
    "ooo-fill": seed(DEFAULT, 0, seg(0, ACK, dseq=1000, plen=500), seg(0, ACK, dseq=2000, plen=500),
                     seg(0, ACK, plen=1000), seg(0, ACK, dseq=-500, plen=1000), seg(0, ACK, dseq=-200, plen=700),
                     wait(50), seg(0, ACK)),
    "ooo-many": seed(DEFAULT | S_SMALLBUF, 0, seg(0, ACK, dseq=100, plen=10), rep(30),
                     seg(0, ACK, dseq=3000, plen=2000), seg(0, ACK, plen=100)),
    # The peer closes first: the application closes at end of stream.
    "peer-fin": seed(DEFAULT, 0, seg(0, ACK | PSH | FIN, plen=10), seg(0, ACK), wait(5000)),
    "peer-fin-v6-lastack-lost": seed(DEFAULT, 0, seg(1, ACK | FIN), wait(300), wait(1000), wait(5000)),
    # The application closes first: FIN_WAIT_1, FIN_WAIT_2, TIME_WAIT, expiry.
    "app-close": seed(DEFAULT, 0, app(0, CLOSE), seg(0, ACK), seg(0, ACK | FIN), wait(3000),
                      seg(0, ACK | FIN, dseq=-1)),
    "app-close-fw2-timeout": seed(DEFAULT, 0, app(0, CLOSE), seg(0, ACK), wait(4000)),
    "simultaneous-close": seed(DEFAULT, 0, app(0, TOGGLE, 4), app(0, SHUT, 1), seg(0, ACK | FIN, dack=-1),
                               seg(0, ACK), wait(3000)),
    "half-close": seed(DEFAULT, 0, app(0, SHUT, 1), seg(0, ACK), seg(0, ACK | PSH, plen=500), seg(0, ACK),
                       seg(0, ACK | FIN)),
    "abort": seed(DEFAULT, 0, app(0, ABORT), seg(0, ACK | PSH, plen=10), app(2, ABORT)),
    "linger0-close": seed(DEFAULT, 0, app(1, OPT, 3), app(1, CLOSE)),
    # Resets: exact, in window (challenge ACK), out of window, with ACK.
    "rst-exact": seed(DEFAULT, 0, seg(0, RST), seg(1, RST | ACK), seg(2, RST)),
    "rst-in-window": seed(DEFAULT, 0, seg(0, RST, dseq=100), seg(0, RST, dseq=5000), seg(0, RST, dseq=-100),
                          seg(0, ACK | PSH, plen=10)),
    "rst-flood-challenge-limit": seed(DEFAULT, 0, seg(0, RST, dseq=7), rep(20)),
    # A SYN on an established connection: challenge ACK (RFC 5961 4).
    "syn-established": seed(DEFAULT, 0, seg(0, SYN), seg(0, SYN, dseq=1000), seg(1, SYN | ACK), seg(2, SYN)),
    # Bad checksums, bad flags.
    "bad-cksum": seed(DEFAULT, 0, seg(0, ACK | PSH, plen=100, corrupt=True), seg(3, SYN, corrupt=True),
                      seg(0, ACK | PSH, plen=100)),
    "flags-odd": seed(DEFAULT, 0, seg(0, 0), seg(0, 0xFF, plen=5), seg(0, SYN | FIN), seg(0, ACK | URG, plen=20, urg=True),
                      seg(3, SYN | FIN), seg(3, SYN | RST), seg(3, FIN), seg(3, ACK), seg(5, 0)),
    # Options: malformed, unusual, and plenty.
    "opts-bad": seed(DEFAULT, 0, seg(0, ACK, opts=bytes([2, 3, 1])), seg(0, ACK, opts=bytes([8, 9]) + b"\0" * 7),
                     seg(0, ACK, opts=bytes([5, 10]) + b"\0" * 8), seg(0, ACK, opts=bytes([0x42, 0]))),
    "opts-sack": seed(DEFAULT, 0, app(0, SEND, 255), seg(0, ACK, dack=-8000,
                      opts=NOP + NOP + sack((1000, 2000), (3000, 4000)))),
    "opts-syn": seed(DEFAULT, 0, seg(3, SYN, nodef=True, opts=mss(1) + ws(15) + NOP + bytes([4, 2]) + NOP + NOP + ts(5, 7)),
                     seg(3, ACK), seg(4, SYN, nodef=True, opts=mss(65535) + NOP + ws(14)), seg(4, ACK, plen=50),
                     seg(7, SYN, nodef=True, opts=NOP * 40)),
    "opts-nop40": seed(DEFAULT, 0, seg(0, ACK | PSH, plen=100, nodef=True, opts=NOP * 40)),
    # PAWS: an old timestamp.
    "paws": seed(DEFAULT, 0, seg(0, ACK | PSH, plen=10, nodef=True, opts=NOP + NOP + ts(1, 0)),
                 seg(0, ACK | PSH, plen=10)),
    "no-ts-after-ts": seed(DEFAULT, 0, seg(0, ACK | PSH, plen=10, nodef=True)),
    # New connections: v4 and v6 to the listener, a closed port, a SYN flood (cookies).
    "listen-v4": seed(DEFAULT, 0, seg(3, SYN), seg(3, ACK), seg(3, ACK | PSH, plen=64), seg(3, ACK | FIN)),
    "listen-v6": seed(DEFAULT, 0, seg(4, SYN), seg(4, ACK | PSH, plen=64), seg(4, ACK | FIN)),
    "listen-v4-no-opts": seed(0, T_NOTS | T_NOWS, seg(7, SYN, nodef=True), seg(7, ACK), seg(7, ACK, plen=536)),
    "closed-port": seed(DEFAULT, 0, seg(5, SYN), seg(6, SYN), seg(5, ACK), seg(6, ACK | PSH, plen=3), seg(5, RST)),
    "syn-flood": seed(DEFAULT, 0, seg(3, SYN), rep(24, vary=True), seg(3, SYN), seg(3, ACK), wait(1000), wait(5000)),
    "syn-flood-cookie-ok": seed(DEFAULT, 0, seg(7, SYN), rep(8, vary=True), seg(3, SYN), seg(3, ACK),
                                seg(3, ACK | PSH, plen=100), seg(4, SYN), seg(4, ACK, plen=10)),
    "flood-complete": seed(DEFAULT, 0, seg(7, SYN), rep(40, vary=True, complete=True), wait(1000),
                           seg(4, SYN), rep(16, vary=True, complete=True)),
    "syn-flood-nocookies": seed(DEFAULT, T_NOCOOKIES, seg(7, SYN), rep(12, vary=True), seg(7, SYN)),
    "synack-lost": seed(DEFAULT, 0, seg(3, SYN), wait(1000), wait(3000), wait(10000), wait(30000)),
    "syn-data": seed(DEFAULT, 0, seg(3, SYN, plen=100), seg(3, ACK, plen=100)),
    "listener-close": seed(DEFAULT, 0, seg(3, SYN), seg(4, SYN), seg(4, ACK), app(0, CLOSE_LISTENER, 0),
                           app(0, CLOSE_LISTENER, 1), seg(3, ACK), seg(7, SYN)),
    # Retransmissions: unacknowledged data and the clock; then timeouts.
    "rtx": seed(DEFAULT, 0, app(0, SEND, 100), wait(300), wait(600), wait(1200), seg(0, ACK)),
    "rtx-give-up": seed(DEFAULT, 0, app(2, SEND, 10), wait(30000), wait(30000), wait(30000)),
    "dupacks-fast-rtx": seed(DEFAULT, 0, app(0, SEND, 255), app(0, SEND, 255), seg(0, ACK, dack=-16000),
                             rep(4), seg(0, ACK, dack=-8000), seg(0, ACK)),
    # Zero windows: the peer's (persist probes) and ours (reading paused).
    "peer-zero-window": seed(DEFAULT, 0, seg(0, ACK, win=0), app(0, SEND, 100), wait(300), wait(1000),
                             wait(3000), seg(0, ACK, win=0xFFFF)),
    "our-zero-window": seed(DEFAULT | S_SMALLBUF, 0, app(0, TOGGLE, 1), seg(0, ACK, plen=1448), rep(8),
                            seg(0, ACK, plen=1), app(0, READ, 255), app(0, TOGGLE, 1), seg(0, ACK)),
    "bulk": seed(DEFAULT, 0, seg(0, ACK | PSH, plen=1448), rep(40), wait(50), seg(0, ACK)),
    "bulk-zc": seed(DEFAULT, 0, app(0, TOGGLE, 2), seg(0, ACK | PSH, plen=1448), rep(20), wait(50), seg(0, ACK)),
    "tiny-segments": seed(DEFAULT | S_SMALLBUF, 0, app(0, TOGGLE, 1), seg(0, ACK, plen=1), rep(64), rep(64),
                          app(0, READ, 10)),
    # Keepalive probes, answered and not.
    "keepalive": seed(DEFAULT, 0, app(0, OPT, 2), wait(1000), wait(1000), seg(0, ACK, dseq=-1), wait(1000),
                      wait(1000), wait(1000)),
    # Other setups: no options at all, small MSS, nodelay, orderly teardown.
    "setup-plain": seed(0, T_NOTS | T_NOWS, seg(0, ACK | PSH, plen=536), seg(1, ACK | PSH, plen=536), wait(50)),
    "setup-mss88": seed(S_MSS88 | S_TS, T_MSS536, app(0, SEND, 50), seg(0, ACK), wait(50)),
    "setup-nodelay-quickack": seed(DEFAULT | S_NODELAY, 0, seg(0, ACK | PSH, plen=10), app(0, SEND, 0), seg(0, ACK)),
    "setup-teardown": seed(DEFAULT | S_CLOSE, 0, seg(0, ACK | PSH, plen=100), app(1, SEND, 20), seg(3, SYN)),
    "window-edges": seed(DEFAULT | S_SMALLBUF, 0, seg(0, ACK, dseq=4095, plen=1), seg(0, ACK, dseq=4096, plen=1),
                         seg(0, ACK, dseq=1, sh=0xC0, plen=10), seg(0, ACK, dack=1, sh=0x0F),
                         seg(0, ACK, dack=-1, sh=0x0F)),
    # SACK as the sender (RFC 6675, RACK-TLP, PRR), D-SACK, hostile blocks.
    "sack-recovery": seed(DEFAULT | S_NODELAY, 0, app(0, SEND, 255), app(0, SEND, 255), app(0, SEND, 255),
                          seg(0, ACK, dack=-20000, opts=NOP + NOP + sack((-16000, -12000))),
                          seg(0, ACK, dack=-20000, opts=NOP + NOP + sack((-16000, -8000))),
                          seg(0, ACK, dack=-20000, opts=NOP + NOP + sack((-16000, -4000))), wait(5), wait(50),
                          seg(0, ACK), wait(300)),
    "sack-tail-loss": seed(DEFAULT | S_NODELAY, 0, app(0, SEND, 255), seg(0, ACK, dack=-2000), wait(20),
                           wait(300), seg(0, ACK)),
    "sack-hostile": seed(DEFAULT, 0, app(0, SEND, 255), app(0, SEND, 255),
                         seg(0, ACK, dack=-8000, opts=NOP + NOP + sack((100, 5000), (-3000, -5000))),
                         seg(0, ACK, dack=-8000, opts=NOP + NOP + sack((-6000, -2000), (-5000, -1000), (-7000, -6500))),
                         seg(0, ACK, dack=-8000, opts=NOP + NOP + sack((-2000000, -1000000))),
                         seg(0, RST | ACK, opts=NOP + NOP + sack((-3000, -1000)))),
    "dsack": seed(DEFAULT, 0, app(0, SEND, 100), wait(1000), seg(0, ACK),
                  seg(0, ACK, opts=NOP + NOP + sack((-3000, -2000))), seg(0, ACK | PSH, plen=100),
                  seg(0, ACK | PSH, dseq=-100, plen=100)),
    # Path MTU: ICMP too big quoting data in flight, acknowledged data, far away; black holes.
    "icmp-too-big": seed(DEFAULT, 0, app(0, SEND, 255), too_big(0, 2), too_big(1, 1, 15), too_big(0, 0, 3),
                         app(1, SEND, 255), too_big(1, 3), wait(50), seg(0, ACK), seg(1, ACK)),
    "black-hole": seed(DEFAULT, 0, app(0, SEND, 255), app(0, SEND, 255), wait(300), wait(600), wait(1200),
                       wait(2400), seg(0, ACK), app(0, SEND, 255), seg(0, ACK)),
    # ECN: an ECN-setup SYN, ECE on ACKs, CWR on data.
    "ecn": seed(DEFAULT, 0, seg(3, SYN | ECE | CWR), seg(3, ACK), app(0, SEND, 100), seg(0, ACK | ECE),
                seg(0, ACK | PSH | CWR, plen=100), seg(4, SYN | ECE)),
    "ack-unsent": seed(DEFAULT, 0, seg(0, ACK, dack=100), seg(0, ACK, dack=-3000), seg(1, ACK, dack=1, sh=0x0E)),
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "tcp_conn")
    os.makedirs(out, exist_ok=True)
    for name, data in sorted(SEEDS.items()):
        with open(os.path.join(out, "seed-" + name), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(SEEDS), out))


if __name__ == "__main__":
    main()
