#!/usr/bin/python3
"""What carrying a new connection costs (issue 22, bench/relay.md): connect + the
first 100-byte echo on a fresh TCP connection, vs a later echo on the same one.

  relay-open.py serve --listen HOST:PORT     a TCP echo server (threads)
  relay-open.py measure --server HOST:PORT [--connections N]
      N times: connect, send 100 B, read them back (first), then 20 more echoes
      on that connection (later: their median), close. Prints one JSON line:
      medians in microseconds of `first` (connect + first echo) and `later`, and
      `open_us` = first - later, the part a new connection adds.

Run `measure` direct and under `artune run` (bench/relay --open does both): with
the relays, `first` includes the origin relay's accept, the Open call to the
target relay, its connect to the server and its verdict before the program's
first bytes are read.
"""
import argparse
import json
import socket
import statistics
import sys
import threading
import time

PAYLOAD = b"x" * 100


def echo(conn):
    with conn:
        conn.settimeout(30)
        while True:
            data = conn.recv(65536)
            if not data:
                return
            conn.sendall(data)


def serve(args):
    host, port = args.listen.rsplit(":", 1)
    listener = socket.create_server((host, int(port)))
    print(json.dumps({"listening": "%s:%d" % listener.getsockname()[:2]}), flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=echo, args=(conn,), daemon=True).start()


def round_trip(sock):
    sock.sendall(PAYLOAD)
    got = b""
    while len(got) < len(PAYLOAD):
        data = sock.recv(len(PAYLOAD) - len(got))
        if not data:
            raise RuntimeError("the connection closed before the echo came back")
        got += data
    if got != PAYLOAD:
        raise RuntimeError("the echo came back changed")


def measure(args):
    host, port = args.server.rsplit(":", 1)
    first, later = [], []
    for _ in range(args.connections):
        start = time.perf_counter()
        sock = socket.create_connection((host, int(port)), timeout=10)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        round_trip(sock)
        first.append((time.perf_counter() - start) * 1e6)
        times = []
        for _ in range(20):
            start = time.perf_counter()
            round_trip(sock)
            times.append((time.perf_counter() - start) * 1e6)
        later.append(statistics.median(times))
        sock.close()
    f, l = statistics.median(first), statistics.median(later)
    print(json.dumps({"connections": args.connections, "first_us": round(f, 1),
                      "later_us": round(l, 1), "open_us": round(f - l, 1)}))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["serve", "measure"])
    parser.add_argument("--listen")
    parser.add_argument("--server")
    parser.add_argument("--connections", type=int, default=100)
    args = parser.parse_args()
    if args.mode == "serve" and not args.listen or args.mode == "measure" and not args.server:
        parser.error("serve needs --listen, measure needs --server")
    {"serve": serve, "measure": measure}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
