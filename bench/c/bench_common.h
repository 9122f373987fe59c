/*
 * What the C baselines of bench/ share: a monotonic clock in nanoseconds, the error line
 * a failed call prints, and the largest number of inputs/outputs they handle.
 */
#ifndef RKNNX_BENCH_COMMON_H
#define RKNNX_BENCH_COMMON_H

#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <time.h>

#define MAX_IO 16

static inline long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Print "<prog>: <what> failed: <rc>" and return 1 (the exit status of a failed run). */
static inline int bench_fail(const char *prog, const char *what, int rc)
{
    fprintf(stderr, "%s: %s failed: %d\n", prog, what, rc);
    return 1;
}

#endif
