/* Wire case files: loader, runner and comparison. See tc_cases.h and
 * cases/README.md. */
#define _POSIX_C_SOURCE 200809L

#include "tc_cases.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small utilities ------------------------------------------------------ */

static void *tc_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (q == NULL) {
        fprintf(stderr, "out of memory\n");
        abort();
    }
    return q;
}

static char *tc_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = tc_xrealloc(NULL, n);
    memcpy(d, s, n);
    return d;
}

static void bytes_append(tc_bytes *b, const char *p, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) cap *= 2;
        b->p = tc_xrealloc(b->p, cap);
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void bytes_set(tc_bytes *b, const char *p, size_t n)
{
    b->n = 0;
    bytes_append(b, p, n);
}

static void bytes_free(tc_bytes *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

static int bytes_eq(const tc_bytes *a, const tc_bytes *b)
{
    return a->n == b->n && (a->n == 0 || memcmp(a->p, b->p, a->n) == 0);
}

/* Writes `b` escaped (like the case syntax) into out, truncated. */
static const char *bytes_show(const tc_bytes *b, char *out, size_t outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < b->n && o + 8 < outlen; i++) {
        unsigned char ch = (unsigned char)b->p[i];
        if (ch == '\r')
            o += (size_t)snprintf(out + o, outlen - o, "\\r");
        else if (ch == '\n')
            o += (size_t)snprintf(out + o, outlen - o, "\\n");
        else if (ch == '\t')
            o += (size_t)snprintf(out + o, outlen - o, "\\t");
        else if (ch == '\\')
            o += (size_t)snprintf(out + o, outlen - o, "\\\\");
        else if (ch < 0x20 || ch >= 0x7f)
            o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", ch);
        else
            out[o++] = (char)ch;
        if (i + 1 < b->n && o + 8 >= outlen) {
            snprintf(out + o, outlen - o, "...");
            return out;
        }
    }
    out[o < outlen ? o : outlen - 1] = '\0';
    return out;
}

static int why(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int why(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return 0;
}

/* ---- names ------------------------------------------------------------------ */

static const struct {
    const char *name;
    int code;
    int status;
} tc_errors[] = {
#define TC_ERR_(name, value, status, message) {"CSH_E_" #name, value, status},
    CSH_ERROR_MAP(TC_ERR_)
#undef TC_ERR_
};

int tc_error_code(const char *name, int *status)
{
    for (size_t i = 0; i < sizeof tc_errors / sizeof tc_errors[0]; i++) {
        if (strcmp(tc_errors[i].name, name) == 0) {
            if (status) *status = tc_errors[i].status;
            return tc_errors[i].code;
        }
    }
    return -1000;
}

const char *tc_error_name(int code)
{
    if (code == CSH_OK) return "CSH_OK";
    if (code == CSH_INCOMPLETE) return "CSH_INCOMPLETE";
    if (code == CSH_DATA) return "CSH_DATA";
    for (size_t i = 0; i < sizeof tc_errors / sizeof tc_errors[0]; i++)
        if (tc_errors[i].code == code) return tc_errors[i].name;
    return "(unknown code)";
}

static const char *const tc_method_names[] = {
    "", "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
};

static int method_from_name(const char *s, size_t n)
{
    for (int i = 1; i < (int)(sizeof tc_method_names / sizeof tc_method_names[0]); i++)
        if (strlen(tc_method_names[i]) == n && memcmp(tc_method_names[i], s, n) == 0) return i;
    return CSH_METHOD_OTHER;
}

static const char *const tc_form_names[] = {"origin", "absolute", "authority", "asterisk"};
static const char *const tc_body_names[] = {"none", "length", "chunked", "until-close"};

static const struct {
    const char *name;
    unsigned flag;
} tc_flag_names[] = {
    {"keep-alive", CSH_MSG_KEEP_ALIVE},
    {"connection-close", CSH_MSG_CONNECTION_CLOSE},
    {"expect-continue", CSH_MSG_EXPECT_CONTINUE},
    {"expect-other", CSH_MSG_EXPECT_OTHER},
    {"upgrade", CSH_MSG_UPGRADE},
    {"has-host", CSH_MSG_HAS_HOST},
    {"has-content-length", CSH_MSG_HAS_CONTENT_LENGTH},
    {"has-transfer-encoding", CSH_MSG_HAS_TRANSFER_ENCODING},
    {"te-other-codings", CSH_MSG_TE_OTHER_CODINGS},
    {"interim", CSH_MSG_INTERIM},
    {"tunnel", CSH_MSG_TUNNEL},
};

static const char *flags_show(unsigned f, char *out, size_t outlen)
{
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof tc_flag_names / sizeof tc_flag_names[0]; i++) {
        if (f & tc_flag_names[i].flag) {
            o += (size_t)snprintf(out + o, o < outlen ? outlen - o : 0, "%s%s", o ? " " : "",
                                  tc_flag_names[i].name);
            f &= ~tc_flag_names[i].flag;
        }
    }
    if (f && o < outlen)
        snprintf(out + o, outlen - o, "%s0x%x", o ? " " : "", f);
    else if (o == 0)
        snprintf(out, outlen, "none");
    return out;
}

/* ---- loader ----------------------------------------------------------------- */

typedef struct loader {
    const char *file;
    int line;
    char *err;
    size_t errlen;
} loader;

