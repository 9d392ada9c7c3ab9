#!/usr/bin/env python3
"""cshttpd behind a real nginx reverse proxy.

Starts cshttpd on an ephemeral port of 127.0.0.1 and nginx (in the
foreground, its pid, logs and temp paths in a temporary folder) on another
ephemeral loopback port, proxying to cshttpd through an upstream keepalive
pool (HTTP/1.1, `Connection ""`). Through nginx: GET /demo/plaintext and a
static file, POST /demo/echo (body and headers echoed), a 384 KiB POST body
checked byte for byte, a multipart upload to /demo/upload, and a chunked
upload (curl -H 'Transfer-Encoding: chunked'), once buffered by nginx and
once passed on unbuffered (proxy_request_buffering off). Then 50 requests
through nginx, and cshttpd's /status.json, read directly, shows that
connections_total (connections accepted since start) grew far less than
requests (requests served): nginx reused its upstream connections.

Deadlines only bound the test; nothing depends on a measured time. Both
servers are stopped at the end, also on failure, and the temporary folder
is removed.

Usage: test_nginx_proxy.py --bin path/to/cshttpd [--curl curl] [--nginx nginx]
Exits 77 (skipped) when nginx cannot be found.
"""
import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import time
import traceback

SKIP = 77


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def stop(proc, sig, name, timeout=20):
    if proc is None:
        return None
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("%s did not stop within %ds" % (name, timeout))
    return proc.returncode


