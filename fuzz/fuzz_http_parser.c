/* fuzz_http_parser: differential, cshttp against Node's http_parser 2.9.4
 * (Debian's libhttp-parser), on requests.
 *
 * The input is played by cshttp as a server would (fz_run), twice: strict, and
 * lenient about bare LF. The complete messages cshttp accepted form a prefix
 * of the input, which ends right after the last complete message: http_parser
 * counts a message only once it is complete, so it is given exactly that
 * prefix. Where http_parser accepts the prefix too, both must agree on the
 * number of messages and, for each message, on the method, the target (URL),
 * the body bytes (de-chunked) and whether the connection stays open.
 *
 * Inputs one of the two rejects are not compared: cshttp rejects on purpose
 * much that http_parser accepts (bare CR, obs-fold, whitespace before the
 * colon, CL with TE, unknown methods are the other way round...). Where both
 * accept and still differ for a documented reason, the exception is below, in
 * the code that makes it, marked EXCEPTION. Any other difference aborts: it is
 * a bug in one of them, or a choice to document here. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <http_parser.h>

#include "common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One message as either side saw it. */
typedef struct dmsg {
    fz_buf method;
    fz_buf url;
    fz_buf body;
    int keep_alive;
    int compare_body;       /* 0: the body is not compared (CONNECT, see below) */
    int compare_keep_alive; /* 0: keep-alive is not compared (see below) */
    int upgrade_candidate;  /* cshttp: CONNECT, or an Upgrade field */
    size_t start, end;      /* cshttp: offsets in the input */
} dmsg;

typedef struct dlist {
    dmsg *m;
    size_t n, cap;
    int stopped; /* cshttp: the run stopped at an exception */
} dlist;

static dmsg *dlist_add(dlist *l)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        dmsg *m = realloc(l->m, cap * sizeof *m);
        FZ_CHECK(m != NULL, "out of memory");
        memset(m + l->cap, 0, (cap - l->cap) * sizeof *m);
        l->m = m;
        l->cap = cap;
    }
    dmsg *d = &l->m[l->n++];
    fz_buf_clear(&d->method);
    fz_buf_clear(&d->url);
    fz_buf_clear(&d->body);
    d->keep_alive = d->upgrade_candidate = 0;
    d->compare_body = d->compare_keep_alive = 1;
    d->start = d->end = 0;
    return d;
}

/* ---- cshttp side --------------------------------------------------------- */

static int field_named(const fz_message *m, const char *name)
{
    const char *head = m->input + m->start;
    for (size_t i = 0; i < m->msg.num_headers; i++)
        if (csh_span_ieq(head, m->msg.headers[i].name, name)) return 1;
    return 0;
}

/* 1 if a field `name` has an HTAB anywhere after its colon on its line. */
static int field_line_has_tab(const fz_message *m, const char *name)
{
    const char *head = m->input + m->start;
    for (size_t i = 0; i < m->msg.num_headers; i++) {
        const csh_header *h = &m->msg.headers[i];
        if (!csh_span_ieq(head, h->name, name)) continue;
        for (size_t k = h->name.off + h->name.len; k < m->msg.head_length; k++) {
            if (head[k] == '\r' || head[k] == '\n') break;
            if (head[k] == '\t') return 1;
        }
    }
    return 0;
}

/* 1 if a field `name` is a list with an empty element (",close", "a,,b"). */
static int field_has_empty_element(const fz_message *m, const char *name)
{
    const char *head = m->input + m->start;
    for (size_t i = 0; i < m->msg.num_headers; i++) {
        const csh_header *h = &m->msg.headers[i];
        if (!csh_span_ieq(head, h->name, name)) continue;
        const char *v = head + h->value.off;
        size_t chars = 0; /* non-OWS bytes in the current element */
        for (size_t k = 0; k < h->value.len; k++) {
            if (v[k] == ',') {
                if (chars == 0) return 1;
                chars = 0;
            } else if (v[k] != ' ' && v[k] != '\t') {
                chars++;
            }
        }
        if (chars == 0) return 1;
    }
    return 0;
}

/* 1 when a Connection element other than the last is a proper prefix of
 * one of the options http_parser matches ("keep-alive", "close",
 * "upgrade"), such as "K" in "K,close". */
