#!/usr/bin/env python3
"""A slow origin behind a proxy: cshttpd --proxy side by side with nginx
(1 worker, proxy_pass, upstream keepalive 32), in front of the same origin
that thinks THINK seconds before each answer.

Each round, per proxy: 800 POSTs with 1,000-byte bodies and 200 GETs
whose answers are chunked, all at once, each on its own connection; one
second later, 20 fresh connections ask one after another for a 7-byte
static file. Reported: exchanges answered 200 with their body, the
probes' median and slowest answer, and the proxy's threads at most (its
process; nginx: its worker's). Each proxy runs twice: reading a request's
body whole before it goes to the origin (the default of both), and
passing it on as it comes (-stream: cshttpd's --proxy-request-buffering
no, nginx's proxy_request_buffering off). Rounds are interleaved; medians
of the rounds.

    bench/slow/origin.py --cshttpd build-release/apps/cshttpd [--rounds 3]

Only loopback addresses are used; every wait is bounded.
"""
import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from suite.proc import free_port, wait_port  # noqa: E402

THINK, POSTS, GETS, PROBES = 3.0, 800, 200, 20


class Origin:
    """asyncio, one thread: a POST is answered with its body's length, a GET
    with three chunks 50 ms apart, each after THINK seconds."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            self.srv = self.loop.run_until_complete(
                asyncio.start_server(self.handle, "127.0.0.1", 0, backlog=4096))
            self.port = self.srv.sockets[0].getsockname()[1]
            ready.set()
            self.loop.run_forever()
        threading.Thread(target=run, daemon=True).start()
        ready.wait(10)

    async def handle(self, r, w):
        try:
            while True:
                head = await r.readuntil(b"\r\n\r\n")
                n = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        n = int(line.split(b":")[1])
                body = await r.readexactly(n) if n else b""
                await asyncio.sleep(THINK)
                if head.startswith(b"POST"):
                    out = b"got %d" % len(body)
                    w.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(out), out))
                else:
                    w.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                    for i in range(3):
                        w.write(b"5\r\npart%d\r\n" % i)
                        await w.drain()
                        await asyncio.sleep(0.05)
                    w.write(b"0\r\n\r\n")
                await w.drain()
        except (asyncio.IncompleteReadError, asyncio.CancelledError, ConnectionError, OSError):
            pass
        finally:
            w.close()


async def read_answer(r):
    head = await r.readuntil(b"\r\n\r\n")
    st = int(head.split(b" ")[1])
    h = head.lower()
    if b"transfer-encoding: chunked" in h:
        body = b""
        while True:
            size = int((await r.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
            if size == 0:
                await r.readuntil(b"\r\n")
                return st, body
            body += (await r.readexactly(size + 2))[:-2]
    n = int(h.split(b"content-length:")[1].split(b"\r\n")[0])
    return st, await r.readexactly(n)


def one_run(port, pid):
    most = [0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            try:
                with open("/proc/%d/status" % pid) as f:
                    for line in f:
                        if line.startswith("Threads:"):
                            most[0] = max(most[0], int(line.split()[1]))
            except OSError:
                pass
            time.sleep(0.05)
    t = threading.Thread(target=sample, daemon=True)
    t.start()

    async def one(i, post):
        try:
            r, w = await asyncio.open_connection("127.0.0.1", port)
            if post:
                w.write(b"POST /o/p%d HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n" % i +
                        b"x" * 1000)
            else:
                w.write(b"GET /o/g%d HTTP/1.1\r\nHost: a\r\n\r\n" % i)
            await w.drain()
            a = await asyncio.wait_for(read_answer(r), 60)
            w.close()
            return a == ((200, b"got 1000") if post else (200, b"part0part1part2"))
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError):
            return False

    async def probes():
        await asyncio.sleep(1.0)
        times = []
        for _ in range(PROBES):
            t0 = time.monotonic()
            try:
                r, w = await asyncio.open_connection("127.0.0.1", port)
                w.write(b"GET /small.txt HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                await w.drain()
                st, _ = await asyncio.wait_for(read_answer(r), 10)
                w.close()
                times.append(time.monotonic() - t0 if st == 200 else 10.0)
            except (OSError, asyncio.TimeoutError):
                times.append(10.0)
        return times

    async def main():
        tasks = [one(i, True) for i in range(POSTS)] + [one(i, False) for i in range(GETS)]
        res = await asyncio.gather(probes(), *tasks)
        return sum(res[1:]), res[0]
    ok, times = asyncio.run(main())
    stop.set()
    t.join()
    return ok, times, most[0]


def start_cshttpd(binary, root, origin_port, stream):
    port = free_port()
    p = subprocess.Popen([binary, "--port", str(port), "--root", root, "--loops", "1",
                          "--proxy", "/o/=http://127.0.0.1:%d" % origin_port,
                          "--proxy-pool-size", "1024", "--proxy-acquire-timeout-ms", "20000",
                          "--max-connections", "20000",
                          "--proxy-request-buffering", "no" if stream else "yes"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_port(port, p)
    return p, port, p.pid


NGINX = """worker_processes 1;
{user}
pid {d}/nginx.pid;
error_log {d}/error.log crit;
worker_rlimit_nofile 20000;
events {{ worker_connections 8192; }}
http {{
  access_log off;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  upstream o {{ server 127.0.0.1:{origin}; keepalive 32; }}
  server {{
    listen 127.0.0.1:{port};
    root {root};
    location /o/ {{ proxy_pass http://o; proxy_http_version 1.1;
                   proxy_set_header Connection ""; proxy_read_timeout 60s;
                   proxy_request_buffering {buffering}; }}
  }}
}}
"""


def start_nginx(tmp, root, origin_port, stream):
    d = tempfile.mkdtemp(dir=tmp)
    port = free_port()
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(NGINX.format(user="user root;" if os.geteuid() == 0 else "", d=d, port=port,
                             root=root, origin=origin_port, buffering="off" if stream else "on"))
    p = subprocess.Popen(["/usr/sbin/nginx", "-p", d, "-c", os.path.join(d, "nginx.conf"),
                          "-g", "daemon off;"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    wait_port(port, p)
    worker = None
    for _ in range(100):
        kids = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True,
                              text=True).stdout.split()
        if kids:
            worker = int(kids[0])
            break
        time.sleep(0.05)
    return p, port, worker or p.pid


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cshttpd", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(20000, hard), hard))
    tmp = tempfile.mkdtemp(prefix="cshttp-slow-origin-")
    root = os.path.join(tmp, "www")
    os.makedirs(root)
    with open(os.path.join(root, "small.txt"), "w") as f:
        f.write("static\n")
    origin = Origin()
    results = {"cshttpd-1": [], "nginx-1": [], "cshttpd-1-stream": [], "nginx-1-stream": []}
    try:
        for rnd in range(a.rounds):
            order = list(results) if rnd % 2 == 0 else list(reversed(results))
            for name in order:
                stream = name.endswith("-stream")
                if name.startswith("cshttpd"):
                    p, port, pid = start_cshttpd(a.cshttpd, root, origin.port, stream)
                else:
                    p, port, pid = start_nginx(tmp, root, origin.port, stream)
                try:
                    ok, times, threads = one_run(port, pid)
                finally:
                    p.terminate()
                    p.wait(20)
                results[name].append((ok, times, threads))
                print("round %d %-16s answered %d/%d, probes median %.1f ms, slowest %.1f ms, "
                      "threads at most %d" % (rnd + 1, name, ok, POSTS + GETS,
                                              statistics.median(times) * 1e3,
                                              max(times) * 1e3, threads), flush=True)
                time.sleep(THINK)  # the origin's connections of the last run end
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n| proxy | answered (all rounds) | probes: median of medians, ms "
          "| slowest probe (all rounds), ms | threads at most |")
    print("|---|--:|--:|--:|--:|")
    for name, runs in results.items():
        print("| %s | %d/%d | %.1f | %.1f | %d |" % (
            name, sum(r[0] for r in runs), len(runs) * (POSTS + GETS),
            statistics.median(statistics.median(r[1]) for r in runs) * 1e3,
            max(max(r[1]) for r in runs) * 1e3, max(r[2] for r in runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
