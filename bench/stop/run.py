#!/usr/bin/env python3
"""How long a graceful stop takes past its deadline, when a request never
ends: cshttpd (--stop-timeout-ms T, a handler that sleeps 60 s) against
nginx (worker_shutdown_timeout T, a request proxied to an origin that
never answers), side by side, rounds interleaved.

Each round starts the server, opens one connection whose request never
ends and one idle keep-alive connection, sends the graceful stop (cshttpd:
SIGTERM; nginx: SIGQUIT) and times it until the process has exited. The
figure is that time minus T: the engine's bound is 100 ms (libcshttp-server
README, cshs_server_stop). Medians and maxima over the rounds.

  bench/stop/run.py --bin build/apps/cshttpd [--nginx /usr/sbin/nginx]
                    [--rounds 10] [--deadlines 500,2000]
"""
import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from suite.proc import free_port, wait_port  # noqa: E402


def hold_requests(port, target):
    """A request that never ends, and an idle keep-alive connection that
    was answered once. Returns the sockets (closed by the caller)."""
    busy = socket.create_connection(("127.0.0.1", port), timeout=5)
    busy.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: a\r\n\r\n")
    idle = socket.create_connection(("127.0.0.1", port), timeout=5)
    idle.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
    idle.recv(65536)
    time.sleep(0.3)  # the slow request is inside its handler, or upstream
    return [busy, idle]


def timed_stop(proc, sig):
    t0 = time.monotonic()
    proc.send_signal(sig)
    proc.wait(timeout=120)
    return (time.monotonic() - t0) * 1000.0


def stop_past(proc, port, target, sig, deadline_ms):
    """Once proc listens: the request that never ends, the graceful stop,
    and how long past the deadline the process exited (ms)."""
    wait_port(port, proc)
    socks = hold_requests(port, target)
    took = timed_stop(proc, sig)
    for s in socks:
        s.close()
    return took - deadline_ms


def cshttpd_round(args, root, deadline_ms):
    port = free_port()
    proc = subprocess.Popen([args.bin, "--port", str(port), "--root", root, "--demo",
                             "--stop-timeout-ms", str(deadline_ms)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return stop_past(proc, port, b"/demo/sleep?ms=60000", signal.SIGTERM, deadline_ms)


class Blackhole:
    """An origin that accepts and never answers."""

    def __init__(self):
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]
        self.held = []
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            self.held.append(c)

    def close(self):
        self.ls.close()
        for c in self.held:
            c.close()


NGINX_CONF = """worker_processes 1;
{user}
pid {d}/nginx.pid;
error_log {d}/error.log warn;
worker_shutdown_timeout {t}ms;
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  server {{
    listen 127.0.0.1:{port};
    root {root};
    location /never {{ proxy_pass http://127.0.0.1:{origin}; proxy_read_timeout 120s; }}
  }}
}}
"""


def nginx_round(args, root, deadline_ms, hole):
    d = tempfile.mkdtemp(prefix="cshttp-stop-nginx-")
    try:
        port = free_port()
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(user="user root;" if os.geteuid() == 0 else "", d=d,
                                      t=deadline_ms, port=port, root=root, origin=hole.port))
        proc = subprocess.Popen([args.nginx, "-p", d, "-c", conf, "-g", "daemon off;"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return stop_past(proc, port, b"/never", signal.SIGQUIT, deadline_ms)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--nginx", default=shutil.which("nginx") or
                    (os.path.exists("/usr/sbin/nginx") and "/usr/sbin/nginx") or None)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--deadlines", default="500,2000")
    args = ap.parse_args()
    if args.rounds < 1:
        sys.exit("run.py: --rounds must be at least 1")
    try:
        deadlines = [int(x) for x in args.deadlines.split(",")]
    except ValueError:
        sys.exit("run.py: --deadlines is a list of milliseconds, such as 500,2000")
    root = tempfile.mkdtemp(prefix="cshttp-stop-root-")
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("hello\n")
    hole = Blackhole()
    try:
        print("| server | deadline | past it, median | past it, max | rounds |")
        print("|---|---|---|---|---|")
        for t in deadlines:
            over = {"cshttpd": [], "nginx": []}
            for _ in range(args.rounds):  # interleaved: one of each per round
                over["cshttpd"].append(cshttpd_round(args, root, t))
                if args.nginx:
                    over["nginx"].append(nginx_round(args, root, t, hole))
            for name, xs in over.items():
                if xs:
                    print("| %s | %d ms | %.0f ms | %.0f ms | %d |"
                          % (name, t, statistics.median(xs), max(xs), len(xs)))
    finally:
        hole.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
