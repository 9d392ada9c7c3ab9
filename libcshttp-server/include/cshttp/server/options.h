/* cshs_options: every setting of the engine, with its default.
 *
 *   cshs_options o;
 *   cshs_options_init(&o);            // the defaults below, and o.size
 *   o.port = 8080;
 *   csh_limits limits;                // the parser's limits: NULL for the defaults,
 *   csh_limits_init(&limits);         // or the caller's own, filled by its _init
 *   limits.max_head = 16384;
 *   o.limits = &limits;
 *   const char *why;
 *   if (cshs_options_check(&o, &why) < 0) die(why);  // "port must be 0..65535"
 *
 * Options can also be read from argv (cshs_options_parse_args) and from a
 * config file of "name = value" lines (cshs_options_load_file); the names
 * are the field names below, and the command-line form is --name-with-dashes
 * ("--keepalive-timeout-ms 5000"). cshs_options_help prints them all with
 * their defaults.
 *
 * Ownership: the struct is the caller's; strings it points to must outlive
 * the server made with it (the loaders keep their strings in `o->strings_`,
 * freed by cshs_options_release). Threads: pure functions, any thread.
 *
 * Growing without breaking callers. `size` is sizeof(cshs_options) as the
 * caller was compiled, set by cshs_options_init, and the engine reads only
 * the fields that fit in it (an option added after the caller was built
 * takes its default; a loader asked to set one fails and names it). So
 * always fill the struct with cshs_options_init, never with an initializer
 * or memset alone: a size below CSHS_OPTIONS_SIZE_0_2 fails
 * cshs_options_check ("size must be set by cshs_options_init") and
 * cshs_server_new. The parser's limits and the toolkit's options are
 * pointers, not members, so that a field added to csh_limits (libcshttp) or
 * cshw_options (libcshttp-web) does not move a field of cshs_options: each
 * library versions its own struct by its own size field. The rule for
 * adding an engine option: a new field goes at the end (after the private
 * fields), with its default in cshs_options_init, its check in
 * cshs_options_check and its row in options.c's table; nothing is removed,
 * reordered or retyped (that is a new major version, see README.md). */
