/* cshs_server: the engine. It listens, accepts, reads and parses requests
 * and runs the application's handler (one synchronous function, which may
 * block) for each, on a small pool of worker threads that grows when every
 * worker is busy.
 *
 *   cshs_options o;
 *   cshs_options_init(&o);
 *   cshs_server *s = cshs_server_new(&o, handler, NULL);
 *   cshs_server_start(s);
 *   ...                                  // serve until told to stop
 *   cshs_server_stop(s, -1);             // graceful, within stop_timeout_ms
 *   cshs_server_free(s);
 *
 * A connection is idle, holding no thread and no read buffer, while it
 * waits in its event loop's epoll set; when bytes arrive the loop serves
 * every request that is buffered (pipelining, answered in order), running
 * quick handlers itself and blocking ones on other threads (README.md,
 * "Threads"). Each loop's sweep closes connections past their deadlines
 * (cshs_options).
 *
 * Ownership: the server copies the options struct (its strings must outlive
 * it); the router, when one is given, is the caller's and must outlive it.
 * Threads: new/start/stop/wait/free from one controlling thread;
 * cshs_server_counters and cshs_server_port from any thread. */
#ifndef CSHTTP_SERVER_SERVER_H
#define CSHTTP_SERVER_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include <cshttp/web/context.h>
#include <cshttp/web/router.h>

#include "export.h"
#include "options.h"
#include "reactor.h"
#include "tunnel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cshs_server cshs_server;

/* One answer as the access log sees it, after it was handed to the
 * connection: every answer, the handler's and the server's own (a head that
 * did not parse: its request line as sent, split at its first space; 408;
 * 413; 503 beyond max_connections: method and target "-"). The status is
 * the one sent; a request the client left before any answer began (inside
 * its body, say) is 499, as nginx logs it, and 0 means none is known. The
 * strings live for the call only and are as the client sent them: escape
 * them.
 *
 * The engine fills it, and it can grow at its end: `size` is
 * sizeof(cshs_request_log) as the engine that filled it was built. A log
 * function built against newer headers than the library reads a field
 * only when it lies within `size` (offsetof(cshs_request_log, field) <
 * e->size); one built against older headers never sees the fields added
 * after it. */
typedef struct cshs_request_log {
    size_t size; /* sizeof(cshs_request_log) in the library that filled it */
    const char *remote_addr;
    const char *method;
    const char *target;
    int version_minor;   /* as sent, 0 to 9 (csh_message.version_minor) */
    int status;          /* 499: the client left before an answer; 0 when unknown */
    uint64_t bytes_out;  /* bytes written for this request, head included */
    const char *referer; /* NULL when absent */
    const char *user_agent;
    int64_t time_unix_ms; /* when the request's first byte arrived */
    uint64_t bytes_in;    /* head and body bytes received */
    int64_t duration_us;  /* from the first byte to the response handed over */
    /* of bytes_out, the body's (chunk framing included, as encoded): a
     * log's body bytes, nginx's $body_bytes_sent. Since 0.3.3. */
    uint64_t body_bytes_out;
    /* The protocol, as a log writes it: "HTTP/1.1", "HTTP/1.0", or
     * "HTTP/2.0" for a request that came on an HTTP/2 stream (whose
     * version_minor is 0). Since 0.4.7. */
    const char *protocol;
} cshs_request_log;

/* Called on a worker thread after each answer; must be thread-safe. */
typedef void (*cshs_log_fn)(void *user, const cshs_request_log *entry);

/* Counters, read at one moment (each is exact; they are not read under one
 * lock, so sums may be off by the requests in flight).
 *
 * The engine fills the caller's struct, and it can grow at its end:
 * cshs_server_counters passes the caller's sizeof, the engine writes only
 * the counters that fit in it (zeros past the ones it knows), and `size`
 * says how many bytes it filled, min(the caller's sizeof, the engine's). A
 * program built against newer headers than the library reads a counter
 * only when it lies within `size`. A new counter goes at the end; nothing
 * is removed, reordered or retyped (README.md, Versioning). */