static int field_has_option_prefix_element(const fz_message *m, const char *name)
{
    static const char *const options[] = {"keep-alive", "close", "upgrade"};
    const char *head = m->input + m->start;
    for (size_t i = 0; i < m->msg.num_headers; i++) {
        const csh_header *h = &m->msg.headers[i];
        if (!csh_span_ieq(head, h->name, name)) continue;
        const char *v = head + h->value.off, *end = v + h->value.len;
        while (v < end) {
            while (v < end && (*v == ' ' || *v == '\t')) v++;
            const char *e = v;
            while (e < end && *e != ',' && *e != ' ' && *e != '\t') e++;
            const char *next = e;
            while (next < end && *next != ',') next++;
            if (next == end) break; /* the last element */
            size_t len = (size_t)(e - v);
            for (size_t k = 0; len > 0 && k < 3; k++)
                if (len < strlen(options[k]) && csh_mem_ieq(v, options[k], len)) return 1;
            v = next + 1;
        }
    }
    return 0;
}

/* 1 when a Connection element other than the first starts with '_'
 * ("x,_u,close"). */
static int field_has_underscore_element(const fz_message *m, const char *name)
{
    const char *head = m->input + m->start;
    for (size_t i = 0; i < m->msg.num_headers; i++) {
        const csh_header *h = &m->msg.headers[i];
        if (!csh_span_ieq(head, h->name, name)) continue;
        const char *v = head + h->value.off;
        for (size_t k = 0; k < h->value.len; k++) {
            if (v[k] != ',') continue;
            size_t j = k + 1;
            while (j < h->value.len && (v[j] == ' ' || v[j] == '\t')) j++;
            if (j < h->value.len && v[j] == '_') return 1;
        }
    }
    return 0;
}

static int cshttp_message(void *ctx, const fz_message *m)
{
    dlist *l = ctx;
    if (!m->complete) return 1;
    if (m->framing_bare_lf) {
        /* EXCEPTION (lenient mode only; strict cshttp rejects every bare LF):
         * http_parser takes everything after a chunk size up to the next CR as
         * chunk extensions, bare LFs included ("5;a\nX\r\n" is one chunk-size
         * line to it), while a recipient lenient about bare LF ends the line
         * at the LF — the mismatch behind CVE-2025-55315 (libcshttp/SMUGGLING.md). It
         * rejects a bare LF anywhere else in chunk framing. So a chunked body
         * with a bare LF outside its data is where the two may frame
         * differently by design: compare only the messages before it. */
        l->stopped = 1;
        return 1;
    }
    const char *head = m->input + m->start;
    dmsg *d = dlist_add(l);
    fz_buf_put(&d->method, head + m->msg.method_span.off, m->msg.method_span.len);
    fz_buf_put(&d->url, head + m->msg.target.off, m->msg.target.len);
    fz_buf_put(&d->body, m->body->data, m->body->len);
    d->keep_alive = !!(m->msg.flags & CSH_MSG_KEEP_ALIVE);
    d->start = m->start;
    d->end = m->end;
    d->upgrade_candidate = m->msg.method == CSH_METHOD_CONNECT || field_named(m, "upgrade");
    /* EXCEPTION: http_parser honours the obsolete Proxy-Connection field like
     * Connection (HTTP/1.0 + "Proxy-Connection: keep-alive" stays open);
     * cshttp reads Connection only (RFC 9112 §9.3). */
    if (field_named(m, "proxy-connection")) d->compare_keep_alive = 0;
    /* EXCEPTION: http_parser only skips SP around Connection options, not
     * HTAB (RFC 9110 §5.6.3 OWS is both): to it "close<HTAB>" is an unknown
     * option and the connection stays open. cshttp trims OWS. */
    if (field_line_has_tab(m, "connection")) d->compare_keep_alive = 0;
    /* EXCEPTION: empty list elements (RFC 9110 §5.6.1: a recipient MUST
     * accept and ignore them): cshttp ignores them, http_parser does not
     * recognise an option after one (",close" stays open to it). */
    if (field_has_empty_element(m, "connection")) d->compare_keep_alive = 0;
    /* EXCEPTION: an element that is a proper prefix of an option http_parser
     * matches, followed by a comma ("K,close", "c, close"): http_parser stays
     * in its matching state past the comma and misses the option after it
     * (the connection stays open to it). cshttp reads "close". */
    if (field_has_option_prefix_element(m, "connection")) d->compare_keep_alive = 0;
    /* EXCEPTION: an element after a comma that starts with '_' ("x,_u,close"):
     * http_parser lowercases a byte by setting bit 0x20 before its token
     * check, which turns '_' into DEL, not a token; it then stops looking
     * for options in that field and misses the "close" after it (the
     * connection stays open to it). '_' is a tchar (RFC 9110 §5.6.2), and
     * cshttp reads "close". */
    if (field_has_underscore_element(m, "connection")) d->compare_keep_alive = 0;
    if (m->msg.method == CSH_METHOD_CONNECT) {
        /* EXCEPTION: http_parser hands the connection over right after a
         * CONNECT head (the rest is tunnel data), whatever the head says about
         * a body; cshttp frames it like any request and leaves the tunnel to
         * the server. Compare the head, then stop. */
        d->compare_body = 0;
        l->stopped = 1;
        return 1;
    }
    return 0;
}