static int load_error(loader *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int load_error(loader *L, const char *fmt, ...)
{
    va_list ap;
    int o = snprintf(L->err, L->errlen, "%s:%d: ", L->file, L->line);
    va_start(ap, fmt);
    if (o >= 0 && (size_t)o < L->errlen) vsnprintf(L->err + o, L->errlen - (size_t)o, fmt, ap);
    va_end(ap);
    return -1;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes the escapes \r \n \t \0 \\ \xNN of `s` and appends to `out`. */
static int unescape(loader *L, const char *s, tc_bytes *out)
{
    for (const char *q = s; *q; q++) {
        char ch = *q;
        if (ch != '\\') {
            bytes_append(out, &ch, 1);
            continue;
        }
        q++;
        switch (*q) {
        case 'r':
            ch = '\r';
            break;
        case 'n':
            ch = '\n';
            break;
        case 't':
            ch = '\t';
            break;
        case '0':
            ch = '\0';
            break;
        case '\\':
            ch = '\\';
            break;
        case 'x': {
            int hi = hexval(q[1]), lo = hi < 0 ? -1 : hexval(q[2]);
            if (hi < 0 || lo < 0) return load_error(L, "bad \\x escape");
            ch = (char)(hi * 16 + lo);
            q += 2;
            break;
        }
        default:
            return load_error(L, "unknown escape '\\%c'", *q ? *q : '0');
        }
        bytes_append(out, &ch, 1);
    }
    return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
    char *end;
    if (!isdigit((unsigned char)*s)) return -1;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end != '\0') return -1;
    *v = x;
    return 0;
}

static int parse_size(const char *s, size_t *v)
{
    uint64_t x;
    if (parse_u64(s, &x) || x > SIZE_MAX) return -1;
    *v = (size_t)x;
    return 0;
}

static int parse_flag_list(loader *L, const char *s, unsigned *out)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    *out = 0;
    for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok;
         tok = strtok_r(NULL, " ", &save)) {
        if (strcmp(tok, "none") == 0) continue;
        size_t i;
        for (i = 0; i < sizeof tc_flag_names / sizeof tc_flag_names[0]; i++)
            if (strcmp(tok, tc_flag_names[i].name) == 0) break;
        if (i == sizeof tc_flag_names / sizeof tc_flag_names[0])
            return load_error(L, "unknown message flag '%s'", tok);
        *out |= tc_flag_names[i].flag;
    }
    return 0;
}

/* "IDX Name: value" */
static int parse_field(loader *L, const char *s, tc_field *f)
{
    memset(f, 0, sizeof *f);
    char *end;
    if (!isdigit((unsigned char)*s)) return load_error(L, "field needs an index: IDX Name: value");
    f->index = (size_t)strtoul(s, &end, 10);
    if (*end != ' ') return load_error(L, "field needs an index: IDX Name: value");
    const char *name = end + 1;
    const char *colon = strchr(name, ':');
    if (colon == NULL) return load_error(L, "field needs 'Name: value'");
    char nb[256];
    if ((size_t)(colon - name) >= sizeof nb) return load_error(L, "field name too long");
    memcpy(nb, name, (size_t)(colon - name));
    nb[colon - name] = '\0';
    if (unescape(L, nb, &f->name)) return -1;
    const char *v = colon + 1;
    if (*v == ' ') v++;
    bytes_append(&f->value, "", 0);
    return unescape(L, v, &f->value);
}

static int pick(const char *const *names, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0) return (int)i;
    return -1;
}

static tc_expect_msg *current_msg(tc_case *c, size_t index)
{
    while (c->nmsgs < index) {
        c->msgs = tc_xrealloc(c->msgs, (c->nmsgs + 1) * sizeof *c->msgs);
        memset(&c->msgs[c->nmsgs], 0, sizeof c->msgs[0]);
        c->nmsgs++;
    }
    return &c->msgs[index - 1];
}

typedef struct case_state {
    size_t cur_msg; /* 1-based message the expectation keys apply to */
    int messages_set;
    int has_result;
} case_state;

static int finish_case(loader *L, tc_case *c, case_state *cs)
{
    if (c->rfc == NULL) return load_error(L, "case '%s' has no rfc:", c->name);
    if (c->input.n == 0) return load_error(L, "case '%s' has no input", c->name);
    if (c->nerrors == 0 && !cs->has_result) c->result = CSH_OK;
    if (c->nerrors != 0 && cs->has_result)
        return load_error(L, "case '%s' has both result: and error:", c->name);
    if (c->result == CSH_OK && c->nerrors == 0 && c->nmsgs == 0 && !cs->messages_set &&
        !c->has_tail)
        return load_error(L, "case '%s' expects success but checks nothing", c->name);
    if (!cs->messages_set) c->messages = c->nmsgs;
    if (c->messages < c->nmsgs)
        return load_error(L, "case '%s': messages: is smaller than the messages described",
                          c->name);
    return 0;
}

