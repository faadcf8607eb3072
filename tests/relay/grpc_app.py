#!/usr/bin/python3
"""A small Python grpcio service and its client, run unmodified under `artune run`
(relay_app_test.sh; issue 22). No .proto: generic handlers with raw bytes, so
nothing is generated at build time.

  grpc_app.py serve --listen HOST:PORT
      Echo (unary), Bidi (echoes each message), Download (server-streaming: the
      request says how many messages of what size; contents derived from a seed),
      Stop (GOAWAY: server.stop(grace) while the client's channel is open, then a
      fresh server on the same port), Crash (streams a little, then the process
      dies mid-call: the kernel closes/resets its sockets).
  grpc_app.py suite --server HOST:PORT      unary 1 B..16 MiB, bidi, server
      streaming, keepalive across an idle spell, GOAWAY and reconnect.
  grpc_app.py many --server HOST:PORT --channels N
      N channels (each its own TCP connection) at once, each its own contents.
  grpc_app.py crash --server HOST:PORT      the server dies mid-call (it prints
      when: dying_at) and the call fails UNAVAILABLE (the client prints failed_at).
  grpc_app.py unary --server HOST:PORT      one small call must fail UNAVAILABLE
      within --within seconds (no server behind the relay).
  grpc_app.py stall --server HOST:PORT      a call in progress while the test
      stops the peer relay: it fails UNAVAILABLE within --within seconds.
  grpc_app.py blast --listen HOST:PORT / slowread --server HOST:PORT
      plain TCP: blast writes --mib MiB to each connection; slowread reads 1 KiB,
      stops reading for --idle seconds, then reads and checks the rest.

Every client mode prints one JSON line per check and exits 0 only when all pass.
Contents are checked byte for byte and by sha256, so a relay that corrupts,
drops or mixes up bytes fails the run.
"""
import argparse
import hashlib
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

import grpc

