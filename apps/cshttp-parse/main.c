/* cshttp-parse: the libcshttp parser on the command line.
 *
 * Reads every byte of standard input, parses it as HTTP/1.1 requests (or
 * responses with --response), message after message, and prints what the
 * parser found, or where and why it stopped, as one JSON document:
 *
 *   {
 *     "messages": [
 *       {one object per message, on one line},
 *       ...
 *     ],
 *     "error": null | {"name", "code", "message", "status", "offset", ...},
 *     "incomplete": null | {"message_index", "in", "message_offset", "offset"},
 *     "tunnel": null | {"offset", "length"},
 *     "complete": true | false,
 *     "input_length": N
 *   }
 *
 * Strings are ASCII-only JSON. `"` and `\` are escaped, tab, LF and CR print
 * as \t, \n and \r, every other control byte (0x00-0x1f, 0x7f) as \u00XX, and
 * every byte from 0x80 to 0xff as the code point of the same value, \u0080 to
 * \u00ff. Bytes on the wire are not necessarily UTF-8, so no byte is ever
 * interpreted: decoding a string and encoding it as Latin-1 gives back the
 * exact bytes (in Python: json.loads(out)[...].encode("latin-1")).
 *
 * Offsets are absolute offsets in the input. The whole input is read first
 * and then handed to the parser, all at once or, with --feed N, N bytes more
 * at a time as if they arrived in pieces; the output must not depend on it.
 *
 * Exit status: 0 the input is whole messages, 1 usage error (or stdin/stdout
 * failed), 2 parse error, 3 the input ends inside a message. */
#include <cshttp/cshttp.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    EXIT_WHOLE = 0,
    EXIT_USAGE = 1,
    EXIT_PARSE_ERROR = 2,
    EXIT_INCOMPLETE = 3,
};

/* More than the default max_fields (100), so that limit is the one that
 * applies, as it would in a server using the defaults. */
#define MAX_FIELDS 128

static const char *prog = "cshttp-parse";

typedef struct options {
    csh_parser_type type;
    const char *method_arg; /* --method as given, NULL if absent */
    csh_method method;
    unsigned flags;
    size_t feed; /* bytes handed to the parser per step; 0: all at once */
} options;

static void usage(FILE *o)
{
    fprintf(o,
            "usage: %s [options] < input\n"
            "\n"
            "Parses the bytes on standard input as HTTP/1.1 requests (or responses),\n"
            "one message after another, and prints what the parser found as one JSON\n"
            "document.\n"
            "\n"
            "options:\n"
            "  --request         parse requests (the default)\n"
            "  --response        parse responses; a 1xx interim response is followed by\n"
            "                    the final one\n"
            "  --method METHOD   with --response: the method of the request every\n"
            "                    response answers (default GET). HEAD: no body;\n"
            "                    CONNECT: a 2xx response opens a tunnel. Methods are\n"
            "                    case-sensitive; any other token is an extension method\n"
            "  --lenient-lf      accept a bare LF as a line end (CSH_PARSE_LENIENT_BARE_LF)\n"
            "  --no-simd         use the portable scanner (CSH_PARSE_NO_SIMD)\n"
            "  --feed N          hand the parser N more bytes at a time, as if they arrived\n"
            "                    in pieces (default: all at once); the output is the same\n"
            "  -h, --help        print this help and exit\n"
            "  --version         print the program and library versions and exit\n"
            "\n"
            "output:\n"
            "  {\"messages\": [...], \"error\": null|{...}, \"incomplete\": null|{...},\n"
            "   \"tunnel\": null|{...}, \"complete\": true|false, \"input_length\": N}\n"
            "  One object per message: method, target, target_form or status, reason;\n"
            "  version, headers ([name, value] in order), host, upgrade, framing, flags,\n"
            "  head_length, body (de-chunked), body_length, trailers, complete.\n"
            "  Offsets are absolute in the input. Strings are ASCII: control bytes are\n"
            "  escaped (\\t \\n \\r, else \\u00XX) and bytes 0x80-0xff are written as\n"
            "  \\u0080-\\u00ff, so a string encoded as Latin-1 gives back the input bytes.\n"
            "\n"
            "exit status:\n"
            "  0  the input is whole messages (it ends at a message boundary; a response\n"
            "     body delimited by the end of the connection ends with the input)\n"
            "  1  usage error, or standard input or output failed\n"
            "  2  parse error (named in \"error\")\n"
            "  3  the input ends inside a message (or after an interim response)\n",
            prog);
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", prog);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry '%s --help' for more information.\n", prog);
    return EXIT_USAGE;
}

