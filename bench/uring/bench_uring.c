/* bench_uring: the io_uring side of the epoll/io_uring A/B (bench/uring/run.sh).
 * One thread, one ring, liburing:
 * - one multishot accept on the listener: a completion per connection;
 * - one multishot recv per connection, reading into buffers the kernel picks
 *   from a provided-buffer ring (no buffer held by an idle connection; each
 *   buffer goes back to the ring as soon as its bytes are parsed);
 * - a send per connection with responses to send, at most one in flight (its
 *   bytes must stay put until it completes; newer responses wait in c->out);
 * - one io_uring_submit_and_wait per batch: the SQEs a batch of completions
 *   produced go to the kernel in the same call that waits for the next batch;
 * - IORING_SETUP_SINGLE_ISSUER with DEFER_TASKRUN (or COOP_TASKRUN on older
 *   kernels): completions are run when this thread waits, not by interrupting
 *   it. */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"

#define SQ_ENTRIES 4096
#define CQ_ENTRIES 16384
#define BUF_COUNT 1024 /* a power of two (the ring's mask) */
#define BUF_SIZE 4096
#define BUF_GROUP 0

/* user_data: a connection's address with the operation in its low bits
 * (calloc'd memory is at least 8-byte aligned). */
enum { OP_ACCEPT = 1, OP_RECV = 2, OP_SEND = 3, OP_CANCEL = 4, OP_MASK = 7 };

static struct io_uring ring;
static struct io_uring_buf_ring *bufring;
static char *bufs;
static int buffers_back; /* buffers given back in this batch, made visible at its end */
static int lfd;

static struct io_uring_sqe *sqe_get(void)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    if (!sqe) {
        /* The submission queue is full mid-batch: submit what it holds. */
        io_uring_submit(&ring);
        sqe = io_uring_get_sqe(&ring);
    }
    return sqe;
}

static uint64_t tag(bench_conn *c, unsigned op)
{
    return (uint64_t)(uintptr_t)c | op;
}

static int arm_accept(void)
{
    struct io_uring_sqe *sqe = sqe_get();
    if (!sqe) return -1;
    io_uring_prep_multishot_accept(sqe, lfd, NULL, NULL, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(sqe, OP_ACCEPT);
    return 0;
}

static int arm_recv(bench_conn *c)
{
    struct io_uring_sqe *sqe = sqe_get();
    if (!sqe) return -1;
    io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = BUF_GROUP;
    io_uring_sqe_set_data64(sqe, tag(c, OP_RECV));
    c->recv_armed = 1;
    return 0;
}

static void buffer_give_back(unsigned bid)
{
    io_uring_buf_ring_add(bufring, bufs + (size_t)bid * BUF_SIZE, BUF_SIZE, (unsigned short)bid,
                          io_uring_buf_ring_mask(BUF_COUNT), buffers_back++);
}

/* The connection is done: cancel its recv and close the socket (the ring
 * holds its own reference until the recv ends). conn_release frees it. */
static void conn_close(bench_conn *c)
{
    if (c->fd < 0) return;
    if (c->recv_armed) {
        struct io_uring_sqe *sqe = sqe_get();
        if (sqe) {
            io_uring_prep_cancel64(sqe, tag(c, OP_RECV), 0);
            io_uring_sqe_set_data64(sqe, OP_CANCEL);
        } else {
            shutdown(c->fd, SHUT_RDWR); /* ends the recv the other way */
        }
    }
    close(c->fd);
    c->fd = -1;
}

/* Frees a closed connection once no request of the ring names it: the last
 * step of every completion handler, which alone may free it. */
static void conn_release(bench_conn *c)
{
    if (c->fd < 0 && !c->recv_armed && !c->send_busy) bench_conn_free(c);
}

/* Starts a send of what c->out holds, unless one is in flight. */
static void conn_send(bench_conn *c)
{
    if (c->fd < 0 || c->send_busy) return;
    if (c->out.len == c->out.off) {
        c->out.off = c->out.len = 0;
        if (c->close_after) conn_close(c);
        return;
    }
    bench_buf t = c->sending;
    c->sending = c->out;
    c->out = t;
    c->out.off = c->out.len = 0;
    struct io_uring_sqe *sqe = sqe_get();
    if (!sqe) {
        conn_close(c);
        return;
    }
    io_uring_prep_send(sqe, c->fd, c->sending.data + c->sending.off,
                       c->sending.len - c->sending.off, MSG_NOSIGNAL);
    io_uring_sqe_set_data64(sqe, tag(c, OP_SEND));
    c->send_busy = 1;
}

static void on_accept(struct io_uring_cqe *cqe)
{
    if (cqe->res >= 0) {
        int fd = cqe->res;
        bench_socket_accepted(fd);
        bench_conn *c = bench_conn_new(fd);
        if (!c || arm_recv(c) < 0) {
            close(fd);
            bench_conn_free(c);
        }
    } else if (cqe->res != -ECANCELED) {
        fprintf(stderr, "accept: %s\n", strerror(-cqe->res));
    }
    if (!(cqe->flags & IORING_CQE_F_MORE) && !bench_stopping() && arm_accept() < 0)
        fprintf(stderr, "accept: no submission entry to re-arm it\n");
}

static void on_recv(bench_conn *c, struct io_uring_cqe *cqe)
{
    if (cqe->flags & IORING_CQE_F_BUFFER) {
        unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
        if (cqe->res > 0 && c->fd >= 0 &&
            bench_conn_received(c, bufs + (size_t)bid * BUF_SIZE, (size_t)cqe->res) < 0)
            conn_close(c);
        buffer_give_back(bid);
    }
    if (!(cqe->flags & IORING_CQE_F_MORE)) {
        c->recv_armed = 0;
        if (c->fd >= 0) {
            /* The multishot recv ended. Out of provided buffers (ENOBUFS), or
             * ended with data (the completion queue overflowed): arm it
             * again. Otherwise the peer closed or the socket failed: close
             * once the answers to what it sent are out. */
            if (c->close_after) {
                /* Nothing more to read: conn_send closes once the answers are out. */
            } else if (cqe->res == -ENOBUFS || cqe->res > 0) {
                if (arm_recv(c) < 0) conn_close(c);
            } else if (cqe->res == 0) {
                c->close_after = 1;
            } else {
                conn_close(c);
            }
        }
    }
    conn_send(c);
    conn_release(c);
}

static void on_send(bench_conn *c, struct io_uring_cqe *cqe)
{
    c->send_busy = 0;
    if (c->fd >= 0) {
        if (cqe->res < 0) {
            conn_close(c); /* EPIPE, ECONNRESET: the peer is gone */
        } else {
            c->sending.off += (size_t)cqe->res;
            if (c->sending.off < c->sending.len) {
                /* A short send (the socket buffer filled): the rest first, so
                 * responses stay in order. */
                struct io_uring_sqe *sqe = sqe_get();
                if (!sqe) {
                    conn_close(c);
                } else {
                    io_uring_prep_send(sqe, c->fd, c->sending.data + c->sending.off,
                                       c->sending.len - c->sending.off, MSG_NOSIGNAL);
                    io_uring_sqe_set_data64(sqe, tag(c, OP_SEND));
                    c->send_busy = 1;
                }
            } else {
                c->sending.off = c->sending.len = 0;
                conn_send(c);
            }
        }
    }
    conn_release(c);
}

static int ring_init(const char **mode)
{
    /* The newest setup first; older kernels refuse a flag with EINVAL. */
    static const struct {
        unsigned flags;
        const char *name;
    } tries[] = {
        {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, "SINGLE_ISSUER|DEFER_TASKRUN"},
        {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN, "SINGLE_ISSUER|COOP_TASKRUN"},
        {IORING_SETUP_COOP_TASKRUN, "COOP_TASKRUN"},
        {0, "no setup flags"},
    };
    int r = -EINVAL;
    for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
        struct io_uring_params p;
        memset(&p, 0, sizeof p);
        p.flags = tries[i].flags | IORING_SETUP_CQSIZE;
        p.cq_entries = CQ_ENTRIES;
        r = io_uring_queue_init_params(SQ_ENTRIES, &ring, &p);
        if (r == 0) {
            *mode = tries[i].name;
            return 0;
        }
        if (r != -EINVAL) break;
    }
    fprintf(stderr, "io_uring_queue_init_params: %s\n", strerror(-r));
    return -1;
}