MAX_MESSAGE = 64 << 20
MESSAGE_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE),
    ("grpc.max_send_message_length", MAX_MESSAGE),
]
# Pings every 200 ms even without calls; the server allows them.
KEEPALIVE_MS = 200
CLIENT_KEEPALIVE = [
    ("grpc.keepalive_time_ms", KEEPALIVE_MS),
    ("grpc.keepalive_timeout_ms", 2000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    # gRPC 1.51 spaces pings without data by this (5 min by default) and lets the
    # keepalive watchdog fire on a ping it has not even sent yet.
    ("grpc.http2.min_time_between_pings_ms", 100),
]
SERVER_KEEPALIVE = [
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_recv_ping_interval_without_data_ms", 50),
    ("grpc.http2.min_ping_interval_without_data_ms", 50),
    ("grpc.http2.max_ping_strikes", 0),
]
SERVICE = "artune.test.App"


def identity(data):
    return data


def pattern(seed, index, size):
    """Deterministic contents of a Download message: sha256 blocks of (seed, index)."""
    block = hashlib.sha256(struct.pack("<QQ", seed, index)).digest() * 2048  # 64 KiB
    whole, rest = divmod(size, len(block))
    return block * whole + block[:rest]


# ---------------------------------------------------------------- server


class App:
    def __init__(self, listen):
        self.listen = listen
        self.server = None
        self.lock = threading.Lock()

    def start(self):
        server = grpc.server(
            __import__("concurrent.futures").futures.ThreadPoolExecutor(max_workers=64),
            options=MESSAGE_OPTIONS + SERVER_KEEPALIVE,
        )
        handlers = {
            "Echo": grpc.unary_unary_rpc_method_handler(
                lambda request, context: request, identity, identity
            ),
            "Bidi": grpc.stream_stream_rpc_method_handler(
                lambda requests, context: (m for m in requests), identity, identity
            ),
            "Download": grpc.unary_stream_rpc_method_handler(self.download, identity, identity),
            "Stop": grpc.unary_unary_rpc_method_handler(self.stop, identity, identity),
            "Crash": grpc.unary_stream_rpc_method_handler(self.crash, identity, identity),
            "Sleep": grpc.unary_unary_rpc_method_handler(
                lambda request, context: time.sleep(float(request)) or request, identity, identity
            ),
        }
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, handlers),)
        )
        if server.add_insecure_port(self.listen) == 0:
            sys.exit(f"grpc_app: cannot listen on {self.listen}")
        server.start()
        self.server = server

    def download(self, request, context):
        seed, count, size = struct.unpack("<QQQ", request)
        for index in range(count):
            yield pattern(seed, index, size)

    def stop(self, request, context):
        # GOAWAY to every connection after this reply, then serve again.
        def restart():
            time.sleep(0.2)
            with self.lock:
                self.server.stop(grace=1).wait()
                self.start()
            print("restarted", flush=True)

        threading.Thread(target=restart, daemon=True).start()
        return b"stopping"

    def crash(self, request, context):
        yield b"x" * 1024
        yield b"y" * (1 << 20)
        time.sleep(0.5)  # the client is waiting for the next message
        print(json.dumps({"dying_at": time.time()}), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


def blast(args):
    """A plain TCP server (not gRPC) that writes --mib MiB of pattern() to each
    connection, then closes it: the slow reader's peer."""
    host, port = args.listen.rsplit(":", 1)
    listener = socket.create_server((host, int(port)))
    print(json.dumps({"listening": args.listen}), flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=blast_one, args=(conn, args.mib), daemon=True).start()


def blast_one(conn, mib):
    with conn:
        for index in range(mib):
            conn.sendall(pattern(1, index, 1 << 20))


def serve(args):
    app = App(args.listen)
    app.start()
    print(json.dumps({"listening": args.listen}), flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    # At once: a handler still sleeping (Sleep) would hold the interpreter's exit.
    os._exit(0)


# ---------------------------------------------------------------- client

failures = 0


def report(check, ok, **details):
    global failures
    if not ok:
        failures += 1
    print(json.dumps({"check": check, "ok": bool(ok), **details}), flush=True)


def channel(server, extra=()):
    return grpc.insecure_channel(server, options=MESSAGE_OPTIONS + list(extra))


def method(chan, kind, name):
    factory = getattr(chan, kind)
    return factory(f"/{SERVICE}/{name}", request_serializer=identity,
                   response_deserializer=identity)


def unary_sizes(chan):
    echo = method(chan, "unary_unary", "Echo")
    for size in (1, 100, 4096, 65536, 1 << 20, 6 << 20, 16 << 20):
        data = os.urandom(size)
        reply = echo(data, timeout=60)
        report("unary echo", reply == data, bytes=size,
               sha256=hashlib.sha256(reply).hexdigest()[:16],
               want=hashlib.sha256(data).hexdigest()[:16])


def bidi(chan):
    sizes = [1, 513, 70000, 1 << 20, 5 << 20, 16 << 20, 3, 2 << 20]
    sent = [os.urandom(size) for size in sizes]
    replies = list(method(chan, "stream_stream", "Bidi")(iter(sent), timeout=120))
    report("bidi echo", replies == sent, messages=len(sent),
           got=[len(r) for r in replies])


def download(chan):
    seed, count, size = 7, 6, 3 << 20
    got = method(chan, "unary_stream", "Download")(struct.pack("<QQQ", seed, count, size),
                                                    timeout=120)
    good = 0
    for index, message in enumerate(got):
        good += message == pattern(seed, index, size)
    report("server streaming", good == count, messages=good, want=count)
    big = list(method(chan, "unary_stream", "Download")(struct.pack("<QQQ", 9, 1, 16 << 20),
                                                         timeout=120))
    report("server streaming 16 MiB", len(big) == 1 and big[0] == pattern(9, 0, 16 << 20))


def keepalive(chan, idle):
    echo = method(chan, "unary_unary", "Echo")
    report("before idle", echo(b"ping?", timeout=10) == b"ping?")
    # Idle on the wire but with a call open (the server sleeps in it): gRPC 1.51
    # sends no keepalive ping on a channel without calls, and its watchdog then
    # fires on the ping it never sent, even directly.
    sleep = method(chan, "unary_unary", "Sleep")
    report("idle call", sleep(str(idle).encode(), timeout=idle + 30) == str(idle).encode())
    report("after idle", echo(b"still there", timeout=10) == b"still there",
           idle_s=idle, keepalive_ms=KEEPALIVE_MS)


def goaway(chan):
    echo = method(chan, "unary_unary", "Echo")
    report("stop", method(chan, "unary_unary", "Stop")(b"", timeout=10) == b"stopping")
    time.sleep(2)  # the grace period passes: GOAWAY, then the connection closes
    data = os.urandom(100000)
    reply = echo(data, timeout=30, wait_for_ready=True)
    report("after GOAWAY the next call reconnects", reply == data)


def suite(args):
    with channel(args.server, CLIENT_KEEPALIVE) as chan:
        unary_sizes(chan)
        bidi(chan)
        download(chan)
        keepalive(chan, args.idle)
        goaway(chan)


def many(args):
    def worker(number):
        # A channel argument of its own: gRPC shares subchannels (TCP connections)
        # between channels with equal arguments.
        with channel(args.server, [("artune.test.channel", number)]) as chan:
            echo = method(chan, "unary_unary", "Echo")
            good = 0
            for call in range(args.calls):
                size = 1 + (number * 7919 + call * 104729) % (300000)
                data = struct.pack("<II", number, call) + pattern(number, call, size)
                good += echo(data, timeout=60) == data
            results[number] = good

    results = [0] * args.channels
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(args.channels)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report("each connection got its own bytes back", all(r == args.calls for r in results),
           channels=args.channels, calls=args.calls, good=sum(results))


def expect_unavailable(args, call):
    start = time.monotonic()
    try:
        call()
        report("the call failed", False)
        return
    except grpc.RpcError as error:
        code = error.code()
    elapsed = time.monotonic() - start
    report("the call failed UNAVAILABLE", code == grpc.StatusCode.UNAVAILABLE, code=str(code),
           failed_at=time.time())
    report(f"within {args.within} s", elapsed < args.within, elapsed_s=round(elapsed, 3))


def crash(args):
    with channel(args.server) as chan:
        stream = method(chan, "unary_stream", "Crash")(b"", timeout=60)
        report("first messages", next(stream) == b"x" * 1024 and len(next(stream)) == 1 << 20)
        # The server dies while this call waits for its next message.
        expect_unavailable(args, lambda: next(stream))


def unary(args):
    with channel(args.server) as chan:
        echo = method(chan, "unary_unary", "Echo")
        expect_unavailable(args, lambda: echo(b"hello", timeout=60))


def stall(args):
    """A call in progress (the server sleeps) when the test stops the peer relay:
    its pings go unanswered, so the call fails UNAVAILABLE."""
    with channel(args.server) as chan:
        report("a call before", method(chan, "unary_unary", "Echo")(b"hi", timeout=10) == b"hi")
        print(json.dumps({"waiting": True}), flush=True)
        expect_unavailable(args, lambda: method(chan, "unary_unary", "Sleep")(b"30", timeout=60))


def pause(args):
    """A call in progress (the server sleeps --idle s) while the test holds the peer
    relay for a second: the relays keep each other, and the call completes."""
    with channel(args.server) as chan:
        report("a call before", method(chan, "unary_unary", "Echo")(b"hi", timeout=10) == b"hi")
        print(json.dumps({"waiting": True}), flush=True)
        try:
            reply = method(chan, "unary_unary", "Sleep")(str(args.idle).encode(), timeout=60)
            report("the call across the pause completed", reply == str(args.idle).encode())
        except grpc.RpcError as error:
            report("the call across the pause completed", False, code=str(error.code()))


def slowread(args):
    """Reads a little of what blast sends, stops reading for --idle seconds (the
    test watches the relays' memory meanwhile), then reads and checks the rest."""
    host, port = args.server.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=120) as conn:
        first = conn.recv(1024)
        print(json.dumps({"stalled": True}), flush=True)
        time.sleep(args.idle)
        digest, want, total = hashlib.sha256(first), hashlib.sha256(), len(first)
        for index in range(args.mib):
            want.update(pattern(1, index, 1 << 20))
        while True:
            data = conn.recv(1 << 20)
            if not data:
                break
            digest.update(data)
            total += len(data)
    report("the slow reader got every byte", total == args.mib << 20 and
           digest.digest() == want.digest(), bytes=total, want=args.mib << 20)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["serve", "blast", "suite", "many", "crash", "unary", "stall", "pause",
                                         "slowread"])
    parser.add_argument("--listen")
    parser.add_argument("--server")
    parser.add_argument("--idle", type=float, default=3.0)
    parser.add_argument("--channels", type=int, default=16)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--within", type=float, default=1.0)
    parser.add_argument("--mib", type=int, default=512)
    args = parser.parse_args()
    if args.mode == "serve":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        serve(args)
        return 0
    if args.mode == "blast":
        blast(args)
        return 0
    modes = {"suite": suite, "many": many, "crash": crash, "unary": unary, "stall": stall,
             "pause": pause, "slowread": slowread}
    modes[args.mode](args)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