typedef struct cshs_counters {
    size_t size;                 /* the bytes the engine filled (see above) */
    uint64_t connections_open;   /* accepted and not yet closed */
    uint64_t connections_idle;   /* waiting for the socket, no thread */
    uint64_t connections_active; /* being served by a loop or a handler's thread */
    uint64_t connections_total;  /* accepted since start */
    uint64_t requests;           /* handlers run (responses begun) */
    uint64_t bytes_in, bytes_out;
    uint64_t idle_memory; /* bytes the engine holds for idle connections */
    /* threads: running handlers that wait (offloaded), all of them, and
     * parked workers waiting for work */
    uint64_t workers_busy, workers_total, workers_parked;
    /* errors by kind */
    uint64_t err_parse;        /* heads refused with 4xx/5xx */
    uint64_t err_rejected;     /* 503: beyond max_connections */
    uint64_t err_head_timeout; /* request head deadline */
    uint64_t err_idle_timeout; /* keep-alive idle closed */
    uint64_t err_body_timeout; /* body rate or read timeout */
    uint64_t err_send_timeout;
    uint64_t err_io;         /* resets, writes to closed sockets */
    uint64_t err_tls;        /* failed or timed-out TLS handshakes */
    uint64_t tls_handshakes; /* completed */
    uint64_t loops;          /* event loops */
    uint64_t handovers;      /* loops handed to another thread (a handler blocked) */
    uint64_t offloaded;      /* handlers run on another thread than their loop's */
    uint64_t deferred;       /* handlers that answered later (cshs_defer; 0.3.2) */
    /* 0.4.1: handlers waiting for a thread now (max_threads busy), and
     * requests answered 503 without their handler because
     * max_waiting_handlers waited already */
    uint64_t handlers_waiting;
    uint64_t handlers_declined;
    /* 0.4.1: request bodies' bytes in temporary files now, and requests
     * answered 503 because their body would pass max_request_temp_bytes */
    uint64_t request_temp_bytes;
    uint64_t request_temp_refused;
    /* 0.4.2: connections that switched protocols (cshs_upgrade, tunnel.h),
     * and those tunnels open now */
    uint64_t upgrades;
    uint64_t tunnels;
    /* 0.4.7: HTTP/2 connections open now and since start (of
     * connections_open and connections_total), the streams they carried
     * (each a request, counted in requests too), and the refusals the
     * server sent: streams reset and connections ended for a client's
     * error or a limit (RFC 9113 §5.4) */
    uint64_t h2_connections;
    uint64_t h2_connections_total;
    uint64_t h2_streams;
    uint64_t h2_refused;
} cshs_counters;

/* A server with a copy of `options` (NULL: defaults) that runs `handler`
 * for each request, or, when handler is NULL, dispatches through `router`
 * (cshw_router_dispatch). NULL when out of memory, when both or neither are
 * given, or when the options do not pass cshs_options_check. */
CSHS_EXPORT cshs_server *cshs_server_new(const cshs_options *options, cshw_handler handler,
                                         cshw_router *router);

/* An access-log callback (NULL: none). Call before start. */
CSHS_EXPORT void cshs_server_set_log(cshs_server *s, cshs_log_fn fn, void *user);

/* Routes whose handler reads the request body as it arrives, instead of
 * the engine reading all of it before the handler runs (huge uploads, a
 * proxy): fn(arg, head, msg) says 1 for such a request (called on a worker
 * before the body is read); say 1 too for a body no route reads (a static
 * file, a 404), which is then never stored. A server with a router and
 * no handler needs none: the router says it by route
 * (cshw_router_add_streaming, cshw_router_body_of). Such a handler holds its worker while the
 * client sends: the one case where a slow client holds a worker, bounded
 * by max_threads; body deadlines still apply. Set before start.
 *
 * fn may say CSHS_STREAM_ON_LOOP instead (0.4.2): the handler runs on
 * its loop's thread and reads the body as it comes without ever waiting
 * for it. A read with no byte there returns -EAGAIN (cshw_request_read):
 * the handler defers (cshs_defer) and has its continuation run when more
 * came (cshs_deferred_on_body), holding no thread meanwhile. */
