/* cshw_exchange: one connection's HTTP/1.1 exchanges, driven without
 * blocking. The one place where a request is parsed, validated, run and
 * answered: the engine (libcshttp-server) and the in-memory transport
 * (cshw_memory_serve) both drive their connections through it, so the
 * toolkit's tests see the bytes production sends.
 *
 * The owner of the connection (the engine's event loop, or a test) feeds it
 * input and runs what is ready:
 *
 *   cshw_exchange_config config;
 *   cshw_exchange_config_init(&config);                // the defaults, and config.size
 *   config.handler = handler;                          // or config.router
 *   cshw_exchange *x = cshw_exchange_new(&config);     // per connection
 *   for (;;) {
 *       int r = cshw_exchange_input(x, &transport);    // never waits
 *       if (r == CSHW_EXCHANGE_WANT_INPUT) wait for the socket, again;
 *       if (r == CSHW_EXCHANGE_READY)                  // head and body are in
 *           r = cshw_exchange_run(x, ctx, &transport); // the handler, on a worker
 *       if (r == CSHW_EXCHANGE_CLOSE) finish sending, lingering close, stop;
 *   }
 *   cshw_exchange_free(x);
 *
 * What cshw_exchange_input does, in order (RFC 9112 and 9110 sections in
 * exchange.c):
 * - reads what the transport has (its `read` op, or peek/consume) into the
 *   exchange's buffer, and parses a request head with libcshttp; a head
 *   that does not parse is answered with its status (400, 413, 414, 431,
 *   501, 505) and the connection closes;
 * - validates the request (Host syntax, absolute-form, fragment,
 *   percent-encoding): 400;
 * - refuses a body larger than options.max_request_body: 413 before any
 *   body byte is read when Content-Length says so, as soon as a chunked body
 *   crosses it;
 * - answers "100 Continue" when the client asked for it, then reads the
 *   whole body: up to options.body_buffer bytes in memory, beyond that into
 *   a temporary file in options.temp_dir; a malformed chunked body gets 400
 *   and the handler never runs;
 * - or, for a request that config.streams says streams its body (huge
 *   uploads, a proxy), stops after the head: the handler then reads the
 *   body on demand through the transport's blocking peek/consume.
 * cshw_exchange_run runs the handler (or the router) with the context,
 * ends the response, discards what the handler left of a stored body, and
 * reports the exchange. A request whose body failed is never answered 2xx:
 * the body's error status replaces it, or, once bytes were sent, the
 * response is cut short (no last chunk) and the connection closes.
 *
 * Every answer, the handler's and the exchange's own (parse errors, 408,
 * 413, validation), is reported once through config.report with its real
 * status and byte counts, so logs and counters need no wrapper.
 *
 * Ownership: the config is copied by cshw_exchange_new; what it points to
 * (options, limits, router, arg) is the caller's and must outlive every
 * exchange made with it; an exchange owns its buffer, parser
 * and temporary file. Spans in an outcome live for the report call only.
 * Threads: one thread at a time per exchange; cshw_exchange_input may run
 * on one thread (a loop) and cshw_exchange_run on another (a worker) as
 * long as the owner orders them. */
#ifndef CSHTTP_WEB_EXCHANGE_H
#define CSHTTP_WEB_EXCHANGE_H

#include <stddef.h>
#include <stdint.h>

#include <cshttp/parser.h>

#include "context.h"
#include "export.h"
#include "options.h"
#include "router.h"
#include "transport.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cshw_exchange cshw_exchange;

/* What cshw_exchange_input and cshw_exchange_run return (errors are
 * negative: -ENOMEM, -errno of the transport). */
enum {
    CSHW_EXCHANGE_WANT_INPUT = 1, /* wait until the connection is readable, call input again */
    CSHW_EXCHANGE_READY = 2,      /* a request is ready: cshw_exchange_run */
    CSHW_EXCHANGE_CLOSE = 3,      /* done: send what is queued, then close (lingering) */
    CSHW_EXCHANGE_NEXT = 4,       /* run: the connection goes on, call input again */
    CSHW_EXCHANGE_DEFERRED = 5,   /* run or resume: the handler answers later (0.3.1):
                                   * cshw_exchange_resume, once its owner says so */
    CSHW_EXCHANGE_SWITCHED = 6    /* run or resume: the request switched protocols
                                   * (0.4.2, cshw_exchange_switch): the connection is
                                   * the owner's, cshw_exchange_leftover its first bytes */
};