/* tchar, RFC 9110 §5.6.2 */
static int is_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return 1;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int parse_method(const char *s, csh_method *out)
{
    static const csh_method known[] = {
        CSH_METHOD_GET,     CSH_METHOD_HEAD,   CSH_METHOD_POST,
        CSH_METHOD_PUT,     CSH_METHOD_DELETE, CSH_METHOD_CONNECT,
        CSH_METHOD_OPTIONS, CSH_METHOD_TRACE,  CSH_METHOD_PATCH,
    };
    if (*s == '\0') return -1;
    for (const char *c = s; *c; c++)
        if (!is_tchar((unsigned char)*c)) return -1;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(s, csh_method_name(known[i])) == 0) {
            *out = known[i];
            return 0;
        }
    }
    *out = CSH_METHOD_OTHER;
    return 0;
}

static int parse_size(const char *s, size_t *out)
{
    if (*s < '0' || *s > '9') return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v == 0 || v > SIZE_MAX) return -1;
    *out = (size_t)v;
    return 0;
}

/* The value of an option that takes one: "--name=value" or "--name value". */
static const char *option_value(int argc, char **argv, int *i, const char *name, int *err)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    *err = 0;
    if (strncmp(a, name, n) != 0) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n] != '\0') return NULL;
    if (*i + 1 >= argc) {
        *err = usage_error("option '%s' needs a value", name);
        return NULL;
    }
    return argv[++*i];
}

/* Returns -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv, options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->type = CSH_REQUEST;
    opt->method = CSH_METHOD_GET;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v;
        int err;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return fflush(stdout) == 0 ? EXIT_WHOLE : EXIT_USAGE;
        } else if (strcmp(a, "--version") == 0) {
            printf("%s (libcshttp %s, built against %s)\n", prog, csh_version_string(),
                   CSH_VERSION_STRING);
            return fflush(stdout) == 0 ? EXIT_WHOLE : EXIT_USAGE;
        } else if (strcmp(a, "--request") == 0) {
            opt->type = CSH_REQUEST;
        } else if (strcmp(a, "--response") == 0) {
            opt->type = CSH_RESPONSE;
        } else if (strcmp(a, "--lenient-lf") == 0) {
            opt->flags |= CSH_PARSE_LENIENT_BARE_LF;
        } else if (strcmp(a, "--no-simd") == 0) {
            opt->flags |= CSH_PARSE_NO_SIMD;
        } else if ((v = option_value(argc, argv, &i, "--method", &err)) != NULL || err) {
            if (err) return err;
            if (parse_method(v, &opt->method) != 0)
                return usage_error("invalid value for --method: '%s' (not a method token)", v);
            opt->method_arg = v;
        } else if ((v = option_value(argc, argv, &i, "--feed", &err)) != NULL || err) {
            if (err) return err;
            if (parse_size(v, &opt->feed) != 0)
                return usage_error("invalid value for --feed: '%s' (a byte count > 0)", v);
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage_error("unknown option '%s'", a);
        } else {
            return usage_error("unexpected argument '%s' (the input is read from stdin)", a);
        }
    }
    if (opt->method_arg && opt->type != CSH_RESPONSE)
        return usage_error("option '%s' applies to responses only (add --response)", "--method");
    return -1;
}

static int read_all(FILE *in, char **out, size_t *out_len)
{
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    if (!buf) return -1;
    for (;;) {
        if (len == cap) {
            char *nb = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                errno = ENOMEM;
                return -1;
            }
            buf = nb;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - len, in);
        len += n;
        if (n == 0) {
            if (ferror(in)) {
                free(buf);
                return -1;
            }
            break;
        }
    }
    *out = buf;
    *out_len = len;
    return 0;
}

/* ---- JSON output ------------------------------------------------------ */

