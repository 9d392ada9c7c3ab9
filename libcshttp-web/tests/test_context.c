/* cshw_context: the life of a request (begin, run, end), its arena
 * (growing in blocks, freed at the end, cleanups run), user data, route
 * parameters, the thread's current context, and the keep-alive answer of
 * cshw_context_end (RFC 9112 §9.3, §9.6). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tw.h"

static const char get11[] = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";

static struct {
    cshw_context *current_in_handler;
    int calls, cleanups, early;
    void *user_data_at_start;
    const char *param;
    size_t used_at_start;
} seen;

/* ---- the current context ---- */

static void current_handler(cshw_context *ctx)
{
    (void)ctx; /* reached through cshw_context_current() only */
    seen.calls++;
    seen.current_in_handler = cshw_context_current();
    if (seen.early) return; /* an early return clears it too */
    cshw_response_puts(cshw_context_response(cshw_context_current()), "via current");
}

static void test_current_context(void **state)
{
    (void)state;
    cshw_memory *m = cshw_memory_new("", 0, 0);
    cshw_context *ctx = cshw_context_new(NULL);
    assert_null(cshw_context_current());
    for (int early = 0; early <= 1; early++) {
        memset(&seen, 0, sizeof seen);
        seen.early = early;
        assert_int_equal(tw_run_one(ctx, cshw_memory_transport(m), get11, current_handler), 1);
        assert_ptr_equal(seen.current_in_handler, ctx);
        assert_null(cshw_context_current());
    }
    /* run restores what was current before */
    cshw_context *outer = cshw_context_new(NULL);
    cshw_context_set_current(outer);
    assert_int_equal(tw_run_one(ctx, cshw_memory_transport(m), get11, current_handler), 1);
    assert_ptr_equal(seen.current_in_handler, ctx);
    assert_ptr_equal(cshw_context_current(), outer);
    cshw_context_set_current(NULL);
    assert_null(cshw_context_current());
    /* freeing the current context clears it */
    cshw_context_set_current(outer);
    cshw_context_free(outer);
    assert_null(cshw_context_current());
    cshw_context_free(ctx);
    cshw_memory_free(m);
}

static void *thread_main(void *arg)
{
    return cshw_context_current() == arg ? (void *)1 : NULL;
}

/* thread-local: another thread sees none */
static void test_current_is_per_thread(void **state)
{
    (void)state;
    cshw_context *ctx = cshw_context_new(NULL);
    cshw_context_set_current(ctx);
    pthread_t t;
    void *same = (void *)1;
    assert_int_equal(pthread_create(&t, NULL, thread_main, ctx), 0);
    assert_int_equal(pthread_join(t, &same), 0);
    assert_null(same);
    assert_ptr_equal(cshw_context_current(), ctx);
    cshw_context_set_current(NULL);
    cshw_context_free(ctx);
}

/* ---- arena, user data, params ---- */

static void count_cleanup(void *arg)
{
    (void)arg;
    seen.cleanups++;
}

static int user_value = 7;

static void arena_handler(cshw_context *ctx)
{
    seen.calls++;
    seen.user_data_at_start = cshw_context_user_data(ctx);
    seen.used_at_start = cshw_arena_used(cshw_context_arena(ctx));
    cshw_context_set_user_data(ctx, &user_value);
    cshw_arena *a = cshw_context_arena(ctx);
    /* many blocks and a large allocation: all gone at the end (ASan) */
    for (int i = 0; i < 20000; i++) {
        char *p = cshw_arena_printf(a, "item %d", i);
        if (!p || strcmp(p + 5, "0") == 0) continue;
    }
    void *big = cshw_arena_alloc(a, 1 << 20);
    if (big) memset(big, 1, 1 << 20);
    cshw_arena_on_cleanup(a, count_cleanup, NULL);
    cshw_arena_on_cleanup(a, count_cleanup, NULL);
    /* route parameters, as the router sets them: in the arena */
    cshw_pair *items = cshw_arena_alloc(a, sizeof *items);
    items[0].name = "id";
    items[0].name_len = 2;
    items[0].value = cshw_arena_strdup(a, "42");
    items[0].value_len = 2;
    cshw_pairs params = {items, 1};
    int leaked = cshw_context_param(ctx, "id") != NULL; /* from the last request */
    cshw_context_set_params(ctx, &params);
    const char *id = cshw_context_param(ctx, "id");
    if (!seen.param || strcmp(seen.param, "42") == 0)
        seen.param = leaked ? "leaked" : id && strcmp(id, "42") == 0 ? "42" : "wrong";
    if (cshw_context_params(ctx)->count != 1) seen.param = "count";
}