/* Where a connection stands between calls: for the owner's deadlines. */
typedef enum cshw_exchange_phase {
    CSHW_PHASE_IDLE = 0, /* between requests, no byte of the next one yet */
    CSHW_PHASE_HEAD,     /* a head has begun */
    CSHW_PHASE_BODY,     /* a body is being read into memory or a file */
    CSHW_PHASE_READY,    /* a request waits for cshw_exchange_run */
    CSHW_PHASE_CLOSED    /* answered and closing, or the input ended */
} cshw_exchange_phase;

/* One exchange as it ended: what an access log line and the counters need.
 * The toolkit fills it and hands it to config.report; it can grow at its
 * end, so `size` says which fields this library filled: sizeof the struct
 * as the toolkit was built. A report function built against newer headers
 * than the library reads a field only when it lies within `size`
 * (offsetof(cshw_exchange_outcome, field) < outcome->size); one built
 * against older headers never sees the fields added after it. */
typedef struct cshw_exchange_outcome {
    size_t size;            /* sizeof(cshw_exchange_outcome) in the library that filled it */
    int status;             /* the status answered; 0: none (the client left first) */
    int error;              /* when the exchange answered, not the handler: the
                             * csh_ or cshw_ error (or -ETIMEDOUT) that decided it */
    const char *head;       /* the request head; msg's spans refer to it */
    const csh_message *msg; /* NULL when the head did not parse */
    const char *line;       /* the request line as received (up to 1024 bytes,
                             * not NUL-terminated), for a head that did not parse too */
    size_t line_len;
    const cshw_transport *transport; /* remote address, is_secure */
    uint64_t bytes_in;               /* head and body bytes as received */
    uint64_t bytes_out;              /* response bytes handed to the transport */
    int keep_alive;                  /* the connection carries on */
    int64_t start_unix_ms;           /* wall clock when the head began */
    int64_t duration_us;             /* from the head's first byte to the response's end */
    /* of bytes_out, the body's: what followed the heads (chunk framing
     * included, as encoded), the body bytes of a log line (nginx's
     * $body_bytes_sent, Apache's %b). Since 0.3.2: read it only when
     * offsetof(cshw_exchange_outcome, body_bytes_out) < size. */
    uint64_t body_bytes_out;
} cshw_exchange_outcome;

/* What every exchange of a connection runs with. Fill it with
 * cshw_exchange_config_init (no handler, no router, no callbacks, default
 * options and limits), then set the fields wanted.
 *
 * The struct can grow without breaking callers: `size` is
 * sizeof(cshw_exchange_config) as the caller was compiled, set by
 * cshw_exchange_config_init, and the toolkit reads only the fields within
 * it (a field added after the caller was built takes its default). So
 * always fill it with cshw_exchange_config_init, never with an initializer
 * or memset alone: with a size below CSHW_EXCHANGE_CONFIG_SIZE_0_3,
 * cshw_exchange_new returns NULL and cshw_exchange_refuse
 * CSHW_E_INVALID_OPTION. A new field goes at the end, with its default in
 * cshw_exchange_config_init; nothing is removed, reordered or retyped
 * (README.md, Versioning). */
typedef struct cshw_exchange_config {
    size_t size; /* sizeof as the caller knew it: leave _init's */
    /* NULL for the defaults, or filled by cshw_options_init and
     * csh_limits_init and read by their size fields (options.h, parser.h;
     * a bad size: cshw_exchange_new returns NULL). `web` (body_buffer,
     * max_request_body, temp_dir, server_header) is copied; `limits` is
     * the parser's and must outlive the exchange, like the config. */
    const cshw_options *web;
    const csh_limits *limits;
    /* The application: a handler, or (handler NULL) a router. */
    cshw_handler handler;
    cshw_router *router;
    /* 1 when this request's handler reads its body as it arrives instead
     * of the exchange reading and storing it first. Called on the thread
     * of cshw_exchange_input. NULL: a router without a handler decides by
     * the request's route (cshw_router_body_of, 0.4.1: a route of
     * cshw_router_add_streaming streams; a body no route takes, one for a
     * static file, a 404 or a 405, is left unread too, never stored, and
     * the answer comes at once), a handler never streams. */
    int (*streams)(void *arg, const char *head, const csh_message *msg);
    /* Every exchange, once, after its answer was handed to the transport
     * (NULL: none). Called on the thread that ended it. */
    void (*report)(void *arg, const cshw_exchange_outcome *outcome);
    /* 1 when the owner is stopping: responses then carry Connection:
     * close (NULL: never). */
    int (*closing)(void *arg);
    void *arg; /* passed to the callbacks */
    /* 0.4.1: the bytes of request bodies stored in temporary files, all
     * exchanges together (NULL: not counted). Called with +n before n
     * bytes go to a body's file, on the thread of cshw_exchange_input:
     * non-zero refuses them, and the request is answered 503
     * (CSHW_E_TEMP_FULL) and the connection closed; called with minus
     * the file's bytes when the file is dropped. */
    int (*temp_bytes)(void *arg, int64_t delta);
} cshw_exchange_config;