/* The escaped bytes of a string, without the quotes (see the top comment). */
static void json_bytes(FILE *o, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        switch (c) {
        case '"':
            fputs("\\\"", o);
            break;
        case '\\':
            fputs("\\\\", o);
            break;
        case '\t':
            fputs("\\t", o);
            break;
        case '\n':
            fputs("\\n", o);
            break;
        case '\r':
            fputs("\\r", o);
            break;
        default:
            if (c < 0x20 || c >= 0x7f)
                fprintf(o, "\\u%04x", (unsigned)c);
            else
                putc(c, o);
        }
    }
}

static void json_string(FILE *o, const char *p, size_t n)
{
    putc('"', o);
    json_bytes(o, p, n);
    putc('"', o);
}

static void json_cstr(FILE *o, const char *s)
{
    json_string(o, s, strlen(s));
}

static void json_span(FILE *o, const char *base, csh_span s)
{
    json_string(o, csh_span_ptr(base, s), s.len);
}

static void json_bool(FILE *o, const char *key, unsigned v, int comma)
{
    fprintf(o, "%s\"%s\":%s", comma ? "," : "", key, v ? "true" : "false");
}

static void json_fields(FILE *o, const char *base, const csh_header *h, size_t n)
{
    putc('[', o);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ",[" : "[", o);
        json_span(o, base, h[i].name);
        putc(',', o);
        json_span(o, base, h[i].value);
        putc(']', o);
    }
    putc(']', o);
}

static const char *target_form_name(csh_target_form f)
{
    switch (f) {
    case CSH_TARGET_ORIGIN:
        return "origin";
    case CSH_TARGET_ABSOLUTE:
        return "absolute";
    case CSH_TARGET_AUTHORITY:
        return "authority";
    case CSH_TARGET_ASTERISK:
        return "asterisk";
    }
    return "unknown";
}

static const char *body_kind_name(csh_body_kind k)
{
    switch (k) {
    case CSH_BODY_NONE:
        return "none";
    case CSH_BODY_LENGTH:
        return "length";
    case CSH_BODY_CHUNKED:
        return "chunked";
    case CSH_BODY_UNTIL_CLOSE:
        return "until_close";
    }
    return "unknown";
}

/* Everything known once the head is parsed, up to the opening quote of the
 * body, which is streamed after it. `base` is the message's first byte. */
static void print_head(FILE *o, size_t index, size_t offset, csh_parser_type type, const char *base,
                       const csh_message *m)
{
    fprintf(o, "    {\"index\":%zu,\"offset\":%zu,\"type\":\"%s\"", index, offset,
            type == CSH_REQUEST ? "request" : "response");
    if (type == CSH_REQUEST) {
        fputs(",\"method\":", o);
        json_span(o, base, m->method_span);
        fputs(",\"target\":", o);
        json_span(o, base, m->target);
        fprintf(o, ",\"target_form\":\"%s\"", target_form_name(m->target_form));
    } else {
        fprintf(o, ",\"status\":%d,\"reason\":", m->status);
        json_span(o, base, m->reason);
    }
    fprintf(o, ",\"version\":\"HTTP/%d.%d\",\"headers\":", m->version_major, m->version_minor);
    json_fields(o, base, m->headers, m->num_headers);
    fputs(",\"host\":", o);
    if (m->flags & CSH_MSG_HAS_HOST)
        json_span(o, base, m->host);
    else
        fputs("null", o);
    fputs(",\"upgrade\":", o);
    if (m->upgrade.len > 0)
        json_span(o, base, m->upgrade);
    else
        fputs("null", o);
    fprintf(o, ",\"framing\":{\"body\":\"%s\",\"content_length\":", body_kind_name(m->body));
    if (m->body == CSH_BODY_LENGTH)
        fprintf(o, "%" PRIu64 "}", m->content_length);
    else
        fputs("null}", o);
    unsigned f = m->flags;
    fputs(",\"flags\":{", o);
    json_bool(o, "keep_alive", f & CSH_MSG_KEEP_ALIVE, 0);
    json_bool(o, "connection_close", f & CSH_MSG_CONNECTION_CLOSE, 1);
    json_bool(o, "expect_continue", f & CSH_MSG_EXPECT_CONTINUE, 1);
    json_bool(o, "expect_other", f & CSH_MSG_EXPECT_OTHER, 1);
    json_bool(o, "upgrade", f & CSH_MSG_UPGRADE, 1);
    json_bool(o, "has_host", f & CSH_MSG_HAS_HOST, 1);
    json_bool(o, "has_content_length", f & CSH_MSG_HAS_CONTENT_LENGTH, 1);
    json_bool(o, "has_transfer_encoding", f & CSH_MSG_HAS_TRANSFER_ENCODING, 1);
    json_bool(o, "te_other_codings", f & CSH_MSG_TE_OTHER_CODINGS, 1);
    json_bool(o, "interim", f & CSH_MSG_INTERIM, 1);
    json_bool(o, "tunnel", f & CSH_MSG_TUNNEL, 1);
    fprintf(o, "},\"head_length\":%zu,\"body\":\"", m->head_length);
}

