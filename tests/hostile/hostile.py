#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The attacker's and the real clients' side of tests/hostile/: kernel TCP
clients, raw frames injected with an AF_PACKET socket, and what comes back
read from the same socket. Run inside the attacker's namespace.

Subcommands (each prints what it found; exit 0 when it found what it should):
  clients  --to A --port P --conns N --bytes B [--spread S] [--deadline S]
           N kernel connections (started over S seconds), each echoing B
           random bytes, every byte checked: one JSON line.
  synopts  --to A --port P
           one connection: the options it negotiated (TCP_INFO) as JSON.
  rfc5961  --iface IF --mac SERVE_MAC --src A --dst A --port P [--trials N] [--burst N]
           RFC 5961 against a live kernel connection: "OK text" / "FAIL text
           :: detail" lines.
  garbage  --iface IF --mac SERVE_MAC --src A --dst A [--count N] [--scapy N] [--seed S]
           N random frames (random TCP flags and options, option lengths 0
           and 1, data offsets past the end, IPv6 extension-header chains,
           ICMP errors quoting random headers, broken IP headers, random
           ethertypes), the first --scapy of them from scapy's fuzz(): one
           JSON line.
  frags    --iface IF --mac SERVE_MAC --src A --dst A [--count N] [--seed S]
           N fragment trains (IPv4 and IPv6: overlaps, gaps, duplicates,
           missing last fragments, offsets at the limit): one JSON line.
  ipid     --iface IF --mac SERVE_MAC --srcs A,B --dst A [--count N]
           echo requests from two sources in turn: the IDs of the replies,
           and whether they are one sequence: JSON.
  churn    --to A --port P --rate R --seconds S
           R new connections per second (a short echo each, closed), for S
           seconds: JSON.
  bulk     --to A --seconds S [--conns N]
           N connections to discard (9) and N from source (19), as fast as
           they go, for S seconds: JSON.