/* The size of cshw_exchange_config in libcshttp-web 0.3, the first version
 * with `size`: the smallest size the toolkit accepts. */
#define CSHW_EXCHANGE_CONFIG_SIZE_0_3 (offsetof(cshw_exchange_config, arg) + sizeof(void *))

/* Fills the first `size` bytes of `config` with the defaults (zeros past
 * the fields this library knows) and sets config->size = size. Called
 * through cshw_exchange_config_init, which passes the caller's sizeof: a
 * library newer than the caller never writes past the caller's struct. */
CSHW_EXPORT void cshw_exchange_config_init_sized(cshw_exchange_config *config, size_t size);

/* Fills `config` with the defaults and sets config->size. */
static inline void cshw_exchange_config_init(cshw_exchange_config *config)
{
    cshw_exchange_config_init_sized(config, sizeof *config);
}

/* An exchange for one connection, with a copy of `config` read by its
 * size (what it points to stays the caller's). NULL when out of memory,
 * when neither handler nor router is set, or when a size (config's, the
 * options', the limits') is below its first release's. */
CSHW_EXPORT cshw_exchange *cshw_exchange_new(const cshw_exchange_config *config);

/* Frees it (a temporary body file is removed). NULL does nothing. */
CSHW_EXPORT void cshw_exchange_free(cshw_exchange *x);

/* Makes it as new, for another connection (keeps its memory). */
CSHW_EXPORT void cshw_exchange_reset(cshw_exchange *x);

/* Reads and processes what the transport has without waiting: WANT_INPUT,
 * READY, CLOSE (after an answer of its own or the end of input), or a
 * negative error (close; -EINVAL for a transport, or its ops, of a size
 * below transport.h's first, as for every function here that takes one). */
CSHW_EXPORT int cshw_exchange_input(cshw_exchange *x, const cshw_transport *t);

/* Runs the ready request with ctx (a context of the same options) and
 * reports it: NEXT (the connection goes on: call input), CLOSE, or a
 * negative error (close). `t` is the connection's transport; for a
 * streaming request its peek/consume may wait for body bytes. */
CSHW_EXPORT int cshw_exchange_run(cshw_exchange *x, cshw_context *ctx, const cshw_transport *t);

/* A handler that answers later (0.3.1), as System.Web's asynchronous
 * handlers do: a proxy waiting for its origin holds no thread.
 *
 * cshw_exchange_defer is called by the exchange's owner on behalf of the
 * handler running now (the handler or a continuation, inside
 * cshw_exchange_run or cshw_exchange_resume, on the same thread): when
 * it returns, cshw_exchange_run (or _resume) returns
 * CSHW_EXCHANGE_DEFERRED instead of ending the request. The context
 * stays active and belongs to the exchange (the owner must not begin
 * another request on it) until the request ends; the exchange reads no
 * input meanwhile. 0, or CSHW_E_NOT_ACTIVE outside a handler.
 *
 * cshw_exchange_resume runs fn(ctx, arg) with that context (the thread's
 * current context meanwhile), then ends, reports and moves on as
 * cshw_exchange_run does, returning what it would: NEXT, CLOSE, an error,
 * or DEFERRED again when fn deferred too. `t` is the connection's
 * transport now (it must live until the request ends). -EINVAL for a
 * NULL x or fn or a bad transport; CSHW_E_NOT_ACTIVE when nothing was
 * deferred. One thread at a time, as every call on an exchange. */
CSHW_EXPORT int cshw_exchange_defer(cshw_exchange *x);
CSHW_EXPORT int cshw_exchange_resume(cshw_exchange *x, const cshw_transport *t,
                                     void (*fn)(cshw_context *ctx, void *arg), void *arg);