/* ---- the parse loop --------------------------------------------------- */

/* The input as it "arrives": recv bytes of it have been handed over so far. */
typedef struct input {
    const char *buf;
    size_t len;
    size_t recv;
    size_t feed;
} input;

static void receive_more(input *in)
{
    if (in->feed == 0 || in->len - in->recv <= in->feed)
        in->recv = in->len;
    else
        in->recv += in->feed;
}

typedef struct outcome {
    int code;          /* csh error, or 0 */
    size_t offset;     /* error: absolute offset */
    size_t msg_index;  /* the message being parsed when it stopped */
    size_t msg_offset; /* and its first byte */
    const char *where; /* "head" or "body" */
    int incomplete;
    int tunnel;
    size_t tunnel_offset;
} outcome;

static void parse_all(FILE *o, const options *opt, input *in, outcome *out)
{
    static csh_header fields[MAX_FIELDS];
    static csh_header trailers[MAX_FIELDS];
    csh_parser p;
    csh_body b;
    size_t pos = 0, index = 0;
    int awaiting_final = 0, printed = 0;

    memset(out, 0, sizeof *out);
    csh_parser_init(&p, opt->type, fields, MAX_FIELDS, NULL, opt->flags);
    fputs("{\n  \"messages\": [", o);
    for (;; index++) {
        int rc;
        if (in->recv == pos) receive_more(in);
        if (pos == in->len) {
            /* A boundary, unless the final response to an interim is owed. */
            if (awaiting_final) {
                out->incomplete = 1;
                out->where = "head";
                out->msg_index = index;
                out->msg_offset = pos;
            }
            break;
        }
        out->msg_index = index;
        out->msg_offset = pos;
        out->where = "head";
        if (index > 0) csh_parser_reset(&p);
        if (opt->type == CSH_RESPONSE) csh_parser_set_request_method(&p, opt->method);
        for (;;) {
            rc = csh_parser_execute(&p, in->buf + pos, in->recv - pos);
            if (rc != CSH_INCOMPLETE || in->recv == in->len) break;
            receive_more(in);
        }
        if (rc == CSH_INCOMPLETE) {
            out->incomplete = 1;
            break;
        }
        if (rc < 0) {
            out->code = rc;
            out->offset = pos + csh_parser_error_offset(&p);
            break;
        }

        const csh_message *m = &p.msg;
        fputs(printed ? ",\n" : "\n", o);
        printed = 1;
        print_head(o, index, pos, opt->type, in->buf + pos, m);
        size_t cur = pos + m->head_length;
        uint64_t body_len = 0;
        int body_rc = CSH_OK;
        size_t last_call = cur; /* the buffer of the last csh_body_read: trailer spans */

        if (m->flags & CSH_MSG_TUNNEL) {
            /* The bytes after the head belong to another protocol. */
            out->tunnel = 1;
            out->tunnel_offset = cur;
        } else {
            out->where = "body";
            csh_body_init(&b, m, NULL, opt->flags, trailers, MAX_FIELDS);
            for (;;) {
                size_t used = 0;
                csh_span data = {0, 0};
                last_call = cur;
                body_rc = csh_body_read(&b, in->buf + cur, in->recv - cur, &used, &data);
                if (body_rc == CSH_DATA) {
                    json_bytes(o, in->buf + cur + data.off, data.len);
                    body_len += data.len;
                    cur += used;
                    if (used == 0 && data.len == 0) {
                        body_rc = CSH_E_INVALID_ARGUMENT; /* no progress: do not spin */
                        break;
                    }
                    continue;
                }
                if (body_rc == CSH_INCOMPLETE) {
                    cur += used;
                    if (in->recv < in->len) {
                        receive_more(in);
                        continue;
                    }
                    /* The end of the input: the end of a body delimited by
                     * the close, or a message cut short. */
                    body_rc = csh_body_finish(&b);
                    if (body_rc == CSH_E_BODY_TRUNCATED) {
                        out->incomplete = 1;
                        body_rc = CSH_INCOMPLETE;
                    } else if (body_rc < 0) {
                        out->code = body_rc;
                        out->offset = cur;
                    }
                    break;
                }
                if (body_rc < 0) {
                    out->code = body_rc;
                    out->offset = cur + used;
                    break;
                }
                cur += used; /* CSH_OK: the body ended */
                break;
            }
        }

        fprintf(o, "\",\"body_length\":%" PRIu64 ",\"trailers\":", body_len);
        if (m->body == CSH_BODY_CHUNKED && body_rc == CSH_OK && !out->tunnel) {
            json_fields(o, in->buf + last_call, b.chunked.trailers, b.chunked.num_trailers);
            fprintf(o, ",\"chunks\":%" PRIu64, b.chunked.chunks);
        } else {
            fputs("null", o);
        }
        fprintf(o, ",\"complete\":%s}", body_rc == CSH_OK ? "true" : "false");
        if (body_rc != CSH_OK || out->tunnel) break;
        awaiting_final = opt->type == CSH_RESPONSE && (m->flags & CSH_MSG_INTERIM);
        pos = cur;
    }
    fputs(printed ? "\n  ],\n" : "],\n", o);
}

