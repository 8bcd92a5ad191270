/**
 * @file linear_func.h
 * A cost model f(x) = c + m * x, used for latency and overhead estimates
 * in protocol selection (x is a message size or a number of endpoints).
 */
#ifndef UCS_TYPE_LINEAR_FUNC_H_
#define UCS_TYPE_LINEAR_FUNC_H_

#include <ucs/sys/compiler_def.h>

BEGIN_C_DECLS

typedef struct {
    double c; /**< constant part */
    double m; /**< slope */
} ucs_linear_func_t;

static inline ucs_linear_func_t ucs_linear_func_make(double c, double m)
{
    ucs_linear_func_t f = {c, m};
    return f;
}

static inline double ucs_linear_func_apply(ucs_linear_func_t f, double x)
{
    return f.c + (f.m * x);
}

static inline ucs_linear_func_t ucs_linear_func_add(ucs_linear_func_t a,
                                                    ucs_linear_func_t b)
{
    return ucs_linear_func_make(a.c + b.c, a.m + b.m);
}

END_C_DECLS

#endif