#define CSHS_STREAM_ON_LOOP 2
CSHS_EXPORT void cshs_server_set_streaming(
    cshs_server *s, int (*fn)(void *arg, const char *head, const csh_message *msg), void *arg);

/* Requests whose handler never waits (a static file, an answer from
 * memory, a handler that defers rather than block): fn(arg, head, msg)
 * says 1 for such a request. While handlers wait for a thread (all
 * max_threads busy) or a loop's handlers lately blocked (offload_ms),
 * only these run on the loop's thread; the others queue for a thread
 * (max_waiting_handlers, past it 503). Without it (NULL, the default)
 * every handler queues then. Called on the loop's thread, only then, and
 * must not block. Set before start (0.4.1). */
CSHS_EXPORT void
cshs_server_set_quick(cshs_server *s,
                      int (*fn)(void *arg, const char *head, const csh_message *msg), void *arg);

/* The application's pointer (libuv's `data` convention): every handler
 * reaches it as cshw_context_app_data(ctx). Set before start; the engine
 * never reads or frees it. */
CSHS_EXPORT void cshs_server_set_app_data(cshs_server *s, void *data);
CSHS_EXPORT void *cshs_server_app_data(const cshs_server *s);

/* The engine's tick: fn(arg) is called every sweep_interval_ms (default
 * 200) on the engine's supervisor thread from start to stop, for work
 * that shares the server's clock (a client's pool sweep, cshs_client_tick).
 * fn must return quickly and must not call the server. At most 8; before
 * start. 0, or -ENOSPC / -EBUSY (started). */
CSHS_EXPORT int cshs_server_add_tick(cshs_server *s, void (*fn)(void *arg), void *arg);

/* Binds the listeners and starts the workers and the supervisor. 0, or
 * -errno (bind: -EADDRINUSE...), nothing left running on failure. */
CSHS_EXPORT int cshs_server_start(cshs_server *s);

/* Graceful stop: stops accepting (the ports are released at once), closes
 * idle connections, lets requests in flight finish, then closes what is
 * left once deadline_ms (negative: options.stop_timeout_ms) has passed and
 * joins every thread. Returns within the deadline and 100 ms: a handler
 * still running then is left behind (cshs_server_handlers_running), its
 * thread detached. Returns the number of connections that had to be cut
 * at the deadline (0 for a clean stop). A second call does nothing. */
CSHS_EXPORT int cshs_server_stop(cshs_server *s, int deadline_ms);

/* After a stop: the handlers that were still running a moment after its
 * deadline and were left behind (their threads detached). They still use
 * the server, and whatever application state they reach: a program that
 * sees a non-zero count should exit without freeing that state. Any
 * thread. */
CSHS_EXPORT unsigned cshs_server_handlers_running(cshs_server *s);

/* Blocks until the server has been stopped (by another thread). */
CSHS_EXPORT void cshs_server_wait(cshs_server *s);

/* Stops the server if running (as cshs_server_stop(s, -1)) and frees it.
 * NULL does nothing. */
CSHS_EXPORT void cshs_server_free(cshs_server *s);

/* The size of cshs_counters in libcshttp-server 0.3, the first version
 * with `size`: the smallest size the engine fills. */
#define CSHS_COUNTERS_SIZE_0_3 (offsetof(cshs_counters, offloaded) + sizeof(uint64_t))

