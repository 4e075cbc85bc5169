#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Kernel TCP bulk transfer for the impair tests: `serve ADDR PORT` prints the Mbit/s it received, `send ADDR PORT SECONDS` sends for that long.
import socket
import sys
import time


def serve(addr, port):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(1)
    c, _ = s.accept()
    n, t0, t1 = 0, None, None
    while True:
        d = c.recv(1 << 16)
        if not d:
            break
        t1 = time.monotonic()
        if t0 is None:
            t0 = t1
        n += len(d)
    secs = (t1 - t0) if t0 is not None and t1 > t0 else 1.0
    print("%.2f" % (n * 8 / secs / 1e6))


def send(addr, port, seconds):
    s = socket.create_connection((addr, port), timeout=10)
    buf = b"\x5a" * (1 << 16)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s.sendall(buf)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)
    s.close()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]))
    else:
        send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