"""
import argparse
import json
import os
import random
import select
import socket
import struct
import sys
import threading
import time

ETH_P_ALL = 0x0003
ETH_IPV4, ETH_IPV6, ETH_ARP, ETH_VLAN = 0x0800, 0x86DD, 0x0806, 0x8100
TCP_INFO = 11
TCPI_OPT_TIMESTAMPS, TCPI_OPT_SACK, TCPI_OPT_WSCALE = 1, 2, 4


# ---- checksums and headers -------------------------------------------------------

def csum(data):
    if len(data) & 1:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def a4(s):
    return socket.inet_pton(socket.AF_INET, s)


def a6(s):
    return socket.inet_pton(socket.AF_INET6, s)


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def eth(dst, src, etype, payload):
    return dst + src + struct.pack("!H", etype) + payload


def ipv4(src, dst, proto, payload, ident=0, ttl=64, flags_off=0x4000, tos=0):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(payload), ident, flags_off, ttl, proto, 0, src, dst)
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + payload


def ipv6(src, dst, nh, payload, hlim=64):
    return struct.pack("!IHBB16s16s", 6 << 28, len(payload), nh, hlim, src, dst) + payload


def l4sum(src, dst, proto, seg):
    if len(src) == 4:
        ph = src + dst + struct.pack("!BBH", 0, proto, len(seg))
    else:
        ph = src + dst + struct.pack("!IxxxB", len(seg), proto)
    return csum(ph + seg)


def tcp(src, dst, sport, dport, seq, ack, flags, win, opts=b"", data=b"", doff=None, good_sum=True):
    if doff is None:
        doff = (20 + len(opts) + 3) // 4
        opts = opts + b"\0" * (doff * 4 - 20 - len(opts))
    h = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, (doff & 0xF) << 4,
                    flags & 0xFF, win & 0xFFFF, 0, 0) + opts
    seg = h + data
    s = l4sum(src, dst, 6, seg) if good_sum else random.getrandbits(16)
    return seg[:16] + struct.pack("!H", s) + seg[18:]


def ts_opt(tsval, tsecr):
    return b"\x01\x01\x08\x0a" + struct.pack("!II", tsval & 0xFFFFFFFF, tsecr & 0xFFFFFFFF)


SO_SNDBUFFORCE, SO_RCVBUFFORCE = 32, 33
# Our own frames carry this TOS, so that reading the wire can tell them
# from the kernel's (both leave by the same interface).
INJECTED_TOS = 0x04


def rawsock(iface):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    # Past net.core.rmem_max (root): a burst must not overflow what we read.
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 32 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 8 << 20)
    return s


SO_ATTACH_FILTER = 26


def bpf_tcp_port(s, port):
    """Let only IPv4 TCP segments to or from port through s (classic BPF,
    as `tcpdump -dd 'ip and tcp port P'` compiles it): under a soak's bulk
    transfers and churn, Python could not read every frame."""
    prog = [
        (0x28, 0, 0, 12), (0x15, 0, 10, ETH_IPV4),       # ldh [12]; jne IPv4 -> drop
        (0x30, 0, 0, 23), (0x15, 0, 8, 6),               # ldb [23]; jne TCP -> drop
        (0x28, 0, 0, 20), (0x45, 6, 0, 0x1FFF),          # ldh [20]; jset fragment offset -> drop
        (0xB1, 0, 0, 14),                                # ldxb 4 * ([14] & 0xf)
        (0x48, 0, 0, 14), (0x15, 2, 0, port),            # ldh [x + 14]; jeq port -> accept
        (0x48, 0, 0, 16), (0x15, 0, 1, port),            # ldh [x + 16]; jne port -> drop
        (0x06, 0, 0, 0x40000),                           # accept
        (0x06, 0, 0, 0),                                 # drop
    ]
    import ctypes
    buf = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *i) for i in prog))
    fprog = struct.pack("HL", len(prog), ctypes.addressof(buf))
    s.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)  # the kernel copies the program


def if_mac(iface):
    with open(f"/sys/class/net/{iface}/address") as f:
        return mac(f.read().strip())


def send_all(s, frames):
    for fr in frames:
        while True:
            try:
                s.send(fr)
                break
            except BlockingIOError:
                time.sleep(0.0005)
            except OSError as e:
                if e.errno == 105:  # ENOBUFS: the qdisc is full, wait
                    time.sleep(0.0005)
                    continue
                raise


# ---- parsing what comes back -----------------------------------------------------

def parse_tcp4(fr):
    """(src, dst, sport, dport, seq, ack, flags, win, opts dict, payload len) or None."""
    if len(fr) < 34 or struct.unpack("!H", fr[12:14])[0] != ETH_IPV4:
        return None
    ip = fr[14:]
    ihl = (ip[0] & 0xF) * 4
    if ip[9] != 6 or len(ip) < ihl + 20 or ip[1] == INJECTED_TOS:
        return None
    tot = struct.unpack("!H", ip[2:4])[0]
    t = ip[ihl:tot]
    sport, dport, seq, ack, off, flags, win = struct.unpack("!HHIIBBH", t[:16])
    doff = (off >> 4) * 4
    opts = {}
    o = t[20:doff]
    i = 0
    while i < len(o):
        k = o[i]
        if k == 0:
            break
        if k == 1:
            i += 1
            continue
        if i + 1 >= len(o) or o[i + 1] < 2:
            break
        ln = o[i + 1]
        if k == 3 and ln == 3:
            opts["ws"] = o[i + 2]
        elif k == 8 and ln == 10:
            opts["ts"] = struct.unpack("!II", o[i + 2:i + 10])
        elif k == 4:
            opts["sackok"] = True
        i += ln
    return (socket.inet_ntop(socket.AF_INET, ip[12:16]), socket.inet_ntop(socket.AF_INET, ip[16:20]),
            sport, dport, seq, ack, flags, win, opts, len(t) - doff)


class Flow:
    """A kernel connection to serve, followed from the wire: what serve
    expects next (its RCV.NXT), its window, and the latest timestamps."""

    def __init__(self, sock, src, dst, port):
        self.sock, self.src, self.dst, self.port = sock, src, dst, port
        self.sport = sock.getsockname()[1]
        self.rcv_nxt = None   # serve's: the kernel's next sequence number
        self.wscale = 0       # serve's window shift (its SYN-ACK)
        self.win = 0          # serve's last window, bytes
        self.tsval = 0        # the kernel's last TSval
        self.tsecr = 0        # serve's last TSval

    def see(self, p):
        src, dst, sport, dport, seq, ack, flags, win, opts, plen = p
        if src == self.src and sport == self.sport and dport == self.port:
            end = seq + plen + (1 if flags & 0x03 else 0)
            if self.rcv_nxt is None or ((end - self.rcv_nxt) & 0xFFFFFFFF) < 0x80000000:
                self.rcv_nxt = end & 0xFFFFFFFF
            if "ts" in opts:
                self.tsval = opts["ts"][0]
            return False
        if src == self.dst and dport == self.sport and sport == self.port:
            if flags & 0x02 and "ws" in opts:
                self.wscale = opts["ws"]
            if not flags & 0x02:
                self.win = win << self.wscale
            if "ts" in opts:
                self.tsecr = opts["ts"][0]
            return True
        return False


class Wire:
    """The raw socket: injects frames, reads what passes, feeds the flows."""

    def __init__(self, iface, serve_mac, src, dst, port=None):
        self.s = rawsock(iface)
        if port:
            bpf_tcp_port(self.s, port)
            while True:  # what came before the filter
                try:
                    self.s.recv(65535, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    break
        self.s.setblocking(False)
        self.me = if_mac(iface)
        self.them = mac(serve_mac)
        self.src, self.dst = src, dst
        self.flows = []

    def pump(self, seconds, until=None):
        """Read frames for `seconds` (or until until(segments) is true);
        returns serve's TCP segments as (flow, parsed) pairs."""
        out = []
        end = time.monotonic() + seconds
        while not (until and until(out)):
            left = end - time.monotonic()
            if left <= 0:
                break
            r, _, _ = select.select([self.s], [], [], left)
            if not r:
                continue
            while True:
                try:
                    fr = self.s.recv(65535)
                except BlockingIOError:
                    break
                p = parse_tcp4(fr)
                if not p:
                    continue
                for f in self.flows:
                    if f.see(p):
                        out.append((f, p))
        return out

    def seg(self, f, seq, flags, ack=0, opts=None, data=b""):
        if opts is None:
            opts = ts_opt(f.tsval, f.tsecr)
        t = tcp(a4(self.src), a4(self.dst), f.sport, self.port_of(f), seq, ack, flags, 65535, opts, data)
        return eth(self.them, self.me, ETH_IPV4, ipv4(a4(self.src), a4(self.dst), 6, t,
                                                      ident=random.getrandbits(16), tos=INJECTED_TOS))

    @staticmethod
    def port_of(f):
        return f.port

    def inject(self, frames):
        self.s.setblocking(True)
        send_all(self.s, frames)
        self.s.setblocking(False)