static int handle_key(loader *L, tc_case *c, case_state *cs, const char *key, const char *val)
{
    tc_expect_msg *m = NULL;
#define MSG() (m = current_msg(c, cs->cur_msg))
    if (strcmp(key, "rfc") == 0) {
        free(c->rfc);
        c->rfc = tc_strdup(val);
    } else if (strcmp(key, "smuggling") == 0) {
        free(c->smuggling);
        c->smuggling = tc_strdup(val);
    } else if (strcmp(key, "type") == 0) {
        if (strcmp(val, "request") == 0)
            c->type = CSH_REQUEST;
        else if (strcmp(val, "response") == 0)
            c->type = CSH_RESPONSE;
        else
            return load_error(L, "type: request or response");
    } else if (strcmp(key, "request-method") == 0) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", val);
        c->n_request_methods = 0;
        for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
            int mth = method_from_name(t, strlen(t));
            if (mth == CSH_METHOD_OTHER && strcmp(t, "OTHER") != 0)
                return load_error(L, "unknown method '%s'", t);
            if (c->n_request_methods == TC_MAX_METHODS) return load_error(L, "too many methods");
            c->request_methods[c->n_request_methods++] = mth;
        }
    } else if (strcmp(key, "parse-flags") == 0) {
        c->parse_flags = 0;
        char buf[256];
        snprintf(buf, sizeof buf, "%s", val);
        for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
            if (strcmp(t, "lenient-bare-lf") == 0)
                c->parse_flags |= CSH_PARSE_LENIENT_BARE_LF;
            else if (strcmp(t, "no-simd") == 0)
                c->parse_flags |= CSH_PARSE_NO_SIMD;
            else
                return load_error(L, "unknown parse flag '%s'", t);
        }
    } else if (strcmp(key, "limits") == 0) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", val);
        for (char *save = NULL, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
            char *eq = strchr(t, '=');
            size_t v;
            if (eq == NULL || parse_size(eq + 1, &v)) return load_error(L, "limits: name=N ...");
            *eq = '\0';
            if (strcmp(t, "max_start_line") == 0)
                c->limits.max_start_line = v;
            else if (strcmp(t, "max_field_line") == 0)
                c->limits.max_field_line = v;
            else if (strcmp(t, "max_head") == 0)
                c->limits.max_head = v;
            else if (strcmp(t, "max_fields") == 0)
                c->limits.max_fields = v;
            else if (strcmp(t, "max_chunk_ext") == 0)
                c->limits.max_chunk_ext = v;
            else if (strcmp(t, "max_trailer") == 0)
                c->limits.max_trailer = v;
            else if (strcmp(t, "max_method") == 0)
                c->limits.max_method = v;
            else
                return load_error(L, "unknown limit '%s'", t);
        }
    } else if (strcmp(key, "fields-cap") == 0) {
        if (parse_size(val, &c->fields_cap)) return load_error(L, "fields-cap: N");
    } else if (strcmp(key, "trailers-cap") == 0) {
        if (parse_size(val, &c->trailers_cap)) return load_error(L, "trailers-cap: N");
    } else if (strcmp(key, "result") == 0) {
        cs->has_result = 1;
        if (strcmp(val, "ok") == 0)
            c->result = CSH_OK;
        else if (strcmp(val, "incomplete") == 0)
            c->result = CSH_INCOMPLETE;
        else
            return load_error(L, "result: ok or incomplete");
    } else if (strcmp(key, "error") == 0) {
        /* "CSH_E_NAME STATUS [| CSH_E_OTHER STATUS ...]" */
        char buf[512];
        snprintf(buf, sizeof buf, "%s", val);
        c->nerrors = 0;
        c->result = 0;
        for (char *save = NULL, *alt = strtok_r(buf, "|", &save); alt;
             alt = strtok_r(NULL, "|", &save)) {
            char name[128];
            int st, table_status;
            if (sscanf(alt, " %127s %d", name, &st) != 2)
                return load_error(L, "error: CSH_E_NAME STATUS [| ...]");
            int code = tc_error_code(name, &table_status);
            if (code == -1000) return load_error(L, "unknown error '%s'", name);
            if (st != table_status)
                return load_error(L, "%s has status %d in error.h, not %d", name, table_status, st);
            if (c->nerrors == TC_MAX_ALTERNATIVES) return load_error(L, "too many alternatives");
            c->errors[c->nerrors] = code;
            c->statuses[c->nerrors] = st;
            c->nerrors++;
        }
    } else if (strcmp(key, "error-offset-max") == 0) {
        c->has_error_offset_max = 1;
        if (parse_size(val, &c->error_offset_max)) return load_error(L, "error-offset-max: N");
    } else if (strcmp(key, "messages") == 0) {
        cs->messages_set = 1;
        if (parse_size(val, &c->messages)) return load_error(L, "messages: N");
    } else if (strcmp(key, "message") == 0) {
        size_t k;
        if (parse_size(val, &k) || k == 0) return load_error(L, "message: N (from 1)");
        cs->cur_msg = k;
        MSG();
    } else if (strcmp(key, "tail") == 0) {
        c->has_tail = 1;
        bytes_set(&c->tail, "", 0);
        return unescape(L, val, &c->tail);
    } else if (strcmp(key, "method") == 0) {
        MSG()->set |= TC_X_METHOD;
        bytes_set(&m->method, "", 0);
        return unescape(L, val, &m->method);
    } else if (strcmp(key, "target") == 0) {
        MSG()->set |= TC_X_TARGET;
        bytes_set(&m->target, "", 0);
        return unescape(L, val, &m->target);
    } else if (strcmp(key, "form") == 0) {
        MSG()->set |= TC_X_FORM;
        m->form = pick(tc_form_names, 4, val);
        if (m->form < 0) return load_error(L, "form: origin|absolute|authority|asterisk");
    } else if (strcmp(key, "version") == 0) {
        MSG()->set |= TC_X_VERSION;
        if (sscanf(val, "%d.%d", &m->version_major, &m->version_minor) != 2)
            return load_error(L, "version: M.N");
    } else if (strcmp(key, "version-major") == 0) {
        MSG()->set |= TC_X_VERSION_MAJOR;
        if (sscanf(val, "%d", &m->version_major) != 1) return load_error(L, "version-major: M");
    } else if (strcmp(key, "status") == 0) {
        MSG()->set |= TC_X_STATUS;
        if (sscanf(val, "%d", &m->status) != 1) return load_error(L, "status: N");
    } else if (strcmp(key, "reason") == 0) {
        MSG()->set |= TC_X_REASON;
        bytes_set(&m->reason, "", 0);
        return unescape(L, val, &m->reason);
    } else if (strcmp(key, "headers") == 0) {
        MSG()->set |= TC_X_HEADERS;
        if (parse_size(val, &m->num_headers)) return load_error(L, "headers: N");
    } else if (strcmp(key, "header") == 0 || strcmp(key, "trailer") == 0) {
        int tr = key[0] == 't';
        MSG();
        tc_field **arr = tr ? &m->trs : &m->hdrs;
        size_t *n = tr ? &m->ntrs : &m->nhdrs;
        *arr = tc_xrealloc(*arr, (*n + 1) * sizeof **arr);
        if (parse_field(L, val, &(*arr)[*n])) return -1;
        (*n)++;
    } else if (strcmp(key, "host") == 0) {
        MSG()->set |= TC_X_HOST;
        bytes_set(&m->host, "", 0);
        return unescape(L, val, &m->host);
    } else if (strcmp(key, "upgrade") == 0) {
        MSG()->set |= TC_X_UPGRADE;
        bytes_set(&m->upgrade, "", 0);
        return unescape(L, val, &m->upgrade);
    } else if (strcmp(key, "body") == 0) {
        MSG()->set |= TC_X_BODY;
        m->body = pick(tc_body_names, 4, val);
        if (m->body < 0) return load_error(L, "body: none|length|chunked|until-close");
    } else if (strcmp(key, "content-length") == 0) {
        MSG()->set |= TC_X_CL;
        if (parse_u64(val, &m->content_length)) return load_error(L, "content-length: N");
    } else if (strcmp(key, "flags") == 0) {
        MSG()->set |= TC_X_FLAGS;
        return parse_flag_list(L, val, &m->flags);
    } else if (strcmp(key, "has-flags") == 0) {
        unsigned f;
        if (parse_flag_list(L, val, &f)) return -1;
        MSG()->has_flags |= f;
    } else if (strcmp(key, "no-flags") == 0) {
        unsigned f;
        if (parse_flag_list(L, val, &f)) return -1;
        MSG()->no_flags |= f;
    } else if (strcmp(key, "head-length") == 0) {
        MSG()->set |= TC_X_HEAD_LENGTH;
        if (parse_size(val, &m->head_length)) return load_error(L, "head-length: N");
    } else if (strcmp(key, "data") == 0) {
        MSG()->set |= TC_X_DATA;
        bytes_set(&m->data, "", 0);
        return unescape(L, val, &m->data);
    } else if (strcmp(key, "data-len") == 0) {
        MSG()->set |= TC_X_DATA_LEN;
        if (parse_u64(val, &m->data_len)) return load_error(L, "data-len: N");
    } else if (strcmp(key, "trailers") == 0) {
        MSG()->set |= TC_X_TRAILERS;
        if (parse_size(val, &m->num_trailers)) return load_error(L, "trailers: N");
    } else if (strcmp(key, "chunks") == 0) {
        MSG()->set |= TC_X_CHUNKS;
        if (parse_u64(val, &m->chunks)) return load_error(L, "chunks: N");
    } else {
        return load_error(L, "unknown key '%s'", key);
    }
