#!/usr/bin/env python3
"""Slow clients beside a fast one: cshttpd (and, with --baseline, another
cshttpd build) side by side with nginx (1 worker), on the same folder and
the same clients.

Each round, per server: N_READERS clients ask for a 5 MB file and never
read it; N_POSTERS clients send a 60,000-byte body at about 1 KB/s (above
cshttpd's default minimum body rate, 240 B/s); after 2 s, PROBES fresh
connections ask one at a time for a 6-byte file, each given PROBE_TIMEOUT
seconds. Reported: probes answered, and the median and slowest answer.
Rounds are interleaved across servers; medians of the rounds.

    bench/slow/run.py --cshttpd build-release/apps/cshttpd \\
        [--baseline OLD/apps/cshttpd] [--rounds 3] [--threads N]

Only loopback addresses are used; every wait is bounded.
"""
import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from suite.proc import free_port, wait_port  # noqa: E402

N_READERS, N_POSTERS, PROBES, PROBE_TIMEOUT = 300, 300, 20, 2.0




def start_cshttpd(binary, root, threads):
    port = free_port()
    help_text = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
    cmd = [binary, "--port", str(port), "--root", root]
    if "--demo" in help_text:
        cmd.append("--demo")
    if threads:
        cmd += ["--max-threads", str(threads)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_port(port, p)
    return p, port


def start_nginx(tmp, root):
    port = free_port()
    d = tempfile.mkdtemp(dir=tmp)
    os.makedirs(os.path.join(d, "logs"))
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write("""worker_processes 1;
daemon off;
pid %(d)s/nginx.pid;
error_log %(d)s/logs/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %(d)s/body; proxy_temp_path %(d)s/proxy;
  fastcgi_temp_path %(d)s/fcgi; uwsgi_temp_path %(d)s/uwsgi; scgi_temp_path %(d)s/scgi;
  server {
    listen 127.0.0.1:%(port)d;
    root %(root)s;
    location = /demo/echo { client_max_body_size 1m; return 200 "ok"; }
  }
}
""" % {"d": d, "port": port, "root": root})
    p = subprocess.Popen(["/usr/sbin/nginx", "-c", conf, "-p", d], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    wait_port(port, p)
    return p, port


def one_round(port):
    readers, posters = [], []
    stop = threading.Event()
    try:
        for _ in range(N_READERS):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(b"GET /big5.bin HTTP/1.1\r\nHost: a\r\n\r\n")
            readers.append(s)
        for _ in range(N_POSTERS):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"POST /demo/echo HTTP/1.1\r\nHost: a\r\nContent-Type: text/plain\r\n"
                      b"Content-Length: 60000\r\n\r\n")
            posters.append(s)

        def trickle():
            while not stop.is_set():
                for s in posters:
                    try:
                        s.send(b"x" * 100, socket.MSG_DONTWAIT)
                    except OSError:
                        pass
                stop.wait(0.1)
        th = threading.Thread(target=trickle, daemon=True)
        th.start()
        time.sleep(2)
        times = []
        for _ in range(PROBES):
            t0 = time.monotonic()
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=PROBE_TIMEOUT)
                s.settimeout(max(0.01, PROBE_TIMEOUT - (time.monotonic() - t0)))
                s.sendall(b"GET /small.txt HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                data = b""
                while not data.endswith(b"hello\n"):
                    d = s.recv(4096)
                    if not d:
                        break
                    data += d
                s.close()
                if data.endswith(b"hello\n"):
                    times.append(time.monotonic() - t0)
            except OSError:
                pass
        stop.set()
        th.join()
        return times
    finally:
        for s in readers + posters:
            s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cshttpd", required=True)
    ap.add_argument("--baseline", help="another cshttpd build, run as cshttpd-base")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="cshttpd --max-threads (default: its own)")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    tmp = tempfile.mkdtemp(prefix="cshttp-slow-")
    os.chmod(tmp, 0o755)
    root = os.path.join(tmp, "www")
    os.mkdir(root)
    with open(os.path.join(root, "small.txt"), "wb") as f:
        f.write(b"hello\n")
    with open(os.path.join(root, "big5.bin"), "wb") as f:
        f.write(os.urandom(5 << 20))
    servers = [("cshttpd", lambda: start_cshttpd(a.cshttpd, root, a.threads))]
    if a.baseline:
        servers.append(("cshttpd-base", lambda: start_cshttpd(a.baseline, root, a.threads)))
    if os.access("/usr/sbin/nginx", os.X_OK):
        servers.append(("nginx-1", lambda: start_nginx(tmp, root)))
    results = {name: [] for name, _ in servers}
    try:
        for r in range(a.rounds):
            for name, start in servers:
                p, port = start()
                try:
                    results[name].append(one_round(port))
                finally:
                    p.terminate()
                    try:
                        p.wait(timeout=15)
                    except subprocess.TimeoutExpired:
                        p.kill()
                        p.wait()
                print("round %d %-12s answered %d/%d" % (r + 1, name, len(results[name][-1]),
                                                        PROBES), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n| server | probes answered (median of rounds) | median answer | slowest answer |")
    print("|---|--:|--:|--:|")
    for name, _ in servers:
        rounds = results[name]
        answered = statistics.median(len(t) for t in rounds)
        all_t = [x for t in rounds for x in t]
        med = "%.1f ms" % (statistics.median(all_t) * 1e3) if all_t else "-"
        worst = "%.1f ms" % (max(all_t) * 1e3) if all_t else "-"
        print("| %s | %g of %d | %s | %s |" % (name, answered, PROBES, med, worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
