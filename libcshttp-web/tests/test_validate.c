/* validate.c: the checks that answer 400 after the head parsed and before
 * the handler runs: Host (RFC 9110 §7.2, RFC 9112 §3.2), absolute-form
 * (RFC 9112 §3.2.2, RFC 9110 §4.2), authority-form (RFC 9112 §3.2.3),
 * fragments (RFC 9112 §3.2) and percent-encoding (RFC 3986 §2.1).
 * Each request goes through libcshttp's parser first, as in production, and
 * is copied to a buffer of its exact size so a read past it shows under
 * ASan. Codes, names and statuses are written out here, not taken from the
 * table under test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <cshttp/parser.h>

#include "cshttp/web/error.h"
#include "validate.h"

/* Parses raw (which must parse) and validates it; the parser's result in
 * *parsed when not NULL, and then a refusal by the parser is no failure. */
static int run(const char *raw, int *parsed)
{
    size_t len = strlen(raw);
    char *buf = malloc(len);
    assert_non_null(buf);
    memcpy(buf, raw, len);
    csh_header fields[16];
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, fields, 16, NULL, 0);
    int r = csh_parser_execute(&p, buf, len);
    int rc = 0;
    if (parsed)
        *parsed = r;
    else if (r != CSH_OK)
        fail_msg("the parser refused %s: %s", raw, csh_error_name(r));
    if (r == CSH_OK) rc = cshw__request_validate(buf, &p.msg);
    free(buf);
    return rc;
}

static void accepted(const char *raw)
{
    int rc = run(raw, NULL);
    if (rc != 0) fail_msg("refused with %s: %s", cshw_error_name(rc), raw);
}

static void refused(const char *raw, int code, const char *name, int status)
{
    int rc = run(raw, NULL);
    if (rc != code)
        fail_msg("got %d (%s), want %d (%s): %s", rc, cshw_error_name(rc), code, name, raw);
    assert_string_equal(cshw_error_name(rc), name);
    assert_int_equal(cshw_error_status(rc), status);
}

