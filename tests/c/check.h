/*
 * What the C checks of the kernels (kernels_check.c, letterbox_check.c, yolo_check.c)
 * share: the check counter, and a malloc that ends the program when memory runs out.
 * Each check is one program (one translation unit with this header, linked with the
 * kernels), so the counters are the program's own.  A check ends by printing
 * "NAME: N checks, F failed", which its test reads.
 */
#ifndef RKNNX_TESTS_CHECK_H
#define RKNNX_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static long checks, failed;

/* Count a check; report the first 20 failures on stderr with two numbers of context. */
static void check(int ok, const char *what, long a, long b)
{
    checks++;
    if (!ok && failed++ < 20)
        fprintf(stderr, "FAIL %s (%ld, %ld)\n", what, a, b);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(3);
    }
    return p;
}

#endif
