/* Template of the head parser: the start lines and the loop over field
 * lines. parser.c includes it once per scanner family, with
 *   CSH_V(name)            the variant's name for `name`
 *   CSH_V_ATTR             its function attributes (the AVX2 target)
 *   CSH_V_SCAN_NAME(p,e), CSH_V_SCAN_VALUE(p,e), CSH_V_SCAN_VCHAR(p,e),
 *   CSH_V_SCAN_FIELD(line,lim,&colon,&eol)
 * so that each copy inlines its own scanners. It uses parser.c's helpers
 * (method_of, classify_target, finish_head, ...).
 * No include guard: that is the point. */

/* Request line: method SP request-target SP HTTP-version CRLF (RFC 9112 §3).
 * Returns CSH_OK with ls->pos after the line, CSH_INCOMPLETE, or an error. */
static CSH_V_ATTR int CSH_V(parse_request_line)(csh_parser *p, const char *buf, size_t win)
{
    csh_line_state_ *ls = &p->ls_;
    csh_message *m = &p->msg;
    const char *pos = buf + ls->pos, *end = buf + win, *at;
    const char *line = buf + ls->line;
    int err;
    char c;

    switch (ls->sub) {
    case R_EMPTY_CR: goto empty_cr;
    case R_TARGET: goto target;
    case R_VERSION: goto version;
    case R_EOL: goto eol;
    case R_CR: goto cr;
    case R_LINE_CR: goto line_cr;
    default: break;
    }

    pos = CSH_V_SCAN_NAME(pos, end);
    if ((size_t)(pos - line) > p->limits_.max_method) {
        /* RFC 9112 §3: a method longer than any the server implements is
         * 501. Decided by the byte after the limit, however the bytes came. */
        const char *lim = line + p->limits_.max_method;
        return start_line_error(p, buf, line, lim, lim + 1, CSH_E_METHOD_TOO_LONG);
    }
    if (pos == end) goto incomplete;
    c = *pos;
    if (pos == line) {
        /* RFC 9112 §2.2: ignore empty lines before the request line */
        if (c == '\r') {
            pos++;
            goto empty_cr;
        }
        if (c == '\n') {
            if (!(p->flags_ & CSH_PARSE_LENIENT_BARE_LF)) FAIL(CSH_E_BARE_LF, pos);
            pos++;
            goto next_line;
        }
        FAIL(c == ' ' ? CSH_E_INVALID_REQUEST_LINE : CSH_E_INVALID_METHOD, pos);
    }
    if (c == '\r') goto early_cr;
    if (c != ' ') FAIL((c == '\n' || c == '\t') ? CSH_E_INVALID_REQUEST_LINE : CSH_E_INVALID_METHOD, pos);
    m->method_span.off = ls->line;
    m->method_span.len = (size_t)(pos - line);
    m->method = method_of(line, m->method_span.len);
    pos++;
    ls->mark2 = (size_t)(pos - buf);

target:
    pos = CSH_V_SCAN_VCHAR(pos, end);
    if (pos == end) {
        ls->sub = R_TARGET;
        goto incomplete;
    }
    c = *pos;
    if (c == '\r') goto early_cr;
    if (c != ' ' || pos == buf + ls->mark2) {
        /* "GET  /" and "GET /\n" are broken lines; "/a\tb", "/\x80" bad targets */
        if (c == ' ' || c == '\n') FAIL(CSH_E_INVALID_REQUEST_LINE, pos);
        FAIL(CSH_E_INVALID_TARGET, pos);
    }
    m->target.off = ls->mark2;
    m->target.len = (size_t)(pos - buf) - ls->mark2;
    pos++;
    ls->mark3 = (size_t)(pos - buf);

version:
    /* the usual versions in one compare; anything else byte by byte */
    if (pos == buf + ls->mark3 && end - pos >= 8 &&
        (memcmp(pos, "HTTP/1.1", 8) == 0 || memcmp(pos, "HTTP/1.0", 8) == 0))
        pos += 8;
    while (pos < end && (size_t)(pos - buf) - ls->mark3 < 8) {
        size_t i = (size_t)(pos - buf) - ls->mark3;
        c = *pos;
        if (!version_byte_ok(i, c)) {
            /* no version at all ("GET / " then the line end) is a broken line */
            if (i == 0 && c == '\r') goto early_cr;
            FAIL((i == 0 && (c == ' ' || c == '\n')) ? CSH_E_INVALID_REQUEST_LINE
                                                     : CSH_E_INVALID_VERSION,
                 pos);
        }
        pos++;
    }
    if (pos == end) {
        ls->sub = R_VERSION;
        goto incomplete;
    }

eol:
    if (pos == end) {
        ls->sub = R_EOL;
        goto incomplete;
    }
    c = *pos;
    if ((size_t)(pos - line) > p->limits_.max_start_line)
        FAIL(CSH_E_URI_TOO_LONG, line + p->limits_.max_start_line);
    if (c == '\n') {
        if (!(p->flags_ & CSH_PARSE_LENIENT_BARE_LF)) FAIL(CSH_E_BARE_LF, pos);
        pos++;
        goto line_done;
    }
    if (c != '\r') FAIL(c == ' ' ? CSH_E_INVALID_REQUEST_LINE : CSH_E_INVALID_VERSION, pos);
    pos++;

cr:
    if (pos == end) {
        ls->sub = R_CR;
        goto incomplete;
    }
    if (*pos != '\n') FAIL(CSH_E_BARE_CR, pos - 1);
    pos++;

line_done: {
    const char *v = buf + ls->mark3;
    /* RFC 9110 §2.5, §6.2: a major version other than 1 is well-formed but
     * not ours: 505. */
    if (v[5] != '1') FAIL(CSH_E_UNSUPPORTED_VERSION, v + 5);
    m->version_major = 1;
    m->version_minor = v[7] - '0';
    err = classify_target(m, buf + m->target.off, m->target.len);
    if (err) FAIL(err, buf + m->target.off);
    ls->pos = (size_t)(pos - buf);
    ls->sub = 0;
    return CSH_OK;
}

early_cr:
    /* A CR before the request line is whole: with its LF the line ended too
     * early; without, it is a bare CR (RFC 9112 §2.2) */
    pos++;
line_cr:
    if (pos == end) {
        ls->sub = R_LINE_CR;
        goto incomplete;
    }
    FAIL(*pos == '\n' ? CSH_E_INVALID_REQUEST_LINE : CSH_E_BARE_CR, pos - 1);

empty_cr:
    if (pos == end) {
        ls->sub = R_EMPTY_CR;
        goto incomplete;
    }
    if (*pos != '\n') FAIL(CSH_E_BARE_CR, pos - 1);
    pos++;
next_line:
    ls->line = (size_t)(pos - buf);
    ls->sub = R_METHOD;
    line = pos;
    /* the new line has a window of its own: let the caller recompute it */
    ls->pos = ls->line;
    return LINE_SKIPPED;

incomplete:
    ls->pos = (size_t)(pos - buf);
    return CSH_INCOMPLETE;
fail:
    return start_line_error(p, buf, line, at, pos, err);
}

