#!/usr/bin/env python3
"""Hostile-peer figures for bench/reliability.md: starts `artune serve` on loopback,
opens N silent connections to its data port (more than its descriptor share when
--nofile is low), and prints the server's descriptors, RSS and CPU before, during
and after, plus whether a real client still gets served.

    bench/reliability-probe.py build/cli/artune [--connections 600] [--nofile 1024]

Loopback only; every loop is bounded in count and time."""
import argparse, json, os, resource, socket, subprocess, tempfile, time


def sample(pid):
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    rss = 0
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return {"fds": fds, "rss_kib": rss, "cpu_s": cpu}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("artune")
    parser.add_argument("--connections", type=int, default=600)
    parser.add_argument("--nofile", type=int, default=1024)
    args = parser.parse_args()
    work = tempfile.mkdtemp()
    env = dict(os.environ, XDG_CONFIG_HOME=work)
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (args.nofile, args.nofile))
    server = subprocess.Popen([args.artune, "--db", f"{work}/s.db", "serve", "--json", "--servers",
                               "1", "--transport", "artune", "--listen", "127.0.0.1:0", "--set",
                               "fabric=tcp"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env, preexec_fn=limit, text=True)
    info = json.loads(server.stdout.readline())
    entry = info["servers"][0]
    data_port = int(entry["data_endpoint"].rsplit(":", 1)[1])
    base = info["base"]
    print(f"server pid {server.pid}, data port {data_port}, ulimit -n {args.nofile}")
    print("idle:        ", sample(server.pid))
    resource.setrlimit(resource.RLIMIT_NOFILE, (args.connections + 256, args.connections + 256))
    socks = []
    for _ in range(args.connections):
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", data_port))
        except OSError:
            s.close()
            break
        socks.append(s)
    time.sleep(2)
    during = sample(server.pid)
    time.sleep(1)
    during2 = sample(server.pid)
    print(f"{len(socks)} silent: ", during, f"cpu over 1 s: {during2['cpu_s'] - during['cpu_s']:.2f}")
    def bench():
        return subprocess.run([args.artune, "--db", f"{work}/c.db", "bench", "--peer", base,
                               "--transport", "artune", "--warmup", "0", "--duration", "0.2"],
                              env=env, capture_output=True, text=True, timeout=60).returncode
    print("a real client during the attack: exit", bench())
    time.sleep(11)
    print("after the hello timeout:", sample(server.pid))
    for s in socks:
        s.close()
    time.sleep(1)
    print("attackers gone:", sample(server.pid))
    print("a real client after: exit", bench())
    server.terminate()
    server.wait(timeout=10)


if __name__ == "__main__":
    main()
