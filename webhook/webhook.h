/*
 * webhook: the HTTPS admission server (libmicrohttpd over GnuTLS, TLS 1.2 and
 * 1.3, certificates reloaded from disk without dropping a request), the
 * AdmissionReview codec, and gpuq's mutation and validation rules for GPU
 * Pods and batch/v1 Jobs.
 *
 * The design decision that matters: a review is decided purely from an
 * immutable policy snapshot in memory (never a call to the apiserver while it
 * waits on us), so the decision functions are deterministic, testable
 * without a server, and answer in microseconds.
 */
#ifndef GPUQ_WEBHOOK_H
#define GPUQ_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>

#include "base/base.h"

/* ==== Section A: admission decisions (admit.c, mutate.c, validate.c) ==== */

/* ==== Section B: the HTTPS server and metrics (server.c, metrics.c) ==== */

#endif
