"""HTTPS for the TLS workload: the certificate every server is given, and
what a real client negotiates with each of them (openssl s_client), so the
report can show that the servers were compared on the same terms."""

import os
import re
import subprocess

# The servers that run the TLS workload: the suite configures HTTPS for
# these only (the others are skipped and the report says so).
SERVERS = ("cshttpd", "cshttpd-1", "cshttpd-base", "nginx-1")
PLAINTEXT_REQUEST = b"GET /demo/plaintext HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"


def make_cert(tmp):
    """A self-signed certificate on a P-256 EC key, CN and subjectAltName
    127.0.0.1, written once per run in the suite's temporary folder:
    {"cert": path, "key": path, "subject": text}, or raises OSError with
    openssl's message."""
    d = os.path.join(tmp, "tls")
    os.makedirs(d, exist_ok=True)
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    cmd = ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
           "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
           "-addext", "subjectAltName=IP:127.0.0.1"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0 or not os.path.exists(cert):
        raise OSError("openssl req failed: " + (p.stderr.strip() or p.stdout.strip())[-200:])
    return {"cert": cert, "key": key, "cmd": " ".join(cmd),
            "subject": "self-signed, EC P-256 key, ecdsa-with-SHA256, CN and SAN 127.0.0.1"}


def probe(port, timeout=10):
    """One full handshake and one plaintext request with `openssl s_client`:
    {"protocol", "cipher", "group", "signature", "tickets", "status"} as
    s_client printed them (None for what it did not print), "error" when
    the handshake or the request failed."""
    cmd = ["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-ign_eof"]
    out = {"cmd": " ".join(cmd)}
    try:
        p = subprocess.run(cmd, input=PLAINTEXT_REQUEST, capture_output=True, timeout=timeout)
        text = p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")
    except (OSError, subprocess.TimeoutExpired) as e:
        out["error"] = "openssl s_client: %s" % e
        return out

    def find(pattern):
        m = re.search(pattern, text, re.M)
        return m.group(1).strip() if m else None
    m = re.search(r"^New, (\S+), Cipher is (\S+)", text, re.M)
    out["protocol"], out["cipher"] = (m.group(1), m.group(2)) if m else (None, None)
    out["group"] = find(r"^Server Temp Key: (.*)$")
    sig = find(r"^Peer signature type: (.*)$")
    digest = find(r"^Peer signing digest: (.*)$")
    out["signature"] = "%s with %s" % (sig, digest) if sig and digest else sig
    # TLS 1.3 servers send their session tickets after the handshake; each
    # one costs the server an encryption per connection, so the count is
    # part of a handshake's price.
    out["tickets"] = len(re.findall(r"^Post-Handshake New Session Ticket arrived", text, re.M))
    out["status"] = find(r"^(HTTP/1\.[01] \d{3})")
    if not out["cipher"] or not out["status"] or not out["status"].endswith(" 200"):
        out["error"] = "no TLS answer to GET /demo/plaintext: " + text.strip()[-200:]
    return out


def summary(info):
    """'TLSv1.3, TLS_AES_256_GCM_SHA384, X25519, ECDSA with SHA256, 2 tickets'."""
    if not info:
        return "–"
    if info.get("error"):
        return info["error"][:200]
    return "%s, %s, %s, %s, %d session tickets" % (
        info.get("protocol"), info.get("cipher"), info.get("group"), info.get("signature"),
        info.get("tickets") or 0)
