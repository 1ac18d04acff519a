/* base: error names, diagnostics, logging. */
#include "base/base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
	int rc;
	const char *name;
} err_names[] = {
    {GPUQ_OK, "ok"},
    {GPUQ_ENOMEM, "out of memory"},
    {GPUQ_EINVAL, "invalid input"},
    {GPUQ_ERANGE, "value out of range"},
    {GPUQ_ENOTFOUND, "not found"},
    {GPUQ_EEXIST, "already exists"},
    {GPUQ_ELIMIT, "limit exceeded"},
    {GPUQ_EIO, "I/O error"},
    {GPUQ_ETLS, "TLS error"},
    {GPUQ_ESTORE, "state store error"},
    {GPUQ_EHTTP, "HTTP error"},
    {GPUQ_ECORRUPT, "corrupt data"},
    {GPUQ_EDENIED, "denied"},
    {GPUQ_EAGAIN, "try again"},
    {GPUQ_ECONFLICT, "conflict"},
    {GPUQ_EGONE, "resource version gone"},
};

const char *gpuq_strerror(int rc)
{
	for (size_t i = 0; i < sizeof(err_names) / sizeof(err_names[0]); i++)
		if (err_names[i].rc == rc)
			return err_names[i].name;
	return "unknown error";
}

int gpuq_diag_set(gpuq_diag_t *diag, int rc, const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return rc;
	va_start(ap, fmt);
	vsnprintf(diag->msg, sizeof(diag->msg), fmt, ap);
	va_end(ap);
	return rc;
}

void gpuq_diag_prefix(gpuq_diag_t *diag, const char *fmt, ...)
{
	char old[GPUQ_DIAG_MAX];
	va_list ap;
	int n;

	if (!diag)
		return;
	memcpy(old, diag->msg, sizeof(old));
	va_start(ap, fmt);
	n = vsnprintf(diag->msg, sizeof(diag->msg), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(diag->msg))
		return;
	snprintf(diag->msg + n, sizeof(diag->msg) - (size_t)n, "%s", old);
}

/* Process-wide log threshold: written once by main before threads start. */
static gpuq_log_level_t log_threshold = GPUQ_LOG_INFO;

void gpuq_log_set_level(gpuq_log_level_t level)
{
	log_threshold = level;
}

void gpuq_log(gpuq_log_level_t level, const char *module, const char *fmt, ...)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};
	char line[2048]; /* one log line; longer messages are cut */
	va_list ap;
	int n;

	if (level < log_threshold)
		return;
	n = snprintf(line, sizeof(line), "%s %s: ", names[level], module);
	if (n < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n = (int)strlen(line);
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

int gpuq_strlcpy(char *dst, const char *src, size_t cap)
{
	size_t len = strlen(src);

	if (cap == 0)
		return GPUQ_ELIMIT;
	if (len >= cap) {
		memcpy(dst, src, cap - 1);
		dst[cap - 1] = '\0';
		return GPUQ_ELIMIT;
	}
	memcpy(dst, src, len + 1);
	return GPUQ_OK;
}

void gpuq_abort(const char *file, int line, const char *what)
{
	fprintf(stderr, "gpuq: invariant broken at %s:%d: %s\n", file, line, what);
	abort();
}

int gpuq_duration_parse(const char *s, int64_t *out_ms, gpuq_diag_t *diag)
{
	const char *p = s;
	int64_t whole = 0, frac = 0, frac_div = 1, unit = 1;
	int digits = 0;

	while (*p >= '0' && *p <= '9') {
		if (++digits > 15)
			return gpuq_diag_set(diag, GPUQ_ERANGE, "duration \"%s\" is too long", s);
		whole = whole * 10 + (*p++ - '0');
	}
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			if (frac_div >= 1000000000)
				return gpuq_diag_set(diag, GPUQ_EINVAL,
						     "duration \"%s\": too many decimals", s);
			frac = frac * 10 + (*p++ - '0');
			frac_div *= 10;
			digits++;
		}
	}
	if (digits == 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "bad duration \"%s\" (want e.g. 250, \"250ms\", \"1.5s\", "
				     "\"2m\", \"1h\")",
				     s);
	if (!strcmp(p, "") || !strcmp(p, "ms"))
		unit = 1;
	else if (!strcmp(p, "s"))
		unit = 1000;
	else if (!strcmp(p, "m"))
		unit = 60000;
	else if (!strcmp(p, "h"))
		unit = 3600000;
	else
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "bad duration \"%s\" (want e.g. 250, \"250ms\", \"1.5s\", "
				     "\"2m\", \"1h\")",
				     s);
	if (whole > GPUQ_DURATION_MAX_MS / unit)
		return gpuq_diag_set(diag, GPUQ_ERANGE, "duration \"%s\" is over 10 years", s);
	if ((frac * unit) % frac_div)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "duration \"%s\" is finer than 1ms", s);
	*out_ms = whole * unit + frac * unit / frac_div;
	if (*out_ms > GPUQ_DURATION_MAX_MS)
		return gpuq_diag_set(diag, GPUQ_ERANGE, "duration \"%s\" is over 10 years", s);
	return GPUQ_OK;
}