/* Switching protocols (0.4.2; RFC 9110 §7.8, §15.2.2), for an owner
 * that can hand the connection over (the engine's cshs_upgrade, which a
 * handler calls): on behalf of the handler running now, sends "101
 * Switching Protocols" with the handler's fields, "Connection: Upgrade"
 * and "Upgrade: protocol"; the response is then complete (more output
 * fails with CSHW_E_SWITCHED). When the handler (or its last
 * continuation) returns, cshw_exchange_run or _resume reports the 101
 * and returns CSHW_EXCHANGE_SWITCHED: the exchange reads nothing more,
 * and the connection's bytes are the owner's, beginning with what the
 * exchange read past the request (cshw_exchange_leftover, valid until
 * the exchange is reset or freed). Unless the handler set "Connection:
 * close" or the owner is closing: then run returns CLOSE after the 101.
 * 0; CSHW_E_UPGRADE_NOT_ASKED (426) when the request is not HTTP/1.1 or
 * did not list `protocol` in Upgrade with "upgrade" in Connection
 * (compared case-insensitively; "name" also matches the client's
 * "name/version"); CSHW_E_UPGRADE_BODY when a body the handler streams
 * is not read to its end; CSHW_E_HEADERS_SENT after output was sent;
 * CSHW_E_NOT_ACTIVE outside a handler; -EINVAL for a NULL x or a protocol
 * that is not token ["/" token]; or the transport's error. */
CSHW_EXPORT int cshw_exchange_switch(cshw_exchange *x, const char *protocol);
CSHW_EXPORT size_t cshw_exchange_leftover(const cshw_exchange *x, const char **data);
/* A deadline passed while the exchange waited for input (request head,
 * body rate or read timeout): a request in progress is answered 408
 * (RFC 9110 §15.5.9) and reported; nothing is sent between requests.
 * Returns CLOSE (-EINVAL for a NULL exchange or a bad transport). */
CSHW_EXPORT int cshw_exchange_expire(cshw_exchange *x, const cshw_transport *t);

CSHW_EXPORT cshw_exchange_phase cshw_exchange_phase_of(const cshw_exchange *x);

/* Bytes read and not yet used (a head in progress, pipelined requests). */
CSHW_EXPORT size_t cshw_exchange_buffered(const cshw_exchange *x);

/* Body bytes received for the request in progress, and when (monotonic
 * microseconds) its first byte arrived: for the head deadline and a
 * minimum body rate. */
CSHW_EXPORT uint64_t cshw_exchange_body_received(const cshw_exchange *x);
CSHW_EXPORT int64_t cshw_exchange_body_start_us(const cshw_exchange *x);

/* After a read that did not fill its room, cshw_exchange_input trusts the
 * owner's readiness wait and asks for input without reading again. An
 * owner that may have missed readiness meanwhile (an edge-triggered
 * registration whose events were ignored while another thread had the
 * connection) calls this first: the next input reads. */
CSHW_EXPORT void cshw_exchange_recheck(cshw_exchange *x);

/* Non-zero when the ready request streams its body (config.streams said
 * so; since 0.4.2 the value it returned, which an owner may give a
 * meaning of its own): its handler will wait for the network, so a
 * driver runs it where waiting stalls nobody else. */
CSHW_EXPORT int cshw_exchange_streams(const cshw_exchange *x);

/* The ready request, before it runs (0.4.1): its parsed head (*head, when
 * head is not NULL: the bytes msg's spans refer to), for an owner that
 * decides where it runs; NULL in any other phase. Valid until the
 * exchange's next call. */
CSHW_EXPORT const csh_message *cshw_exchange_request(const cshw_exchange *x, const char **head);

/* The ready request is answered without running its handler (0.4.1):
 * `error`'s status and message (cshw_error_status: CSHW_E_OVERLOADED is
 * 503), reported as any answer, and the connection closes (a body the
 * handler would have read may still be on its way). CLOSE; -EINVAL for a
 * NULL exchange, a bad transport or an error without a 4xx or 5xx status;
 * CSHW_E_NOT_ACTIVE when no request is ready (or it was deferred). */
CSHW_EXPORT int cshw_exchange_decline(cshw_exchange *x, const cshw_transport *t, int error);

/* An answer without a request (beyond max_connections: 503; plain HTTP on
 * an HTTPS port: 400): the toolkit's error page with Date, Content-Length
 * and Connection: close, `detail` (may be NULL) in its text; reported
 * through config->report like any exchange (`config` may be NULL: the
 * defaults, no report). 0, the write's error, or CSHW_E_INVALID_OPTION
 * when a size (config's, its options') is below its first release's. */
CSHW_EXPORT int cshw_exchange_refuse(const cshw_exchange_config *config, const cshw_transport *t,
                                     int status, const char *detail);

#ifdef __cplusplus
}
#endif

#endif
