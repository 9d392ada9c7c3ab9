/* cshw_transport: how the toolkit reaches the connection, without knowing
 * what it is. The engine gives one for a socket (plain or TLS); tests use the
 * in-memory transport (memory.h).
 *
 * Input is buffered by whoever owns the connection: the toolkit peeks at
 * what is buffered and says how much it used, so the bytes after a request's
 * body (a pipelined request) stay where they are, and nothing is copied.
 *
 * Both structs can grow without breaking their makers: each starts with
 * `size`, sizeof the struct as its maker was compiled, and the toolkit
 * reads only the fields within it (an op added after the maker was built
 * is taken as NULL, a field as 0). Set it from sizeof, in a designated
 * initializer as ops tables usually are:
 *
 *   static const cshw_transport_ops ops = {.size = sizeof(cshw_transport_ops),
 *                                          .peek = my_peek, ...};
 *   cshw_transport t = {.size = sizeof t, .ops = &ops, .io = conn};
 *
 * A size below the first release's (CSHW_TRANSPORT_OPS_SIZE_0_3,
 * CSHW_TRANSPORT_SIZE_0_3) is -EINVAL from every function that takes a
 * transport (cshw_context_begin, cshw_exchange_input, _run, _expire,
 * cshw_exchange_refuse). A new op or field goes at the end, optional
 * (NULL or 0 meaning what its absence meant); nothing is removed,
 * reordered or retyped (README.md, Versioning).
 *
 * Ownership: the ops table and `io` belong to the caller and outlive the
 * request. Threads: used from the thread serving the request only. */
#ifndef CSHTTP_WEB_TRANSPORT_H
#define CSHTTP_WEB_TRANSPORT_H

#include <stddef.h>
#include <sys/types.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cshw_transport_ops {
    size_t size; /* sizeof(cshw_transport_ops) as its maker knew it */
    /* Makes at least one input byte available, reading from the connection
     * (and waiting, within the owner's deadlines) when none is buffered, and
     * points *data and *len at what is buffered. Returns 0; *len == 0 means the
     * input ended (the peer closed). Negative: -errno (-ETIMEDOUT for a
     * deadline). The bytes are valid until the next consume or peek. */
    int (*peek)(void *io, const char **data, size_t *len);
    /* The first n bytes of what the last peek returned are used. */
    void (*consume)(void *io, size_t n);
    /* Writes all of data[0 .. len) (waiting within the send deadline).
     * 0, or -errno. */
    int (*write)(void *io, const void *data, size_t len);
    /* Pushes out anything the transport holds back (TLS records, corked
     * TCP). 0, or -errno. May be NULL. */
    int (*flush)(void *io);
    /* Sends len bytes of the file fd from offset, with sendfile(2) where it
     * can. 0, or -errno. May be NULL: the toolkit then reads and writes. */
    int (*send_file)(void *io, int fd, off_t offset, size_t len);
    /* Reads up to cap input bytes into buf without waiting: the count, 0
     * when the input ended, -EAGAIN when nothing is there now, or -errno.
     * May be NULL: the exchange then copies from peek/consume. */
    ssize_t (*read)(void *io, void *buf, size_t cap);
    /* 0.4.1: bytes written (or file bytes given to send_file) that the
     * connection has not taken yet: held by the transport for a client
     * that reads slowly. 0 when all went. May be NULL (taken as 0). */
    uint64_t (*queued)(void *io);
} cshw_transport_ops;

/* The size of cshw_transport_ops in libcshttp-web 0.3, the first version
 * with `size`: the smallest size the toolkit accepts. */
#define CSHW_TRANSPORT_OPS_SIZE_0_3 (offsetof(cshw_transport_ops, read) + sizeof(void (*)(void)))

typedef struct cshw_transport {
    size_t size; /* sizeof(cshw_transport) as its maker knew it */
    const cshw_transport_ops *ops;
    void *io;                /* passed to every op */
    const char *remote_addr; /* "203.0.113.5", "2001:db8::1", "unix", or NULL */
    int is_secure;           /* the connection is HTTPS */
    unsigned remote_port;
} cshw_transport;

/* The size of cshw_transport in libcshttp-web 0.3, the first version with
 * `size`: the smallest size the toolkit accepts. */
#define CSHW_TRANSPORT_SIZE_0_3 (offsetof(cshw_transport, remote_port) + sizeof(unsigned))

#ifdef __cplusplus
}
#endif

#endif
