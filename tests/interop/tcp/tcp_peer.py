#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# The Linux kernel's side of tests/interop/tcp.sh: TCP clients and a server on kernel sockets, every byte checked by SHA-256.
"""Kernel TCP peers for tests/interop/tcp.sh.

Subcommands (each prints one result line, "ok: ..." or "error: ...", and
exits 0 only when everything was verified):

  echo     connect C connections (concurrently, one selector) to an echo
           server, send N bytes on each, read N bytes back, compare SHA-256.
           --close client: after sending, shut down writing (our FIN goes
           first) and then require the server's FIN after the echo;
           --close none (default): close once the echo is back.
  sink     connect and read until the server closes; print the byte count
           and SHA-256; --expect-bytes checks the count, --pattern hotpath
           every byte (the stream of `hotpath serve --tcp-source`);
           --half-close-after N: shut down writing after N bytes (our FIN
           while the server is still sending) and read on to its FIN.
  discard  send N bytes, shut down writing, expect no byte back and the
           server's FIN (or our close).
  reset    connect, send, read some echo, then close with SO_LINGER 0 (a
           RST), optionally with data still unread or unsent.
  server   listen on [::]:PORT (IPv4 too) until killed: echo, discard, or
           source N bytes per connection and close (the server's FIN
           first; --pattern hotpath sends the stream `hotpath connect
           --mode source` checks); one JSON line per connection closed
           (bytes and SHA-256 each way) to --log.

The bytes sent are a random block of a prime length (1,048,573) repeated,
each connection starting at its own random offset: cheap to make at any
rate, and a byte out of place changes the digest unless it moved by a
multiple of the block, which no TCP bug does.
"""
import argparse
import errno
import hashlib
import json
import os
import random
import resource
import selectors
import socket
import struct
import sys
import time

BLOCK = 1048573
RECV = 262144

# tools/hotpath/tcp_app.c: word k of the stream of seed s is
# splitmix64-mix(s + k * GOLDEN), little-endian.
GOLDEN = 0x9E3779B97F4A7C15
SOURCE_SEED = 0x736F757263652121
M64 = (1 << 64) - 1

try:
    import numpy as np
except ImportError:
    np = None


def hp_pattern(seed, off, n):
    """n bytes of hotpath's pattern stream of seed, from offset off."""
    k0, k1 = off >> 3, (off + n + 7) >> 3
    if np is not None:
        ks = np.arange(k0, k1, dtype=np.uint64)
        with np.errstate(over="ignore"):
            z = np.uint64(seed) + ks * np.uint64(GOLDEN)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
        b = z.astype("<u8").tobytes()
    else:
        out = bytearray()
        for k in range(k0, k1):
            z = (seed + k * GOLDEN) & M64
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
            out += struct.pack("<Q", z ^ (z >> 31))
        b = bytes(out)
    s = off & 7
    return b[s:s + n]


class Source:
    """The bytes of one connection: the block from a random offset on."""

    data = None

    def __init__(self, rng):
        if Source.data is None:
            b = random.Random(0x4870).randbytes(BLOCK)
            Source.data = memoryview(b + b)
        self.off = rng.randrange(BLOCK)

    def chunk(self, n):
        n = min(n, BLOCK)
        return Source.data[self.off:self.off + n]

    def advance(self, n):
        self.off = (self.off + n) % BLOCK


def family_of(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(max(soft, n), hard)
    if want > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


class EchoConn:
    def __init__(self, i, args, rng):
        self.i = i
        self.src = Source(rng)
        self.left = args.bytes
        self.want = args.bytes
        self.got = 0
        self.h_out = hashlib.sha256()
        self.h_in = hashlib.sha256()
        self.fin_sent = False
        self.eof = False
        self.connected = False
        self.error = None
        self.done = False
        self.s = socket.socket(family_of(args.dst), socket.SOCK_STREAM)
        self.s.setblocking(False)
        if args.sndbuf:
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, args.sndbuf)
        rc = self.s.connect_ex((args.dst, args.port))
        if rc not in (0, errno.EINPROGRESS):
            raise OSError(rc, os.strerror(rc))