/* "GET / HTTP/1.1" with the given Host value */
static const char *with_host(const char *host)
{
    static char raw[512];
    snprintf(raw, sizeof raw, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", host);
    return raw;
}

static void host_ok(const char *host)
{
    accepted(with_host(host));
}

static void host_bad(const char *host)
{
    refused(with_host(host), -10116, "CSHW_E_HOST_INVALID", 400);
}

/* RFC 9110 §7.2: Host = uri-host [ ":" port ]; RFC 3986 §3.2.2: uri-host =
 * IP-literal / IPv4address / reg-name; §3.2.3: port = *DIGIT. RFC 9112
 * §3.2: a Host with an invalid value is answered 400. */
static void test_host_syntax(void **state)
{
    (void)state;
    host_ok("example.com");
    host_ok("127.0.0.1:8080");
    host_ok("[::1]:80");
    host_ok("[::1]");
    host_ok("a%41.com"); /* pct-encoded in a reg-name */
    host_ok("localhost:65535");
    host_ok("localhost:0080");
    host_ok("999.1.1.1");           /* not an IPv4address, but a reg-name */
    host_ok("a-b_c~d.!$&'()*+,;="); /* unreserved and sub-delims */
    host_ok("example.com:");        /* port = *DIGIT: may be empty (RFC 3986 §3.2.3) */
    /* RFC 9112 §3.2: an empty Host when the target has no authority */
    accepted("GET / HTTP/1.1\r\nHost:\r\n\r\n");
    /* HTTP/1.0 may go without */
    accepted("GET / HTTP/1.0\r\n\r\n");

    host_bad("a:b1"); /* port is not digits */
    host_bad("a:80x");
    host_bad("a:80:80");
    host_bad("[::1");   /* unclosed literal */
    host_bad("[zz]");   /* not an IPv6address */
    host_bad("[::1]x"); /* only ":" port after the literal */
    host_bad("[::1]:x");
    host_bad("a[b]");
    host_bad("a%4"); /* pct-encoded is '%' and two hex digits */
    host_bad("a%zz.com");
    host_bad("%");
    /* a port above 65535 (16 bits, RFC 6335 §6; the WHATWG URL parser fails
     * on one too) */
    host_bad("localhost:65536");
    host_bad("localhost:99999999999999999999999");
    /* RFC 9110 §4.2.1: an http URI with an empty host is invalid */
    host_bad(":80");
    host_bad(":");

    /* the parser refuses these bytes itself, 400 before any validation */
    int parsed = 0;
    assert_int_equal(run(with_host("a b"), &parsed), 0);
    assert_true(parsed < 0);
    assert_int_equal(csh_error_status(parsed), 400);
    assert_int_equal(run(with_host("user@a"), &parsed), 0);
    assert_true(parsed < 0);
    assert_int_equal(csh_error_status(parsed), 400);
}

/* RFC 3986 §3.2.2: IP-literal = "[" ( IPv6address / IPvFuture ) "]" */
static void test_ip_literals(void **state)
{
    (void)state;
    host_ok("[::]");
    host_ok("[1:2:3:4:5:6:7:8]");
    host_ok("[1:2:3:4:5:6:7::]");
    host_ok("[::2:3:4:5:6:7:8]");
    host_ok("[1::8]");
    host_ok("[fe80::1:abcd]");
    host_ok("[FE80::ABCD]");
    host_ok("[::ffff:192.0.2.1]"); /* ls32 as an IPv4address */
    host_ok("[1:2:3:4:5:6:192.0.2.1]:443");
    host_ok("[::192.0.2.1]");
    host_ok("[v1.fe80::a+b]"); /* IPvFuture */
    host_ok("[V7.x:y]");

    host_bad("[]");
    host_bad("[:]");
    host_bad("[:::]");
    host_bad("[1:2:3:4:5:6:7]");     /* seven groups without "::" */
    host_bad("[1:2:3:4:5:6:7:8:9]"); /* nine */
    host_bad("[1:2:3:4:5:6:7:8::]"); /* "::" stands for at least one group */
    host_bad("[1::2::3]");           /* two "::" */
    host_bad("[12345::]");           /* h16 is at most four digits */
    host_bad("[:1::]");
    host_bad("[1:]");
    host_bad("[1.2.3.4]"); /* an IPv4address is not bracketed */
    host_bad("[::1.2.3]");
    host_bad("[::1.2.3.256]");
    host_bad("[::1.2.3.04]");  /* dec-octet has no leading zero */
    host_bad("[::1.2.3.4:5]"); /* the IPv4address is the last 32 bits */
    host_bad("[1:2:3:4:5:6:7:1.2.3.4]");
    host_bad("[fe80::1%25eth0]"); /* a zone (RFC 6874) is not in RFC 3986 */
    host_bad("[v.x]");            /* IPvFuture: 1*HEXDIG */
    host_bad("[v1.]");            /* ... "." 1*( unreserved / sub-delims / ":" ) */
    host_bad("[v1x]");
    host_bad("[v1.a[b]");
    host_bad("[::1]]");
}

static const char *with_target(const char *target)
{
    static char raw[512];
    snprintf(raw, sizeof raw, "GET %s HTTP/1.1\r\nHost: example.com\r\n\r\n", target);
    return raw;
}

static void target_ok(const char *target)
{
    accepted(with_target(target));
}

static void target_bad(const char *target, int code, const char *name)
{
    refused(with_target(target), code, name, 400);
}

/* RFC 9112 §3.2.2: absolute-form; an origin server serves http and https
 * (RFC 9110 §4.2.1-4.2.2), whose URIs have "//" and a non-empty host
 * ("A recipient that processes such a URI reference MUST reject it as
 * invalid", §4.2.1), and no userinfo (§4.2.4: "A recipient SHOULD parse
 * for userinfo and treat its presence as an error"). */
static void test_absolute_form(void **state)
{
    (void)state;
    target_ok("http://example.com/x");
    target_ok("HTTP://Example.COM/x"); /* schemes are case-insensitive (RFC 3986 §3.1) */
    target_ok("https://example.com:8443/a?b=c");
    target_ok("hTtPs://example.com/");
    target_ok("http://example.com"); /* an empty path */
    target_ok("http://example.com?q=1");
    target_ok("http://example.com:/x");
    target_ok("http://[::1]:80/x");
    target_ok("http://127.0.0.1/x");
    target_ok("http://example.com/a@b"); /* '@' in the path is no userinfo */
    target_ok("http://a%41.com/");

    target_bad("ftp://example.com/x", -10117, "CSHW_E_TARGET_AUTHORITY");
    target_bad("httpx://example.com/x", -10117, "CSHW_E_TARGET_AUTHORITY");
    target_bad("ws://example.com/x", -10117, "CSHW_E_TARGET_AUTHORITY");
    target_bad("http:///x", -10117, "CSHW_E_TARGET_AUTHORITY"); /* empty host */
    target_bad("http://", -10117, "CSHW_E_TARGET_AUTHORITY");
    target_bad("http://?q", -10117, "CSHW_E_TARGET_AUTHORITY");
    target_bad("http://:80/x", -10117, "CSHW_E_TARGET_AUTHORITY");
    target_bad("http://a:b1/x", -10117, "CSHW_E_TARGET_AUTHORITY");
    target_bad("http://example.com:65536/", -10117, "CSHW_E_TARGET_AUTHORITY");
    target_bad("http://[zz]/x", -10117, "CSHW_E_TARGET_AUTHORITY");
    target_bad("http://[::1/x", -10117, "CSHW_E_TARGET_AUTHORITY");
    target_bad("http://a\"b/x", -10117, "CSHW_E_TARGET_AUTHORITY");

    target_bad("http://user@host/x", -10118, "CSHW_E_TARGET_USERINFO");
    target_bad("http://user:pw@host/x", -10118, "CSHW_E_TARGET_USERINFO");
    target_bad("https://@host/", -10118, "CSHW_E_TARGET_USERINFO");
    target_bad("http://host@", -10118, "CSHW_E_TARGET_USERINFO");
}

/* RFC 9112 §3.2: the request-target has no fragment; RFC 9110 §7.1: a
 * client removes it before sending. */
static void test_fragment(void **state)
{
    (void)state;
    target_bad("/a#b", -10119, "CSHW_E_TARGET_SYNTAX");
    target_bad("/#", -10119, "CSHW_E_TARGET_SYNTAX");
    target_bad("/a?b=c#d", -10119, "CSHW_E_TARGET_SYNTAX");
    target_bad("http://example.com/x#f", -10119, "CSHW_E_TARGET_SYNTAX");
    target_bad("http://example.com#f", -10119, "CSHW_E_TARGET_SYNTAX");
    target_ok("/a%23b"); /* an encoded '#' is data */
}

/* RFC 3986 §2.1: pct-encoded = "%" HEXDIG HEXDIG, in the path part of an
 * origin-form or absolute-form target. The query is left to the form
 * parser. */
static void test_percent_encoding(void **state)
{
    (void)state;
    target_ok("/a%20b");
    target_ok("/%41%7e%7E%00x"); /* well-formed; what it decodes to is the path decoder's */
    target_ok("/a?x=%zz");
    target_ok("/a?%");
    target_ok("http://example.com/a%2Fb");
    target_ok("http://example.com/x?%zz");

    target_bad("/a%zz", -10119, "CSHW_E_TARGET_SYNTAX");
    target_bad("/a%2", -10119, "CSHW_E_TARGET_SYNTAX");
    target_bad("/a%", -10119, "CSHW_E_TARGET_SYNTAX");
    target_bad("/%g0", -10119, "CSHW_E_TARGET_SYNTAX");
    target_bad("/%0g", -10119, "CSHW_E_TARGET_SYNTAX");
    target_bad("/ok%20/bad%2?q", -10119, "CSHW_E_TARGET_SYNTAX");
    target_bad("http://example.com/a%zz", -10119, "CSHW_E_TARGET_SYNTAX");
    target_bad("http://example.com/%", -10119, "CSHW_E_TARGET_SYNTAX");
}

/* RFC 9112 §3.2.3: authority-form = uri-host ":" port, the same host
 * grammar; §3.2.4: asterisk-form is "*" for OPTIONS, nothing to check. */
static void test_authority_and_asterisk_forms(void **state)
{
    (void)state;
    accepted("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
    accepted("CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n");
    accepted("CONNECT 192.0.2.1:8080 HTTP/1.1\r\nHost: 192.0.2.1:8080\r\n\r\n");
    accepted("OPTIONS * HTTP/1.1\r\nHost: example.com\r\n\r\n");
    accepted("OPTIONS * HTTP/1.1\r\nHost:\r\n\r\n");
    refused("CONNECT [zz]:443 HTTP/1.1\r\nHost: x\r\n\r\n", -10117, "CSHW_E_TARGET_AUTHORITY", 400);
    refused("CONNECT a%zz:443 HTTP/1.1\r\nHost: x\r\n\r\n", -10117, "CSHW_E_TARGET_AUTHORITY", 400);
    refused("CONNECT example.com:70000 HTTP/1.1\r\nHost: x\r\n\r\n", -10117,
            "CSHW_E_TARGET_AUTHORITY", 400);
    /* the Host is checked whatever the form */
    refused("OPTIONS * HTTP/1.1\r\nHost: a:b1\r\n\r\n", -10116, "CSHW_E_HOST_INVALID", 400);
}

/* With both wrong, the target is named (it is checked first); the Host is
 * checked even when an absolute-form target overrides it (RFC 9112 §3.2
 * asks for 400 on any invalid Host). */
static void test_target_before_host(void **state)
{
    (void)state;
    refused("GET /a%zz HTTP/1.1\r\nHost: a:b1\r\n\r\n", -10119, "CSHW_E_TARGET_SYNTAX", 400);
    refused("GET http://example.com/ HTTP/1.1\r\nHost: [zz]\r\n\r\n", -10116, "CSHW_E_HOST_INVALID",
            400);
    accepted("GET http://example.com/ HTTP/1.1\r\nHost: other.example\r\n\r\n");
}

/* Spans are offsets from the message's first byte: a second, pipelined
 * request is validated from its own start. */
static void test_spans_from_the_message_start(void **state)
{
    (void)state;
    static const char two[] = "GET /one HTTP/1.1\r\nHost: a\r\n\r\n"
                              "GET /two%zz HTTP/1.1\r\nHost: b:1\r\n\r\n";
    csh_header fields[8];
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, fields, 8, NULL, 0);
    assert_int_equal(csh_parser_execute(&p, two, sizeof two - 1), CSH_OK);
    assert_int_equal(cshw__request_validate(two, &p.msg), 0);
    const char *second = two + p.msg.head_length;
    csh_parser_init(&p, CSH_REQUEST, fields, 8, NULL, 0);
    assert_int_equal(csh_parser_execute(&p, second, strlen(second)), CSH_OK);
    assert_int_equal(cshw__request_validate(second, &p.msg), -10119);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_syntax),
        cmocka_unit_test(test_ip_literals),
        cmocka_unit_test(test_absolute_form),
        cmocka_unit_test(test_fragment),
        cmocka_unit_test(test_percent_encoding),
        cmocka_unit_test(test_authority_and_asterisk_forms),
        cmocka_unit_test(test_target_before_host),
        cmocka_unit_test(test_spans_from_the_message_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
