/* cshttp-load's settings: what the command line says, checked.
 *
 * Ownership: load_options_parse fills a caller-owned struct; the strings it
 * points to are argv's or heap copies released by load_options_free. */
#ifndef CSHTTP_LOAD_OPTIONS_H
#define CSHTTP_LOAD_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define LOAD_MAX_LEVELS 64
#define LOAD_MAX_PIPELINE 1024

typedef struct load_options {
    /* the target, from the URL */
    const char *url;
    bool https;
    char *host;      /* without brackets; heap */
    char *port;      /* decimal; heap */
    char *path;      /* path and query, "/" when the URL has none; heap */
    char *authority; /* the Host field value: host[:port] as written in the URL; heap */

    /* the load */
    unsigned levels[LOAD_MAX_LEVELS]; /* connection counts: -c gives one */
    size_t num_levels;
    double duration_s;           /* per level, when requests == 0 */
    unsigned long long requests; /* per level; 0: by duration */
    double warmup_s;
    unsigned threads;
    bool keepalive;
    unsigned pipeline;
    double timeout_s;
    unsigned idle;
    unsigned source_addrs; /* 0: automatic */

    /* the request */
    const char *method;
    char *headers;  /* "Name: value\r\n" lines from -H, joined; heap */
    bool has_host;  /* -H gave Host */
    bool has_agent; /* -H gave User-Agent */
    char *body;     /* heap */
    size_t body_len;
    bool has_body;

    /* HTTPS */
    const char *cacert;

    /* output */
    const char *report_path;
    const char *csv_path;
    const char *label;
    int progress; /* -1: when stderr is a terminal, 0 off, 1 on */
} load_options;

enum {
    LOAD_OPTIONS_OK = 0,
    LOAD_OPTIONS_EXIT = 1, /* --help or --version was printed */
    LOAD_OPTIONS_BAD = -1, /* `err` names the problem */
};

/* Parses argv into `o`. On LOAD_OPTIONS_BAD, `err` (size errlen) holds one
 * line naming the option and what is wrong with it. */
int load_options_parse(load_options *o, int argc, char **argv, char *err, size_t errlen);
void load_options_free(load_options *o);
void load_options_usage(FILE *out);

#endif