def echo(sock, n):
    data = os.urandom(n)
    sock.sendall(data)
    got = b""
    while len(got) < n:
        c = sock.recv(n - len(got))
        if not c:
            break
        got += c
    return got == data


# ---- clients, synopts, churn, bulk --------------------------------------------------

def one_client(args, i, res, lock):
    try:
        s = socket.create_connection((args.to, args.port), timeout=args.timeout)
        s.settimeout(args.timeout)
        ok = echo(s, args.bytes)
        s.close()
        with lock:
            res["ok" if ok else "failed"] += 1
            if not ok:
                res["errors"].append(f"client {i}: echo differs")
    except OSError as e:
        with lock:
            res["failed"] += 1
            res["errors"].append(f"client {i}: {e}")


def cmd_clients(args):
    res = {"ok": 0, "failed": 0, "errors": []}
    lock = threading.Lock()
    t0 = time.monotonic()
    th = []
    for i in range(args.conns):
        if args.spread:
            wait = t0 + args.spread * i / args.conns - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        t = threading.Thread(target=one_client, args=(args, i, res, lock), daemon=True)
        t.start()
        th.append(t)
    for t in th:
        t.join(max(0.1, t0 + args.deadline - time.monotonic()))
    res["seconds"] = round(time.monotonic() - t0, 3)
    res["unfinished"] = args.conns - res["ok"] - res["failed"]
    res["errors"] = res["errors"][:5]
    print(json.dumps(res))
    return 0 if res["ok"] == args.conns else 1


def tcp_info_opts(s):
    ti = s.getsockopt(socket.IPPROTO_TCP, TCP_INFO, 104)
    o, ws = ti[5], ti[6]
    return {"ts": bool(o & TCPI_OPT_TIMESTAMPS), "sack": bool(o & TCPI_OPT_SACK),
            "ws": bool(o & TCPI_OPT_WSCALE), "snd_wscale": ws & 0xF, "rcv_wscale": ws >> 4}


def cmd_synopts(args):
    fam = socket.AF_INET6 if ":" in args.to else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(args.timeout)
    t0 = time.monotonic()
    s.connect((args.to, args.port))
    r = tcp_info_opts(s)
    r["echo"] = echo(s, 1000)
    r["seconds"] = round(time.monotonic() - t0, 3)
    s.close()
    print(json.dumps(r))
    return 0 if r["echo"] else 1


def cmd_churn(args):
    """R connections per second: connect, 64-byte echo, close; counted."""
    sel = __import__("selectors").DefaultSelector()
    ok = failed = started = 0
    errors = []
    t0 = time.monotonic()
    end = t0 + args.seconds
    live = {}
    while time.monotonic() < end or live:
        now = time.monotonic()
        want = int((min(now, end) - t0) * args.rate)
        while started < want and len(live) < 2000:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect_ex((args.to, args.port))
            except OSError as e:
                failed += 1
                errors.append(str(e))
                s.close()
                started += 1
                continue
            live[s] = [b"", now, os.urandom(64), False]
            sel.register(s, __import__("selectors").EVENT_WRITE)
            started += 1
        for key, ev in sel.select(0.01):
            s = key.fileobj
            st = live[s]
            try:
                if not st[3]:
                    err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        raise OSError(err, os.strerror(err))
                    s.send(st[2])
                    st[3] = True
                    sel.modify(s, __import__("selectors").EVENT_READ)
                    continue
                c = s.recv(64)
                if not c:
                    raise OSError("closed early")
                st[0] += c
                if len(st[0]) >= 64:
                    good = st[0] == st[2]
                    ok += good
                    failed += not good
                    sel.unregister(s)
                    s.close()
                    del live[s]
            except OSError as e:
                failed += 1
                if len(errors) < 5:
                    try:
                        port = s.getsockname()[1]
                    except OSError:
                        port = "?"
                    errors.append(f"{e} (port {port}, {time.monotonic() - t0:.1f} s)")
                sel.unregister(s)
                s.close()
                del live[s]
        for s, st in list(live.items()):
            if time.monotonic() - st[1] > args.timeout:
                failed += 1
                if len(errors) < 5:
                    errors.append("timed out")
                sel.unregister(s)
                s.close()
                del live[s]
    secs = time.monotonic() - t0
    print(json.dumps({"ok": ok, "failed": failed, "seconds": round(secs, 2),
                      "rate": round(ok / secs, 1), "errors": errors}))
    return 0 if failed == 0 else 1


