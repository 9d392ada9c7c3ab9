/* What cshttp-load prints and writes: the summary of each level on stdout,
 * the sweep's table, the CSV rows and the Markdown report.
 *
 * Ownership: load_report points to the caller's options, argv and results;
 * nothing here allocates beyond stdio. */
#ifndef CSHTTP_LOAD_REPORT_H
#define CSHTTP_LOAD_REPORT_H

#include <stdio.h>
#include <time.h>

#include "load.h"

typedef struct load_report {
    const load_options *opt;
    const load_plan *plan;
    int argc;
    char **argv;
    time_t started;
    const load_result *results; /* one per level run so far */
    size_t num_results;
    unsigned idle_held;
    unsigned idle_answered;
    char idle_error[LOAD_ERROR_TEXT];
} load_report;

/* One level's block of plain text. */
void report_print_level(FILE *out, const load_report *rep, const load_result *r);
/* After the levels: the idle line, and for a sweep the table and the peak. */
void report_print_end(FILE *out, const load_report *rep);
/* Whether anything counts as an error: exit status 1. */
int report_has_errors(const load_report *rep);
void report_write_csv(FILE *out, const load_report *rep);
void report_write_markdown(FILE *out, const load_report *rep);

#endif
