"""The servers of the suite: how each is configured, started, checked and
stopped. Every server listens on 127.0.0.1 on a port of its own, runs in a
session of its own (so that it and its workers can be stopped together) and
writes its output to a log in the suite's temporary folder."""

import http.client
import os
import signal
import socket
import subprocess
import time

from . import proc

PLAINTEXT = b"Hello, World!"
# under ROOT/files/; 100.bin: the H2 workload's small file
FILES = {"100.bin": 100, "1k.bin": 1024, "1m.bin": 1024 * 1024}


def make_root(tmp):
    """ROOT/files/1k.bin and 1m.bin: the same bytes for every server
    (a fixed pseudo-random pattern, so nothing compresses it)."""
    root = os.path.join(tmp, "www")
    os.makedirs(os.path.join(root, "files"), exist_ok=True)
    state = 0x2545F491
    block = bytearray()
    for _ in range(4096):
        state = (state * 1103515245 + 12345) & 0xFFFFFFFF
        block += state.to_bytes(4, "little")
    for name, size in FILES.items():
        data = (bytes(block) * (size // len(block) + 1))[:size]
        with open(os.path.join(root, "files", name), "wb") as f:
            f.write(data)
    return root


class Server:
    """One peer. Subclasses give the command line (and write any config)."""

    name = "?"
    blocking = False  # has a handler that may block (/demo/sleep)
    # HTTPS (the TLS workload): None, or {"cert", "key", "port": a function
    # that hands out a free port}, set by the suite; each start then also
    # listens with TLS on a port of its own, tls_port.
    tls = None
    tls_port = None

    def __init__(self, paths, tmp, root, nofile):
        self.paths, self.tmp, self.root, self.nofile = paths, tmp, root, nofile
        self.proc = None
        self.port = None
        self.log = None
        self.starts = 0

    def command(self, port):
        raise NotImplementedError

    def available(self):
        """None, or why this server cannot run here."""
        return None

    def version(self):
        return "?"

    def tls_support(self):
        """None when the suite knows how to give this server HTTPS, else why
        not."""
        return "the suite configures no HTTPS for %s" % self.name

    def start(self, port, timeout=15.0):
        """Starts it and waits until it accepts; returns None or the reason
        it did not come up."""
        self.port = port
        self.tls_port = self.tls["port"]() if self.tls else None
        self.starts += 1
        self.log = os.path.join(self.tmp, "%s-%d.log" % (self.name, self.starts))
        cmd = self.command(port)
        self.cmdline = cmd
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=self.tmp, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return "exited with status %d at start: %s" % (self.proc.returncode, self.log_tail())
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                if self.tls_port:
                    socket.create_connection(("127.0.0.1", self.tls_port), timeout=1).close()
                return None
            except OSError:
                time.sleep(0.05)
        self.stop()
        return "not listening after %.0f s: %s" % (timeout, self.log_tail())

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        """SIGTERM, then SIGKILL to the whole session after 10 s."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            except ProcessLookupError:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.proc = None

    def log_tail(self, n=3):
        try:
            with open(self.log, errors="replace") as f:
                lines = [l.strip() for l in f if l.strip()]
            return " / ".join(lines[-n:]) or "(no output)"
        except OSError:
            return "(no log)"

    def check(self):
        """What the workloads rely on, checked once: plaintext bytes, two
        requests on one keep-alive connection, the 1 KiB and 1 MiB files,
        and the blocking route where there is one. A list of problems."""
        problems = []
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            for i in range(2):
                c.request("GET", "/demo/plaintext")
                r = c.getresponse()
                body = r.read()
                if r.status != 200 or body != PLAINTEXT:
                    problems.append("/demo/plaintext: %d %r" % (r.status, body[:40]))
                if i == 0 and r.will_close:
                    problems.append("/demo/plaintext: the connection is not kept alive")
                    c.close()
                    c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            for name, size in FILES.items():
                c.request("GET", "/files/" + name)
                r = c.getresponse()
                body = r.read()
                with open(os.path.join(self.root, "files", name), "rb") as f:
                    want = f.read()
                if r.status != 200 or body != want:
                    problems.append("/files/%s: %d, %d bytes" % (name, r.status, len(body)))
            if self.blocking:
                t = time.monotonic()
                c.request("GET", "/demo/sleep?ms=15")
                r = c.getresponse()
                r.read()
                took = time.monotonic() - t
                if r.status != 200 or took < 0.014:
                    problems.append("/demo/sleep?ms=15: %d after %.1f ms" % (r.status, took * 1e3))
            c.close()
        except (OSError, http.client.HTTPException) as e:
            problems.append("request failed: %s" % e)
        return problems


class Cshttpd(Server):
    name = "cshttpd"
    blocking = True

    def available(self):
        if not os.access(self.paths["cshttpd"], os.X_OK):
            return "%s is not built" % self.paths["cshttpd"]
        return None

    def version(self):
        return "cshttpd at %s" % self.paths.get("commit", "?")

    def command(self, port):
        # Limits as generous as the peers': 20,000 connections (the memory
        # runs hold 10,000), keep-alive 300 s like nginx's, a 4096 backlog
        # like the others' (ab -c 1024 without keep-alive connects in bursts).
        cmd = [self.paths["cshttpd"], "--demo", "--root", self.root, "--port", str(port),
               "--max-connections", "20000", "--keepalive-timeout-ms", "300000",
               "--backlog", "4096"]
        if self.tls:
            cmd += ["--tls-cert", self.tls["cert"], "--tls-key", self.tls["key"],
                    "--tls-port", str(self.tls_port)]
        return cmd

    def tls_support(self):
        return None


class Nginx(Server):
    """nginx-light, static `return 200` for the plaintext and sendfile for
    the files; WORKERS is 1 or auto."""

    binary = "/usr/sbin/nginx"

    def __init__(self, workers, *a):
        super().__init__(*a)
        self.workers = workers
        self.name = "nginx-1" if workers == "1" else "nginx-auto"

    def available(self):
        return None if os.access(self.binary, os.X_OK) else "%s is missing (nginx-light)" % self.binary

    def version(self):
        return proc.output_of([self.binary, "-v"]).replace("nginx version: ", "")

    def command(self, port):
        prefix = os.path.join(self.tmp, "%s-%d" % (self.name, port))
        os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
        conf = os.path.join(prefix, "nginx.conf")
        t = {"p": prefix, "port": port, "root": self.root, "w": self.workers,
             "nofile": self.nofile, "tls": ""}
        if self.tls:
            # nginx's own defaults for everything else: ssl_session_cache
            # none, ssl_session_tickets on, ssl_prefer_server_ciphers off,
            # ssl_ciphers HIGH:!aNULL:!MD5 (TLS 1.2 only), ssl_ecdh_curve auto
            # http2: h2 by ALPN for the clients that offer it (H2), HTTP/1.1
            # for the others (TLS: wrk and cshttp-load offer no ALPN)
            t["tls"] = ("\n    listen 127.0.0.1:%d ssl http2 backlog=4096;\n"
                        "    ssl_certificate %s;\n    ssl_certificate_key %s;\n"
                        "    ssl_protocols TLSv1.2 TLSv1.3;" % (
                            self.tls_port, self.tls["cert"], self.tls["key"]))
        with open(conf, "w") as f:
            f.write("""worker_processes %(w)s;
worker_rlimit_nofile %(nofile)d;
daemon off;
pid %(p)s/nginx.pid;
error_log %(p)s/logs/error.log;
events { worker_connections 20000; }
http {
  access_log off;
  client_body_temp_path %(p)s/body; proxy_temp_path %(p)s/proxy;
  fastcgi_temp_path %(p)s/fcgi; uwsgi_temp_path %(p)s/uwsgi; scgi_temp_path %(p)s/scgi;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  keepalive_timeout 300s;
  types { application/octet-stream bin; }
  server {
    listen 127.0.0.1:%(port)d backlog=4096;%(tls)s
    root %(root)s;
    location = /demo/plaintext { default_type text/plain; return 200 "Hello, World!"; }
  }
}
""" % t)
        self.conf = conf
        return [self.binary, "-p", prefix, "-c", conf]

    def tls_support(self):
        return None if self.workers == "1" else "HTTPS is compared with nginx-1 only"


class H2o(Server):
    """h2o 2.2.5 (Debian, with mruby): the plaintext from an mruby handler,
    the files from file.dir; one thread, as nginx-1."""

    name = "h2o"
    binary = "/usr/bin/h2o"

    def available(self):
        return None if os.access(self.binary, os.X_OK) else "%s is missing (h2o)" % self.binary

    def version(self):
        return proc.output_of([self.binary, "--version"])

    def command(self, port):
        d = os.path.join(self.tmp, "h2o-%d" % port)
        os.makedirs(d, exist_ok=True)
        conf = os.path.join(d, "h2o.conf")
        # user: root, or h2o run as root switches to nobody and can no longer
        # write its pid file; http1-request-timeout is also the keep-alive
        # idle timeout (10 s by default: the memory and W3 runs hold
        # connections longer); max-connections is 1,024 by default.
        tls = ""
        if self.tls:
            # a second listener, the host's own (h2o 2.2 takes one mapping
            # at each level): h2 and http/1.1 by ALPN, h2o's default TLS
            # settings otherwise
            tls = """    listen:
      host: 127.0.0.1
      port: %d
      ssl:
        certificate-file: %s
        key-file: %s
""" % (self.tls_port, self.tls["cert"], self.tls["key"])
        with open(conf, "w") as f:
            f.write("""user: root
listen:
  host: 127.0.0.1
  port: %(port)d
num-threads: 1
max-connections: 20000
pid-file: %(d)s/h2o.pid
error-log: %(d)s/error.log
http1-request-timeout: 300
hosts:
  default:
%(tls)s    paths:
      /demo/plaintext:
        mruby.handler: |
          Proc.new do |env|
            [200, {"content-type" => "text/plain"}, ["Hello, World!"]]
          end
      /files:
        file.dir: %(root)s/files
""" % {"port": port, "d": d, "root": self.root, "tls": tls})
        self.conf = conf
        return [self.binary, "-c", conf]

    def tls_support(self):
        return None


class Mhd(Server):
    """bench_mhd (bench/mhd) on libmicrohttpd: --mode tpc or pool."""

    blocking = True

    def __init__(self, mode, *a):
        super().__init__(*a)
        self.mode = mode
        self.name = "mhd-" + mode

    def available(self):
        b = self.paths["bench_mhd"]
        return None if os.access(b, os.X_OK) else "%s is not built (libmicrohttpd-dev)" % b

    def version(self):
        v = proc.output_of(["pkg-config", "--modversion", "libmicrohttpd"])
        mode = ("thread per connection (poll)" if self.mode == "tpc"
                else "epoll pool of %d threads" % os.cpu_count())
        return "libmicrohttpd %s, %s" % (v, mode)

    def command(self, port):
        cmd = [self.paths["bench_mhd"], "--mode", self.mode, "--port", str(port),
               "--root", os.path.join(self.root, "files")]
        if self.mode == "pool":
            cmd += ["--threads", str(os.cpu_count())]
        return cmd


class CshttpdBase(Cshttpd):
    """Another build of cshttpd (--baseline: a previous commit's), run side
    by side with the current one to show what a change did."""
    name = "cshttpd-base"

    def available(self):
        b = self.paths.get("cshttpd-base")
        if not b or not os.access(b, os.X_OK):
            return "no --baseline binary"
        return None

    def version(self):
        return "cshttpd at %s" % self.paths["cshttpd-base"]

    def command(self, port):
        cmd = super().command(port)
        cmd[0] = self.paths["cshttpd-base"]
        # builds from before --demo served the demo without it
        try:
            help_text = subprocess.run([cmd[0], "--help"], capture_output=True, text=True,
                                       timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            help_text = ""
        if "--demo" not in help_text:
            cmd.remove("--demo")
        return cmd

    def tls_support(self):
        try:
            help_text = subprocess.run([self.paths["cshttpd-base"], "--help"],
                                       capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            help_text = ""
        return None if "--tls-cert" in help_text else "this build has no --tls-cert"


class Cshttpd1(Cshttpd):
    """cshttpd with one event loop (`--loops 1`): the same terms as nginx-1,
    one event loop however many CPUs there are."""
    name = "cshttpd-1"

    def command(self, port):
        return super().command(port) + ["--loops", "1"]


def rotated(servers, k):
    """servers, starting at the k-th (modulo their number): each round of
    the suite, and of W6, starts one server later than the round before."""
    if not servers:
        return []
    k %= len(servers)
    return servers[k:] + servers[:k]


def all_servers(paths, tmp, root, nofile):
    a = (paths, tmp, root, nofile)
    base = [CshttpdBase(*a)] if paths.get("cshttpd-base") else []
    return [Cshttpd(*a), Cshttpd1(*a)] + base + [Nginx("1", *a), Nginx("auto", *a), H2o(*a), Mhd("tpc", *a),
                                   Mhd("pool", *a)]