#undef MSG
    return 0;
}

static void case_init(tc_case *c, const char *file, int line, const char *name)
{
    memset(c, 0, sizeof *c);
    c->file = tc_strdup(file);
    c->line = line;
    c->name = tc_strdup(name);
    c->type = CSH_REQUEST;
    csh_limits_init(&c->limits);
    c->fields_cap = 128;
    c->trailers_cap = 16;
}

static int load_file(tc_corpus *corpus, const char *path, const char *shortname, char *err,
                     size_t errlen)
{
    FILE *f = fopen(path, "r");
    loader L = {shortname, 0, err, errlen};
    if (f == NULL) return load_error(&L, "cannot open: %s", strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    tc_case *c = NULL;
    case_state cs = {1, 0, 0};
    int rc = 0;
    while (rc == 0 && (got = getline(&line, &cap, f)) >= 0) {
        L.line++;
        if (got > 0 && line[got - 1] == '\n') line[--got] = '\0';
        if (got == 0 || line[0] == '#') continue;
        if (line[0] == '|' || line[0] == '>') {
            /* input: '|' appends the line and CRLF, '>' the line alone;
             * "|{N} text" repeats text N times (then one CRLF per copy). */
            if (c == NULL) {
                rc = load_error(&L, "input before the first case:");
                break;
            }
            const char *s = line + 1;
            size_t rep = 1;
            if (*s == '{') {
                char *end;
                rep = (size_t)strtoul(s + 1, &end, 10);
                if (*end != '}') {
                    rc = load_error(&L, "repeat: |{N} text");
                    break;
                }
                s = end + 1;
            }
            if (*s == ' ')
                s++;
            else if (*s != '\0') {
                rc = load_error(&L, "input line: a space after '|' or '>'");
                break;
            }
            tc_bytes piece = {0};
            bytes_append(&piece, "", 0);
            if (unescape(&L, s, &piece)) {
                bytes_free(&piece);
                rc = -1;
                break;
            }
            if (line[0] == '|') bytes_append(&piece, "\r\n", 2);
            for (size_t i = 0; i < rep; i++) bytes_append(&c->input, piece.p, piece.n);
            bytes_free(&piece);
            continue;
        }
        char *colon = strchr(line, ':');
        if (colon == NULL) {
            rc = load_error(&L, "expected 'key: value', '| input' or '> input'");
            break;
        }
        *colon = '\0';
        char *val = colon + 1;
        while (*val == ' ') val++;
        size_t vl = strlen(val);
        while (vl && val[vl - 1] == ' ') val[--vl] = '\0';
        if (strcmp(line, "case") == 0) {
            if (c && (rc = finish_case(&L, c, &cs)) != 0) break;
            for (size_t i = 0; i < corpus->n; i++)
                if (strcmp(corpus->cases[i].name, val) == 0) {
                    rc = load_error(&L, "duplicate case name '%s' (also in %s)", val,
                                    corpus->cases[i].file);
                    break;
                }
            if (rc) break;
            if (corpus->n == corpus->cap) {
                corpus->cap = corpus->cap ? corpus->cap * 2 : 64;
                corpus->cases = tc_xrealloc(corpus->cases, corpus->cap * sizeof *corpus->cases);
            }
            c = &corpus->cases[corpus->n++];
            case_init(c, shortname, L.line, val);
            cs = (case_state){1, 0, 0};
            continue;
        }
        if (c == NULL) {
            rc = load_error(&L, "'%s:' before the first case:", line);
            break;
        }
        rc = handle_key(&L, c, &cs, line, val);
    }
    if (rc == 0 && c) rc = finish_case(&L, c, &cs);
    if (rc == 0 && c == NULL) rc = load_error(&L, "no case in file");
    free(line);
    fclose(f);
    return rc;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int tc_corpus_load(tc_corpus *corpus, const char *dir, char *err, size_t errlen)
{
    memset(corpus, 0, sizeof *corpus);
    DIR *d = opendir(dir);
    if (d == NULL) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l > 5 && strcmp(e->d_name + l - 5, ".case") == 0) {
            names = tc_xrealloc(names, (n + 1) * sizeof *names);
            names[n++] = tc_strdup(e->d_name);
        }
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    int rc = n ? 0 : -1;
    if (n == 0) snprintf(err, errlen, "%s: no .case file", dir);
    for (size_t i = 0; i < n && rc == 0; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        rc = load_file(corpus, path, names[i], err, errlen);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

static void fields_free(tc_field *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bytes_free(&f[i].name);
        bytes_free(&f[i].value);
    }
    free(f);
}

void tc_corpus_free(tc_corpus *corpus)
{
    for (size_t i = 0; i < corpus->n; i++) {
        tc_case *c = &corpus->cases[i];
        free(c->file);
        free(c->name);
        free(c->rfc);
        free(c->smuggling);
        bytes_free(&c->input);
        bytes_free(&c->tail);
        for (size_t k = 0; k < c->nmsgs; k++) {
            tc_expect_msg *m = &c->msgs[k];
            bytes_free(&m->method);
            bytes_free(&m->target);
            bytes_free(&m->reason);
            bytes_free(&m->host);
            bytes_free(&m->upgrade);
            bytes_free(&m->data);
            fields_free(m->hdrs, m->nhdrs);
            fields_free(m->trs, m->ntrs);
        }
        free(c->msgs);
    }
    free(corpus->cases);
    memset(corpus, 0, sizeof *corpus);
}

/* ---- runner ------------------------------------------------------------------ */

static void violation(tc_outcome *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(tc_outcome *o, const char *fmt, ...)
{
    if (o->violation[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->violation, sizeof o->violation, fmt, ap);
    va_end(ap);
}

static int span_ok(csh_span s, size_t limit)
{
    return s.off <= limit && s.len <= limit - s.off;
}

static void copy_span(tc_outcome *o, tc_bytes *dst, const char *base, csh_span s, size_t limit,
                      const char *what)
{
    bytes_set(dst, "", 0);
    if (!span_ok(s, limit)) {
        violation(o, "%s span {%zu, %zu} outside the head (%zu bytes)", what, s.off, s.len, limit);
        return;
    }
    bytes_append(dst, base + s.off, s.len);
}

static tc_msg *new_msg(tc_outcome *o)
{
    if (o->nmsgs == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 4;
        o->msgs = tc_xrealloc(o->msgs, o->cap * sizeof *o->msgs);
    }
    tc_msg *m = &o->msgs[o->nmsgs++];
    memset(m, 0, sizeof *m);
    return m;
}

static void record_msg(tc_outcome *o, int type, const csh_parser *p, const csh_header *fields,
                       size_t fields_cap, const char *base, size_t len)
{
    const csh_message *pm = &p->msg;
    tc_msg *m = new_msg(o);
    size_t hl = pm->head_length;
    if (hl == 0 || hl > len) {
        violation(o, "head_length %zu with %zu bytes given", hl, len);
        hl = hl > len ? len : hl;
    }
    m->method = (int)pm->method;
    m->target_form = (int)pm->target_form;
    m->version_major = pm->version_major;
    m->version_minor = pm->version_minor;
    m->status = pm->status;
    m->body = (int)pm->body;
    m->content_length = pm->content_length;
    m->flags = pm->flags;
    m->head_length = pm->head_length;
    if (type == CSH_REQUEST) {
        copy_span(o, &m->method_span, base, pm->method_span, hl, "method");
        copy_span(o, &m->target, base, pm->target, hl, "target");
    } else {
        copy_span(o, &m->reason, base, pm->reason, hl, "reason");
    }
    if (pm->flags & CSH_MSG_HAS_HOST) copy_span(o, &m->host, base, pm->host, hl, "host");
    if (pm->upgrade.len) copy_span(o, &m->upgrade, base, pm->upgrade, hl, "upgrade");
    if (pm->headers != fields) violation(o, "msg.headers is not the array given to init");
    size_t nh = pm->num_headers;
    if (nh > fields_cap) {
        violation(o, "num_headers %zu > capacity %zu", nh, fields_cap);
        nh = fields_cap;
    }
    m->num_headers = nh;
    m->headers = tc_xrealloc(NULL, (nh ? nh : 1) * sizeof *m->headers);
    memset(m->headers, 0, (nh ? nh : 1) * sizeof *m->headers);
    for (size_t i = 0; i < nh; i++) {
        copy_span(o, &m->headers[i].name, base, fields[i].name, hl, "header name");
        copy_span(o, &m->headers[i].value, base, fields[i].value, hl, "header value");
    }
    if (pm->body != CSH_BODY_LENGTH && pm->content_length != 0)
        violation(o, "content_length %" PRIu64 " with body kind %d", pm->content_length,
                  (int)pm->body);
    if (pm->body == CSH_BODY_LENGTH && pm->content_length == 0)
        violation(o, "CSH_BODY_LENGTH with content_length 0");
}

static void record_trailers(tc_outcome *o, tc_msg *m, const csh_body *b, const char *base,
                            size_t len, size_t cap)
{
    size_t n = b->chunked.num_trailers;
    if (n > cap) {
        violation(o, "num_trailers %zu > capacity %zu", n, cap);
        n = cap;
    }
    m->num_trailers = n;
    m->trailers = tc_xrealloc(NULL, (n ? n : 1) * sizeof *m->trailers);
    memset(m->trailers, 0, (n ? n : 1) * sizeof *m->trailers);
    for (size_t i = 0; i < n; i++) {
        copy_span(o, &m->trailers[i].name, base, b->chunked.trailers[i].name, len, "trailer name");
        copy_span(o, &m->trailers[i].value, base, b->chunked.trailers[i].value, len,
                  "trailer value");
    }
    m->chunks = b->chunked.chunks;
    if (b->chunked.body_bytes != m->data.n)
        violation(o, "chunked.body_bytes %" PRIu64 " but %zu data bytes returned",
                  b->chunked.body_bytes, m->data.n);
}

static size_t feed_next(tc_feed feed, size_t avail, size_t n)
{
    switch (feed.kind) {
    case TC_FEED_WHOLE:
        return n;
    case TC_FEED_SPLIT:
        return avail < feed.arg ? feed.arg : n;
    case TC_FEED_STEP:
        return n - avail > feed.arg ? avail + feed.arg : n;
    }
    return n;
}

void tc_run(const tc_case *c, unsigned extra_flags, tc_feed feed, tc_outcome *o)
{
    const char *in = c->input.p;
    const size_t n = c->input.n;
    const unsigned flags = c->parse_flags | extra_flags;
    /* Both body APIs see every case at every split: the runs with SIMD read
     * bodies with csh_body_read and a reader initialised per body, those
     * without SIMD with csh_body_next and one reader for the connection,
     * prepared before the first message and csh_body_reset per body. */
    const int reuse = (extra_flags & CSH_PARSE_NO_SIMD) != 0;
    size_t avail = 0; /* bytes received so far */
    size_t start = 0; /* input offset of the current message */
    size_t pos = 0;   /* input offset of the body cursor */
    char *buf = NULL; /* copy of in[buf_base .. avail), ending at its allocation's end */
    size_t buf_base = 0;
    int in_body = 0;
    size_t method_idx = 0;
    csh_header *fields = calloc(c->fields_cap ? c->fields_cap : 1, sizeof *fields);
    csh_header *trailers = calloc(c->trailers_cap ? c->trailers_cap : 1, sizeof *trailers);
    csh_parser p;
    csh_body b;

    memset(o, 0, sizeof *o);
    bytes_set(&o->tail, "", 0);
    csh_parser_init(&p, (csh_parser_type)c->type, fields, c->fields_cap, &c->limits, flags);
    if (reuse) csh_body_init(&b, NULL, &c->limits, flags, trailers, c->trailers_cap);
    if (c->type == CSH_RESPONSE && c->n_request_methods)
        csh_parser_set_request_method(&p, (csh_method)c->request_methods[0]);

    for (unsigned long guard = 0;; guard++) {
        if (guard > 16ul * n + 1000) {
            violation(o, "no progress: the parser loops");
            o->result = -999;
            break;
        }
        int need_more = 0;
        if (!in_body) {
            if (avail > start) {
                const char *mp = buf + (start - buf_base);
                size_t len = avail - start;
                int r = csh_parser_execute(&p, mp, len);
                if (r == CSH_INCOMPLETE) {
                    need_more = 1;
                } else if (r < 0) {
                    size_t off = csh_parser_error_offset(&p);
                    if (off > len)
                        violation(o, "error offset %zu past the %zu bytes given", off, len);
                    o->result = r;
                    o->error_pos = start + off;
                    break;
                } else if (r != CSH_OK) {
                    violation(o, "csh_parser_execute returned %d", r);
                    o->result = r;
                    break;
                } else {
                    record_msg(o, c->type, &p, fields, c->fields_cap, mp, len);
                    const csh_message *pm = &p.msg;
                    size_t hl = pm->head_length <= len ? pm->head_length : len;
                    if (hl == 0) {
                        o->result = -999;
                        break;
                    }
                    pos = start + hl;
                    if (pm->flags & CSH_MSG_TUNNEL) {
                        bytes_set(&o->tail, in + pos, n - pos);
                        o->result = CSH_OK;
                        break;
                    }
                    if (pm->body == CSH_BODY_NONE) {
                        o->msgs[o->nmsgs - 1].body_done = 1;
                        if (c->type == CSH_RESPONSE && !(pm->flags & CSH_MSG_INTERIM)) method_idx++;
                        start = pos;
                        csh_parser_reset(&p);
                        if (c->type == CSH_RESPONSE && method_idx < c->n_request_methods)
                            csh_parser_set_request_method(
                                &p, (csh_method)c->request_methods[method_idx]);
                    } else {
                        if (reuse)
                            csh_body_reset(&b, pm);
                        else
                            csh_body_init(&b, pm, &c->limits, flags, trailers, c->trailers_cap);
                        if (b.kind != pm->body) violation(o, "csh_body.kind differs from msg.body");
                        in_body = 1;
                    }
                    continue;
                }
            } else if (avail == n) {
                o->result = CSH_OK; /* clean end between messages */
                break;
            } else {
                need_more = 1;
            }
            if (need_more && avail == n) {
                o->result = CSH_INCOMPLETE;
                break;
            }
        } else {
            tc_msg *m = &o->msgs[o->nmsgs - 1];
            /* body.h: after CSH_DATA call again, even with no new byte */
            {
                const char *bp = buf + (pos - buf_base);
                size_t len = avail - pos;
                size_t used = (size_t)-1;
                csh_span data = {(size_t)-1, (size_t)-1};
                int r = reuse ? csh_body_next(&b, bp, len, &used, &data)
                              : csh_body_read(&b, bp, len, &used, &data);
                if (used > len) {
                    violation(o, "body consumed %zu of %zu bytes", used, len);
                    o->result = -999;
                    break;
                }
                if (r == CSH_DATA) {
                    if (data.len == 0 || !span_ok(data, used)) {
                        violation(o, "data span {%zu, %zu} with %zu bytes consumed of %zu",
                                  data.off, data.len, used, len);
                        o->result = -999;
                        break;
                    }
                    bytes_append(&m->data, bp + data.off, data.len);
                    if (b.received != m->data.n)
                        violation(o, "body.received %" PRIu64 " after %zu data bytes", b.received,
                                  m->data.n);
                    pos += used;
                    continue;
                } else if (r == CSH_INCOMPLETE) {
                    pos += used;
                    need_more = 1;
                } else if (r == CSH_OK) {
                    if (b.kind == CSH_BODY_CHUNKED)
                        record_trailers(o, m, &b, bp, len, c->trailers_cap);
                    pos += used;
                    m->body_done = 1;
                    if (c->type == CSH_RESPONSE && !(m->flags & CSH_MSG_INTERIM)) method_idx++;
                    start = pos;
                    in_body = 0;
                    csh_parser_reset(&p);
                    if (c->type == CSH_RESPONSE && method_idx < c->n_request_methods)
                        csh_parser_set_request_method(&p,
                                                      (csh_method)c->request_methods[method_idx]);
                    continue;
                } else if (r < 0) {
                    o->result = r;
                    o->error_pos = pos + used;
                    break;
                } else {
                    violation(o, "csh_body_read returned %d", r);
                    o->result = r;
                    break;
                }
            }
            if (need_more && avail == n) {
                int r = csh_body_finish(&b);
                if (r == CSH_OK) {
                    if (b.kind != CSH_BODY_UNTIL_CLOSE)
                        violation(o, "csh_body_finish OK on an unfinished body of kind %d",
                                  (int)b.kind);
                    m->body_done = 1;
                    o->result = CSH_OK;
                } else {
                    o->result = r;
                    o->error_pos = n;
                }
                break;
            }
        }
        /* receive the next piece: a fresh copy from the oldest byte still needed */
        size_t keep = in_body ? pos : start;
        avail = feed_next(feed, avail, n);
        char *nb = tc_xrealloc(NULL, avail - keep);
        memcpy(nb, in + keep, avail - keep);
        free(buf);
        buf = nb;
        buf_base = keep;
    }
    free(buf);
    free(fields);
    free(trailers);
}

void tc_outcome_free(tc_outcome *o)
{
    for (size_t i = 0; i < o->nmsgs; i++) {
        tc_msg *m = &o->msgs[i];
        bytes_free(&m->method_span);
        bytes_free(&m->target);
        bytes_free(&m->reason);
        bytes_free(&m->host);
        bytes_free(&m->upgrade);
        bytes_free(&m->data);
        fields_free(m->headers, m->num_headers);
        fields_free(m->trailers, m->num_trailers);
    }
    free(o->msgs);
    bytes_free(&o->tail);
    memset(o, 0, sizeof *o);
}

/* ---- comparison -------------------------------------------------------------- */

static int check_bytes(const char *what, size_t k, const tc_bytes *want, const tc_bytes *got,
                       char *w, size_t wl)
{
    if (bytes_eq(want, got)) return 1;
    char a[200], b[200];
    return why(w, wl, "message %zu %s: expected \"%s\", got \"%s\"", k, what,
               bytes_show(want, a, sizeof a), bytes_show(got, b, sizeof b));
}

static int check_fields(const char *what, size_t k, const tc_field *want, size_t nwant,
                        const tc_field *got, size_t ngot, char *w, size_t wl)
{
    for (size_t i = 0; i < nwant; i++) {
        const tc_field *x = &want[i];
        char a[200], b[200], c2[200], d[200];
        if (x->index >= ngot)
            return why(w, wl, "message %zu: %s %zu (%s) missing, only %zu", k, what, x->index,
                       bytes_show(&x->name, a, sizeof a), ngot);
        const tc_field *g = &got[x->index];
        if (!bytes_eq(&x->name, &g->name) || !bytes_eq(&x->value, &g->value))
            return why(w, wl, "message %zu %s %zu: expected \"%s: %s\", got \"%s: %s\"", k, what,
                       x->index, bytes_show(&x->name, a, sizeof a),
                       bytes_show(&x->value, b, sizeof b), bytes_show(&g->name, c2, sizeof c2),
                       bytes_show(&g->value, d, sizeof d));
    }
    return 1;
}

int tc_check(const tc_case *c, const tc_outcome *o, char *w, size_t wl)
{
    if (o->violation[0]) return why(w, wl, "API contract broken: %s", o->violation);
    if (c->nerrors) {
        int ok = 0;
        for (size_t i = 0; i < c->nerrors; i++) {
            if (o->result == c->errors[i]) {
                ok = 1;
                if (csh_error_status(o->result) != c->statuses[i])
                    return why(w, wl, "%s: csh_error_status %d, expected %d",
                               tc_error_name(o->result), csh_error_status(o->result),
                               c->statuses[i]);
            }
        }
        if (!ok) {
            char alts[256] = "";
            for (size_t i = 0; i < c->nerrors; i++)
                snprintf(alts + strlen(alts), sizeof alts - strlen(alts), "%s%s", i ? " or " : "",
                         tc_error_name(c->errors[i]));
            return why(w, wl, "expected %s, got %s (at offset %zu, %zu messages)", alts,
                       tc_error_name(o->result), o->error_pos, o->nmsgs);
        }
        if (c->has_error_offset_max && o->error_pos > c->error_offset_max)
            return why(w, wl, "error at offset %zu, past the limit %zu", o->error_pos,
                       c->error_offset_max);
    } else if (o->result != c->result) {
        return why(w, wl, "expected %s, got %s (at offset %zu, after %zu messages)",
                   tc_error_name(c->result), tc_error_name(o->result), o->error_pos, o->nmsgs);
    }
    if (o->nmsgs != c->messages)
        return why(w, wl, "expected %zu messages, got %zu", c->messages, o->nmsgs);
    if (c->has_tail && !bytes_eq(&c->tail, &o->tail)) {
        char a[200], b[200];
        return why(w, wl, "tail: expected \"%s\", got \"%s\"", bytes_show(&c->tail, a, sizeof a),
                   bytes_show(&o->tail, b, sizeof b));
    }
    for (size_t i = 0; i < c->nmsgs; i++) {
        const tc_expect_msg *x = &c->msgs[i];
        const tc_msg *g = &o->msgs[i];
        size_t k = i + 1;
        char a[200], b[200];
        if (x->set & TC_X_METHOD) {
            int want = method_from_name(x->method.p, x->method.n);
            if (g->method != want)
                return why(w, wl, "message %zu method: expected enum %d (%s), got %d", k, want,
                           x->method.p, g->method);
            if (!check_bytes("method span", k, &x->method, &g->method_span, w, wl)) return 0;
        }
        if ((x->set & TC_X_TARGET) && !check_bytes("target", k, &x->target, &g->target, w, wl))
            return 0;
        if ((x->set & TC_X_FORM) && g->target_form != x->form)
            return why(w, wl, "message %zu target form: expected %s, got %d", k,
                       tc_form_names[x->form], g->target_form);
        if ((x->set & TC_X_VERSION) &&
            (g->version_major != x->version_major || g->version_minor != x->version_minor))
            return why(w, wl, "message %zu version: expected %d.%d, got %d.%d", k, x->version_major,
                       x->version_minor, g->version_major, g->version_minor);
        if ((x->set & TC_X_VERSION_MAJOR) && g->version_major != x->version_major)
            return why(w, wl, "message %zu version major: expected %d, got %d", k, x->version_major,
                       g->version_major);
        if ((x->set & TC_X_STATUS) && g->status != x->status)
            return why(w, wl, "message %zu status: expected %d, got %d", k, x->status, g->status);
        if ((x->set & TC_X_REASON) && !check_bytes("reason", k, &x->reason, &g->reason, w, wl))
            return 0;
        if ((x->set & TC_X_HEADERS) && g->num_headers != x->num_headers)
            return why(w, wl, "message %zu: expected %zu headers, got %zu", k, x->num_headers,
                       g->num_headers);
        if (!check_fields("header", k, x->hdrs, x->nhdrs, g->headers, g->num_headers, w, wl))
            return 0;
        if ((x->set & TC_X_BODY) && g->body != x->body)
            return why(w, wl, "message %zu body: expected %s, got %s", k, tc_body_names[x->body],
                       g->body >= 0 && g->body < 4 ? tc_body_names[g->body] : "?");
        if ((x->set & TC_X_CL) && g->content_length != x->content_length)
            return why(w, wl, "message %zu content_length: expected %" PRIu64 ", got %" PRIu64, k,
                       x->content_length, g->content_length);
        if ((x->set & TC_X_FLAGS) && g->flags != x->flags)
            return why(w, wl, "message %zu flags: expected [%s], got [%s]", k,
                       flags_show(x->flags, a, sizeof a), flags_show(g->flags, b, sizeof b));
        if ((g->flags & x->has_flags) != x->has_flags)
            return why(w, wl, "message %zu flags: expected [%s] among [%s]", k,
                       flags_show(x->has_flags, a, sizeof a), flags_show(g->flags, b, sizeof b));
        if (g->flags & x->no_flags)
            return why(w, wl, "message %zu flags: [%s] must not be set, got [%s]", k,
                       flags_show(x->no_flags, a, sizeof a), flags_show(g->flags, b, sizeof b));
        if ((x->set & TC_X_HOST) && !check_bytes("host", k, &x->host, &g->host, w, wl)) return 0;
        if ((x->set & TC_X_UPGRADE) && !check_bytes("upgrade", k, &x->upgrade, &g->upgrade, w, wl))
            return 0;
        if ((x->set & TC_X_HEAD_LENGTH) && g->head_length != x->head_length)
            return why(w, wl, "message %zu head_length: expected %zu, got %zu", k, x->head_length,
                       g->head_length);
        if ((x->set & TC_X_DATA) && !check_bytes("body data", k, &x->data, &g->data, w, wl))
            return 0;
        if ((x->set & TC_X_DATA_LEN) && g->data.n != x->data_len)
            return why(w, wl, "message %zu: expected %" PRIu64 " body bytes, got %zu", k,
                       x->data_len, g->data.n);
        if ((x->set & TC_X_TRAILERS) && g->num_trailers != x->num_trailers)
            return why(w, wl, "message %zu: expected %zu trailers, got %zu", k, x->num_trailers,
                       g->num_trailers);
        if (!check_fields("trailer", k, x->trs, x->ntrs, g->trailers, g->num_trailers, w, wl))
            return 0;
        if ((x->set & TC_X_CHUNKS) && g->chunks != x->chunks)
            return why(w, wl, "message %zu: expected %" PRIu64 " chunks, got %" PRIu64, k,
                       x->chunks, g->chunks);
    }
    return 1;
}

static int same_fields(const tc_field *a, size_t na, const tc_field *b, size_t nb)
{
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++)
        if (!bytes_eq(&a[i].name, &b[i].name) || !bytes_eq(&a[i].value, &b[i].value)) return 0;
    return 1;
}

int tc_same(const tc_outcome *a, const tc_outcome *b, char *w, size_t wl)
{
    if (b->violation[0]) return why(w, wl, "API contract broken: %s", b->violation);
    if (a->result != b->result)
        return why(w, wl,
                   "result %s (offset %zu, %zu messages) instead of %s (offset %zu, %zu "
                   "messages)",
                   tc_error_name(b->result), b->error_pos, b->nmsgs, tc_error_name(a->result),
                   a->error_pos, a->nmsgs);
    if (a->result < 0 && a->error_pos != b->error_pos)
        return why(w, wl, "%s at offset %zu instead of %zu", tc_error_name(a->result), b->error_pos,
                   a->error_pos);
    if (a->nmsgs != b->nmsgs) return why(w, wl, "%zu messages instead of %zu", b->nmsgs, a->nmsgs);
    if (!bytes_eq(&a->tail, &b->tail)) return why(w, wl, "different tail");
    for (size_t i = 0; i < a->nmsgs; i++) {
        const tc_msg *x = &a->msgs[i], *y = &b->msgs[i];
        const char *d = NULL;
        if (x->method != y->method || !bytes_eq(&x->method_span, &y->method_span))
            d = "method";
        else if (!bytes_eq(&x->target, &y->target) || x->target_form != y->target_form)
            d = "target";
        else if (x->version_major != y->version_major || x->version_minor != y->version_minor)
            d = "version";
        else if (x->status != y->status || !bytes_eq(&x->reason, &y->reason))
            d = "status";
        else if (!same_fields(x->headers, x->num_headers, y->headers, y->num_headers))
            d = "headers";
        else if (x->body != y->body || x->content_length != y->content_length)
            d = "body kind";
        else if (x->flags != y->flags)
            d = "flags";
        else if (!bytes_eq(&x->host, &y->host))
            d = "host";
        else if (!bytes_eq(&x->upgrade, &y->upgrade))
            d = "upgrade";
        else if (x->head_length != y->head_length)
            d = "head_length";
        else if (!bytes_eq(&x->data, &y->data))
            d = "body data";
        else if (x->body_done != y->body_done)
            d = "body end";
        else if (!same_fields(x->trailers, x->num_trailers, y->trailers, y->num_trailers))
            d = "trailers";
        else if (x->chunks != y->chunks)
            d = "chunk count";
        if (d) return why(w, wl, "message %zu: different %s", i + 1, d);
    }
    return 1;
}

static int verify_one(const tc_case *c, unsigned xf, tc_feed feed, const tc_outcome *ref,
                      const char *mode, int check_expect)
{
    tc_outcome o;
    char w[1024];
    int fails = 0;
    tc_run(c, xf, feed, &o);
    if (check_expect && !tc_check(c, &o, w, sizeof w)) {
        fprintf(stderr, "[case %s (%s:%d)%s] %s: %s\n", c->name, c->file, c->line,
                xf & CSH_PARSE_NO_SIMD ? " no-simd" : "", mode, w);
        fails++;
    }
    if (ref && !tc_same(ref, &o, w, sizeof w)) {
        fprintf(stderr, "[case %s (%s:%d)%s] %s differs from whole input: %s\n", c->name, c->file,
                c->line, xf & CSH_PARSE_NO_SIMD ? " no-simd" : "", mode, w);
        fails++;
    }
    tc_outcome_free(&o);
    return fails;
}

int tc_verify(const tc_case *c, unsigned xf, const tc_outcome *reference, int check_expectations)
{
    int fails = 0;
    tc_outcome whole;
    char w[1024];
    tc_run(c, xf, (tc_feed){TC_FEED_WHOLE, 0}, &whole);
    if (check_expectations && !tc_check(c, &whole, w, sizeof w)) {
        fprintf(stderr, "[case %s (%s:%d)%s] whole input: %s\n", c->name, c->file, c->line,
                xf & CSH_PARSE_NO_SIMD ? " no-simd" : "", w);
        fails++;
    }
    if (reference && !tc_same(reference, &whole, w, sizeof w)) {
        fprintf(stderr, "[case %s (%s:%d)%s] whole input differs from the reference run: %s\n",
                c->name, c->file, c->line, xf & CSH_PARSE_NO_SIMD ? " no-simd" : "", w);
        fails++;
    }
    const tc_outcome *ref = reference ? reference : &whole;
    /* Every split point: stop at the first failure to keep the report short. */
    for (size_t k = 1; k < c->input.n && fails == 0; k++) {
        char mode[64];
        snprintf(mode, sizeof mode, "split at %zu", k);
        fails += verify_one(c, xf, (tc_feed){TC_FEED_SPLIT, k}, ref, mode, 0);
    }
    fails += verify_one(c, xf, (tc_feed){TC_FEED_STEP, 1}, ref, "byte by byte", 0);
    tc_outcome_free(&whole);
    return fails;
}
