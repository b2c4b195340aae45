/*
 * json.h - the one JSON helper every --json output shares (ls, stat, info,
 * and pack's summary).
 */
#ifndef QUASH_COMMON_JSON_H
#define QUASH_COMMON_JSON_H

#include <stdio.h>

/* A JSON string literal (bytes that are not UTF-8 as U+DCxx, Python's surrogateescape). */
void json_print_string(FILE *f, const char *s);

#endif
