/* list.h (private): the intrusive lists of the engine and its client.
 * Each shape is driven through its operations and checked link by link:
 * both directions of a list or queue, head and tail of a FIFO, and the
 * links an element leaves with. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "list.h"

typedef struct item {
    int id;
    struct item *prev, *next; /* a list or a queue */
    struct item *link;        /* a FIFO or a stack, at the same time */
} item;

/* The ids from head forwards, and checks the backward links (and the
 * tail, when given) agree. */
static int ids(const item *head, const item *tail, int *out, int cap)
{
    int n = 0;
    const item *last = NULL;
    for (const item *i = head; i; i = i->next) {
        assert_ptr_equal(i->prev, last);
        assert_true(n < cap);
        out[n++] = i->id;
        last = i;
    }
    if (tail || !head) assert_ptr_equal(tail, last);
    return n;
}

static void expect_ids(const item *head, const item *tail, const int *want, int n)
{
    int got[8];
    assert_int_equal(ids(head, tail, got, 8), n);
    for (int k = 0; k < n; k++) assert_int_equal(got[k], want[k]);
}

static void test_list_push_and_remove(void **state)
{
    (void)state;
    item a = {.id = 1}, b = {.id = 2}, c = {.id = 3};
    item *head = NULL;
    CSHS_LIST_PUSH(head, &a, prev, next);
    CSHS_LIST_PUSH(head, &b, prev, next);
    CSHS_LIST_PUSH(head, &c, prev, next);
    expect_ids(head, NULL, (int[]){3, 2, 1}, 3); /* most recent first */
    CSHS_LIST_REMOVE(head, &b, prev, next);      /* the middle */
    expect_ids(head, NULL, (int[]){3, 1}, 2);
    assert_null(b.prev);
    assert_null(b.next);
    CSHS_LIST_REMOVE(head, &c, prev, next); /* the head */
    expect_ids(head, NULL, (int[]){1}, 1);
    CSHS_LIST_REMOVE(head, &a, prev, next); /* the last one */
    assert_null(head);
    CSHS_LIST_PUSH(head, &b, prev, next); /* empty, then used again */
    expect_ids(head, NULL, (int[]){2}, 1);
}

static void test_queue_append_and_remove(void **state)
{
    (void)state;
    item a = {.id = 1}, b = {.id = 2}, c = {.id = 3}, d = {.id = 4};
    item *head = NULL, *tail = NULL;
    CSHS_QUEUE_APPEND(head, tail, &a, prev, next);
    CSHS_QUEUE_APPEND(head, tail, &b, prev, next);
    CSHS_QUEUE_APPEND(head, tail, &c, prev, next);
    expect_ids(head, tail, (int[]){1, 2, 3}, 3);   /* first come first */
    CSHS_QUEUE_REMOVE(head, tail, &c, prev, next); /* the tail moves back */
    expect_ids(head, tail, (int[]){1, 2}, 2);
    assert_ptr_equal(tail, &b);
    CSHS_QUEUE_REMOVE(head, tail, &a, prev, next); /* the head moves on */
    expect_ids(head, tail, (int[]){2}, 1);
    CSHS_QUEUE_APPEND(head, tail, &d, prev, next);
    expect_ids(head, tail, (int[]){2, 4}, 2);
    CSHS_QUEUE_REMOVE(head, tail, &b, prev, next);
    CSHS_QUEUE_REMOVE(head, tail, &d, prev, next);
    assert_null(head);
    assert_null(tail);
    assert_null(d.prev);
    assert_null(d.next);
}

static void test_fifo_and_stack(void **state)
{
    (void)state;
    item a = {.id = 1, .link = &a}, b = {.id = 2}, c = {.id = 3};
    item *head = NULL, *tail = NULL, *out = NULL;
    CSHS_FIFO_APPEND(head, tail, &a, link); /* a stale link is cleared */
    CSHS_FIFO_APPEND(head, tail, &b, link);
    CSHS_FIFO_APPEND(head, tail, &c, link);
    assert_ptr_equal(tail, &c);
    assert_null(c.link);
    CSHS_FIFO_POP(head, tail, out, link);
    assert_ptr_equal(out, &a);
    assert_null(a.link);
    CSHS_FIFO_POP(head, tail, out, link);
    assert_ptr_equal(out, &b);
    CSHS_FIFO_POP(head, tail, out, link);
    assert_ptr_equal(out, &c);
    assert_null(head);
    assert_null(tail); /* emptied: the next append starts afresh */
    CSHS_FIFO_APPEND(head, tail, &b, link);
    assert_ptr_equal(head, &b);
    assert_ptr_equal(tail, &b);

    item *top = NULL;
    CSHS_STACK_PUSH(top, &a, link);
    CSHS_STACK_PUSH(top, &c, link);
    CSHS_STACK_POP(top, out, link);
    assert_ptr_equal(out, &c); /* last in, first out */
    assert_null(c.link);
    CSHS_STACK_POP(top, out, link);
    assert_ptr_equal(out, &a);
    assert_null(top);
}

/* One element on a list and a FIFO at once: the links are apart. */
static void test_two_lists_at_once(void **state)
{
    (void)state;
    item a = {.id = 1}, b = {.id = 2};
    item *lhead = NULL, *fhead = NULL, *ftail = NULL, *out = NULL;
    CSHS_LIST_PUSH(lhead, &a, prev, next);
    CSHS_LIST_PUSH(lhead, &b, prev, next);
    CSHS_FIFO_APPEND(fhead, ftail, &a, link);
    CSHS_FIFO_APPEND(fhead, ftail, &b, link);
    CSHS_LIST_REMOVE(lhead, &a, prev, next);
    expect_ids(lhead, NULL, (int[]){2}, 1);
    CSHS_FIFO_POP(fhead, ftail, out, link);
    assert_ptr_equal(out, &a);
    assert_ptr_equal(fhead, &b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_push_and_remove),
        cmocka_unit_test(test_queue_append_and_remove),
        cmocka_unit_test(test_fifo_and_stack),
        cmocka_unit_test(test_two_lists_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