/* ---- http_parser side ---------------------------------------------------- */

typedef struct hp_ctx {
    dlist *l;
    dmsg *cur;
    int in_message;
    int in_trailers;
} hp_ctx;

static int hp_begin(http_parser *p)
{
    hp_ctx *c = p->data;
    c->cur = dlist_add(c->l);
    c->in_message = 1;
    c->in_trailers = 0;
    return 0;
}

static int hp_field(http_parser *p, const char *at, size_t len)
{
    hp_ctx *c = p->data;
    (void)at;
    (void)len;
    /* EXCEPTION: http_parser reads trailer fields like header fields, and a
     * "Connection: close" trailer ends the connection for it; cshttp never
     * lets a trailer change the head's meaning (RFC 9110 §6.5.1). Keep-alive
     * is not compared for a message with trailer fields. */
    if (c->in_trailers) c->cur->compare_keep_alive = 0;
    return 0;
}

static int hp_url(http_parser *p, const char *at, size_t len)
{
    hp_ctx *c = p->data;
    fz_buf_put(&c->cur->url, at, len);
    return 0;
}

static int hp_body(http_parser *p, const char *at, size_t len)
{
    hp_ctx *c = p->data;
    fz_buf_put(&c->cur->body, at, len);
    return 0;
}

static int hp_headers_complete(http_parser *p)
{
    hp_ctx *c = p->data;
    const char *name = http_method_str((enum http_method)p->method);
    fz_buf_put(&c->cur->method, name, strlen(name));
    /* EXCEPTION: "Connection: keep-alive" and "Connection: close" in one
     * message: http_parser keeps an HTTP/1.0 connection open (it looks for
     * keep-alive only), cshttp lets close win. Not compared. */
    if ((p->flags & F_CONNECTION_CLOSE) && (p->flags & F_CONNECTION_KEEP_ALIVE))
        c->cur->compare_keep_alive = 0;
    c->in_trailers = 1;
    return 0;
}

static int hp_complete(http_parser *p)
{
    hp_ctx *c = p->data;
    c->cur->keep_alive = http_should_keep_alive(p);
    c->in_message = 0;
    return 0;
}

typedef struct hp_run {
    int accepted;   /* no error, and every byte parsed (or handed over on upgrade) */
    int upgrade;    /* stopped at an upgrade or CONNECT */
    int in_message; /* a message had begun and not completed at the end */
    size_t parsed;
    enum http_errno err;
} hp_run;

static void run_http_parser(const char *in, size_t len, dlist *out, hp_run *r)
{
    http_parser p;
    http_parser_settings s;
    hp_ctx c = {out, NULL, 0, 0};

    http_parser_settings_init(&s);
    s.on_message_begin = hp_begin;
    s.on_url = hp_url;
    s.on_header_field = hp_field;
    s.on_body = hp_body;
    s.on_headers_complete = hp_headers_complete;
    s.on_message_complete = hp_complete;
    http_parser_init(&p, HTTP_REQUEST);
    p.data = &c;
    out->n = 0;
    r->parsed = http_parser_execute(&p, &s, in, len);
    r->err = HTTP_PARSER_ERRNO(&p);
    r->upgrade = p.upgrade;
    r->in_message = c.in_message;
    r->accepted = r->err == HPE_OK && (r->parsed == len || p.upgrade);
    /* Messages counted are the complete ones. */
    if (c.in_message && out->n > 0) out->n--;
}

/* ---- comparison ---------------------------------------------------------- */

