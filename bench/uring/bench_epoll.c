/* bench_epoll: the epoll side of the epoll/io_uring A/B (bench/uring/run.sh).
 * One thread; the shape DESIGN.md's "loops are not threads" asks the engine
 * to take: connections registered once, edge-triggered, for reading and
 * writing; many events per epoll_wait; a readable connection is read until
 * EAGAIN (or, with --short-reads, until a read that did not fill the buffer:
 * the stream's queue was empty then, and data arriving later raises a new
 * edge, which is what nginx relies on); responses are sent at once, and only
 * what the socket could not take waits for EPOLLOUT. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"

#define MAX_EVENTS 512

static char rbuf[65536]; /* one read buffer for every connection: reads are consumed at once */

static void conn_close(bench_conn *c)
{
    close(c->fd); /* also removes it from the epoll set */
    bench_conn_free(c);
}

/* Sends what c->out holds; 0 when sent or when the socket is full (EPOLLOUT
 * will say when to go on), -1 when the connection failed. */
static int conn_flush(bench_conn *c)
{
    bench_buf *b = &c->out;
    while (b->off < b->len) {
        ssize_t n = send(c->fd, b->data + b->off, b->len - b->off, MSG_NOSIGNAL);
        if (n >= 0) {
            b->off += (size_t)n;
        } else if (errno == EAGAIN) {
            bench_buf_compact(b);
            return 0;
        } else if (errno != EINTR) {
            return -1;
        }
    }
    b->off = b->len = 0;
    return 0;
}

static void conn_event(bench_conn *c, uint32_t events, int short_reads)
{
    int eof = 0;
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        while (!c->close_after) {
            ssize_t n = recv(c->fd, rbuf, sizeof rbuf, 0);
            if (n > 0) {
                if (bench_conn_received(c, rbuf, (size_t)n) < 0) {
                    conn_close(c);
                    return;
                }
                /* A short read emptied the queue, unless the peer's FIN was
                 * already there: then no new edge comes for it, and only a
                 * read that returns 0 sees it (nginx's pending_eof). */
                if (short_reads && (size_t)n < sizeof rbuf &&
                    !(events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
                    break;
            } else if (n == 0) {
                eof = 1;
                break;
            } else if (errno == EAGAIN) {
                break;
            } else if (errno != EINTR) {
                {
                    conn_close(c);
                    return;
                }
            }
        }
    }
    if (conn_flush(c) < 0) {
        conn_close(c);
        return;
    }
    /* A peer that shut down its side may still read: close once the answers
     * to what it sent are out. */
    if (eof) c->close_after = 1;
    if (c->close_after && c->out.len == 0) conn_close(c);
}

static void accept_all(int ep, int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno != EAGAIN) perror("accept4");
            return;
        }
        bench_socket_accepted(fd);
        bench_conn *c = bench_conn_new(fd);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                                 .data.ptr = c};
        if (!c || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
            close(fd);
            bench_conn_free(c);
        }
    }
}

int main(int argc, char **argv)
{
    bench_args a;
    if (bench_parse_args(&a, argc, argv, 1) < 0) return 2;
    int lfd = bench_listen(a.port, 1);
    if (lfd < 0) return 1;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) < 0) {
        perror("epoll");
        return 1;
    }
    bench_signals_init();
    fprintf(stderr, "bench_epoll: 127.0.0.1:%d, edge-triggered, reads until %s\n",
            bench_local_port(lfd), a.short_reads ? "a short read" : "EAGAIN");

    struct epoll_event ev[MAX_EVENTS];
    int status = 0;
    while (!bench_stopping()) {
        int n = epoll_wait(ep, ev, MAX_EVENTS, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            perror("epoll_wait");
            status = 1;
            break;
        }
        bench_date_update(time(NULL));
        for (int i = 0; i < n; i++) {
            if (ev[i].data.ptr)
                conn_event(ev[i].data.ptr, ev[i].events, a.short_reads);
            else
                accept_all(ep, lfd);
        }
    }
    bench_conn_free_all();
    close(ep);
    close(lfd);
    return status;
}