/* Status line: HTTP-version SP status-code SP [ reason-phrase ] CRLF
 * (RFC 9112 §4). A missing SP before an empty reason is accepted: it is common
 * and cannot change framing. */
static CSH_V_ATTR int CSH_V(parse_status_line)(csh_parser *p, const char *buf, size_t win)
{
    csh_line_state_ *ls = &p->ls_;
    csh_message *m = &p->msg;
    const char *pos = buf + ls->pos, *end = buf + win, *at;
    const char *line = buf + ls->line;
    int err;
    char c;

    switch (ls->sub) {
    case S_STATUS: goto status;
    case S_REASON: goto reason;
    case S_CR: goto cr;
    default: break;
    }

    while (pos < end && pos - line < 8) {
        if (!version_byte_ok((size_t)(pos - line), *pos)) FAIL(CSH_E_INVALID_VERSION, pos);
        pos++;
    }
    if (pos == end) goto incomplete;
    if (*pos != ' ') FAIL(is_digit(*pos) ? CSH_E_INVALID_VERSION : CSH_E_INVALID_STATUS_LINE, pos);
    if (line[5] != '1') FAIL(CSH_E_UNSUPPORTED_VERSION, line + 5);
    m->version_major = 1;
    m->version_minor = line[7] - '0';
    pos++;
    ls->mark = (size_t)(pos - buf);

status:
    while (pos < end && (size_t)(pos - buf) - ls->mark < 3) {
        if (!is_digit(*pos)) FAIL(CSH_E_INVALID_STATUS, pos);
        pos++;
    }
    if (pos == end) {
        ls->sub = S_STATUS;
        goto incomplete;
    }
    {
        const char *d = buf + ls->mark;
        m->status = (d[0] - '0') * 100 + (d[1] - '0') * 10 + (d[2] - '0');
        if (m->status < 100 || m->status > 599) FAIL(CSH_E_INVALID_STATUS, d);
    }
    c = *pos;
    if (c == ' ') {
        pos++;
    } else if (c != '\r' && c != '\n') {
        FAIL(is_digit(c) ? CSH_E_INVALID_STATUS : CSH_E_INVALID_STATUS_LINE, pos);
    }
    ls->mark2 = (size_t)(pos - buf);

reason:
    pos = CSH_V_SCAN_VALUE(pos, end);
    if (pos == end) {
        ls->sub = S_REASON;
        goto incomplete;
    }
    c = *pos;
    if (c != '\r' && c != '\n') FAIL(CSH_E_INVALID_STATUS_LINE, pos);
    if ((size_t)(pos - line) > p->limits_.max_start_line)
        FAIL(CSH_E_URI_TOO_LONG, line + p->limits_.max_start_line);
    m->reason.off = ls->mark2;
    m->reason.len = (size_t)(pos - buf) - ls->mark2;
    pos++;
    if (c == '\n') {
        if (!(p->flags_ & CSH_PARSE_LENIENT_BARE_LF)) FAIL(CSH_E_BARE_LF, pos - 1);
        goto line_done;
    }

cr:
    if (pos == end) {
        ls->sub = S_CR;
        goto incomplete;
    }
    if (*pos != '\n') FAIL(CSH_E_BARE_CR, pos - 1);
    pos++;

line_done:
    ls->pos = (size_t)(pos - buf);
    ls->sub = 0;
    return CSH_OK;

incomplete:
    ls->pos = (size_t)(pos - buf);
    return CSH_INCOMPLETE;
fail:
    return start_line_error(p, buf, line, at, pos, err);
}

