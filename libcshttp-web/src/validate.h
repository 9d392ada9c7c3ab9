/* Request checks the wire parser leaves to the toolkit (private). Nothing
 * here is exported. */
#ifndef CSHW_VALIDATE_H
#define CSHW_VALIDATE_H

#include <cshttp/parser.h>

/* Checks a request whose head parsed (csh_parser_execute gave CSH_OK)
 * against the rules of RFC 9110 and RFC 9112 that answer 400, before any
 * handler sees it:
 *   - the Host value, when present, is uri-host [ ":" port ] (RFC 9110
 *     §7.2, RFC 3986 §3.2.2-3.2.3) with a port up to 65535; an empty value
 *     is allowed (RFC 9112 §3.2), a host left empty before a port is not
 *     (RFC 9110 §4.2.1): CSHW_E_HOST_INVALID;
 *   - an absolute-form target is "http" or "https" (any case) "://" and a
 *     non-empty host[:port] of the same grammar (RFC 9112 §3.2.2, RFC 9110
 *     §4.2.1-4.2.2), and an authority-form target (CONNECT) is
 *     host ":" port of that grammar (RFC 9112 §3.2.3):
 *     CSHW_E_TARGET_AUTHORITY;
 *   - an absolute-form target has no userinfo ("user@"; RFC 9110 §4.2.4):
 *     CSHW_E_TARGET_USERINFO;
 *   - no target has a fragment ('#'; RFC 9112 §3.2, RFC 9110 §7.1), and in
 *     the path of an origin-form or absolute-form target every '%' is
 *     followed by two hex digits (RFC 3986 §2.1; the query is the form
 *     parser's): CSHW_E_TARGET_SYNTAX.
 * head: the buffer the parser parsed, whose first byte is the message's
 * first byte (msg's spans are offsets into it). Returns 0, or the first
 * code above that applies (the target before the Host); every one has the
 * status 400 in error.h. Reads head and msg only: no allocation, no I/O,
 * thread-safe. */
int cshw__request_validate(const char *head, const csh_message *msg);

#endif
