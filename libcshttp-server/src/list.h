/* Private to the engine: the intrusive lists every list of the engine and
 * its client is made of.
 *
 * An element carries its own links, fields named by the caller, so one
 * element may be on several lists at once (a connection on its loop's
 * list and on the posted queue) and no list allocates. Three shapes, each
 * NULL-terminated, each as BSD's sys/queue.h spells its own:
 *
 * - a list (head; links prev and next): put at the front, taken out from
 *   anywhere (a loop's connections, its armed watches, a pool's idle
 *   connections, most recently used first);
 * - a queue (head and tail; links prev and next): added at the back,
 *   taken out from anywhere (a pool's waiters, first come first served);
 * - a FIFO (head and tail; one link) and a stack (head; one link): added
 *   at the back or the front, taken from the front (posted connections,
 *   calls due to go on, parked workers, freed objects kept for reuse).
 *
 * The macros take lvalues and evaluate them more than once: pass plain
 * variables and fields, nothing with a side effect. Whoever owns the list
 * says what lock, if any, guards it. */
#ifndef CSHS_LIST_H
#define CSHS_LIST_H

#include <stddef.h>

/* elm goes to the front of the list at head. */
#define CSHS_LIST_PUSH(head, elm, prev, next)                                                      \
    do {                                                                                           \
        (elm)->prev = NULL;                                                                        \
        (elm)->next = (head);                                                                      \
        if (head) (head)->prev = (elm);                                                            \
        (head) = (elm);                                                                            \
    } while (0)

/* elm, on the list at head, leaves it; its links are cleared. */
#define CSHS_LIST_REMOVE(head, elm, prev, next)                                                    \
    do {                                                                                           \
        if ((elm)->prev)                                                                           \
            (elm)->prev->next = (elm)->next;                                                       \
        else                                                                                       \
            (head) = (elm)->next;                                                                  \
        if ((elm)->next) (elm)->next->prev = (elm)->prev;                                          \
        (elm)->prev = (elm)->next = NULL;                                                          \
    } while (0)

/* elm goes to the back of the queue head..tail. */
#define CSHS_QUEUE_APPEND(head, tail, elm, prev, next)                                             \
    do {                                                                                           \
        (elm)->prev = (tail);                                                                      \
        (elm)->next = NULL;                                                                        \
        if (tail)                                                                                  \
            (tail)->next = (elm);                                                                  \
        else                                                                                       \
            (head) = (elm);                                                                        \
        (tail) = (elm);                                                                            \
    } while (0)

/* elm, on the queue head..tail, leaves it; its links are cleared. */
#define CSHS_QUEUE_REMOVE(head, tail, elm, prev, next)                                             \
    do {                                                                                           \
        if ((elm)->prev)                                                                           \
            (elm)->prev->next = (elm)->next;                                                       \
        else                                                                                       \
            (head) = (elm)->next;                                                                  \
        if ((elm)->next)                                                                           \
            (elm)->next->prev = (elm)->prev;                                                       \
        else                                                                                       \
            (tail) = (elm)->prev;                                                                  \
        (elm)->prev = (elm)->next = NULL;                                                          \
    } while (0)

/* elm goes to the back of the FIFO head..tail. */
#define CSHS_FIFO_APPEND(head, tail, elm, link)                                                    \
    do {                                                                                           \
        (elm)->link = NULL;                                                                        \
        if (tail)                                                                                  \
            (tail)->link = (elm);                                                                  \
        else                                                                                       \
            (head) = (elm);                                                                        \
        (tail) = (elm);                                                                            \
    } while (0)

/* out takes the first element of the FIFO head..tail, not empty, which
 * loses it (out's link is cleared). */
#define CSHS_FIFO_POP(head, tail, out, link)                                                       \
    do {                                                                                           \
        (out) = (head);                                                                            \
        (head) = (out)->link;                                                                      \
        if (!(head)) (tail) = NULL;                                                                \
        (out)->link = NULL;                                                                        \
    } while (0)

/* elm goes on top of the stack at head. */
#define CSHS_STACK_PUSH(head, elm, link)                                                           \
    do {                                                                                           \
        (elm)->link = (head);                                                                      \
        (head) = (elm);                                                                            \
    } while (0)

/* out takes the top of the stack at head, not empty, which loses it
 * (out's link is cleared). */
#define CSHS_STACK_POP(head, out, link)                                                            \
    do {                                                                                           \
        (out) = (head);                                                                            \
        (head) = (out)->link;                                                                      \
        (out)->link = NULL;                                                                        \
    } while (0)

#endif