/* Fills the first `size` bytes of `out` with the counters (see
 * cshs_counters). 0, or -EINVAL when s or out is NULL or size is below
 * CSHS_COUNTERS_SIZE_0_3 (nothing written). Called through
 * cshs_server_counters, which passes the caller's sizeof. Any thread. */
CSHS_EXPORT int cshs_server_counters_sized(const cshs_server *s, cshs_counters *out, size_t size);

/* The connections loop `index` serves now (0 .. counters.loops - 1; 0
 * for another index or before start): a new connection joins the loop
 * with the fewest, not one inside a handler (README.md, "Threads"). Any
 * thread. Since 0.4.0. */
CSHS_EXPORT uint64_t cshs_server_loop_connections(const cshs_server *s, unsigned index);

/* Fills `out` with the counters: 0, or -EINVAL (s or out NULL). */
static inline int cshs_server_counters(const cshs_server *s, cshs_counters *out)
{
    return cshs_server_counters_sized(s, out, sizeof *out);
}

/* ---- a handler that answers later (0.3.2) ----
 *
 * A handler that waits for something other than its own client (an
 * origin's answer, for a proxy) can return without answering and hold no
 * thread while it waits, as System.Web's asynchronous handlers do:
 *
 *   static void answer(cshw_context *ctx, void *arg) { ... the response ... }
 *   static void on_ready(cshs_watch *w, uint32_t ev)  // on the loop's thread
 *   {
 *       cshs_deferred_resume(w->arg, answer, NULL);   // (ev 0: its deadline)
 *   }
 *   static void handler(cshw_context *ctx)
 *   {
 *       cshs_deferred *d = cshs_defer(ctx);
 *       if (!d) { ... wait here, as any handler may ...; return; }
 *       watch.arg = d;  ... cshs_reactor_arm(cshs_deferred_reactor(d), &watch);
 *   }                   // returns: the connection waits, no thread does
 *
 * cshs_defer is called by a handler the engine runs on its loop's thread
 * (a quick handler, and every handler of a loop whose handlers are not
 * sent to other threads: see README.md, Threads). NULL when the handler
 * runs elsewhere (a job: a streaming route, or a loop offloading its
 * handlers), or out of memory: the handler then does its waiting itself.
 * After it, the handler returns without ending the response; the
 * connection keeps its request and reads nothing more (its events are
 * noted, as while a handler runs) until the request ends.
 *
 * cshs_deferred_resume(d, fn, arg), exactly once per cshs_defer: fn(ctx,
 * arg) then runs on the loop's thread, after the batch of events being
 * served (or after the handler returned, when resumed from inside it), as
 * a handler does: it writes the response and may block (the loop is then
 * handed over as for any handler), or defers again. When it returns, the
 * request ends as a handler's does: the response is completed, reported
 * and logged, and the connection goes on. fn NULL: nothing more runs,
 * the request ends with what its handler wrote (an error page it sent,
 * say). Any thread. A request never
 * resumed keeps its connection (and a graceful stop waits for it to the
 * stop's deadline): a handler that defers must arrange its resume on
 * every path, its waits' deadlines included.
 *
 * cshs_deferred_run(d, fn, arg), instead of cshs_deferred_resume: fn runs
 * on a thread of its own (a job, as a streaming route's handler), where
 * it may wait as long as it likes without holding the loop; with no
 * thread free (max_threads), on the loop's. For a handler that finds it
 * must wait after all (a full pool): it defers and has the rest run
 * there. fn cannot defer again.
 *
 * cshs_deferred_reactor: the loop of the connection, for the handler's
 * waits (reactor.h, cshs_call_end_async in client.h). Its watches are
 * given 0 at a forced stop. */
typedef struct cshs_deferred cshs_deferred;

CSHS_EXPORT cshs_deferred *cshs_defer(cshw_context *ctx);
CSHS_EXPORT cshs_reactor *cshs_deferred_reactor(cshs_deferred *d);
CSHS_EXPORT void cshs_deferred_resume(cshs_deferred *d, void (*fn)(cshw_context *ctx, void *arg),
                                      void *arg);
