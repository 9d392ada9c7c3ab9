/* One field line of a head or a trailer section (RFC 9112 §5, RFC 9110
 * §5.5), parsed resumably and strictly: the head parser and the chunked
 * decoder share it. */
#ifndef CSH_SRC_FIELDS_H
#define CSH_SRC_FIELDS_H

#include <stddef.h>

#include "cshttp/parser.h"
#include "scan.h"

static inline int csh__is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* Sub-states of a field line (csh_line_state_.sub). */
enum { CSH__F_START = 0, CSH__F_NAME, CSH__F_NAME_WS, CSH__F_OWS, CSH__F_VALUE, CSH__F_CR,
       CSH__F_END_CR, CSH__F_NAME_CR, CSH__F_SEEK_COLON };

/* 1 when a line stopped in `sub` has just read a CR that ends its text: the
 * line's text is then one byte shorter than what was read. */
static inline int csh__field_sub_after_cr(unsigned sub)
{
    return sub == CSH__F_CR || sub == CSH__F_END_CR || sub == CSH__F_NAME_CR;
}

/* csh__field_line_parse_portable / _avx2 (fields_impl.h):
 * Parses, or resumes, the line at st->line in buf[0 .. win): win is where the
 * bytes end or a limit falls. `first` says the line follows the start line
 * (whitespace there is CSH_E_WS_AFTER_START_LINE rather than CSH_E_OBS_FOLD).
 * A line whose text is longer than max_line is CSH_E_FIELD_LINE_TOO_LONG.
 *
 * Returns CSH_OK with *end_of_section set to 1 for the empty line that ends
 * the section, or to 0 with *out describing the field; st->pos is then the
 * next line's first byte and st->sub CSH__F_START. CSH_INCOMPLETE when win was
 * reached (st keeps the place). A negative error, with *error_at its offset. */
#define CSH_V(name) csh__##name##_portable
#define CSH_V_ATTR
#define CSH_V_SCAN_NAME(p, e) csh__scan_token(p, e)
#define CSH_V_SCAN_VALUE(p, e) csh__scan_value_portable(p, e)
#include "fields_impl.h"
#undef CSH_V
#undef CSH_V_ATTR
#undef CSH_V_SCAN_NAME
#undef CSH_V_SCAN_VALUE

#ifdef CSH_HAVE_AVX2
#define CSH_V(name) csh__##name##_avx2
#define CSH_V_ATTR CSH_AVX2
#define CSH_V_SCAN_NAME(p, e) csh__scan_token_avx2_from(buf, p, e) /* buf: readable from */
#define CSH_V_SCAN_VALUE(p, e) csh__scan_value_avx2_from(buf, p, e)
#include "fields_impl.h"
#undef CSH_V
#undef CSH_V_ATTR
#undef CSH_V_SCAN_NAME
#undef CSH_V_SCAN_VALUE
#endif

#endif
