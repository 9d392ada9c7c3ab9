/* The context: one request at a time, its arena, the thread's current
 * context, and the end of a request (response completed, body drained or
 * the connection given up, cleanups run). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "context_impl.h"
#include "cshttp/web/error.h"
#include "options_impl.h"
#include "cshttp_internal/sized.h"
#include "transport_impl.h"

static _Thread_local cshw_context *current;

cshw_context *cshw_context_new(const cshw_options *options)
{
    cshw_options o;
    if (cshw__options_copy(&o, options) < 0 || cshw_options_check(&o, NULL) < 0) return NULL;

    cshw_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return NULL;
    ctx->options = o;
    ctx->arena = cshw_arena_new(8192);
    ctx->out = malloc(o.response_buffer);
    if (!ctx->arena || !ctx->out) {
        cshw_arena_free(ctx->arena);
        free(ctx->out);
        free(ctx);
        return NULL;
    }
    cshw_buf_init(&ctx->wire, NULL);
    cshw_buf_init(&ctx->pend, NULL);
    ctx->req.ctx = ctx;
    ctx->res.ctx = ctx;
    return ctx;
}

void cshw_context_free(cshw_context *ctx)
{
    if (!ctx) return;
    if (ctx->active) cshw_context_end(ctx);
    if (current == ctx) current = NULL;
    cshw_arena_free(ctx->arena);
    cshw__gzip_free(ctx->gzip);
    cshw_buf_free(&ctx->wire);
    cshw_buf_free(&ctx->pend);
    free(ctx->out);
    free(ctx);
}

int cshw_context_begin(cshw_context *ctx, const char *head, const csh_message *msg,
                       const cshw_transport *transport)
{
    if (!ctx || !head || !msg || !cshw__transport_ok(transport) || !transport->ops->peek ||
        !transport->ops->consume || !transport->ops->write)
        return -EINVAL;
    if (ctx->active) cshw_context_end(ctx);
    cshw__transport_copy(&ctx->transport, transport);
    ctx->user_data = NULL;
    ctx->body_stored = 0;
    ctx->params.items = NULL;
    ctx->params.count = 0;
    ctx->pend.len = 0;
    ctx->active = 1;
    cshw__response_begin(&ctx->res);
    int r = cshw__request_begin(&ctx->req, head, msg);
    if (r < 0) {
        ctx->active = 0;
        cshw_arena_reset(ctx->arena);
        return r;
    }
    ctx->res.is_head = msg->method == CSH_METHOD_HEAD;
    return 0;
}

int cshw_context_run(cshw_context *ctx, cshw_handler handler)
{
    /* only an exchange lets a handler defer (cshw_exchange_defer) */
    int r = cshw__context_run(ctx, handler);
    if (r == CSHW__CONTEXT_DEFERRED) {
        ctx->deferred = 0;
        r = cshw_context_end(ctx);
    }
    return r;
}

int cshw__context_run(cshw_context *ctx, cshw_handler handler)
{
    if (!ctx || !ctx->active) return CSHW_E_NOT_ACTIVE;
    cshw_context *saved = current;
    /* RFC 9110 §10.1.1: an expectation the server does not meet gets 417;
     * the handler never sees the request. */
    if (ctx->req.msg.flags & CSH_MSG_EXPECT_OTHER) {
        cshw__response_auto_error(&ctx->res, CSHW_E_EXPECTATION_FAILED);
    } else if (ctx->req.msg.flags & CSH_MSG_TE_OTHER_CODINGS) {
        /* RFC 9112 §6.1: gzip under chunked would reach the handler still
         * encoded; 501 for a coding the server does not undo */
        cshw__response_auto_error(&ctx->res, CSHW_E_TRANSFER_CODING);
        ctx->res.close = 1;
    } else {
        ctx->deferred = 0;
        current = ctx;
        handler(ctx);
        current = saved;
        if (ctx->deferred) return CSHW__CONTEXT_DEFERRED; /* it answers later */
    }
    return cshw_context_end(ctx);
}

int cshw_context_end(cshw_context *ctx)
{
    if (!ctx || !ctx->active) return CSHW_E_NOT_ACTIVE;
    cshw_request *req = &ctx->req;
    cshw_response *res = &ctx->res;

    /* Errors the toolkit found in what the client sent, which the handler
     * saw (or not) and did not answer itself. */
    /* reading the form after the stream is the application's mistake, not
     * the client's: the handler got the error, nothing more */
    int form_error = req->form_error == CSHW_E_BODY_CONSUMED ? 0 : req->form_error;
    if (!res->answered && !res->headers_sent) {
        int code = form_error        ? form_error
                   : req->body_error ? req->body_error
                   : req->path_error ? req->path_error
                                     : 0;
        if (code) cshw__response_auto_error(res, code);
    }
    /* A body that failed is never answered 2xx or 3xx, whatever the handler
     * said: its error status while nothing was sent, otherwise the response
     * is cut short (no last chunk) so the client cannot take it for whole. */
    if (req->body_error && res->status < 400) {
        if (!res->headers_sent && !res->file_sent)
            cshw__response_auto_error(res, req->body_error);
        else
            res->abort = 1;
    }
    /* RFC 9112 §9.6: a server that will not read the rest of the body says
     * so with Connection: close before it closes; after a bad body the
     * framing of what follows cannot be trusted either. A body the exchange
     * stored is already read: nothing of it is left on the connection. */
    if (!req->body_done && !ctx->body_stored && cshw__body_forces_close(req)) res->close = 1;
    if (form_error || req->body_error) res->close = 1;

    int r = cshw__response_end(res);
    int keep = r == 0 && !res->close && !res->abort && (req->msg.flags & CSH_MSG_KEEP_ALIVE);
    if (keep && !req->body_done && !ctx->body_stored)
        keep = cshw__body_drain(req, ctx->options.max_drain_bytes);

    cshw_arena_reset(ctx->arena);
    ctx->active = 0;
    ctx->user_data = NULL;
    ctx->params.items = NULL;
    ctx->params.count = 0;
    if (r < 0) return r;
    return keep ? 1 : 0;
}

cshw_context *cshw_context_current(void)
{
    return current;
}

void cshw_context_set_current(cshw_context *ctx)
{
    current = ctx;
}

cshw_request *cshw_context_request(cshw_context *ctx)
{
    return &ctx->req;
}

cshw_response *cshw_context_response(cshw_context *ctx)
{
    return &ctx->res;
}

cshw_arena *cshw_context_arena(cshw_context *ctx)
{
    return ctx->arena;
}

void *cshw_context_user_data(const cshw_context *ctx)
{
    return ctx->user_data;
}

void cshw_context_set_user_data(cshw_context *ctx, void *data)
{
    ctx->user_data = data;
}

void *cshw_context_app_data(const cshw_context *ctx)
{
    return ctx->app_data;
}

void cshw_context_set_app_data(cshw_context *ctx, void *data)
{
    ctx->app_data = data;
}

const char *cshw_context_param(const cshw_context *ctx, const char *name)
{
    return cshw_pairs_get(&ctx->params, name);
}

const cshw_pairs *cshw_context_params(const cshw_context *ctx)
{
    return &ctx->params;
}

void cshw_context_set_params(cshw_context *ctx, const cshw_pairs *params)
{
    if (params) {
        ctx->params = *params;
    } else {
        ctx->params.items = NULL;
        ctx->params.count = 0;
    }
}

const cshw_options *cshw_context_options(const cshw_context *ctx)
{
    return &ctx->options;
}
