#!/usr/bin/env python3
"""`artune bench` progress: a status line on stderr only when stderr is a terminal.

  progress_tty_test.py ARTUNE

Runs a short loopback benchmark four ways and checks stderr:
* stderr on a pseudo-terminal: the redrawn line (carriage return, "measuring",
  erase-to-end-of-line) appears, and the results still go to stdout;
* stderr on a pipe: no status line and no escape sequences;
* a terminal with --quiet: nothing on stderr;
* a pipe with --verbose: the detail lines, still no status line.
"""
import os
import pty
import select
import subprocess
import sys
import tempfile

TIMEOUT_S = 90  # safety net under load


def bench(artune, db, extra, stderr_tty):
    command = [artune, "--db", db, *extra, "bench", "--transport", "artune", "--benchmark",
               "latency", "--warmup", "0.3", "--duration", "1.5"]
    if not stderr_tty:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=TIMEOUT_S, check=False)
        return done.returncode, done.stdout.decode(), done.stderr.decode()
    master, slave = pty.openpty()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    captured = b""
    # Read the terminal until the child closes it (EIO on Linux once no writer is left).
    while True:
        ready, _, _ = select.select([master], [], [], TIMEOUT_S)
        if not ready:
            child.kill()
            raise TimeoutError("artune bench wrote nothing for too long")
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        captured += chunk
    os.close(master)
    stdout = child.stdout.read().decode()
    child.wait(timeout=TIMEOUT_S)
    return child.returncode, stdout, captured.decode(errors="replace")


def main():
    artune = sys.argv[1]
    failures = []

    def check(condition, what, stderr):
        if not condition:
            failures.append(f"{what}; stderr was {stderr!r}")

    with tempfile.TemporaryDirectory() as work:
        db = os.path.join(work, "artune.db")

        code, out, err = bench(artune, db, [], stderr_tty=True)
        check(code == 0 and "validated" in out, f"terminal run failed (exit {code}, stdout {out!r})", err)
        check("\rartune latency: measuring" in err, "terminal: no redrawn status line", err)
        check("\x1b[K" in err, "terminal: the line is not erased", err)
        check(err.endswith("\r\x1b[K"), "terminal: the status line is not cleared at the end", err)

        code, out, err = bench(artune, db, [], stderr_tty=False)
        check(code == 0 and "validated" in out, f"pipe run failed (exit {code})", err)
        check(err == "", "pipe: something on stderr", err)

        code, out, err = bench(artune, db, ["--quiet"], stderr_tty=True)
        check(code == 0 and "validated" in out, f"--quiet run failed (exit {code})", err)
        check(err == "", "terminal with --quiet: something on stderr", err)

        code, out, err = bench(artune, db, ["--verbose"], stderr_tty=False)
        check(code == 0, f"--verbose run failed (exit {code})", err)
        check("artune latency: server 127.0.0.1:" in err, "--verbose: no server detail line", err)
        check(" calls in " in err and ", validated" in err, "--verbose: no result detail line", err)
        check("\r" not in err and "\x1b" not in err, "--verbose into a pipe: a status line", err)

    for failure in failures:
        print("FAIL: " + failure)
    if failures:
        return 1
    print("progress: terminal only, never with --quiet or into a pipe")
    return 0


if __name__ == "__main__":
    sys.exit(main())
