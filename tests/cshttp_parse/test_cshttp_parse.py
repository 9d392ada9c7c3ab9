#!/usr/bin/env python3
"""Tests of apps/cshttp-parse: exit codes, JSON fields, escaping.

Usage: test_cshttp_parse.py /path/to/cshttp-parse [unittest options]

Every run checks the output is ASCII-only JSON whose "complete", "error" and
"incomplete" agree with the exit status, and, unless told otherwise, that
feeding the parser 1 or 3 bytes at a time (--feed) prints the same output as
handing it everything at once.
"""
import json
import os
import shutil
import subprocess
import sys
import unittest

BIN = None
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FEEDS = ("1", "3")


def crlf(text):
    """Test inputs are written with \\n; the wire wants CRLF."""
    return text.replace("\n", "\r\n").encode("latin-1")


class Run:
    def __init__(self, rc, out, err):
        self.rc, self.out, self.err = rc, out, err
        self.doc = None

    @property
    def messages(self):
        return self.doc["messages"]

    @property
    def m0(self):
        return self.doc["messages"][0]


def execute(data, args=()):
    p = subprocess.run([BIN, *args], input=data, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    return Run(p.returncode, p.stdout, p.stderr)


class Base(unittest.TestCase):
    def parse(self, data, *args, rc=0, feeds=FEEDS):
        """Runs cshttp-parse on `data`, checks the invariants, returns the Run."""
        r = execute(data, args)
        self.assertEqual(r.rc, rc, "exit status; stdout:\n%s\nstderr:\n%s"
                         % (r.out.decode("latin-1"), r.err.decode("latin-1")))
        self.assertTrue(all(b < 0x80 for b in r.out), "output is not ASCII")
        r.doc = json.loads(r.out.decode("ascii"))
        d = r.doc
        self.assertEqual(set(d), {"messages", "error", "incomplete", "tunnel",
                                  "complete", "input_length"})
        self.assertEqual(d["input_length"], len(data))
        self.assertEqual(d["complete"], rc == 0)
        self.assertEqual(d["error"] is not None, rc == 2)
        self.assertEqual(d["incomplete"] is not None, rc == 3)
        for i, m in enumerate(d["messages"]):
            self.assertEqual(m["index"], i)
        for feed in feeds:
            f = execute(data, (*args, "--feed", feed))
            self.assertEqual((f.rc, f.out.decode("latin-1")), (r.rc, r.out.decode("latin-1")),
                             "output differs with --feed %s" % feed)
        return r


class ExitStatus(Base):
    def test_0_whole_request(self):
        data = crlf("GET /index.html?q=1 HTTP/1.1\nHost: example.com\nAccept: */*\n\n")
        r = self.parse(data)
        self.assertEqual(len(r.messages), 1)
        m = r.m0
        self.assertEqual(m["type"], "request")
        self.assertEqual(m["method"], "GET")
        self.assertEqual(m["target"], "/index.html?q=1")
        self.assertEqual(m["target_form"], "origin")
        self.assertEqual(m["version"], "HTTP/1.1")
        self.assertEqual(m["headers"], [["Host", "example.com"], ["Accept", "*/*"]])
        self.assertEqual(m["host"], "example.com")
        self.assertEqual(m["framing"], {"body": "none", "content_length": None})
        self.assertEqual(m["head_length"], len(data))
        self.assertEqual(m["offset"], 0)
        self.assertEqual((m["body"], m["body_length"], m["trailers"]), ("", 0, None))
        self.assertTrue(m["complete"])
        self.assertTrue(m["flags"]["keep_alive"])
        self.assertTrue(m["flags"]["has_host"])
        self.assertFalse(m["flags"]["connection_close"])
        self.assertIsNone(r.doc["error"])

    def test_0_empty_input(self):
        r = self.parse(b"")
        self.assertEqual(r.messages, [])
        self.assertTrue(r.doc["complete"])

    def test_1_unknown_flag(self):
        r = execute(b"", ["--bogus"])
        self.assertEqual(r.rc, 1)
        self.assertIn(b"--bogus", r.err)
        self.assertEqual(r.out, b"")

    def test_1_bad_values(self):
        for args, named in ((["--method"], b"--method"),
                            (["--response", "--method", "GE T"], b"--method"),
                            (["--method", "HEAD"], b"--method"),  # needs --response
                            (["--feed", "0"], b"--feed"),
                            (["--feed=x"], b"--feed"),
                            (["request.http"], b"request.http")):
            r = execute(b"", args)
            self.assertEqual(r.rc, 1, args)
            self.assertIn(named, r.err, args)

    def test_help_and_version(self):
        r = execute(b"", ["--help"])
        self.assertEqual(r.rc, 0)
        self.assertIn(b"usage:", r.out)
        for flag in (b"--response", b"--method", b"--lenient-lf"):
            self.assertIn(flag, r.out)
        r = execute(b"", ["--version"])
        self.assertEqual(r.rc, 0)
        self.assertIn(b"libcshttp", r.out)

    def test_2_parse_error(self):
        # NUL in a field value: the error is at the NUL.
        data = crlf("GET / HTTP/1.1\nHost: a\nX-Bad: a\0b\n\n")
        r = self.parse(data, rc=2)
        e = r.doc["error"]
        self.assertEqual(e["name"], "CSH_E_INVALID_FIELD_VALUE")
        self.assertEqual(e["code"], -6019)  # CSH_E_INVALID_FIELD_VALUE
        self.assertEqual(e["status"], 400)
        self.assertEqual(e["offset"], data.index(b"\0"))
        self.assertEqual((e["message_index"], e["message_offset"], e["in"]), (0, 0, "head"))
        self.assertTrue(e["message"])
        self.assertEqual(r.messages, [])

    def test_3_ends_in_head(self):
        data = crlf("GET / HTTP/1.1\nHost: a\n")
        r = self.parse(data, rc=3)
        self.assertEqual(r.messages, [])
        self.assertEqual(r.doc["incomplete"],
                         {"message_index": 0, "message_offset": 0, "in": "head",
                          "offset": len(data)})

    def test_3_ends_in_body(self):
        data = crlf("POST /f HTTP/1.1\nHost: a\nContent-Length: 10\n\n") + b"abc"
        r = self.parse(data, rc=3)
        m = r.m0
        self.assertEqual(m["framing"], {"body": "length", "content_length": 10})
        self.assertEqual((m["body"], m["body_length"], m["complete"]), ("abc", 3, False))
        self.assertEqual(r.doc["incomplete"]["in"], "body")


class Errors(Base):
    def error(self, data, *args):
        return self.parse(data, *args, rc=2).doc["error"]

    def test_cl_and_te(self):
        e = self.error(crlf("POST / HTTP/1.1\nHost: a\nContent-Length: 5\n"
                            "Transfer-Encoding: chunked\n\n0\n\n"))
        self.assertEqual((e["name"], e["status"]), ("CSH_E_CL_AND_TE", 400))

    def test_duplicate_content_length(self):
        e = self.error(crlf("POST / HTTP/1.1\nHost: a\nContent-Length: 1\nContent-Length: 2\n\n"))
        self.assertEqual((e["name"], e["status"]), ("CSH_E_DUPLICATE_CONTENT_LENGTH", 400))

    def test_statuses(self):
        e = self.error(crlf("GET / HTTP/2.0\nHost: a\n\n"))
        self.assertEqual((e["name"], e["status"]), ("CSH_E_UNSUPPORTED_VERSION", 505))
        e = self.error(crlf("POST / HTTP/1.1\nHost: a\nContent-Length: 99999999999999999999999\n\n"))
        self.assertEqual((e["name"], e["status"]), ("CSH_E_CONTENT_LENGTH_TOO_LARGE", 413))
        e = self.error(crlf("GET /" + "a" * 9000 + " HTTP/1.1\nHost: a\n\n"))
        self.assertEqual((e["name"], e["status"]), ("CSH_E_URI_TOO_LONG", 414))
        e = self.error(crlf("POST / HTTP/1.1\nHost: a\nTransfer-Encoding: zstd2, chunked\n\n"))
        self.assertEqual((e["name"], e["status"]), ("CSH_E_UNKNOWN_TE", 501))

    def test_missing_host(self):
        e = self.error(crlf("GET / HTTP/1.1\nAccept: */*\n\n"))
        self.assertEqual((e["name"], e["status"]), ("CSH_E_MISSING_HOST", 400))

    def test_offset_is_absolute_in_pipeline(self):
        first = crlf("GET /a HTTP/1.1\nHost: a\n\n")
        second = crlf("GET /b HTTP/1.1\nHost: a\nX: 1\x012\n\n")
        r = self.parse(first + second, rc=2)
        self.assertEqual(len(r.messages), 1)
        e = r.doc["error"]
        self.assertEqual(e["name"], "CSH_E_INVALID_FIELD_VALUE")
        self.assertEqual((e["message_index"], e["message_offset"]), (1, len(first)))
        self.assertEqual(e["offset"], len(first) + second.index(b"\x01"))

    def test_error_in_chunked_body(self):
        head = crlf("POST / HTTP/1.1\nHost: a\nTransfer-Encoding: chunked\n\n")
        data = head + b"3\r\nabc\r\nzz\r\n"
        r = self.parse(data, rc=2)
        e = r.doc["error"]
        self.assertEqual((e["name"], e["status"], e["in"]), ("CSH_E_INVALID_CHUNK_SIZE", 400, "body"))
        self.assertEqual(e["offset"], data.index(b"zz"))
        self.assertEqual((r.m0["body"], r.m0["complete"]), ("abc", False))

    def test_bare_lf(self):
        data = b"GET / HTTP/1.1\nHost: a\n\n"
        e = self.error(data)
        self.assertEqual((e["name"], e["status"]), ("CSH_E_BARE_LF", 400))
        r = self.parse(data, "--lenient-lf")
        self.assertEqual((r.m0["method"], r.m0["host"]), ("GET", "a"))
        self.assertEqual(r.m0["head_length"], len(data))


class Messages(Base):
    def test_pipelined(self):
        msgs = [crlf("GET /one HTTP/1.1\nHost: h\n\n"),
                crlf("POST /two HTTP/1.1\nHost: h\nContent-Length: 5\n\n") + b"hello",
                crlf("PUT /three HTTP/1.1\nHost: h\nContent-Length: 0\n\n"),
                crlf("DELETE /four HTTP/1.1\nHost: h\nConnection: close\n\n")]
        r = self.parse(b"".join(msgs))
        self.assertEqual([m["method"] for m in r.messages], ["GET", "POST", "PUT", "DELETE"])
        self.assertEqual([m["target"] for m in r.messages], ["/one", "/two", "/three", "/four"])
        offsets = [sum(len(x) for x in msgs[:i]) for i in range(len(msgs))]
        self.assertEqual([m["offset"] for m in r.messages], offsets)
        self.assertEqual(r.messages[1]["body"], "hello")
        self.assertEqual(r.messages[1]["head_length"], len(msgs[1]) - 5)
        self.assertEqual(r.messages[2]["body"], "")
        self.assertTrue(r.messages[3]["flags"]["connection_close"])
        self.assertFalse(r.messages[3]["flags"]["keep_alive"])
        # The same with the last one cut short: three messages, then exit 3.
        r = self.parse(b"".join(msgs)[:-3], rc=3)
        self.assertEqual(len(r.messages), 3)
        self.assertEqual(r.doc["incomplete"]["message_index"], 3)
        self.assertEqual(r.doc["incomplete"]["message_offset"], offsets[3])

    def test_chunked_with_trailers(self):
        data = crlf("POST /upload HTTP/1.1\nHost: h\nTransfer-Encoding: chunked\n\n"
                    "5\nhello\n6;name=value\n world\n0\nX-Checksum: abc123\nX-Count: 2\n\n"
                    "GET /next HTTP/1.1\nHost: h\n\n")
        r = self.parse(data)
        self.assertEqual(len(r.messages), 2)
        m = r.m0
        self.assertEqual(m["framing"], {"body": "chunked", "content_length": None})
        self.assertTrue(m["flags"]["has_transfer_encoding"])
        self.assertEqual((m["body"], m["body_length"]), ("hello world", 11))
        self.assertEqual(m["trailers"], [["X-Checksum", "abc123"], ["X-Count", "2"]])
        self.assertEqual(m["chunks"], 3)
        self.assertEqual(r.messages[1]["offset"], data.index(b"GET /next"))

    def test_chunked_truncated(self):
        data = crlf("POST / HTTP/1.1\nHost: h\nTransfer-Encoding: chunked\n\n5\nhello\n")
        r = self.parse(data, rc=3)
        self.assertEqual((r.m0["body"], r.m0["complete"]), ("hello", False))
        self.assertEqual(r.doc["incomplete"]["in"], "body")

    def test_target_forms(self):
        cases = [("OPTIONS * HTTP/1.1\nHost: h\n\n", "asterisk", "*"),
                 ("CONNECT example.com:443 HTTP/1.1\nHost: example.com:443\n\n",
                  "authority", "example.com:443"),
                 ("GET http://example.com/x HTTP/1.1\nHost: example.com\n\n",
                  "absolute", "http://example.com/x")]
        for text, form, target in cases:
            m = self.parse(crlf(text)).m0
            self.assertEqual((m["target_form"], m["target"]), (form, target), text)

    def test_flags(self):
        m = self.parse(crlf("PUT /f HTTP/1.1\nHost: h\nExpect: 100-continue\n"
                            "Content-Length: 3\n\nabc")).m0
        self.assertTrue(m["flags"]["expect_continue"])
        self.assertTrue(m["flags"]["has_content_length"])
        m = self.parse(crlf("GET /chat HTTP/1.1\nHost: h\nConnection: Upgrade\n"
                            "Upgrade: websocket\n\n")).m0
        self.assertTrue(m["flags"]["upgrade"])
        self.assertEqual(m["upgrade"], "websocket")
        m = self.parse(crlf("GET / HTTP/1.0\n\n")).m0
        self.assertEqual(m["version"], "HTTP/1.0")
        self.assertFalse(m["flags"]["keep_alive"])
        self.assertIsNone(m["host"])
        m = self.parse(crlf("GET / HTTP/1.0\nConnection: keep-alive\n\n")).m0
        self.assertTrue(m["flags"]["keep_alive"])

    def test_sample_request(self):
        path = os.path.join(REPO, "apps", "samples", "request.http")
        with open(path, "rb") as f:
            data = f.read()
        self.assertNotIn(b"\n", data.replace(b"\r\n", b""), "sample must use CRLF line ends")
        r = self.parse(data)
        self.assertEqual(len(r.messages), 1)
        m = r.m0
        self.assertEqual(m["body_length"], m["framing"]["content_length"])
        json.loads(m["body"])  # the sample's body is JSON


class Responses(Base):
    def test_head_has_no_body(self):
        data = crlf("HTTP/1.1 200 OK\nContent-Type: text/html\nContent-Length: 1234\n\n")
        r = self.parse(data, "--response", "--method", "HEAD")
        m = r.m0
        self.assertEqual((m["type"], m["status"], m["reason"]), ("response", 200, "OK"))
        self.assertEqual(m["framing"]["body"], "none")
        self.assertTrue(m["flags"]["has_content_length"])
        self.assertEqual((m["body"], m["head_length"]), ("", len(data)))
        # Two of them pipelined, the form --method=HEAD.
        r = self.parse(data + data, "--response", "--method=HEAD")
        self.assertEqual([m["offset"] for m in r.messages], [0, len(data)])
        # The same bytes answering a GET announce a body that is not there.
        r = self.parse(data, "--response", rc=3)
        self.assertEqual(r.m0["framing"], {"body": "length", "content_length": 1234})

    def test_interim_then_final(self):
        interim = crlf("HTTP/1.1 100 Continue\n\n")
        final = crlf("HTTP/1.1 201 Created\nContent-Length: 2\n\n") + b"ok"
        r = self.parse(interim + final, "--response")
        self.assertEqual([m["status"] for m in r.messages], [100, 201])
        self.assertTrue(r.messages[0]["flags"]["interim"])
        self.assertFalse(r.messages[1]["flags"]["interim"])
        self.assertEqual(r.messages[1]["body"], "ok")
        # An interim response alone: the final response is still owed.
        r = self.parse(interim, "--response", rc=3)
        self.assertEqual(len(r.messages), 1)
        self.assertEqual(r.doc["incomplete"]["message_index"], 1)

    def test_until_close(self):
        data = crlf("HTTP/1.1 200 OK\nContent-Type: text/plain\n\n") + b"all of it\r\nuntil EOF"
        r = self.parse(data, "--response")
        m = r.m0
        self.assertEqual(m["framing"]["body"], "until_close")
        self.assertEqual(m["body"], "all of it\r\nuntil EOF")

    def test_no_body_statuses(self):
        for status in ("204 No Content", "304 Not Modified"):
            data = crlf("HTTP/1.1 %s\nContent-Length: 10\n\n" % status) * 2
            r = self.parse(data, "--response")
            self.assertEqual(len(r.messages), 2, status)
            self.assertEqual(r.m0["framing"]["body"], "none", status)

    def test_connect_tunnel(self):
        head = crlf("HTTP/1.1 200 Connection Established\n\n")
        data = head + b"\x16\x03\x01\x02\x00\x01\x00"
        r = self.parse(data, "--response", "--method", "CONNECT")
        self.assertTrue(r.m0["flags"]["tunnel"])
        self.assertEqual(r.doc["tunnel"], {"offset": len(head), "length": 7})

    def test_response_error(self):
        e = self.parse(b"HTTP/1.1 2000 OK\r\n\r\n", "--response", rc=2).doc["error"]
        self.assertEqual(e["status"], 502)
        self.assertIn(e["name"], ("CSH_E_INVALID_STATUS", "CSH_E_INVALID_STATUS_LINE"))


class Escaping(Base):
    def test_8bit_and_controls_in_field_value(self):
        value = b"caf\xc3\xa9 \xff\x80 \"q\" \\ \t end"
        data = b"GET / HTTP/1.1\r\nHost: h\r\nX-Name: " + value + b"\r\n\r\n"
        r = self.parse(data)
        name, got = r.m0["headers"][1]
        self.assertEqual(name, "X-Name")
        self.assertEqual(got.encode("latin-1"), value)
        self.assertIn(b"\\u00c3\\u00a9", r.out)
        self.assertIn(b"\\u00ff\\u0080", r.out)

    def test_every_byte_in_a_body(self):
        body = bytes(range(256)) * 2
        data = crlf("POST / HTTP/1.1\nHost: h\nContent-Length: %d\n\n" % len(body)) + body
        r = self.parse(data)
        self.assertEqual(r.m0["body"].encode("latin-1"), body)
        for esc in (b"\\u0000", b"\\u001f", b"\\u007f", b"\\u00ff", b"\\\"", b"\\\\"):
            self.assertIn(esc, r.out)
        # The only raw control bytes are the document's own line ends.
        self.assertFalse([b for b in r.out if b < 0x20 and b != 0x0A])

    def test_error_output_valid_json_for_jq(self):
        if not shutil.which("jq"):
            self.skipTest("jq is not installed")
        data = b"GET /\x7f\xfe HTTP/1.1\r\nHost: h\r\n\r\n"
        r = self.parse(data, rc=2)
        p = subprocess.run(["jq", "-e", ".error.status"], input=r.out,
                           stdout=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(p.stdout.strip(), b"400")
        body = bytes(range(256))
        data = crlf("POST / HTTP/1.1\nHost: h\nContent-Length: 256\n\n") + body
        r = self.parse(data)
        p = subprocess.run(["jq", "-j", ".messages[0].body"], input=r.out,
                           stdout=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 0)
        # jq writes the code points back as UTF-8.
        self.assertEqual(p.stdout, body.decode("latin-1").encode("utf-8"))


def main():
    global BIN
    if len(sys.argv) < 2:
        sys.exit("usage: %s /path/to/cshttp-parse [unittest options]" % sys.argv[0])
    BIN = os.path.abspath(sys.argv[1])
    if not os.access(BIN, os.X_OK):
        sys.exit("not an executable: %s" % BIN)
    unittest.main(argv=[sys.argv[0], *sys.argv[2:]], verbosity=2)


if __name__ == "__main__":
    main()
