#!/usr/bin/env python3
"""1100 idle connections to `artune serve`'s control port (issue 26, 1).

Starts `artune serve --transport artune` on loopback with the soft descriptor
limit at 1024 (the usual default; the hard limit stays), holds 1100 connections
that never speak, and runs `artune apply config --live` before, during and after.
Loopback only. Usage: control-abuse.py ARTUNE SCRATCH_DIR
"""
import json, socket, subprocess, sys, time, os, resource
artune = sys.argv[1]
d = sys.argv[2]
srv = subprocess.Popen([artune, "--db", d + "/s.db", "serve", "--json", "--servers", "1",
                        "--transport", "artune", "--listen", "127.0.0.1:0"],
                       stdout=subprocess.PIPE, stderr=open(d + "/serve.err", "w"), text=True,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE,
                                                             (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1])))
line = srv.stdout.readline()
addr = json.loads(line)["servers"][0]["address"]
port = int(addr.rsplit(":", 1)[1])
def apply():
    t = time.time()
    rc = subprocess.run([artune, "--db", d + "/c.db", "apply", "config", "--live", addr,
                         "--set", "timeout_ms=9000"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL, timeout=60).returncode
    return rc, time.time() - t
def cpu():
    with open("/proc/%d/stat" % srv.pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
print("before attack: apply rc=%d (%.2f s)" % apply())
socks = []
for i in range(1100):
    s = socket.socket(); s.connect(("127.0.0.1", port)); socks.append(s)
time.sleep(1)
c0 = cpu(); time.sleep(5); c1 = cpu()
print("1100 idle connections held: server CPU over 5 s = %.2f s" % (c1 - c0))
print("during attack (6 s in): apply rc=%d (%.2f s)" % apply())
time.sleep(6)
print("during attack (12+ s in, silent ones closed at 10 s): apply rc=%d (%.2f s)" % apply())
for s in socks: s.close()
time.sleep(1)
print("after the attacker left: apply rc=%d (%.2f s)" % apply())
refused = sum(1 for l in open(d + "/serve.err") if "refused" in l)
print("serve.err lines: %d" % sum(1 for l in open(d + "/serve.err")))
print("server soft fd limit: " + [l for l in open("/proc/%d/limits" % srv.pid) if "open files" in l][0].split()[3])
srv.terminate(); srv.wait()
