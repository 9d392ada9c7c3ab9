/* api_costs: what the calls of libcshttp's read loop cost, in instructions,
 * counted by callgrind (bench/parser/run.sh runs it and prints the table).
 *
 *   valgrind --tool=callgrind api_costs
 *   callgrind_annotate --inclusive=yes --threshold=100 callgrind.out.PID
 *
 * Each cost_* function makes COST_CALLS calls of one kind in a loop;
 * cost_loop is the same loop without the call, to subtract. The figures are
 * the costs the public headers and libcshttp/README.md quote: a call without
 * new bytes, the end of a body, setting a body reader up or rearming it. */
#include <cshttp/cshttp.h>

#include <stdio.h>
#include <string.h>

#define COST_CALLS 100000

static const char partial[] =
    "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\nX-Long: abcdefgh";
static const char cl_head[] = "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n";
static const char ch_head[] = "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";

/* Whatever the loops compute ends here, so none of it can be dropped. */
static volatile int g_sink;

#define COST(name) __attribute__((noinline)) void cost_##name
COST(loop)(void);
COST(loop)(void)
{
    for (int i = 0; i < COST_CALLS; i++) g_sink += i;
}

/* csh_parser_execute on the same bytes as the call before */
COST(execute_no_new_bytes)(csh_parser *p);
COST(execute_no_new_bytes)(csh_parser *p)
{
    for (int i = 0; i < COST_CALLS; i++)
        g_sink += csh_parser_execute(p, partial, sizeof partial - 1);
}

COST(body_next_no_bytes)(csh_body *b);
COST(body_next_no_bytes)(csh_body *b)
{
    size_t used;
    csh_span d;
    char x[1];
    for (int i = 0; i < COST_CALLS; i++) g_sink += csh_body_next(b, x, 0, &used, &d);
}

COST(body_read_no_bytes)(csh_body *b);
COST(body_read_no_bytes)(csh_body *b)
{
    size_t used;
    csh_span d;
    char x[1];
    for (int i = 0; i < COST_CALLS; i++) g_sink += csh_body_read(b, x, 0, &used, &d);
}

/* Content-Length data: one byte a call, never the last */
COST(body_next_length_data)(csh_body *b);
COST(body_next_length_data)(csh_body *b)
{
    size_t used;
    csh_span d;
    char x[1] = {'x'};
    for (int i = 0; i < COST_CALLS; i++) g_sink += csh_body_next(b, x, 1, &used, &d);
}

COST(body_read_length_data)(csh_body *b);
COST(body_read_length_data)(csh_body *b)
{
    size_t used;
    csh_span d;
    char x[1] = {'x'};
    for (int i = 0; i < COST_CALLS; i++) g_sink += csh_body_read(b, x, 1, &used, &d);
}

COST(body_done)(csh_body *b);
COST(body_done)(csh_body *b)
{
    for (int i = 0; i < COST_CALLS; i++) g_sink += csh_body_done(b);
}

COST(body_reset_length)(csh_body *b, const csh_message *m);
COST(body_reset_length)(csh_body *b, const csh_message *m)
{
    for (int i = 0; i < COST_CALLS; i++) {
        csh_body_reset(b, m);
        g_sink += b->done_;
    }
}

COST(body_reset_chunked)(csh_body *b, const csh_message *m);
COST(body_reset_chunked)(csh_body *b, const csh_message *m)
{
    for (int i = 0; i < COST_CALLS; i++) {
        csh_body_reset(b, m);
        g_sink += b->done_;
    }
}

COST(body_init_length)(csh_body *b, const csh_message *m);
COST(body_init_length)(csh_body *b, const csh_message *m)
{
    for (int i = 0; i < COST_CALLS; i++) {
        csh_body_init(b, m, NULL, 0, NULL, 0);
        g_sink += b->done_;
    }
}

COST(body_init_chunked)(csh_body *b, const csh_message *m);
COST(body_init_chunked)(csh_body *b, const csh_message *m)
{
    for (int i = 0; i < COST_CALLS; i++) {
        csh_body_init(b, m, NULL, 0, NULL, 0);
        g_sink += b->done_;
    }
}

static void head(csh_parser *p, csh_header *f, size_t cap, const char *s, size_t n, int want)
{
    csh_parser_init(p, CSH_REQUEST, f, cap, NULL, 0);
    if (csh_parser_execute(p, s, n) != want) {
        fprintf(stderr, "api_costs: the sample head did not parse as expected\n");
        g_sink = -1;
    }
}

int main(void)
{
    csh_header f1[16], f2[16], f3[16];
    csh_parser pp, pl, pc;
    csh_body b;

    head(&pp, f1, 16, partial, sizeof partial - 1, CSH_INCOMPLETE);
    head(&pl, f2, 16, cl_head, sizeof cl_head - 1, CSH_OK);
    head(&pc, f3, 16, ch_head, sizeof ch_head - 1, CSH_OK);

    cost_loop();
    cost_execute_no_new_bytes(&pp);
    csh_body_init(&b, &pl.msg, NULL, 0, NULL, 0); /* 100 bytes to come */
    cost_body_next_no_bytes(&b);
    cost_body_read_no_bytes(&b);
    cost_body_done(&b);
    /* a length that COST_CALLS one-byte calls cannot end */
    pl.msg.content_length = 10 * (uint64_t)COST_CALLS;
    csh_body_reset(&b, &pl.msg);
    cost_body_next_length_data(&b);
    csh_body_reset(&b, &pl.msg);
    cost_body_read_length_data(&b);
    cost_body_reset_length(&b, &pl.msg);
    cost_body_reset_chunked(&b, &pc.msg);
    cost_body_init_length(&b, &pl.msg);
    cost_body_init_chunked(&b, &pc.msg);
    printf("api_costs: %d calls per cost_* function\n", COST_CALLS);
    return g_sink == -1;
}
