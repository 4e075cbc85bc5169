#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""UDP echo client for tests/interop/stack.sh: a kernel UDP socket exchanges
COUNT datagrams with an echo server, up to WINDOW in flight, and checks every
echo byte for byte.

Datagram i has size SIZES[i % len(SIZES)]. Its content is the 4-byte sequence
number followed by a pattern that depends on both the sequence number and the
offset; a datagram of 4 bytes or fewer holds the first bytes of
(seq & 0xff, seq + 1 & 0xff, ...) and is matched by size and content. A datagram not answered within --timeout is sent again
(the same bytes), at most --retries times, and then counted as lost.

Prints one line of results and exits 0 only when every datagram came back
intact, none was lost, nothing unexpected arrived and no more than
--allow-retries datagrams needed sending again.

usage: udp_client.py [-6] --dst ADDR [--port 7] [--count N] [--window W]
                     [--sizes 0,1,64,...] [--timeout S] [--retries R]
                     [--allow-retries N] [--deadline S]
"""
import argparse
import collections
import select
import socket
import struct
import sys
import time

BASE_LEN = 65536 + 512
# A pattern with a long period, so that a shifted copy never matches.
BASE = bytes(((i * 7919) >> 3 ^ i) & 0xFF for i in range(BASE_LEN))


def payload(seq, size):
    if size == 0:
        return b""
    head = struct.pack("!I", seq)
    if size <= 4:
        # Too short for the whole number: its low byte first.
        return bytes(((seq + k) & 0xFF) for k in range(size))
    off = (seq * 37) % 509
    return head + BASE[off:off + size - 4]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-6", dest="v6", action="store_true")
    ap.add_argument("--dst", required=True)
    ap.add_argument("--port", type=int, default=7)
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--window", type=int, default=32)
    ap.add_argument("--sizes", default="0,1,64,1472,1473,3000,8972,20000,65507")
    ap.add_argument("--timeout", type=float, default=2.0)
    ap.add_argument("--retries", type=int, default=2)
    ap.add_argument("--allow-retries", type=int, default=0)
    ap.add_argument("--deadline", type=float, default=120.0, help="give up after this many seconds")
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    fam = socket.AF_INET6 if a.v6 else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    # Room for a window of the largest echoes (reassembled, each costs more
    # than its size in kernel memory); as root, past rmem_max.
    for opt in (getattr(socket, "SO_RCVBUFFORCE", 33), socket.SO_RCVBUF):
        try:
            s.setsockopt(socket.SOL_SOCKET, opt, 32 << 20)
            break
        except OSError:
            pass
    for opt in (getattr(socket, "SO_SNDBUFFORCE", 32), socket.SO_SNDBUF):
        try:
            s.setsockopt(socket.SOL_SOCKET, opt, 8 << 20)
            break
        except OSError:
            pass
    s.connect((a.dst, a.port))
    s.setblocking(False)

    outstanding = {}                        # seq -> (size, deadline, tries)
    short = collections.defaultdict(list)   # size < 5 -> outstanding seqs, oldest first
    nxt = 0
    done = 0
    bad = 0
    unexpected = 0
    duplicates = 0
    retried = set()
    lost = 0
    nbytes = 0
    completed = set()
    errors = []
    t0 = time.monotonic()
    poller = select.poll()
    poller.register(s, select.POLLIN)

    def send(seq, size):
        nonlocal nbytes
        while True:
            try:
                s.send(payload(seq, size))
                nbytes += size
                return
            except BlockingIOError:
                select.select([], [s], [], 0.01)
            except ConnectionRefusedError as e:
                # An ICMP error from an earlier datagram: report it, go on.
                errors.append("send: %s" % e)
                return

    while done + lost < a.count:
        now = time.monotonic()
        if now - t0 > a.deadline:
            errors.append("deadline of %.0f s passed with %d outstanding" % (a.deadline, len(outstanding)))
            lost += len(outstanding) + (a.count - nxt)
            break
        while len(outstanding) < a.window and nxt < a.count:
            size = sizes[nxt % len(sizes)]
            outstanding[nxt] = (size, now + a.timeout, 0)
            if size < 5:
                short[size].append(nxt)
            send(nxt, size)
            nxt += 1
        wait = min(d for (_, d, _) in outstanding.values()) - time.monotonic() if outstanding else 0.1
        ev = poller.poll(max(0, int(wait * 1000)) + 1)
        while ev:
            try:
                data = s.recv(70000)
            except BlockingIOError:
                break
            except ConnectionRefusedError as e:
                errors.append("recv: %s" % e)
                continue
            n = len(data)
            if n < 5:
                # Match the oldest outstanding datagram of this size and
                # content (a short one carries only its low byte).
                cand = [q for q in short.get(n, []) if payload(q, n) == data]
                if not cand:
                    if any(sizes[q % len(sizes)] == n and payload(q, n) == data for q in retried):
                        duplicates += 1
                    else:
                        unexpected += 1
                    continue
                seq = cand[0]
                short[n].remove(seq)
            else:
                seq = struct.unpack("!I", data[:4])[0]
                if seq not in outstanding:
                    if seq in completed and n == sizes[seq % len(sizes)] and data == payload(seq, n):
                        duplicates += 1   # the echo of a datagram sent again
                    else:
                        unexpected += 1
                        if len(errors) < 10:
                            errors.append("unexpected datagram: %d bytes, seq field %d" % (n, seq))
                    continue
                size = outstanding[seq][0]
                want = payload(seq, size)
                if data != want:
                    bad += 1
                    if len(errors) < 10:
                        first = next((i for i in range(min(n, size)) if data[i] != want[i]), min(n, size))
                        errors.append("seq %d: %d bytes back for %d sent, first difference at byte %d"
                                      % (seq, n, size, first))
                    del outstanding[seq]
                    completed.add(seq)
                    done += 1
                    continue
            del outstanding[seq]
            completed.add(seq)
            done += 1
        now = time.monotonic()
        for seq, (size, dl, tries) in list(outstanding.items()):
            if now < dl:
                continue
            if tries < a.retries:
                retried.add(seq)
                outstanding[seq] = (size, now + a.timeout, tries + 1)
                send(seq, size)
            else:
                del outstanding[seq]
                if size < 5:
                    short[size].remove(seq)
                lost += 1
                if len(errors) < 10:
                    errors.append("seq %d (%d bytes): no echo after %d tries" % (seq, size, tries + 1))

    el = time.monotonic() - t0
    ok = bad == 0 and lost == 0 and unexpected == 0 and len(retried) <= a.allow_retries
    print("udp%s %s: %d/%d echoed intact, %d corrupt, %d lost, %d sent again, %d duplicate, "
          "%d unexpected; %.1f MB out in %.1f s; sizes %s"
          % ("6" if a.v6 else "", a.dst, done - bad, a.count, bad, lost, len(retried), duplicates,
             unexpected, nbytes / 1e6, el, a.sizes))
    for e in errors[:5]:
        print("  " + e)
    if len(errors) > 5:
        print("  ...")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