static int buffers_init(void)
{
    size_t ring_bytes = BUF_COUNT * sizeof(struct io_uring_buf);
    void *mem = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (mem == MAP_FAILED) return -errno;
    bufring = mem;
    struct io_uring_buf_reg reg;
    memset(&reg, 0, sizeof reg);
    reg.ring_addr = (uint64_t)(uintptr_t)bufring;
    reg.ring_entries = BUF_COUNT;
    reg.bgid = BUF_GROUP;
    int r = io_uring_register_buf_ring(&ring, &reg, 0);
    if (r < 0) return r;
    io_uring_buf_ring_init(bufring);
    bufs = malloc((size_t)BUF_COUNT * BUF_SIZE);
    if (!bufs) return -ENOMEM;
    for (unsigned i = 0; i < BUF_COUNT; i++) buffer_give_back(i);
    io_uring_buf_ring_advance(bufring, buffers_back);
    buffers_back = 0;
    return 0;
}

int main(int argc, char **argv)
{
    bench_args a;
    if (bench_parse_args(&a, argc, argv, 0) < 0) return 2;
    lfd = bench_listen(a.port, 0);
    if (lfd < 0) return 1;
    const char *mode = "";
    if (ring_init(&mode) < 0) return 1;
    int r = buffers_init();
    if (r < 0) {
        fprintf(stderr, "provided buffer ring: %s\n", strerror(-r));
        return 1;
    }
    bench_signals_init();
    fprintf(stderr, "bench_uring: 127.0.0.1:%d, %s, %d buffers of %d bytes\n",
            bench_local_port(lfd), mode, BUF_COUNT, BUF_SIZE);
    if (arm_accept() < 0) return 1;

    int status = 0;
    while (!bench_stopping()) {
        r = io_uring_submit_and_wait(&ring, 1);
        if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
            fprintf(stderr, "io_uring_submit_and_wait: %s\n", strerror(-r));
            status = 1;
            break;
        }
        bench_date_update(time(NULL));
        unsigned head, seen = 0;
        struct io_uring_cqe *cqe;
        io_uring_for_each_cqe(&ring, head, cqe)
        {
            seen++;
            uint64_t d = io_uring_cqe_get_data64(cqe);
            bench_conn *c = (bench_conn *)(uintptr_t)(d & ~(uint64_t)OP_MASK);
            switch (d & OP_MASK) {
            case OP_ACCEPT:
                on_accept(cqe);
                break;
            case OP_RECV:
                on_recv(c, cqe);
                break;
            case OP_SEND:
                on_send(c, cqe);
                break;
            default:
                break; /* a cancel's own completion */
            }
        }
        io_uring_cq_advance(&ring, seen);
        if (buffers_back) {
            io_uring_buf_ring_advance(bufring, buffers_back);
            buffers_back = 0;
        }
    }
    io_uring_queue_exit(&ring); /* cancels what is in flight */
    bench_conn_free_all();
    free(bufs);
    munmap(bufring, BUF_COUNT * sizeof(struct io_uring_buf));
    close(lfd);
    return status;
}