static void print_trailer(FILE *o, const input *in, const outcome *out)
{
    fputs("  \"error\": ", o);
    if (out->code) {
        fputs("{\"name\":", o);
        json_cstr(o, csh_error_name(out->code));
        fprintf(o, ",\"code\":%d,\"message\":", out->code);
        json_cstr(o, csh_error_message(out->code));
        fprintf(o,
                ",\"status\":%d,\"offset\":%zu,\"message_index\":%zu,\"message_offset\":%zu,"
                "\"in\":\"%s\"}",
                csh_error_status(out->code), out->offset, out->msg_index, out->msg_offset,
                out->where);
    } else {
        fputs("null", o);
    }
    fputs(",\n  \"incomplete\": ", o);
    if (out->incomplete)
        fprintf(o, "{\"message_index\":%zu,\"message_offset\":%zu,\"in\":\"%s\",\"offset\":%zu}",
                out->msg_index, out->msg_offset, out->where, in->len);
    else
        fputs("null", o);
    fputs(",\n  \"tunnel\": ", o);
    if (out->tunnel)
        fprintf(o, "{\"offset\":%zu,\"length\":%zu}", out->tunnel_offset,
                in->len - out->tunnel_offset);
    else
        fputs("null", o);
    fprintf(o, ",\n  \"complete\": %s,\n  \"input_length\": %zu\n}\n",
            out->code || out->incomplete ? "false" : "true", in->len);
}

int main(int argc, char **argv)
{
    options opt;
    int rc = parse_args(argc, argv, &opt);
    if (rc >= 0) return rc;

    input in = {0};
    char *buf = NULL;
    if (read_all(stdin, &buf, &in.len) != 0) {
        fprintf(stderr, "%s: reading standard input: %s\n", prog, strerror(errno));
        return EXIT_USAGE;
    }
    in.buf = buf;
    in.feed = opt.feed;

    outcome out;
    parse_all(stdout, &opt, &in, &out);
    print_trailer(stdout, &in, &out);
    free(buf);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "%s: writing standard output: %s\n", prog, strerror(errno));
        return EXIT_USAGE;
    }
    if (out.code) return EXIT_PARSE_ERROR;
    if (out.incomplete) return EXIT_INCOMPLETE;
    return EXIT_WHOLE;
}