#ifndef CSHTTP_SERVER_OPTIONS_H
#define CSHTTP_SERVER_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cshttp/parser.h>
#include <cshttp/web/options.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cshs_options {
    /* sizeof(cshs_options) as the caller knew it: leave cshs_options_init's. */
    size_t size;

    /* Listeners. address: an IPv4 or IPv6 literal for TCP (default
     * "127.0.0.1"; NULL or "" for none); address6: a second TCP listener,
     * normally an IPv6 literal such as "::1" or "::" (default NULL: none);
     * both on `port` (default 8080; 0: an ephemeral port each, see
     * cshs_server_port). unix_path: a Unix stream socket (default NULL),
     * replaced if it exists and removed at stop. */
    const char *address;
    const char *address6;
    unsigned port;
    const char *unix_path;
    int reuseport; /* SO_REUSEPORT on the TCP listeners (default 0) */

    /* HTTPS (OpenSSL 3, TLS 1.2 and 1.3, ALPN http/1.1): when tls_cert and
     * tls_key (PEM files; the certificate file may hold the chain) are set,
     * `address` (and address6) also listen on tls_port (default 8443; 0:
     * ephemeral, see cshs_server_tls_port). The handshake must end within
     * tls_handshake_timeout_ms (default 10000). cshs_server_reload_tls reads
     * the files again. */
    const char *tls_cert;
    const char *tls_key;
    unsigned tls_port;
    unsigned tls_handshake_timeout_ms;
    int backlog; /* listen(2) backlog (default 511) */

    /* Threads (libcshttp-server/README.md, "Threads"). loops: event loops,
     * each run by one thread at a time (default 0: one per CPU the process
     * may use: its affinity mask, or its cgroup's CPU quota if lower).
     * Quick handlers run on the loop's thread; a handler that takes longer
     * than grow_after_us (default 1000) while its loop has events waiting
     * loses the loop to a parked worker (within 8 grow_after_us when the
     * handlers before it were quick: the supervisor then looks less
     * often), and for offload_ms after a handler
     * took that long (default 1000; 0: never) that loop's handlers run on
     * other threads, so blocking ones do not cost a hand-over each.
     * Threads are kept up to
     * max(min_threads, loops + 1) (default min_threads 2), at most
     * max_threads (default 256: blocked handlers each hold one), and a
     * thread more per loop whose handler blocks then (it is handed over
     * all the same); a parked worker beyond them leaves after park_after_ms
     * (default 2000) idle. */
    unsigned loops;
    unsigned offload_ms;
    unsigned min_threads;
    unsigned max_threads;
    unsigned grow_after_us;
    unsigned park_after_ms;

    /* Beyond max_connections open connections (default 10000) a new
     * connection is answered 503 with Connection: close. */
    unsigned max_connections;

    /* Deadlines, in milliseconds; 0 turns one off.
     * header_timeout_ms: a request head must arrive within it from its
     *   first byte, and a new connection must send one (default 10000).
     * keepalive_timeout_ms: an idle keep-alive connection is closed after
     *   it (default 60000).
     * min_body_rate: bytes per second a request body must keep, over
     *   windows of body_grace_ms (1 s when 0), the first of them the grace
     *   after the head (defaults 240 and 5000, as Kestrel); 0: off. Each
     *   window is measured alone: early bytes do not pay for a later
     *   stall, which is cut (408) by the end of the next window.
     * read_timeout_ms: the longest wait for body bytes (default 30000).
     * send_timeout_ms: the longest wait for the client to take response
     *   bytes (default 30000).
     * stop_timeout_ms: how long a graceful stop waits for requests in
     *   flight before closing them (default 5000).
     * sweep_interval_ms: how often deadlines are checked (default 200). */
    unsigned header_timeout_ms;
    unsigned keepalive_timeout_ms;
    unsigned min_body_rate;
    unsigned body_grace_ms;
    unsigned read_timeout_ms;
    unsigned send_timeout_ms;
    unsigned stop_timeout_ms;
    unsigned sweep_interval_ms;

    /* Output the socket does not take at once is queued and sent by the
     * event loop, so a slow reader holds no worker; a handler whose own
     * queued bytes pass write_high_water (default 262144; file ranges
     * count nothing) waits for the client until half of them went, within
     * send_timeout_ms. */
    size_t write_high_water;

    /* Lingering close, after an error answer or with input left unread:
     * our side is shut down and what the client still sends is read and
     * discarded for at most linger_ms (default 2000; 0: close at once) and
     * linger_bytes (default 1 MiB), so the answer is not destroyed by a
     * reset before the client reads it. */
    unsigned linger_ms;
    uint64_t linger_bytes;

    /* The read buffer of a busy connection (default 8192; it grows up to
     * the head limit plus itself); idle connections hold none. */
    size_t read_buffer;

    /* The parser's limits and the toolkit's options (default NULL: their
     * defaults), or the caller's, filled by csh_limits_init and
     * cshw_options_init: the server copies them (the strings in `web` must
     * outlive it). The loaders write a limit or a toolkit option
     * ("max_head", "gzip") into the struct pointed at, and when the pointer
     * is NULL into one of their own, filled with the defaults and freed by
     * cshs_options_release. */
    csh_limits *limits;
    cshw_options *web;

    /* Private: strings and structs owned by the loaders. */
    char **strings_;
    size_t nstrings_;

    /* 0.3.2. After a handler run as a job (one that blocks, see offload_ms)
     * that waited in the kernel, its thread waits up to
     * next_request_wait_us (default 1000; 0: never; at most 1000000) for
     * the connection's next request before giving the connection back to
     * its loop, as a thread per connection would: a client that sends it
     * at once is served with no trip through the loop and no other thread
     * woken. A client slower than that is the loop's again, so a slow
     * client holds a thread that long at most. */
    uint64_t next_request_wait_us;

    /* 0.4.1. With max_threads busy, a handler that may block waits for a
     * thread, first come first served, and the loops go on serving
     * (cshs_server_set_quick says which handlers need no thread). Beyond
     * max_waiting_handlers waiting (default 1024; 0: none waits; at most
     * 1000000) a request is answered 503 (CSHW_E_OVERLOADED) without its
     * handler, and counted (cshs_counters.handlers_declined). */
    size_t max_waiting_handlers;

    /* 0.4.1. The bytes of request bodies stored in temporary files (past
     * the toolkit's body_buffer), all requests together, at most (default
     * 4 GiB; 0: no bound). A body that would pass it is answered 503
     * (CSHW_E_TEMP_FULL) and counted (cshs_counters.request_temp_refused). */
    uint64_t max_request_temp_bytes;

    /* 0.4.2. A tunnel (a connection that switched protocols, tunnel.h) is
     * closed when no byte went either way for this long (default 60000,
     * nginx's proxy_read_timeout; 0: never). */
    uint64_t tunnel_idle_timeout_ms;

    /* 0.4.7. HTTP/2 (RFC 9113): h2 chosen by ALPN on the HTTPS port, h2c
     * with prior knowledge on the plain one (default 1; 0: HTTP/1.1 only).
     * h2_max_streams: the streams one connection may have open at once
     * (SETTINGS_MAX_CONCURRENT_STREAMS, default 128, nginx's; 1..1024).
     * A request's fields are bounded by the parser's max_head (the
     * SETTINGS_MAX_HEADER_LIST_SIZE advertised). h2_max_handlers: the
     * streams of one connection whose handlers may run at once, unless
     * the application says they never wait (cshs_server_set_quick); the
     * others wait for one of them to answer, so one client cannot take a
     * thread per stream (default 8; 1..1024). h2_max_continuations: the
     * CONTINUATION frames one header block may have (default 8; the 2024
     * CONTINUATION flood); more end the connection. h2_max_resets: the
     * streams a client may reset (RST_STREAM) in a burst, given back at
     * a thirtieth of it a second (default 1000: 33 a second; rapid reset,
     * CVE-2023-44487); past it the connection ends with GOAWAY
     * ENHANCE_YOUR_CALM. */
    int http2;
    unsigned h2_max_streams;
    unsigned h2_max_handlers;
    unsigned h2_max_continuations;
    uint64_t h2_max_resets;
} cshs_options;