class Cshttpd:
    def __init__(self, binary, root, tmp):
        self.log = open(os.path.join(tmp, "cshttpd.err"), "w+")
        self.proc = subprocess.Popen(
            [binary, "--port", "0", "--root", root, "--demo", "--temp-dir", tmp],
            stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.port = None
        deadline = time.time() + 10
        lines = []
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "listening on http://127.0.0.1:" in line:
                self.port = int(line.split("127.0.0.1:")[1].split("/")[0])
                break
        if self.port is None:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("cshttpd did not start: %r" % lines)

    def status(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request("GET", "/status.json")
        r = c.getresponse()
        body = r.read()
        c.close()
        assert r.status == 200, r.status
        return json.loads(body)

    def stop(self):
        rc = stop(self.proc, signal.SIGTERM, "cshttpd")
        self.proc.stdout.close()
        self.log.seek(0)
        err = self.log.read()
        self.log.close()
        return rc, err


NGINX_CONF = """\
worker_processes 1;
{user}
pid {tmp}/nginx.pid;
error_log {tmp}/logs/error.log warn;
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fcgi; uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;
  client_max_body_size 16m;
  upstream cshttpd {{
    server 127.0.0.1:{up};
    keepalive 8;
  }}
  server {{
    listen 127.0.0.1:{port};
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    location / {{
      proxy_pass http://cshttpd;
    }}
    location /unbuffered/ {{
      proxy_request_buffering off;
      proxy_pass http://cshttpd/;
    }}
  }}
}}
"""


class Nginx:
    def __init__(self, binary, tmp, upstream_port):
        self.tmp = os.path.join(tmp, "nginx")
        os.makedirs(os.path.join(self.tmp, "logs"))
        user = "user root;" if os.geteuid() == 0 else ""
        self.proc = None
        for _ in range(3):  # the free port may be taken between bind and nginx
            self.port = free_port()
            conf = os.path.join(self.tmp, "nginx.conf")
            with open(conf, "w") as f:
                f.write(NGINX_CONF.format(user=user, tmp=self.tmp, up=upstream_port,
                                          port=self.port))
            self.err = open(os.path.join(self.tmp, "stderr"), "w+")
            self.proc = subprocess.Popen([binary, "-p", self.tmp, "-c", conf, "-g", "daemon off;"],
                                         stdout=subprocess.DEVNULL, stderr=self.err)
            if self.wait_ready():
                return
            stop(self.proc, signal.SIGTERM, "nginx")
            self.err.close()
        raise AssertionError("nginx did not start: %s" % self.errors())

    def wait_ready(self):
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                time.sleep(0.05)
        return False

    def errors(self):
        out = []
        for p in (os.path.join(self.tmp, "stderr"), os.path.join(self.tmp, "logs", "error.log")):
            try:
                with open(p) as f:
                    out.append(f.read())
            except OSError:
                pass
        return "\n".join(out)

    def stop(self):
        rc = stop(self.proc, signal.SIGQUIT, "nginx")
        self.err.close()
        return rc


def request(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, hdrs, data


def echoed_headers(doc):
    return {k.lower(): v for k, v in doc["headers"]}


def run(args, tmp):
    root = os.path.join(tmp, "www")
    os.mkdir(root)
    static = bytes(random.Random(7).getrandbits(8) for _ in range(100000))
    with open(os.path.join(root, "data.bin"), "wb") as f:
        f.write(static)
    cs = ng = None
    failed = False
    try:
        cs = Cshttpd(args.bin, root, tmp)
        ng = Nginx(args.nginx, tmp, cs.port)
        port = ng.port

        # GET /demo/plaintext
        st, h, body = request(port, "GET", "/demo/plaintext")
        assert st == 200 and body == b"Hello, World!", (st, body)
        print("ok: GET /demo/plaintext through nginx")

        # a static file, byte for byte
        st, h, body = request(port, "GET", "/data.bin")
        assert st == 200 and body == static, (st, len(body))
        print("ok: GET /data.bin (100,000 bytes) through nginx")

        # POST /demo/echo: body and headers echoed
        st, h, body = request(port, "POST", "/demo/echo?x=1", body=b"name=value&a=b",
                              headers={"Content-Type": "application/x-www-form-urlencoded",
                                       "X-Test": "through-nginx"})
        assert st == 200, (st, body)
        doc = json.loads(body)
        eh = echoed_headers(doc)
        assert doc["method"] == "POST" and doc["target"] == "/demo/echo?x=1", doc
        assert doc["version"] == "HTTP/1.1", doc  # proxy_http_version 1.1
        assert doc["body"] == "name=value&a=b" and doc["body_length"] == 14, doc
        assert eh.get("x-test") == "through-nginx", eh
        assert eh.get("content-type") == "application/x-www-form-urlencoded", eh
        assert eh.get("content-length") == "14", eh
        assert "connection" not in eh, eh  # proxy_set_header Connection ""
        print("ok: POST /demo/echo through nginx (body, headers, HTTP/1.1)")

        # a large POST body, byte for byte (printable, so JSON keeps it as is)
        rnd = random.Random(11)
        alphabet = (string.ascii_letters + string.digits).encode()
        big = bytes(rnd.choice(alphabet) for _ in range(384 * 1024))
        st, h, body = request(port, "POST", "/demo/echo", body=big,
                              headers={"Content-Type": "application/octet-stream"})
        assert st == 200, (st, body[:200])
        doc = json.loads(body)
        assert doc["body_length"] == len(big), doc["body_length"]
        assert doc["body"].encode() == big, "echoed body differs"
        print("ok: POST /demo/echo with a %d-byte body through nginx, byte for byte" % len(big))

        # a multipart upload through the demo's upload route (curl -F)
        upload = os.path.join(tmp, "upload.bin")
        with open(upload, "wb") as f:
            f.write(static[:65536])
        r = subprocess.run([args.curl, "-sS", "--max-time", "20", "-F", "note=hello",
                            "-F", "file=@%s;type=application/octet-stream" % upload,
                            "http://127.0.0.1:%d/demo/upload" % port],
                           capture_output=True, timeout=30)
        assert r.returncode == 0, r.stderr
        assert b"note = hello" in r.stdout, r.stdout
        assert b"upload.bin: 65536 bytes, application/octet-stream" in r.stdout, r.stdout
        print("ok: multipart upload to /demo/upload through nginx (curl -F)")

        # chunked uploads (curl -H 'Transfer-Encoding: chunked'): nginx buffers
        # the body and sends a Content-Length; under /unbuffered/ it passes it
        # on chunked
        chunked = big[:200000]
        body_file = os.path.join(tmp, "chunked.bin")
        with open(body_file, "wb") as f:
            f.write(chunked)
        for prefix, framing in (("", "content-length"), ("/unbuffered", "transfer-encoding")):
            r = subprocess.run([args.curl, "-sS", "--max-time", "20",
                                "-H", "Transfer-Encoding: chunked",
                                "-H", "Content-Type: application/octet-stream",
                                "--data-binary", "@" + body_file,
                                "http://127.0.0.1:%d%s/demo/echo" % (port, prefix)],
                               capture_output=True, timeout=30)
            assert r.returncode == 0, r.stderr
            doc = json.loads(r.stdout)
            eh = echoed_headers(doc)
            assert doc["body_length"] == len(chunked), doc["body_length"]
            assert doc["body"].encode() == chunked, "echoed chunked body differs"
            assert framing in eh, eh
            if framing == "transfer-encoding":
                assert eh["transfer-encoding"].lower() == "chunked", eh
            print("ok: chunked upload through nginx%s (cshttpd saw %s)" %
                  (" " + prefix if prefix else "", framing))

        # upstream connections are reused: connections_total (accepted since
        # start) against requests (served), read directly from cshttpd
        n = 50
        before = cs.status()
        for i in range(n):
            st, h, body = request(port, "GET", "/demo/plaintext")
            assert st == 200 and body == b"Hello, World!", (i, st, body)
        after = cs.status()
        accepted = after["connections_total"] - before["connections_total"]
        served = after["requests"] - before["requests"]
        # the direct /status.json read adds one connection and one request;
        # nginx may open up to its keepalive pool size (8) afresh
        print("%d requests through nginx: cshttpd connections_total +%d, requests +%d"
              % (n, accepted, served))
        assert served >= n, (before, after)
        assert accepted <= 1 + 8, "upstream connections not reused: %r %r" % (before, after)
        assert accepted * 5 < served, (accepted, served)
        print("ok: nginx reuses its upstream connections to cshttpd")
    except BaseException:
        failed = True
        traceback.print_exc()
        if ng is not None:
            print("nginx errors:\n" + ng.errors())
        raise
    finally:
        errors = []
        if ng is not None:
            try:
                ng.stop()
            except AssertionError as e:
                errors.append(str(e))
        if cs is not None:
            try:
                rc, err = cs.stop()
                if rc != 0 and not failed:
                    errors.append("cshttpd exited %r: %s" % (rc, err))
                if "Sanitizer" in err and not failed:
                    errors.append("cshttpd sanitizer report: %s" % err)
            except AssertionError as e:
                errors.append(str(e))
        if errors and not failed:
            raise AssertionError("; ".join(errors))


def find_nginx(given):
    for cand in (given, shutil.which("nginx"), "/usr/sbin/nginx"):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--curl", default=shutil.which("curl") or "curl")
    ap.add_argument("--nginx", default=None)
    args = ap.parse_args()
    args.nginx = find_nginx(args.nginx)
    if args.nginx is None:
        print("SKIPPED: nginx not found (install nginx-light: scripts/install-deps.sh)")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="cshttp-nginx-")
    try:
        run(args, tmp)
    except BaseException:
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