static int same(const fz_buf *a, const fz_buf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

static void print_list(const char *who, const dlist *l)
{
    fprintf(stderr, "%s: %zu messages\n", who, l->n);
    for (size_t i = 0; i < l->n; i++) {
        const dmsg *d = &l->m[i];
        fz_buf b = {0};
        fz_buf_printf(&b, "  [%zu] ", i);
        fz_buf_escaped(&b, d->method.data, d->method.len);
        fz_buf_put(&b, " \"", 2);
        fz_buf_escaped(&b, d->url.data, d->url.len);
        fz_buf_printf(&b, "\" keep-alive %d body %zu \"", d->keep_alive, d->body.len);
        fz_buf_escaped(&b, d->body.data, d->body.len);
        fz_buf_put(&b, "\"", 1);
        if (d->end) fz_buf_printf(&b, " bytes %zu..%zu", d->start, d->end);
        fprintf(stderr, "%.*s\n", (int)b.len, b.data);
        fz_buf_free(&b);
    }
}

static void mismatch(const char *what, size_t i, const char *in, size_t len, unsigned flags,
                     const dlist *cs, const dlist *hp, const hp_run *r)
{
    fprintf(stderr, "\nfuzz_http_parser: %s (message %zu, cshttp %s)\n", what, i,
            (flags & CSH_PARSE_LENIENT_BARE_LF) ? "lenient" : "strict");
    fz_print_escaped("compared prefix", in, len);
    print_list("cshttp", cs);
    fprintf(stderr, "http_parser: parsed %zu, %s, upgrade %d, in message %d\n", r->parsed,
            http_errno_name(r->err), r->upgrade, r->in_message);
    print_list("http_parser", hp);
    FZ_CHECK(0, "cshttp and http_parser disagree: %s", what);
}

static void compare_mode(const uint8_t *data, size_t size, unsigned flags, dlist *cs, dlist *hp)
{
    const char *in = (const char *)data;
    fz_config cfg = {0};
    fz_result res;

    cfg.type = CSH_REQUEST;
    cfg.flags = flags;
    cfg.trailers_cap = 0;
    cfg.on_message = cshttp_message;
    cfg.ctx = cs;
    cs->n = 0;
    cs->stopped = 0;
    fz_run(&cfg, data, size, &res);
    if (cs->n == 0) return;

    size_t n = cs->n;
    size_t len = cs->m[n - 1].end;
    hp_run r;
    run_http_parser(in, len, hp, &r);
    if (!r.accepted && hp->n > 0 && hp->n < n) {
        /* http_parser rejected a later message: compare the messages it
         * completed before, if cshttp ends one at the same place. */
        n = hp->n;
        len = cs->m[n - 1].end;
        run_http_parser(in, len, hp, &r);
    }
    if (!r.accepted) return; /* http_parser rejects: nothing to compare */

    if (r.upgrade) {
        /* EXCEPTION: after a request with Upgrade and "Connection: upgrade"
         * (or a CONNECT), http_parser stops parsing: the rest belongs to
         * another protocol. Whether it does is the server's decision in cshttp
         * (CSH_MSG_UPGRADE), which goes on parsing HTTP. Compare up to and
         * including that message. */
        if (hp->n >= 1 && hp->n <= n) {
            if (!cs->m[hp->n - 1].upgrade_candidate)
                mismatch("http_parser upgraded on a message without Upgrade or CONNECT", hp->n - 1,
                         in, len, flags, cs, hp, &r);
            n = hp->n;
        }
    }
    if (fz_verbose()) {
        fprintf(stderr, "fuzz_http_parser: cshttp %s, comparing %zu messages (%zu bytes)%s\n",
                (flags & CSH_PARSE_LENIENT_BARE_LF) ? "lenient" : "strict", n, len,
                r.upgrade ? ", http_parser upgraded" : "");
        print_list("cshttp", cs);
        print_list("http_parser", hp);
    }
    if (hp->n != n)
        mismatch("number of messages", n < hp->n ? n : hp->n, in, len, flags, cs, hp, &r);
    for (size_t i = 0; i < n; i++) {
        const dmsg *a = &cs->m[i], *b = &hp->m[i];
        if (!same(&a->method, &b->method)) mismatch("method", i, in, len, flags, cs, hp, &r);
        if (!same(&a->url, &b->url)) mismatch("target", i, in, len, flags, cs, hp, &r);
        if (a->compare_body && !same(&a->body, &b->body))
            mismatch("body", i, in, len, flags, cs, hp, &r);
        if (a->compare_keep_alive && b->compare_keep_alive && a->keep_alive != b->keep_alive)
            mismatch("keep-alive", i, in, len, flags, cs, hp, &r);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static dlist cs, hp;
    compare_mode(data, size, 0, &cs, &hp);
    compare_mode(data, size, CSH_PARSE_LENIENT_BARE_LF, &cs, &hp);
    return 0;
}