def cmd_bulk(args):
    """Bulk both ways: to discard (9), from source (19)."""
    stop = time.monotonic() + args.seconds
    res = {"sent": 0, "received": 0, "errors": []}
    lock = threading.Lock()

    def sender():
        try:
            s = socket.create_connection((args.to, 9), timeout=args.timeout)
            buf = os.urandom(1 << 16)
            n = 0
            while time.monotonic() < stop:
                n += s.send(buf)
            s.close()
            with lock:
                res["sent"] += n
        except OSError as e:
            with lock:
                res["errors"].append(f"discard: {e}")

    def receiver():
        try:
            s = socket.create_connection((args.to, 19), timeout=args.timeout)
            s.settimeout(args.timeout)
            n = 0
            while time.monotonic() < stop:
                c = s.recv(1 << 16)
                if not c:
                    raise OSError("source closed")
                n += len(c)
            s.close()
            with lock:
                res["received"] += n
        except OSError as e:
            with lock:
                res["errors"].append(f"source: {e}")

    th = [threading.Thread(target=f, daemon=True) for _ in range(args.conns) for f in (sender, receiver)]
    for t in th:
        t.start()
    for t in th:
        t.join(args.seconds + 30)
    print(json.dumps(res))
    return 0 if not res["errors"] else 1


# ---- RFC 5961 ------------------------------------------------------------------------

def report(ok, text, detail=""):
    print(("OK " if ok else "FAIL ") + text + ("" if ok else " :: " + detail), flush=True)
    return ok


def open_flow(w, args):
    s = socket.create_connection((args.dst, args.port), source_address=(args.src, 0), timeout=5)
    s.settimeout(5)
    f = Flow(s, args.src, args.dst, args.port)
    w.flows.append(f)
    if not echo(s, 100):
        raise OSError("echo failed")
    w.pump(0.05)
    return f


def challenge_acks(segs, f, since_ack=None):
    """Pure ACKs serve sent on f (no data, no SYN/RST/FIN) acknowledging
    its current RCV.NXT."""
    return [p for g, p in segs if g is f and p[6] & 0x17 == 0x10 and p[9] == 0
            and (since_ack is None or p[5] == since_ack)]