/* The size of cshs_options in libcshttp-server 0.2, the first version with
 * `size`: the smallest size the engine accepts. */
#define CSHS_OPTIONS_SIZE_0_2 (offsetof(cshs_options, nstrings_) + sizeof(size_t))

/* Fills the first `size` bytes of `o` with the defaults (zeros past the
 * fields this library knows) and sets o->size = size. Called through
 * cshs_options_init, which passes the caller's sizeof: a library newer
 * than the caller never writes past the caller's struct. */
CSHS_EXPORT void cshs_options_init_sized(cshs_options *o, size_t size);

/* Fills `o` with the defaults above and sets o->size. */
static inline void cshs_options_init(cshs_options *o)
{
    cshs_options_init_sized(o, sizeof *o);
}

/* Frees the strings and structs the loaders allocated (not the struct);
 * o->limits or o->web pointing at one of them becomes NULL. */
CSHS_EXPORT void cshs_options_release(cshs_options *o);

/* 0 when `o` is usable, else -EINVAL and *why (when not NULL) set to a
 * static message naming the field ("max_threads must be >= min_threads").
 * Checks o->limits and o->web too (by their own sizes). */
CSHS_EXPORT int cshs_options_check(const cshs_options *o, const char **why);

/* Sets one option by name ("port", "keepalive_timeout_ms"; dashes and
 * underscores are the same) from its text value. 0, or -EINVAL with a
 * message in err[0 .. errlen) naming the option (also when the option is
 * newer than the struct it belongs in, as the caller was compiled), or
 * -ENOMEM. */
CSHS_EXPORT int cshs_options_set(cshs_options *o, const char *name, const char *value, char *err,
                                 size_t errlen);

/* Reads a config file: one "name = value" per line, '#' starts a comment,
 * blank lines ignored, names as cshs_options_set takes them. A line of
 * more than 65,536 bytes, a NUL byte, a name set twice and a folder given
 * as the file are errors. 0, -errno when it cannot be read (-EISDIR: a
 * folder), or -EINVAL with "file:line: message" in err: the first bad
 * line, after which nothing more is read. */
CSHS_EXPORT int cshs_options_load_file(cshs_options *o, const char *path, char *err, size_t errlen);

/* An application's own settings in the same file: called for each name the
 * engine does not know (as written, dashes or underscores). Returns 1 when
 * it took the setting, 0 when it does not know the name either (an error
 * naming it follows), or a negative error with a message in err. */
typedef int (*cshs_app_option_fn)(void *app_data, const char *name, const char *value, char *err,
                                  size_t errlen);

/* cshs_options_load_file, with names the engine does not know handed to
 * app (NULL: they are errors). Same results. */
CSHS_EXPORT int cshs_options_load_file_with(cshs_options *o, const char *path,
                                            cshs_app_option_fn app, void *app_data, char *err,
                                            size_t errlen);

/* cshs_options_load_file_with, reading on past a bad line (which sets
 * nothing): every problem, "file:line: message" (or "file: message" when
 * the file cannot be opened or read), is handed to problem(problem_data,
 * message) in the file's order, so that a program reports them all at
 * once. The number of problems (0: every line taken), -errno when the
 * file cannot be opened or read (a problem names it), or -EINVAL for a
 * NULL argument. Since 0.3.3. */
CSHS_EXPORT int cshs_options_load_file_each(
    cshs_options *o, const char *path, cshs_app_option_fn app, void *app_data,
    void (*problem)(void *problem_data, const char *message), void *problem_data);

/* Takes the engine's options out of argv ("--name value" or
 * "--name=value"), leaving the other arguments in argv (compacted, *argc
 * updated) for the application. 0, or -EINVAL with a message in err. */
CSHS_EXPORT int cshs_options_parse_args(cshs_options *o, int *argc, char **argv, char *err,
                                        size_t errlen);

/* Prints every option as "--name VALUE  description (default: ...)". */
CSHS_EXPORT void cshs_options_help(FILE *out);

#ifdef __cplusplus
}
#endif

#endif
