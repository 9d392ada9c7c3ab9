/* One field line of a head or a trailer section (RFC 9112 §5), parsed
 * resumably: the head parser and the chunked decoder share it. */
#ifndef CSH_SRC_FIELDS_H
#define CSH_SRC_FIELDS_H

#include <stddef.h>

#include "cshttp/parser.h"

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
int csh__field_line_parse(csh_line_state_ *st, const char *buf, size_t win, unsigned flags, int simd,
                          int first, size_t max_line, csh_header *out, int *end_of_section,
                          size_t *error_at);

#endif