/* The fast path for the usual case: whole field lines, each ending in CRLF,
 * with nothing odd in them. It keeps no state of its own: at the first line
 * it is not sure of (incomplete, unusual, wrong, over a limit, or past the
 * array) it stops at that line's start and the resumable parser takes that
 * line over, so a line is read at most twice and the results are the same.
 * Returns CSH_INCOMPLETE to hand over, CSH_OK or an error when the head
 * ended. */
static CSH_V_ATTR int CSH_V(fields_fast)(csh_parser *p, const char *buf, size_t head_end)
{
    csh_line_state_ *ls = &p->ls_;
    const char *line = buf + ls->line;
    const char *end = buf + head_end;
    const size_t max_line = p->limits_.max_field_line;
    size_t n = p->msg.num_headers;

    if (ls->sub == CSH__F_VALUE) {
        /* The last call stopped inside this line's value (the usual way for
         * a head in pieces): finish it here if its end came, with the checks
         * the resumable parser makes at a value's end; anything else
         * (incomplete, a control, a bare CR, over the limit, past the
         * array) goes back to it, its state untouched. */
        const char *lim = (size_t)(end - line) > max_line + 2 ? line + max_line + 2 : end;
        const char *v = buf + ls->mark2;
        const char *ve = CSH_V_SCAN_VALUE(buf + ls->pos, lim);
        if (ve == end) {
            /* still in the value: where the resumable parser would stop,
             * and the caller checks the limits as it would */
            ls->pos = (size_t)(end - buf);
            return FAST_STOPPED_IN_VALUE;
        }
        if (n >= p->fields_cap_ || lim - ve < 2 || ve[0] != '\r' || ve[1] != '\n')
            return CSH_INCOMPLETE;
        const char *next = ve + 2;
        if ((unsigned char)ve[-1] <= ' ')
            while (ve > v && csh__is_ows(ve[-1])) ve--;
        csh_header *h = &p->fields_[n++];
        h->name.off = ls->line;
        h->name.len = ls->mark - ls->line;
        h->value.off = ls->mark2;
        h->value.len = (size_t)(ve - v);
        p->msg.num_headers = n;
        ls->sub = CSH__F_START;
        line = next;
        if (end - line >= 2 && line[0] == '\r' && line[1] == '\n') {
            ls->line = (size_t)(line - buf);
            ls->pos = ls->line + 2;
            return finish_head(p, buf);
        }
    }

    while (n < p->fields_cap_) {
        const char *lim = (size_t)(end - line) > max_line + 2 ? line + max_line + 2 : end;
        const char *ne, *ve;
        if (!CSH_V_SCAN_FIELD(line, lim, &ne, &ve)) break;
        if (lim - ve < 2 || ve[0] != '\r' || ve[1] != '\n') {
            if (ve == end && end - ne > 2 && ne[1] == ' ' && !csh__is_ows(ne[2])) {
                /* The bytes ran out inside the value (the usual way for a
                 * head to arrive in pieces): leave the resumable parser
                 * where this scan stopped, rather than have it read the
                 * line again. */
                ls->line = (size_t)(line - buf);
                ls->mark = (size_t)(ne - buf);
                ls->mark2 = ls->mark + 2;
                ls->pos = (size_t)(end - buf);
                ls->sub = CSH__F_VALUE;
                return FAST_STOPPED_IN_VALUE;
            }
            break;
        }
        /* *ve is not whitespace, so these stop by ve at the latest */
        const char *v = ne + 1;
        v += *v == ' ';
        /* one compare for the usual case: value bytes <= 0x20 are SP and
         * HTAB (CR ends the scan) */
        if ((unsigned char)*v <= ' ')
            while (csh__is_ows(*v)) v++;
        const char *next = ve + 2;
        if ((unsigned char)ve[-1] <= ' ')
            while (ve > v && csh__is_ows(ve[-1])) ve--;

        csh_header *h = &p->fields_[n++];
        h->name.off = (size_t)(line - buf);
        h->name.len = (size_t)(ne - line);
        h->value.off = (size_t)(v - buf);
        h->value.len = (size_t)(ve - v);
        p->msg.num_headers = n;
        line = next;
        if (end - line >= 2 && line[0] == '\r' && line[1] == '\n') {
            ls->line = (size_t)(line - buf); /* the empty line, as the general path leaves it */
            ls->pos = ls->line + 2;
            return finish_head(p, buf);
        }
    }
    ls->line = ls->pos = (size_t)(line - buf);
    return CSH_INCOMPLETE;
}

