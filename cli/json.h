/*
 * json.h - the one JSON helper every --json output shares (ls, stat, info,
 * and pack's summary).
 */
#ifndef QUASH_CLI_JSON_H
#define QUASH_CLI_JSON_H

#include <stdio.h>

/* A JSON string literal (bytes that are not UTF-8 as U+DCxx, Python's surrogateescape). */
void cli_print_json_string(FILE *f, const char *s);

#endif
