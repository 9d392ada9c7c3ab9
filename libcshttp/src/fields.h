/* One field line of a head or a trailer section (RFC 9112 §5, RFC 9110
 * §5.5), parsed resumably and strictly: the head parser and the chunked
 * decoder share it. */
#ifndef CSH_SRC_FIELDS_H
#define CSH_SRC_FIELDS_H

#include <stddef.h>

#include "cshttp/parser.h"
#include "scan.h"

/* Sub-states of a field line (csh_line_state_.sub). */
enum { CSH__F_START = 0, CSH__F_NAME, CSH__F_NAME_WS, CSH__F_OWS, CSH__F_VALUE, CSH__F_CR,
       CSH__F_END_CR };

/* Parses, or resumes, the line at st->line in buf[0 .. win): win is where the
 * bytes end or a limit falls. `first` says the line follows the start line
 * (whitespace there is CSH_E_WS_AFTER_START_LINE rather than CSH_E_OBS_FOLD).
 * A line whose text is longer than max_line is CSH_E_FIELD_LINE_TOO_LONG.
 *
 * Returns CSH_OK with *end_of_section set to 1 for the empty line that ends
 * the section, or to 0 with *out describing the field; st->pos is then the
 * next line's first byte and st->sub CSH__F_START. CSH_INCOMPLETE when win was
 * reached (st keeps the place). A negative error, with *error_at its offset. */
/* Inline: it is the inner loop of the head parser. */
static inline int csh__is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static inline int csh__field_line_parse(csh_line_state_ *st, const char *buf, size_t win, unsigned flags, int simd,
                          int first, size_t max_line, csh_header *out, int *end_of_section,
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
    p = csh__scan_name(p, end, simd);
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
    err = (c == '\r' || c == '\n') ? CSH_E_MISSING_COLON : CSH_E_INVALID_FIELD_NAME;
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
    p = csh__scan_value(p, end, simd);
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
    *error_at = (size_t)(at - buf);
    return err;
}

#endif