static void test_arena_user_data_params(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    tw_run run;
    tw_serve_str(&run, "GET / HTTP/1.1\r\nHost: h\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 0,
                 arena_handler);
    assert_int_equal(run.served, 2);
    assert_int_equal(seen.calls, 2);
    assert_int_equal(seen.cleanups, 4);   /* two per request, each run once */
    assert_null(seen.user_data_at_start); /* not carried to the next request */
    assert_string_equal(seen.param, "42");
    tw_free(&run);

    /* the context's own view after end: nothing left of the request */
    cshw_memory *m = cshw_memory_new("", 0, 0);
    cshw_context *ctx = cshw_context_new(NULL);
    memset(&seen, 0, sizeof seen);
    assert_int_equal(tw_run_one(ctx, cshw_memory_transport(m), get11, arena_handler), 1);
    assert_int_equal(seen.cleanups, 2);
    assert_int_equal(cshw_arena_used(cshw_context_arena(ctx)), 0);
    assert_null(cshw_context_user_data(ctx));
    assert_int_equal(cshw_context_params(ctx)->count, 0);
    /* the application's pointer, unlike user data, outlives the request */
    assert_null(cshw_context_app_data(ctx));
    static int app;
    cshw_context_set_app_data(ctx, &app);
    assert_int_equal(tw_run_one(ctx, cshw_memory_transport(m), get11, arena_handler), 1);
    assert_ptr_equal(cshw_context_app_data(ctx), &app);
    assert_null(cshw_context_param(ctx, "id"));
    cshw_context_set_params(ctx, NULL);
    assert_int_equal(cshw_context_params(ctx)->count, 0);
    cshw_context_free(ctx);
    cshw_memory_free(m);
}

/* ---- the life of a request ---- */

static void nothing(cshw_context *ctx)
{
    (void)ctx;
    seen.calls++;
}

static void test_begin_run_end_misuse(void **state)
{
    (void)state;
    cshw_context *ctx = cshw_context_new(NULL);
    assert_non_null(ctx);
    cshw_memory *m = cshw_memory_new("", 0, 0);
    csh_header fields[16];
    csh_parser p;
    csh_parser_init(&p, CSH_REQUEST, fields, 16, NULL, 0);
    assert_int_equal(csh_parser_execute(&p, get11, sizeof get11 - 1), CSH_OK);

    assert_int_equal(cshw_context_run(ctx, nothing), CSHW_E_NOT_ACTIVE);
    assert_int_equal(cshw_context_end(ctx), CSHW_E_NOT_ACTIVE);
    assert_int_equal(cshw_context_begin(ctx, NULL, &p.msg, cshw_memory_transport(m)), -EINVAL);
    assert_int_equal(cshw_context_begin(ctx, get11, NULL, cshw_memory_transport(m)), -EINVAL);
    assert_int_equal(cshw_context_begin(ctx, get11, &p.msg, NULL), -EINVAL);
    cshw_transport t = *cshw_memory_transport(m);
    cshw_transport_ops ops = *t.ops;
    ops.write = NULL;
    t.ops = &ops;
    assert_int_equal(cshw_context_begin(ctx, get11, &p.msg, &t), -EINVAL);
    /* transport.h: a transport or ops of a size below the first version's */
    ops = *cshw_memory_transport(m)->ops;
    ops.size = CSHW_TRANSPORT_OPS_SIZE_0_3 - 1;
    assert_int_equal(cshw_context_begin(ctx, get11, &p.msg, &t), -EINVAL);
    ops.size = sizeof ops;
    t.size = CSHW_TRANSPORT_SIZE_0_3 - 1;
    assert_int_equal(cshw_context_begin(ctx, get11, &p.msg, &t), -EINVAL);
    assert_int_equal(cshw_context_end(ctx), CSHW_E_NOT_ACTIVE);

    /* the header array is copied: the caller may reuse its own */
    assert_int_equal(cshw_context_begin(ctx, get11, &p.msg, cshw_memory_transport(m)), 0);
    memset(fields, 0xff, sizeof fields);
    assert_string_equal(cshw_request_header(cshw_context_request(ctx), "host"), "h");
    /* a second begin ends the first */
    csh_parser_init(&p, CSH_REQUEST, fields, 16, NULL, 0);
    assert_int_equal(csh_parser_execute(&p, get11, sizeof get11 - 1), CSH_OK);
    assert_int_equal(cshw_context_begin(ctx, get11, &p.msg, cshw_memory_transport(m)), 0);
    assert_int_equal(cshw_context_end(ctx), 1);
    assert_int_equal(cshw_context_end(ctx), CSHW_E_NOT_ACTIVE);
    size_t n;
    const char *out = cshw_memory_output(m, &n);
    assert_int_equal(strncmp(out, "HTTP/1.1 200 OK\r\n", 17), 0);
    assert_non_null(strstr(out + 17, "HTTP/1.1 200 OK\r\n")); /* both answered */

    /* freeing a context in the middle of a request ends it */
    assert_int_equal(cshw_context_begin(ctx, get11, &p.msg, cshw_memory_transport(m)), 0);
    cshw_response_puts(cshw_context_response(ctx), "unfinished");
    cshw_context_free(ctx);
    cshw_memory_free(m);
    cshw_context_free(NULL);
}