def cmd_echo(args):
    raise_nofile(args.conns + 64)
    rng = random.Random(args.seed)
    sel = selectors.DefaultSelector()
    conns = []
    t0 = time.monotonic()
    buf = bytearray(RECV)
    mv = memoryview(buf)
    pending = list(range(args.conns))
    live = 0
    deadline = t0 + args.deadline

    def open_some():
        nonlocal live
        while pending and live < args.parallel:
            i = pending.pop(0)
            c = EchoConn(i, args, rng)
            conns.append(c)
            sel.register(c.s, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
            live += 1

    def finish(c, err=None):
        nonlocal live
        if c.done:
            return
        c.done = True
        c.error = err
        live -= 1
        try:
            sel.unregister(c.s)
        except (KeyError, ValueError):
            pass
        c.s.close()

    open_some()
    while live > 0:
        if time.monotonic() > deadline:
            for c in conns:
                if not c.done:
                    finish(c, "timed out: sent %d of %d, received %d of %d%s" % (
                        c.want - c.left, c.want, c.got, c.want, ", connected" if c.connected else ", not connected"))
            break
        for key, ev in sel.select(timeout=0.5):
            c = key.data
            if c.done:
                continue
            if ev & selectors.EVENT_WRITE:
                if not c.connected:
                    err = c.s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        finish(c, "connect: " + os.strerror(err))
                        continue
                    c.connected = True
                while c.left > 0:
                    ch = c.src.chunk(min(c.left, 65536))
                    try:
                        n = c.s.send(ch)
                    except BlockingIOError:
                        break
                    except OSError as e:
                        finish(c, "send: %s" % e)
                        break
                    c.h_out.update(ch[:n])
                    c.src.advance(n)
                    c.left -= n
                if c.done:
                    continue
                if c.left == 0:
                    if args.close == "client" and not c.fin_sent:
                        c.s.shutdown(socket.SHUT_WR)
                        c.fin_sent = True
                    sel.modify(c.s, selectors.EVENT_READ, c)
            if ev & selectors.EVENT_READ:
                while True:
                    try:
                        n = c.s.recv_into(mv)
                    except BlockingIOError:
                        break
                    except OSError as e:
                        finish(c, "recv after %d bytes: %s" % (c.got, e))
                        break
                    if n == 0:
                        c.eof = True
                        break
                    c.h_in.update(mv[:n])
                    c.got += n
                if c.done:
                    continue
                if c.got > c.want:
                    finish(c, "received %d bytes, more than the %d sent" % (c.got, c.want))
                elif c.eof and c.got < c.want:
                    finish(c, "the server closed after %d of %d bytes" % (c.got, c.want))
                elif c.got == c.want and c.left == 0:
                    if args.close == "client" and not c.eof:
                        continue  # the server's FIN is still to come
                    finish(c)
        open_some()
    dt = time.monotonic() - t0
    bad = [c for c in conns if c.error or c.h_in.digest() != c.h_out.digest()]
    total = sum(c.got for c in conns)
    if len(conns) < args.conns:
        print("error: only %d of %d connections were opened" % (len(conns), args.conns))
        return 1
    if bad:
        for c in bad[:5]:
            why = c.error or "SHA-256 differs: sent %s, received %s (%d bytes)" % (
                c.h_out.hexdigest()[:16], c.h_in.hexdigest()[:16], c.got)
            print("  connection %d: %s" % (c.i, why))
        print("error: %d of %d connections failed" % (len(bad), len(conns)))
        return 1
    rate = total / dt / 1e6 if dt > 0 else 0
    what = "%d connections x %d bytes" % (args.conns, args.bytes) if args.conns > 1 else "%d bytes" % args.bytes
    sha = conns[0].h_in.hexdigest()[:16] if args.conns == 1 else "each"
    print("ok: %s echoed, SHA-256 %s matches%s (%.1f s, %.1f MB/s each way)" % (
        what, sha, ", the server's FIN after ours" if args.close == "client" else "", dt, rate))
    return 0


def blocking_conn(args):
    s = socket.create_connection((args.dst, args.port), timeout=args.deadline)
    s.settimeout(args.deadline)
    return s


def cmd_sink(args):
    t0 = time.monotonic()
    s = blocking_conn(args)
    h = hashlib.sha256()
    got = 0
    fin_at = None
    buf = bytearray(RECV)
    mv = memoryview(buf)
    while True:
        if args.half_close_after is not None and fin_at is None and got >= args.half_close_after:
            s.shutdown(socket.SHUT_WR)
            fin_at = got
        n = s.recv_into(buf)
        if n == 0:
            break
        if args.pattern == "hotpath":
            want = hp_pattern(SOURCE_SEED, got, n)
            if mv[:n] != want:
                bad = next(i for i in range(n) if buf[i] != want[i])
                print("error: byte %d is not the source's pattern" % (got + bad))
                return 1
        h.update(mv[:n])
        got += n
    s.close()
    dt = time.monotonic() - t0
    dig = h.hexdigest()
    if args.expect_bytes is not None and got != args.expect_bytes:
        print("error: received %d bytes before the server's FIN, expected %d" % (got, args.expect_bytes))
        return 1
    if args.half_close_after is not None and fin_at is None:
        print("error: the server closed after %d bytes, before we half-closed" % got)
        return 1
    checked = ", every byte the source's pattern" if args.pattern == "hotpath" else ""
    if fin_at is not None:
        print("ok: our FIN after %d bytes, then %d more and the server's FIN%s, SHA-256 %s (%.1f s)" % (
            fin_at, got - fin_at, checked, dig[:16], dt))
    else:
        print("ok: %d bytes then the server's FIN%s, SHA-256 %s (%.1f s)" % (got, checked, dig[:16], dt))
    return 0


def cmd_discard(args):
    t0 = time.monotonic()
    s = blocking_conn(args)
    src = Source(random.Random(args.seed))
    left = args.bytes
    h = hashlib.sha256()
    while left > 0:
        ch = src.chunk(min(left, 65536))
        s.sendall(ch)
        h.update(ch)
        src.advance(len(ch))
        left -= len(ch)
    s.shutdown(socket.SHUT_WR)
    back = 0
    while True:
        d = s.recv(RECV)
        if not d:
            break
        back += len(d)
    s.close()
    if back:
        print("error: a discard server sent %d bytes back" % back)
        return 1
    print("ok: %d bytes sent (SHA-256 %s), nothing back, the server's FIN after ours (%.1f s)" % (
        args.bytes, h.hexdigest()[:16], time.monotonic() - t0))
    return 0


def cmd_reset(args):
    s = blocking_conn(args)
    src = Source(random.Random(args.seed))
    sent = 0
    ch = src.chunk(args.bytes)
    s.sendall(ch)
    sent += len(ch)
    got = 0
    if args.read:
        while got < args.read:
            d = s.recv(RECV)
            if not d:
                print("error: the server closed before the reset")
                return 1
            got += len(d)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    print("ok: sent %d bytes, read %d, then a RST (SO_LINGER 0)" % (sent, got))
    return 0


def cmd_server(args):
    raise_nofile(4096)
    ls = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    ls.bind(("::", args.port))
    ls.listen(1024)
    ls.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(ls, selectors.EVENT_READ, None)
    log = open(args.log, "a", buffering=1) if args.log else sys.stdout
    buf = bytearray(RECV)
    mv = memoryview(buf)
    rng = random.Random(args.seed)
    print("listening", flush=True)

    class C:
        pass

    def close(c, why=""):
        try:
            sel.unregister(c.s)
        except (KeyError, ValueError):
            pass
        c.s.close()
        log.write(json.dumps({"peer": c.peer, "in": c.n_in, "out": c.n_out, "sha_in": c.h_in.hexdigest(),
                              "sha_out": c.h_out.hexdigest(), "error": why}) + "\n")

    def want(c):
        ev = 0
        if not c.eof and len(c.out) < (4 << 20):
            ev |= selectors.EVENT_READ
        if c.out or (args.mode == "source" and c.left > 0):
            ev |= selectors.EVENT_WRITE
        return ev

    while True:
        for key, ev in sel.select(timeout=1.0):
            if key.data is None:
                while True:
                    try:
                        s, peer = ls.accept()
                    except BlockingIOError:
                        break
                    s.setblocking(False)
                    c = C()
                    c.s, c.peer = s, "%s:%d" % (peer[0], peer[1])
                    c.n_in = c.n_out = 0
                    c.h_in, c.h_out = hashlib.sha256(), hashlib.sha256()
                    c.out = bytearray()
                    c.eof = False
                    c.left = args.bytes if args.mode == "source" else 0
                    c.src = Source(rng)
                    sel.register(s, want(c) or selectors.EVENT_READ, c)
                continue
            c = key.data
            try:
                if ev & selectors.EVENT_READ:
                    n = c.s.recv_into(mv)
                    if n == 0:
                        c.eof = True
                    else:
                        c.n_in += n
                        c.h_in.update(mv[:n])
                        if args.mode == "echo":
                            c.out += mv[:n]
                if ev & selectors.EVENT_WRITE:
                    if c.out:
                        n = c.s.send(c.out)
                        c.h_out.update(memoryview(c.out)[:n])
                        c.n_out += n
                        del c.out[:n]
                    elif args.mode == "source" and c.left > 0:
                        if args.pattern == "hotpath":
                            ch = hp_pattern(SOURCE_SEED, c.n_out, min(c.left, 65536))
                        else:
                            ch = c.src.chunk(min(c.left, 65536))
                        n = c.s.send(ch)
                        c.h_out.update(ch[:n])
                        c.src.advance(n)
                        c.n_out += n
                        c.left -= n
            except BlockingIOError:
                pass
            except OSError as e:
                close(c, str(e))
                continue
            done_sending = not c.out and not (args.mode == "source" and c.left > 0)
            if (c.eof and done_sending) or (args.mode == "source" and done_sending):
                close(c)
                continue
            sel.modify(c.s, want(c) or selectors.EVENT_READ, c)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("echo", "sink", "discard", "reset"):
        p = sub.add_parser(name)
        p.add_argument("--dst", required=True)
        p.add_argument("--port", type=int, required=True)
        p.add_argument("--bytes", type=int, default=0)
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--deadline", type=float, default=120.0)
        if name == "echo":
            p.add_argument("--conns", type=int, default=1)
            p.add_argument("--parallel", type=int, default=100000, help="connections open at once")
            p.add_argument("--close", choices=("none", "client"), default="none")
            p.add_argument("--sndbuf", type=int, default=0)
        if name == "sink":
            p.add_argument("--expect-bytes", type=int)
            p.add_argument("--pattern", choices=("none", "hotpath"), default="none")
            p.add_argument("--half-close-after", type=int)
        if name == "reset":
            p.add_argument("--read", type=int, default=0,
                           help="bytes to read before the RST (from an echo server: at most --bytes)")
    p = sub.add_parser("server")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--mode", choices=("echo", "discard", "source"), default="echo")
    p.add_argument("--bytes", type=int, default=0, help="source: bytes per connection")
    p.add_argument("--seed", type=int, default=2)
    p.add_argument("--pattern", choices=("random", "hotpath"), default="random")
    p.add_argument("--log")
    args = ap.parse_args()
    try:
        return {"echo": cmd_echo, "sink": cmd_sink, "discard": cmd_discard, "reset": cmd_reset,
                "server": cmd_server}[args.cmd](args)
    except (OSError, socket.timeout) as e:
        print("error: %s" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