CSHS_EXPORT void cshs_deferred_run(cshs_deferred *d, void (*fn)(cshw_context *ctx, void *arg),
                                   void *arg);

/* cshs_deferred_on_abort (0.4.1): fn(arg) is called once, on the loop's
 * thread, when the client's connection ends (closed, reset, or its
 * sending side shut, as nginx takes it) while the request waits: its
 * handler returned and nothing resumed it yet. fn gives up what the
 * request waits for (cshs_call_cancel, client.h), which resumes it as a
 * failure would; the request then ends as usual, its answer going
 * nowhere, and is logged with the status it set (499 for a proxy's).
 * Called by the handler that deferred (or a continuation that deferred
 * again) before it returns; a new defer clears it. Without it, a request
 * waits for its peer whatever its client does. */
CSHS_EXPORT void cshs_deferred_on_abort(cshs_deferred *d, void (*fn)(void *arg), void *arg);

/* Waiting for its own client, on the loop (0.4.2): instead of
 * cshs_deferred_resume, called by the handler (or continuation) that
 * deferred, on the loop's thread, before it returns. Once it returned,
 * the loop watches the client's connection, and fn(ctx, arg) runs (as a
 * resumed continuation does, on the loop's thread) when:
 *
 * - cshs_deferred_on_drain: the response's queued output (bytes and file
 *   ranges, cshw_response_queued) is at most half of write_high_water, at
 *   once when it already is. A handler that answers later never waits
 *   for its client inside a write: past the mark the write is queued all
 *   the same, and the continuation writes until cshw_response_queued
 *   passes the mark, then waits here. So a response of any length goes
 *   to a slow reader with no thread held and at most the mark (and a
 *   write) queued.
 * - cshs_deferred_on_body: bytes of the request body came (for a request
 *   streamed on its loop, CSHS_STREAM_ON_LOOP), or it ended or failed:
 *   cshw_request_read in fn returns them, or 0, or the error. A request
 *   that does not ask is not read: its client's bytes wait in the socket
 *   and TCP slows the client down (pausing is not asking; asking again
 *   resumes).
 *
 * A client that takes no output for send_timeout_ms (drain), or sends no
 * byte for read_timeout_ms (body), leaves, or a forced stop, ends the
 * wait early: fn runs all the same, and its writes and reads fail with
 * the reason (-ETIMEDOUT, -ECONNABORTED, the socket's error). A graceful
 * stop waits for the request as for any in flight. */
CSHS_EXPORT void cshs_deferred_on_drain(cshs_deferred *d, void (*fn)(cshw_context *ctx, void *arg),
                                        void *arg);
CSHS_EXPORT void cshs_deferred_on_body(cshs_deferred *d, void (*fn)(cshw_context *ctx, void *arg),
                                       void *arg);

/* The port a TCP listener is bound to (index 0: address, 1: address6), or
 * 0 when there is none; useful with port 0. */
CSHS_EXPORT unsigned cshs_server_port(const cshs_server *s, int index);

/* The port of the HTTPS listener on `address` (index 0) or address6
 * (index 1), or 0 when there is none. */
CSHS_EXPORT unsigned cshs_server_tls_port(const cshs_server *s, int index);

/* Reads the certificate and key files again (on SIGHUP, say): new
 * connections use them, established ones keep theirs. 0, -EINVAL without
 * TLS, or -EIO when the files do not load (the old ones stay). Any thread. */
CSHS_EXPORT int cshs_server_reload_tls(cshs_server *s);

/* The memory one idle connection costs the engine (its bookkeeping; the
 * read buffer is released when idle). */
CSHS_EXPORT size_t cshs_idle_connection_bytes(void);

/* The runtime version as CSHS_VERSION_HEX. */
CSHS_EXPORT unsigned cshs_version(void);

#ifdef __cplusplus
}
#endif

#endif