/* The head parser's loop over lines, from where the last call stopped. Not
 * inlined into csh_parser_execute: that keeps the entry a few instructions
 * that tail-call one copy, instead of one copy's prologue paid by both (a
 * head in pieces makes a call per piece). */
__attribute__((noinline)) static CSH_V_ATTR int CSH_V(run)(csh_parser *p, const char *buf,
                                                           size_t len)
{
    csh_line_state_ *ls = &p->ls_;
    size_t head_end;
    int r;

    head_end = len < p->limits_.max_head ? len : p->limits_.max_head;

    for (;;) {
        int start = p->state_ == ST_START_LINE;
        size_t line_limit = start ? p->limits_.max_start_line : p->limits_.max_field_line;
        size_t line_end = ls->line + line_limit + 2; /* + CRLF; limits are clamped */
        size_t win = head_end < line_end ? head_end : line_end;

        if (start) {
            r = p->type_ == CSH_REQUEST ? CSH_V(parse_request_line)(p, buf, win)
                                        : CSH_V(parse_status_line)(p, buf, win);
            if (r == LINE_SKIPPED) continue;
            if (r == CSH_OK) {
                p->state_ = ST_FIELDS;
                ls->line = ls->pos;
                continue;
            }
        } else {
            if (ls->sub == CSH__F_START || ls->sub == CSH__F_VALUE) {
                r = CSH_V(fields_fast)(p, buf, head_end);
                if (r == FAST_STOPPED_IN_VALUE) {
                    r = CSH_INCOMPLETE; /* the limits are checked below */
                    line_end = ls->line + line_limit + 2;
                    win = head_end < line_end ? head_end : line_end;
                    goto check_incomplete;
                }
                if (r != CSH_INCOMPLETE) {
                    if (r == CSH_OK) p->state_ = ST_DONE;
                    p->result_ = r;
                    return r;
                }
                line_end = ls->line + line_limit + 2;
                win = head_end < line_end ? head_end : line_end;
            }
            /* parse straight into the caller's array while there is room */
            csh_header spare;
            size_t n = p->msg.num_headers;
            csh_header *h = n < p->fields_cap_ ? &p->fields_[n] : &spare;
            int eos = 0;
            size_t at = 0;
            r = CSH_V(field_line_parse)(ls, buf, win, p->flags_, n == 0,
                                        p->limits_.max_field_line, h, &eos, &at);
            if (r == CSH_OK) {
                if (eos) {
                    r = finish_head(p, buf);
                    if (r == CSH_OK) p->state_ = ST_DONE;
                    p->result_ = r;
                    return r;
                }
                if (h == &spare) {
                    r = CSH_E_TOO_MANY_FIELDS;
                    at = ls->line;
                } else {
                    p->msg.num_headers = n + 1;
                }
                if (r == CSH_OK) {
                    ls->line = ls->pos;
                    continue;
                }
            }
            if (r < 0) p->error_offset_ = at;
        }

    check_incomplete:
        if (r == CSH_INCOMPLETE) {
            /* Which limit, if any, stopped the scan? The text of a line may
             * not exceed its limit: a line that has read more bytes than
             * that, not counting a final CR, is too long whether or not more
             * bytes could come. */
            size_t text = ls->pos - ls->line;
            int after_cr = !start                    ? csh__field_sub_after_cr(ls->sub)
                           : p->type_ == CSH_REQUEST ? (ls->sub == R_CR || ls->sub == R_LINE_CR)
                                                     : ls->sub == S_CR;
            if (text > line_limit + (after_cr ? 1u : 0u)) {
                p->error_offset_ = ls->line + line_limit;
                r = start ? CSH_E_URI_TOO_LONG : CSH_E_FIELD_LINE_TOO_LONG;
            } else if (win == len) {
                return CSH_INCOMPLETE;
            } else {
                p->error_offset_ = win; /* the head limit */
                r = CSH_E_HEAD_TOO_LARGE;
            }
        }
        p->result_ = r;
        return r;
    }
}
