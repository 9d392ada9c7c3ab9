#!/usr/bin/env python3
"""Soak: millions of mixed requests against one cshttpd process, to show
that its memory stays flat and nothing goes wrong over time.

The traffic comes in slices of SLICE requests, taking turns:
  - keep-alive GETs of the plaintext route (cshttp-load -c 32);
  - pipelined GETs (-p 8);
  - HEADs;
  - GETs of a missing file (404: counted, and expected);
  - POSTs with a 2,000-byte body (echoed);
  - a new connection per request (--no-keepalive; 10,000 a slice);
and, beside each slice, a client that opens connections and gives them up
inside a head or a body (200 per slice).

After every slice: the server's RSS (from /proc), and its counters
(/status.json). At the end it checks: RSS from the 2 millionth request
to the last stays within 5%; no error of any kind but the 404s that were
asked for; the server's count of requests equals what the clients sent
(+ status reads). A run is recorded in bench/README.md.

    make soak                    # 10 million requests (about 10 minutes)
    bench/soak/run.py --build build-release --requests 2000000
"""
import argparse
import csv
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from suite.proc import free_port  # noqa: E402

SLICE = 250_000

# name, cshttp-load options, path, the slice's size, 1 when every answer
# must be non-2xx (the 404s). A new connection per request is slow on the
# client's side (cshttp-load's connects against TIME_WAIT: about 750/s
# here, the same against the previous build), so its slices are small.
KINDS = [
    ("keepalive", ["-c", "32"], "/demo/plaintext", SLICE, 0),
    ("pipelined", ["-c", "16", "-p", "8"], "/demo/plaintext", SLICE, 0),
    ("head", ["-c", "32", "-m", "HEAD"], "/demo/plaintext", SLICE, 0),
    ("notfound", ["-c", "32"], "/no/such/file", SLICE, 1),
    ("post", ["-c", "32", "-b", "x" * 2000], "/demo/echo", SLICE, 0),
    ("close", ["-c", "16", "--no-keepalive"], "/demo/plaintext", 10_000, 0),
]



def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def status(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /status.json HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    s.close()
    return json.loads(data.split(b"\r\n\r\n", 1)[1])


def quitters(port, n, stop):
    """Connections given up inside a head or a body: how many of the
    second kind (the server counts those as requests it could not answer)."""
    given = 0
    for i in range(n):
        if stop.is_set():
            break
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            if i % 2:
                s.sendall(b"GET /demo/plaintext HTTP/1.1\r\nHo")
            else:
                s.sendall(b"POST /demo/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\n\r\nabc")
                given += 1
            s.close()
        except OSError:
            pass
        time.sleep(0.005)
    return given


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build-release")
    ap.add_argument("--requests", type=int, default=10_000_000)
    ap.add_argument("--out", default=None, help="CSV of every slice (default: a temporary file)")
    a = ap.parse_args()
    cshttpd = os.path.abspath(os.path.join(a.build, "apps", "cshttpd"))
    load = os.path.abspath(os.path.join(a.build, "apps", "cshttp-load"))
    for b in (cshttpd, load):
        if not os.access(b, os.X_OK):
            print("soak: %s is not built (make bench-release)" % b, file=sys.stderr)
            return 2
    tmp = tempfile.mkdtemp(prefix="cshttp-soak-")
    root = os.path.join(tmp, "www")
    os.mkdir(root)
    port = free_port()
    srv = subprocess.Popen([cshttpd, "--demo", "--root", root, "--port", str(port),
                            "--max-connections", "20000"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(0.5)
    out = a.out or os.path.join(tmp, "soak.csv")
    rows, problems = [], []
    sent = 0
    status_reads = 0
    body_quitters = 0
    t0 = time.time()
    try:
        i = 0
        while sent < a.requests:
            name, args, path, size, expect_non2xx = KINDS[i % len(KINDS)]
            i += 1
            n = min(size, a.requests - sent)
            stop = threading.Event()
            result = {}
            th = threading.Thread(target=lambda: result.update(q=quitters(port, 200, stop)))
            th.start()
            csvf = os.path.join(tmp, "slice.csv")
            r = subprocess.run([load, "--no-progress", "-n", str(n), "--csv", csvf] + args +
                               ["http://127.0.0.1:%d%s" % (port, path)],
                               capture_output=True, text=True, timeout=900)
            stop.set()
            th.join()
            body_quitters += result.get("q", 0)
            with open(csvf) as f:
                row = list(csv.DictReader(f))[-1]
            done = int(row["requests"])
            non2xx = int(row.get("non_2xx", row.get("errors_non2xx", 0)) or 0)
            errs = sum(int(v) for k, v in row.items()
                       if k.startswith("err") and "non" not in k and v.isdigit())
            if errs or (non2xx and not expect_non2xx) or (expect_non2xx and non2xx != done):
                problems.append("%s slice %d: %d errors, %d non-2xx of %d (exit %d) %s" %
                                (name, i, errs, non2xx, done, r.returncode, r.stderr[-200:]))
            sent += done
            st = status(port)
            status_reads += 1
            rows.append({"after": sent, "kind": name, "rss_kb": rss_kb(srv.pid),
                         "server_requests": st["requests"], "open": st["connections_open"],
                         "errors_io": st["err_io"], "threads": st.get("workers_total", 0),
                         "handovers": st.get("handovers", 0),
                         "seconds": round(time.time() - t0, 1)})
            print("%10d requests  %-9s  RSS %6d KiB  open %d  threads %d  hand-overs %d  %.0f s" %
                  (sent, name, rows[-1]["rss_kb"], st["connections_open"], rows[-1]["threads"],
                   rows[-1]["handovers"], time.time() - t0), flush=True)
            if srv.poll() is not None:
                problems.append("cshttpd exited: %s" % srv.stderr.read().decode()[-300:])
                break
    finally:
        srv.terminate()
        try:
            srv.wait(timeout=15)
        except subprocess.TimeoutExpired:
            srv.kill()
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    after = [r["rss_kb"] for r in rows if r["after"] >= 2_000_000] or [r["rss_kb"] for r in rows]
    lo, hi = min(after), max(after)
    spread = (hi - lo) / lo * 100 if lo else 0
    # the server counts the exchanges it saw: every request sent, the status
    # reads before the last one, and the quitters inside a body
    print("\n%d requests in %.0f s; RSS from the 2 millionth on: %d-%d KiB (%.1f%%); CSV %s" %
          (sent, time.time() - t0, lo, hi, spread, out))
    if spread > 5:
        problems.append("RSS moved %.1f%% after the 2 millionth request" % spread)
    last = rows[-1]["server_requests"]
    low = sent + status_reads - 1
    if not low <= last <= low + body_quitters:
        problems.append("the server counted %d requests; the clients sent %d (+%d status reads, "
                        "+ up to %d bodies given up)" % (last, sent, status_reads - 1, body_quitters))
    for p in problems:
        print("PROBLEM: " + p)
    print("soak: %s" % ("passed" if not problems else "FAILED"))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
