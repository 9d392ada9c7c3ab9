/* Template of the field-line parser: included once per scanner family by
 * fields.h, with
 *   CSH_V(name)           the variant's name for `name`
 *   CSH_V_ATTR            its function attributes (the AVX2 target)
 *   CSH_V_SCAN_NAME(p,e)  and CSH_V_SCAN_VALUE(p,e), the scanners.
 * No include guard: that is the point. */

static inline CSH_V_ATTR int CSH_V(field_line_parse)(csh_line_state_ *st, const char *buf, size_t win,
                                                    unsigned flags, int first, size_t max_line,
                                                    csh_header *out, int *end_of_section,
                                                    size_t *error_at)
{
    const char *p = buf + st->pos;
    const char *end = buf + win;
    const char *line = buf + st->line;
    /* the line's marks live in registers; st keeps them only when the bytes
     * run out */
    size_t name_end = st->mark, value_start = st->mark2, value_end = st->mark3;
    const char *at; /* where an error was found */
    int err;
    char c;

    switch (st->sub) {
    case CSH__F_NAME: goto name;
    case CSH__F_NAME_WS: goto name_ws;
    case CSH__F_OWS: goto ows;
    case CSH__F_VALUE: goto value;
    case CSH__F_CR: goto cr;
    case CSH__F_END_CR: goto end_cr;
    case CSH__F_NAME_CR: goto name_cr;
    case CSH__F_SEEK_COLON: goto seek_colon;
    default: break;
    }

    if (p == end) goto incomplete;
    c = *p;
    if (c == '\r') {
        p++;
        goto end_cr;
    }
    if (c == '\n') {
        at = p;
        if (!(flags & CSH_PARSE_LENIENT_BARE_LF)) goto bare_lf;
        p++;
        goto section_done;
    }
    if (csh__is_ows(c)) {
        /* RFC 9112 §2.2: whitespace before the first field may hide a field
         * from one parser and not another; §5.2: obs-fold is rejected. */
        at = p;
        err = first ? CSH_E_WS_AFTER_START_LINE : CSH_E_OBS_FOLD;
        goto fail;
    }

name:
    p = CSH_V_SCAN_NAME(p, end);
    if (p == end) {
        st->sub = CSH__F_NAME;
        goto incomplete;
    }
    c = *p;
    if (c == ':') {
        if (p == line) {
            at = p;
            err = CSH_E_EMPTY_FIELD_NAME;
            goto fail;
        }
        name_end = (size_t)(p - buf);
        p++;
        goto ows;
    }
    at = p;
    if (csh__is_ows(c)) {
        name_end = (size_t)(p - buf);
        goto name_ws;
    }
    if (c == '\r') {
        p++;
        goto name_cr;
    }
    err = c == '\n' ? CSH_E_MISSING_COLON : CSH_E_INVALID_FIELD_NAME;
    goto fail;

name_cr:
    /* a line that ends inside the name has no colon; a CR that ends nothing
     * is a bare CR (RFC 9112 §2.2) */
    if (p == end) {
        st->sub = CSH__F_NAME_CR;
        goto incomplete;
    }
    at = p - 1;
    err = *p == '\n' ? CSH_E_MISSING_COLON : CSH_E_BARE_CR;
    goto fail;

name_ws:
    /* RFC 9112 §5.1: no whitespace between name and colon; tell that apart
     * from a line with no colon at all, which says more about the sender. */
    while (p < end && csh__is_ows(*p)) p++;
    if (p == end) {
        st->sub = CSH__F_NAME_WS;
        goto incomplete;
    }
    if (*p == ':') {
        at = buf + name_end;
        err = CSH_E_WS_BEFORE_COLON;
        goto fail;
    }

seek_colon:
    /* "Name word: value" is a name with whitespace in it; "Name value"
     * (no colon at all) is a line that is not a field line */
    while (p < end && *p != ':' && *p != '\r' && *p != '\n') p++;
    if (p == end) {
        st->sub = CSH__F_SEEK_COLON;
        goto incomplete;
    }
    if (*p == ':') {
        at = buf + name_end;
        err = CSH_E_INVALID_FIELD_NAME;
    } else {
        at = p;
        err = CSH_E_MISSING_COLON;
    }
    goto fail;

ows:
    if (p < end && *p == ' ') p++; /* the usual single space */
    while (p < end && csh__is_ows(*p)) p++;
    if (p == end) {
        st->sub = CSH__F_OWS;
        goto incomplete;
    }
    value_start = (size_t)(p - buf);

value:
    p = CSH_V_SCAN_VALUE(p, end);
    if (p == end) {
        st->sub = CSH__F_VALUE;
        goto incomplete;
    }
    c = *p;
    at = p;
    if (c != '\r' && c != '\n') {
        err = CSH_E_INVALID_FIELD_VALUE; /* RFC 9110 §5.5: NUL, CTL, DEL */
        goto fail;
    }
    if ((size_t)(p - line) > max_line) {
        at = line + max_line;
        err = CSH_E_FIELD_LINE_TOO_LONG;
        goto fail;
    }
    {
        const char *v = buf + value_start, *e = p;
        while (e > v && csh__is_ows(e[-1])) e--;
        value_end = (size_t)(e - buf);
    }
    p++;
    if (c == '\n') {
        if (!(flags & CSH_PARSE_LENIENT_BARE_LF)) goto bare_lf;
        goto field_done;
    }

cr:
    if (p == end) {
        st->sub = CSH__F_CR;
        goto incomplete;
    }
    if (*p != '\n') {
        at = p - 1;
        err = CSH_E_BARE_CR;
        goto fail;
    }
    p++;

field_done:
    out->name.off = st->line;
    out->name.len = name_end - st->line;
    out->value.off = value_start;
    out->value.len = value_end - value_start;
    *end_of_section = 0;
    st->pos = (size_t)(p - buf);
    st->sub = CSH__F_START;
    return CSH_OK;

end_cr:
    if (p == end) {
        st->sub = CSH__F_END_CR;
        goto incomplete;
    }
    if (*p != '\n') {
        at = p - 1;
        err = CSH_E_BARE_CR;
        goto fail;
    }
    p++;

section_done:
    *end_of_section = 1;
    st->pos = (size_t)(p - buf);
    st->sub = CSH__F_START;
    return CSH_OK;

incomplete:
    st->pos = (size_t)(p - buf);
    st->mark = name_end;
    st->mark2 = value_start;
    st->mark3 = value_end;
    return CSH_INCOMPLETE;

bare_lf:
    err = CSH_E_BARE_LF; /* RFC 9112 §2.2: strict unless asked */
fail:
    /* A fault decided by a byte past the line's limit comes second to the
     * limit: the line was too long before it, and a parser fed in pieces
     * stops there. p is the byte that decided, or the one after the CR or
     * LF that decided (the byte after a CR may lie past the limit). */
    if ((size_t)((p > line && (p[-1] == '\r' || p[-1] == '\n') ? p - 1 : p) - line) > max_line) {
        at = line + max_line;
        err = CSH_E_FIELD_LINE_TOO_LONG;
    }
    *error_at = (size_t)(at - buf);
    return err;
}
