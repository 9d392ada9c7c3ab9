/* Private to the engine: a name's addresses looked up on a thread of its
 * own, so that no loop and not the supervisor waits for a DNS server.
 *
 * getaddrinfo blocks for as long as the name's servers take (seconds, when
 * one does not answer), and glibc offers nothing to wait on it with
 * epoll. Each look-up here runs getaddrinfo on a detached thread, which
 * writes its end to a descriptor the caller gave (an eventfd watched by a
 * reactor) and lets go. The caller looks at the result once told, or when
 * it likes (the tick polls), and lets go too; whichever of the two lets go
 * last frees the look-up. No one ever waits for the thread: a server that
 * stops, or a client freed, leaves a look-up in flight to end by itself,
 * touching nothing but its own struct and its own descriptor.
 *
 * Threads: start, done and release from any one thread at a time (the
 * look-up's owner); the look-up's thread touches only the struct. */
#ifndef CSHS_LOOKUP_H
#define CSHS_LOOKUP_H

#include <netdb.h>

typedef struct cshs_lookup cshs_lookup;

/* Starts looking up host:port for TCP (getaddrinfo with AF_UNSPEC,
 * SOCK_STREAM, AI_NUMERICSERV). notify_fd: -1, or a descriptor the
 * look-up owns from here (a dup of an eventfd), written 1 when the
 * result is in and then closed. NULL with errno (no thread or memory;
 * notify_fd is closed then too). */
cshs_lookup *cshs__lookup_start(const char *host, const char *port, int notify_fd);

/* 1 when the look-up has ended: *res (the caller's to freeaddrinfo; NULL
 * on failure) and *err (0, -ENOMEM or CSHS_CLIENT_E_RESOLVE), taken once;
 * 0 while it runs. Never waits. */
int cshs__lookup_done(cshs_lookup *l, struct addrinfo **res, int *err);

/* The owner lets go: the struct is freed now, or by the thread when it
 * ends (a result not taken is freed with it). Never waits. NULL: nothing. */
void cshs__lookup_release(cshs_lookup *l);

#endif
