/**
 * @file perf_session.h
 * The flow of a whole invocation: the server waits for a client and runs
 * what it asks; the client sends one test case after another (one per
 * --sizes entry), runs each and prints its result; -L forks a server child
 * connected by a socketpair; -l runs both sides in this process.
 */
#ifndef PERF_SESSION_H_
#define PERF_SESSION_H_

#include "perf_options.h"

/**
 * Run everything @a opts asks for.
 * @return the process exit status: 0 when every test case ran (and, with
 *         -V, every check passed), 1 otherwise.
 */
int perf_session_run(const perf_options_t *opts);

#endif
