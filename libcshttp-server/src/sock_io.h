/* Private to the engine: send(2), recv(2) and sendmsg(2) as plain system
 * calls.
 *
 * glibc's send, recv and sendmsg are thread cancellation points: in a
 * process with more than one thread, each call switches the thread's
 * cancellation type on and off around the system call, two atomic
 * read-modify-writes of the thread's cancellation word. The engine always
 * has more than one thread (loops, workers, the supervisor) and cancels
 * none (every wait it stops is stopped by a deadline, a shutdown(2) or an
 * eventfd), so the socket calls of its hot paths (the streams, the
 * client's connections, tunnels) go straight to the kernel instead.
 * Each returns what the libc call returns: -1 with errno set on failure. */
#ifndef CSHS_SOCK_IO_H
#define CSHS_SOCK_IO_H

#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static inline ssize_t cshs__send(int fd, const void *buf, size_t len, int flags)
{
    return syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
}

static inline ssize_t cshs__recv(int fd, void *buf, size_t len, int flags)
{
    return syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
}

static inline ssize_t cshs__sendmsg(int fd, const struct msghdr *msg, int flags)
{
    return syscall(SYS_sendmsg, fd, msg, flags);
}

#endif