def in_window(f, k=1000):
    return (f.rcv_nxt + min(max(f.win // 2, 2), k)) & 0xFFFFFFFF


def rfc5961_basic(w, args):
    f = open_flow(w, args)
    # In-window RST, not exact: a challenge ACK (RFC 5961 3.2).
    w.pump(0.05)
    w.inject([w.seg(f, in_window(f), 0x04, opts=b"")])
    got = challenge_acks(w.pump(0.5, lambda o: challenge_acks(o, f)), f, f.rcv_nxt)
    report(len(got) == 1, "an in-window RST gets a challenge ACK", f"{len(got)} ACKs")
    # In-window SYN (RFC 5961 4.2), after the per-connection gap.
    time.sleep(0.6)
    w.pump(0.05)
    w.inject([w.seg(f, in_window(f, 100), 0x02, opts=ts_opt(f.tsval + 1, 0) + b"\x02\x04\x05\xb4")])
    got = challenge_acks(w.pump(0.5, lambda o: challenge_acks(o, f)), f, f.rcv_nxt)
    report(len(got) == 1, "an in-window SYN gets a challenge ACK", f"{len(got)} ACKs")
    report(echo(f.sock, 1000), "the connection still echoes after them", "echo failed")
    # Out of the window: dropped silently.
    w.pump(0.1)
    far = (f.rcv_nxt + max(f.win, 65536) * 4 + 1000000) & 0xFFFFFFFF
    w.inject([w.seg(f, far, 0x04, opts=b""), w.seg(f, (f.rcv_nxt - 200000) & 0xFFFFFFFF, 0x04, opts=b"")])
    got = [p for g, p in w.pump(0.4) if g is f]
    report(not got, "out-of-window RSTs are dropped without an answer", f"{len(got)} segments")
    report(echo(f.sock, 1000), "the connection still echoes after them", "echo failed")
    return f


def rfc5961_burst(w, args, a):
    """A burst of in-window RSTs on a: the next connection's in-window RST
    still gets its challenge ACK (CVE-2016-5696)."""
    bs = []
    for _ in range(args.trials):
        bs.append(open_flow(w, args))
    w.pump(0.1)
    good, a_acks = 0, 0
    for i in range(args.trials):
        burst = [w.seg(a, (a.rcv_nxt + 1 + (k * 37) % max(2, min(a.win - 1, 60000))) & 0xFFFFFFFF, 0x04, opts=b"")
                 for k in range(args.burst)]
        b = bs[i]
        w.inject(burst + [w.seg(b, in_window(b), 0x04, opts=b"")])
        segs = w.pump(0.5, lambda o, b=b: challenge_acks(o, b))
        a_acks += len(challenge_acks(segs, a))
        good += len(challenge_acks(segs, b, b.rcv_nxt)) >= 1
    report(good == args.trials, f"after a burst of {args.burst} in-window RSTs on one connection, another's "
           f"in-window RST gets its challenge ACK: {good} of {args.trials}", f"{good} of {args.trials}")
    report(a_acks <= args.trials, f"the bursting connection got at most one challenge ACK per burst ({a_acks} "
           f"for {args.trials * args.burst} RSTs)", f"{a_acks}")
    alive = sum(echo(b.sock, 200) for b in bs)
    report(alive == args.trials and echo(a.sock, 200), "every connection still echoes", f"{alive} of {args.trials}")
    for b in bs:
        b.sock.close()


def cmd_rfc5961(args):
    w = Wire(args.iface, args.mac, args.src, args.dst, args.port)
    try:
        a = rfc5961_basic(w, args)
        rfc5961_burst(w, args, a)
        # An exact RST (SEQ = RCV.NXT) resets: the kernel's next segment
        # finds no connection and gets a RST back.
        w.pump(0.1)
        time.sleep(0.6)
        w.inject([w.seg(a, a.rcv_nxt, 0x04, opts=b"")])
        w.pump(0.2)
        try:
            a.sock.sendall(b"x" * 100)
            a.sock.settimeout(3)
            c = a.sock.recv(100)
            reset = c == b""
        except (ConnectionResetError, BrokenPipeError):
            reset = True
        except OSError as e:
            reset = False
            print("exact RST: " + str(e))
        report(reset, "an exact RST (at RCV.NXT) resets the connection", "it still answered")
    except OSError as e:
        report(False, "RFC 5961 checks ran", str(e))
    return 0


# ---- random frames -------------------------------------------------------------------

def rnd(n):
    return random.getrandbits(8 * n).to_bytes(n, "big") if n else b""


class Fast:
    """random.Random's choice and randrange, three times cheaper (one float
    each): the generator makes 100,000 frames in Python."""

    def __init__(self, seed):
        self.r = random.Random(seed)
        self.random = self.r.random
        self.getrandbits = self.r.getrandbits
        self.shuffle = self.r.shuffle

    def choice(self, seq):
        return seq[int(self.random() * len(seq))]

    def randrange(self, a, b=None):
        if b is None:
            a, b = 0, a
        return a + int(self.random() * (b - a))

    def randint(self, a, b):
        return a + int(self.random() * (b - a + 1))

    def choices(self, seq, weights):
        x = self.random() * sum(weights)
        for item, w in zip(seq, weights):
            x -= w
            if x < 0:
                return [item]
        return [seq[-1]]


def rand_opts(r):
    """TCP options: well-formed, truncated, lengths 0 and 1, unknown kinds."""
    out = b""
    for _ in range(r.randint(0, 6)):
        kind = r.choice([0, 1, 2, 3, 4, 5, 8, 19, 28, 30, 34, 253, r.randrange(256)])
        if kind in (0, 1):
            out += bytes([kind])
            continue
        ln = r.choice([0, 1, 2, 3, 4, 10, r.randrange(41)])
        out += bytes([kind, ln]) + rnd(max(0, min(ln - 2, 38)) if ln >= 2 else r.randrange(3))
    return out[:40]


class Gen:
    def __init__(self, args, seed):
        self.r = Fast(seed)
        random.seed(seed)
        self.me = if_mac(args.iface)
        self.them = mac(args.mac)
        self.src4, self.dst4 = a4(args.src), a4(args.dst)
        self.src6, self.dst6 = a6("2001:2::1"), a6("2001:2::2")
        self.ports = [7, 9, 19, 22, 80]

    def v6(self):
        return self.r.random() < 0.4

    def addrs(self, v6):
        return (self.src6, self.dst6) if v6 else (self.src4, self.dst4)

    def wrap(self, v6, proto, l4):
        src, dst = self.addrs(v6)
        if v6:
            return eth(self.them, self.me, ETH_IPV6, ipv6(src, dst, proto, l4))
        return eth(self.them, self.me, ETH_IPV4, ipv4(src, dst, proto, l4, ident=self.r.getrandbits(16),
                                                      flags_off=0))

    def tcp_frame(self):
        r, v6 = self.r, self.v6()
        src, dst = self.addrs(v6)
        opts = rand_opts(r)
        doff = r.choice([None, None, None, 0, 1, 4, 5, 15, r.randrange(16)])
        data = rnd(r.choice([0, 0, 1, 10, 100, 1400]))
        t = tcp(src, dst, r.randrange(1024, 65536), r.choice(self.ports + [r.randrange(65536)]), r.getrandbits(32),
                r.getrandbits(32), r.getrandbits(8), r.getrandbits(16), opts, data, doff=doff,
                good_sum=r.random() < 0.8)
        return self.wrap(v6, 6, t)

    def ext_chain(self):
        """IPv6 with a chain of extension headers (RFC 8200 4): any order,
        lengths that fit or overrun, unknown ones, ending anywhere."""
        r = self.r
        kinds = [0, 43, 44, 60, 51, 59, 135, 139, 140, 253]
        chain = [r.choice(kinds) for _ in range(r.randint(1, 12))]
        body = b""
        last = r.choice([6, 17, 58, 59, 254])
        for i in reversed(range(len(chain))):
            nh = chain[i + 1] if i + 1 < len(chain) else last
            k = chain[i]
            if k == 44:
                hdr = struct.pack("!BBHI", nh, 0, r.getrandbits(16), r.getrandbits(32))
            else:
                ln = r.choice([0, 1, 2, r.randrange(256)])
                hdr = bytes([nh, ln]) + rnd(min(6 + 8 * ln, r.choice([6, 6 + 8 * ln, 30])))
            body = hdr + body
        body += rnd(r.choice([0, 8, 20, 60]))
        return eth(self.them, self.me, ETH_IPV6, ipv6(self.src6, self.dst6, chain[0], body))

    def quote(self, v6):
        """A random IP header (ours as destination or source, any protocol)
        and some bytes after it, as an ICMP error quotes it."""
        r = self.r
        src, dst = self.addrs(v6)
        if r.random() < 0.5:
            src, dst = dst, src
        l4 = rnd(r.choice([0, 4, 8, 20, 40]))
        proto = r.choice([6, 17, 1, 58, r.randrange(256)])
        if v6:
            q = ipv6(src, dst, proto, l4)
        else:
            q = ipv4(src, dst, proto, l4, ident=r.getrandbits(16), flags_off=r.choice([0, 0x4000, 0x2000, 0x1FFF]))
        return q[:r.randint(0, len(q))] if r.random() < 0.3 else q

    def icmp_error(self):
        r, v6 = self.r, self.v6()
        q = self.quote(v6)
        if v6:
            t, c = r.choice([1, 2, 3, 4, r.randrange(256)]), r.randrange(8)
            m = struct.pack("!BBHI", t, c, 0, r.getrandbits(32)) + q
            s = l4sum(self.src6, self.dst6, 58, m)
            return self.wrap(True, 58, m[:2] + struct.pack("!H", s) + m[4:])
        t, c = r.choice([3, 4, 5, 11, 12, r.randrange(256)]), r.randrange(16)
        m = struct.pack("!BBHI", t, c, 0, r.getrandbits(32)) + q
        m = m[:2] + struct.pack("!H", csum(m)) + m[4:]
        return self.wrap(False, 1, m)

    def bad_ip(self):
        r = self.r
        if self.v6():
            p = ipv6(self.src6, self.dst6, r.randrange(256), rnd(r.randrange(60)))
            n = r.randrange(len(p) + 1)
            p = p[:n] if r.random() < 0.5 else p[:4] + struct.pack("!H", r.getrandbits(16)) + p[6:]
            return eth(self.them, self.me, ETH_IPV6, p)
        ihl = r.randrange(16)
        h = struct.pack("!BBHHHBBH4s4s", r.choice([0x40, 0x50, 0x60, r.randrange(256)]) | ihl, 0,
                        r.getrandbits(16), r.getrandbits(16), r.getrandbits(16), r.randrange(256),
                        r.randrange(256), 0, self.src4, self.dst4) + rnd(r.randrange(60))
        if r.random() < 0.6:
            h = h[:10] + struct.pack("!H", csum(h[:max(20, ihl * 4)])) + h[12:]
        return eth(self.them, self.me, ETH_IPV4, h)

    def udp_frame(self):
        r, v6 = self.r, self.v6()
        src, dst = self.addrs(v6)
        data = rnd(r.choice([0, 1, 8, 100]))
        ln = r.choice([8 + len(data), 8 + len(data), r.randrange(65536)])
        u = struct.pack("!HHHH", r.randrange(1024, 65536), r.choice([7, 53, r.randrange(65536)]), ln & 0xFFFF, 0) + data
        if r.random() < 0.7:
            u = u[:6] + struct.pack("!H", l4sum(src, dst, 17, u) or 0xFFFF) + u[8:]
        return self.wrap(v6, 17, u)

    def random_frame(self):
        r = self.r
        et = r.choice([ETH_IPV4, ETH_IPV6, ETH_ARP, ETH_VLAN, 0x88CC, r.getrandbits(16)])
        dst = r.choice([self.them, b"\xff" * 6, rnd(6)])
        return eth(dst, self.me, et, rnd(r.randrange(0, 200)))

    def frame(self):
        return self.r.choices([self.tcp_frame, self.ext_chain, self.icmp_error, self.bad_ip, self.udp_frame,
                               self.random_frame], weights=[35, 15, 15, 12, 8, 15])[0]()


def scapy_frames(args, n):
    """n frames from scapy's fuzz(): its own idea of every field of a few
    layer stacks (IP and TCP options, ICMP quoting IP, IPv6 extension
    headers), independent of the generator above. About a millisecond or
    more each, so a few hundred."""
    from scapy.all import (ICMP, IP, TCP, UDP, Ether, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,
                           IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, ICMPv6DestUnreach, conf, fuzz, raw)
    conf.verb = 0
    random.seed(args.seed)
    src6, dst6 = "2001:2::1", "2001:2::2"
    stacks = [
        lambda: IP(src=args.src, dst=args.dst) / fuzz(TCP(dport=7)),
        lambda: fuzz(IP(src=args.src, dst=args.dst, proto=6)) / fuzz(TCP()),
        lambda: IP(src=args.src, dst=args.dst) / fuzz(UDP(dport=7)),
        lambda: IP(src=args.src, dst=args.dst) / fuzz(ICMP(type=3)) / fuzz(IP(src=args.dst)) / fuzz(TCP()),
        lambda: IPv6(src=src6, dst=dst6) / fuzz(IPv6ExtHdrHopByHop()) / fuzz(IPv6ExtHdrRouting()) / fuzz(TCP()),
        lambda: IPv6(src=src6, dst=dst6) / fuzz(IPv6ExtHdrDestOpt()) / fuzz(IPv6ExtHdrFragment()) / fuzz(UDP()),
        lambda: IPv6(src=src6, dst=dst6) / fuzz(ICMPv6DestUnreach()) / fuzz(IPv6(src=dst6)) / fuzz(TCP()),
    ]
    dst, me = args.mac, ":".join("%02x" % b for b in if_mac(args.iface))
    return [raw(Ether(dst=dst, src=me) / stacks[i % len(stacks)]())[:1514] for i in range(n)]


def cmd_garbage(args):
    g = Gen(args, args.seed)
    s = rawsock(args.iface)
    sent = 0
    t0 = time.monotonic()
    batch = scapy_frames(args, min(args.scapy, args.count)) if args.scapy else []
    args.count -= len(batch)
    for _ in range(args.count):
        fr = g.frame()
        batch.append(fr[:max(14, min(len(fr), 1514))])
        if len(batch) == 256:
            send_all(s, batch)
            sent += len(batch)
            batch = []
            if args.pps:
                ahead = sent / args.pps - (time.monotonic() - t0)
                if ahead > 0:
                    time.sleep(ahead)
    send_all(s, batch)
    sent += len(batch)
    print(json.dumps({"sent": sent, "scapy": args.scapy, "seconds": round(time.monotonic() - t0, 2),
                      "seed": args.seed}))
    return 0


# ---- fragment trains -----------------------------------------------------------------

def frag4(g, ident, proto, off8, mf, data):
    fo = (0x2000 if mf else 0) | (off8 & 0x1FFF)
    return eth(g.them, g.me, ETH_IPV4, ipv4(g.src4, g.dst4, proto, data, ident=ident, flags_off=fo))


def frag6(g, ident, nh, off8, mf, data):
    fh = struct.pack("!BBHI", nh, 0, ((off8 & 0x1FFF) << 3) | (1 if mf else 0), ident)
    return eth(g.them, g.me, ETH_IPV6, ipv6(g.src6, g.dst6, 44, fh + data))


def train(g):
    """One datagram's fragments, rarely right: gaps, overlaps, duplicates,
    no last fragment, offsets at the 65535 limit, tiny pieces."""
    r = g.r
    v6 = r.random() < 0.4
    ident = r.getrandbits(32 if v6 else 16)
    proto = r.choice([1, 17, 6, 58, 253])
    n = r.randint(1, 8)
    out = []
    off = 0
    for k in range(n):
        ln = r.choice([8, 16, 64, 512, 1400])
        shape = r.random()
        if shape < 0.15:
            off = max(0, off - r.choice([8, 16, 64]))        # overlap
        elif shape < 0.25:
            off += r.choice([8, 64, 512])                      # gap
        elif shape < 0.3:
            off = r.choice([8185, 8189, 8191])                 # at the limit (x 8 bytes)
        mf = k < n - 1 or r.random() < 0.3                     # sometimes no last fragment
        data = rnd(ln if mf else r.choice([ln, 1, 3]))
        fr = frag6(g, ident, proto, off, mf, data) if v6 else frag4(g, ident, proto, off, mf, data)
        out.append(fr)
        if r.random() < 0.1:
            out.append(fr)                                     # duplicate
        off += ln // 8
    r.shuffle(out) if r.random() < 0.5 else None
    return out


def cmd_frags(args):
    g = Gen(args, args.seed)
    s = rawsock(args.iface)
    sent = 0
    t0 = time.monotonic()
    batch = []
    for _ in range(args.count):
        batch.extend(train(g))
        if len(batch) >= 256:
            send_all(s, batch)
            sent += len(batch)
            batch = []
    send_all(s, batch)
    sent += len(batch)
    print(json.dumps({"trains": args.count, "frames": sent, "seconds": round(time.monotonic() - t0, 2)}))
    return 0


# ---- IP identifications --------------------------------------------------------------

def cmd_ipid(args):
    s = rawsock(args.iface)
    s.setblocking(False)
    me, them = if_mac(args.iface), mac(args.mac)
    srcs = args.srcs.split(",")
    frames = []
    for k in range(args.count):
        for i, src in enumerate(srcs):
            icmp = struct.pack("!BBHHH", 8, 0, 0, 0x4800 + i, k) + b"hotpath-ipid"
            icmp = icmp[:2] + struct.pack("!H", csum(icmp)) + icmp[4:]
            frames.append(eth(them, me, ETH_IPV4, ipv4(a4(src), a4(args.dst), 1, icmp, ident=k)))
    s.setblocking(True)
    send_all(s, frames)
    s.setblocking(False)
    got = {}  # (request number, source index) -> the reply's IP ID
    end = time.monotonic() + 3
    while time.monotonic() < end and len(got) < len(frames):
        r, _, _ = select.select([s], [], [], 0.1)
        if not r:
            continue
        while True:
            try:
                fr = s.recv(2048)
            except BlockingIOError:
                break
            if len(fr) < 42 or struct.unpack("!H", fr[12:14])[0] != ETH_IPV4:
                continue
            ip = fr[14:]
            ihl = (ip[0] & 0xF) * 4
            if ip[9] != 1 or ip[ihl] != 0 or socket.inet_ntop(socket.AF_INET, ip[12:16]) != args.dst:
                continue
            ident_field, k = struct.unpack("!HH", ip[ihl + 4:ihl + 8])
            if 0x4800 <= ident_field < 0x4800 + len(srcs):
                got[(k, ident_field - 0x4800)] = struct.unpack("!H", ip[4:6])[0]
    # serve handled the requests in the order sent: (0, src 0), (0, src 1),
    # (1, src 0)... One counter for all gives that order consecutive IDs;
    # per destination, only each source's own replies count up by one.
    order = sorted(got)
    steps = [(got[b] - got[a]) & 0xFFFF for a, b in zip(order, order[1:]) if b[1] != a[1]]
    one_seq = bool(steps) and sum(1 for d in steps if d == 1) > len(steps) // 2
    per_src = {}
    for i, src in enumerate(srcs):
        mine = [got[x] for x in order if x[1] == i]
        per_src[src] = [(b - a) & 0xFFFF for a, b in zip(mine, mine[1:])]
    counts = {src: sum(1 for x in got if x[1] == i) for i, src in enumerate(srcs)}
    print(json.dumps({"replies": counts, "one_sequence": one_seq, "cross_steps": steps[:12],
                      "per_source_steps": {k: v[:8] for k, v in per_src.items()}}))
    return 0 if all(n >= args.count // 2 for n in counts.values()) and not one_seq else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("clients")
    p.add_argument("--to", required=True)
    p.add_argument("--port", type=int, default=7)
    p.add_argument("--conns", type=int, default=50)
    p.add_argument("--bytes", type=int, default=65536)
    p.add_argument("--spread", type=float, default=0)
    p.add_argument("--deadline", type=float, default=60)
    p.add_argument("--timeout", type=float, default=30)
    p = sub.add_parser("synopts")
    p.add_argument("--to", required=True)
    p.add_argument("--port", type=int, default=7)
    p.add_argument("--timeout", type=float, default=10)
    p = sub.add_parser("churn")
    p.add_argument("--to", required=True)
    p.add_argument("--port", type=int, default=7)
    p.add_argument("--rate", type=float, default=1000)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--timeout", type=float, default=20)
    p = sub.add_parser("bulk")
    p.add_argument("--to", required=True)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--conns", type=int, default=2)
    p.add_argument("--timeout", type=float, default=60,
                   help="longest stall tolerated (a 10 s flood backs retransmissions off)")
    for name in ("rfc5961", "garbage", "frags", "ipid"):
        p = sub.add_parser(name)
        p.add_argument("--iface", required=True)
        p.add_argument("--mac", required=True)
        p.add_argument("--dst", required=True)
        if name == "ipid":
            p.add_argument("--srcs", required=True)
            p.add_argument("--count", type=int, default=20)
        else:
            p.add_argument("--src", required=True)
        p.add_argument("--seed", type=int, default=int(time.time()))
        if name == "rfc5961":
            p.add_argument("--port", type=int, default=7)
            p.add_argument("--trials", type=int, default=20)
            p.add_argument("--burst", type=int, default=1500)
        if name in ("garbage", "frags"):
            p.add_argument("--count", type=int, default=100000 if name == "garbage" else 10000)
            p.add_argument("--pps", type=float, default=0)
        if name == "garbage":
            p.add_argument("--scapy", type=int, default=256, help="how many of them scapy's fuzz() makes")
    args = ap.parse_args()
    return globals()["cmd_" + args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