static void test_options_copied(void **state)
{
    (void)state;
    cshw_options o;
    cshw_options_init(&o);
    o.gzip_level = 9;
    o.response_buffer = 1000;
    cshw_context *ctx = cshw_context_new(&o);
    o.gzip_level = 1;
    assert_int_equal(cshw_context_options(ctx)->gzip_level, 9);
    assert_int_equal(cshw_context_options(ctx)->response_buffer, 1000);
    cshw_context_free(ctx);
    ctx = cshw_context_new(NULL);
    assert_int_equal(cshw_context_options(ctx)->response_buffer, 16384);
    cshw_context_free(ctx);
    o.gzip_level = 0;
    assert_null(cshw_context_new(&o));
}

/* ---- keep-alive ---- */

static int close_from_handler;

static void keep_handler(cshw_context *ctx)
{
    cshw_response *res = cshw_context_response(ctx);
    if (close_from_handler == 1) cshw_response_close_connection(res);
    if (close_from_handler == 2) {
        for (int i = 0; i < 300; i++) cshw_response_write(res, "0123456789", 10);
    }
    cshw_response_puts(res, "x");
}

/* cshw_context_end says whether the connection may carry another request */
static void test_end_keep_alive(void **state)
{
    (void)state;
    static const struct {
        const char *head;
        int from_handler;
        int expect;
    } cases[] = {
        {"GET / HTTP/1.1\r\nHost: h\r\n\r\n", 0, 1},
        {"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 0, 0},
        {"GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Close\r\n\r\n", 0, 0},
        {"GET / HTTP/1.0\r\n\r\n", 0, 0},
        {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 0, 1},
        {"GET / HTTP/1.1\r\nHost: h\r\n\r\n", 1, 0},
        {"GET / HTTP/1.1\r\nHost: h\r\n\r\n", 2, 1},                /* chunked */
        {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 2, 0}, /* close-delimited */
    };
    cshw_options o;
    cshw_options_init(&o);
    o.response_buffer = 256;
    cshw_context *ctx = cshw_context_new(&o);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cshw_memory *m = cshw_memory_new("", 0, 0);
        close_from_handler = cases[i].from_handler;
        int r = tw_run_one(ctx, cshw_memory_transport(m), cases[i].head, keep_handler);
        if (r != cases[i].expect) fail_msg("case %zu: %d", i, r);
        tw_run run;
        tw_collect(&run, m, cases[i].head);
        assert_int_equal(run.error, 0);
        const char *c = tw_field(&run.r[0], "connection");
        /* what end says, the response said (RFC 9112 §9.6) */
        if (!cases[i].expect) assert_string_equal(c, "close");
        tw_free(&run);
        cshw_memory_free(m);
    }
    /* a failed write: negative, close */
    cshw_memory *m = cshw_memory_new("", 0, 0);
    cshw_memory_fail_writes_after(m, 5);
    close_from_handler = 0;
    assert_int_equal(tw_run_one(ctx, cshw_memory_transport(m), get11, keep_handler), -EPIPE);
    cshw_memory_free(m);
    cshw_context_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_current_context),        cmocka_unit_test(test_current_is_per_thread),
        cmocka_unit_test(test_arena_user_data_params), cmocka_unit_test(test_begin_run_end_misuse),
        cmocka_unit_test(test_options_copied),         cmocka_unit_test(test_end_keep_alive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
