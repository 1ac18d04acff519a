/* gpuq simulate: replay a workload trace through the queueing core in virtual time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cmd/cmd.h"
#include "policy/policy.h"
#include "qmetrics/qmetrics.h"
#include "sim/sim.h"
#include "http/http.h"

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: gpuq simulate TRACE [--out FILE] [--state-dir DIR] [--no-sync] [--check]\n"
	    "                     [--metrics FILE] [--price FLAVOR=PRICE]... [--quiet]\n"
	    "                     [--predict-interval D [--predict-runtimes declared|history]]\n"
	    "\n"
	    "Replay TRACE (YAML or JSON: ResourceFlavor, Cohort, ClusterQueue, LocalQueue and\n"
	    "PriorityClass objects plus one `kind: Trace` document, see docs/simulate.md)\n"
	    "through gpuq's queueing core in virtual time, and write a JSON report: waits\n"
	    "per workload, tenant, ClusterQueue and class (p50, p99, mean), makespan,\n"
	    "utilization over time, preemptions, Jain's fairness index, GPU-hours and\n"
	    "their cost per tenant and ClusterQueue (borrowed apart from nominal) and the\n"
	    "CPU time the core spent.\n"
	    "\n"
	    "  --out FILE       write the report to FILE instead of stdout\n"
	    "  --state-dir DIR  persist every step in DIR (LMDB) and resume from it\n"
	    "  --no-sync        with --state-dir: no fsync per step (survives kill -9,\n"
	    "                   not power loss)\n"
	    "  --check          check the core's quota invariants after every step (usage\n"
	    "                   = admitted workloads, within quota, cohorts within their\n"
	    "                   capacity); the first broken one ends the run, exit 1\n"
	    "  --metrics FILE   write the queue metrics gpuq serve's /metrics would show at\n"
	    "                   the end of the run (Prometheus text; docs/metrics.md)\n"
	    "  --price F=P      price of one accelerator unit of flavor F for an hour\n"
	    "                   (repeatable; wins over the flavor's gpuq.dev/price-per-hour\n"
	    "                   annotation in the trace)\n"
	    "  --predict-interval D  a prediction pass every D of virtual time (e.g. 5m):\n"
	    "                   each workload's first predicted start against the start\n"
	    "                   that happened (the report's economics.prediction); over\n"
	    "                   the trace's spec.options.prediction; not with --state-dir\n"
	    "  --predict-runtimes declared|history  the runtimes a pass assumes: each\n"
	    "                   workload's expectedRuntime (else its runtime), or the\n"
	    "                   median of its LocalQueue's finished runs (default declared)\n"
	    "  --quiet          no summary on stderr\n"
	    "  --help           this text\n"
	    "\n"
	    "Exit status: 0 done, 1 the trace or the run failed, 2 usage error.\n");
}

#define PRICES_MAX 64 /* --price flags */

static int price_flag(char *v, ledger_price_t *prices, size_t *n)
{
	gpuq_diag_t d = {{0}};

	if (*n == PRICES_MAX) {
		fprintf(stderr, "gpuq simulate: --price: more than %d flavors priced\n",
			PRICES_MAX);
		return GPUQ_ELIMIT;
	}
	if (cmd_price_flag(v, &prices[*n], &d)) {
		fprintf(stderr, "gpuq simulate: --price: %s\n", d.msg);
		return GPUQ_EINVAL;
	}
	(*n)++;
	return GPUQ_OK;
}

static void metrics_source(void *ctx, http_metrics_text_t *t)
{
	qmetrics_render(ctx, t);
}

/* The run's queue metrics, as its leader's /metrics would show them. */
static int write_metrics(qmetrics_t *m, const char *path)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	bool written;
	int rc = http_metrics_source_render(metrics_source, m, &text, &len);

	if (rc) {
		fprintf(stderr, "gpuq simulate: rendering the metrics: %s\n", gpuq_strerror(rc));
		return rc;
	}
	f = fopen(path, "w");
	written = f && fwrite(text, 1, len, f) == len;
	if ((f && fclose(f)) || !written) {
		perror(path);
		rc = GPUQ_EIO;
	}
	free(text);
	return rc;
}

/* The JSON report to out_path (NULL: stdout). */
static int write_report(const sim_report_t *report, const char *out_path)
{
	FILE *out = out_path ? fopen(out_path, "w") : stdout;
	int rc;

	if (!out) {
		perror(out_path);
		return GPUQ_EIO;
	}
	rc = sim_report_write_json(report, out);
	if (out != stdout && fclose(out) && !rc)
		rc = GPUQ_EIO;
	if (rc)
		fprintf(stderr, "gpuq simulate: writing the report: %s\n", gpuq_strerror(rc));
	return rc;
}

/* Whether a ClusterQueue of the trace has a starvation limit. */
static bool starvation_limited(const sim_trace_t *t)
{
	for (size_t i = 0; i < policy_cq_count(t->policy); i++)
		if (policy_cq_at(t->policy, i)->starvation_ms > 0)
			return true;
	return false;
}

/* The same trace run again with no starvation limit, in memory, into
 * report->without: the report then shows both runs (docs/economics.md,
 * "Bounded wait"). */
static int run_without(const sim_trace_t *t, const sim_run_options_t *opt, sim_report_t *report,
		       gpuq_diag_t *diag)
{
	sim_run_options_t o = *opt;

	o.state_dir = NULL;
	o.stop_after = 0;
	o.metrics = NULL; /* the metrics are of the run itself */
	o.no_reservation = true;
	return sim_run(t, &o, &report->without, diag);
}

int cmd_simulate(int argc, char **argv)
{
	const char *trace_path = NULL, *out_path = NULL, *metrics_path = NULL;
	sim_run_options_t opt = {0};
	ledger_price_t prices[PRICES_MAX];
	bool quiet = false;
	sim_trace_t *trace = NULL;
	sim_report_t *report = NULL;
	qmetrics_t *metrics = NULL;
	gpuq_diag_t diag = {{0}};
	int rc, status = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
			out_path = argv[++i];
		} else if (!strcmp(argv[i], "--state-dir") && i + 1 < argc) {
			opt.state_dir = argv[++i];
		} else if (!strcmp(argv[i], "--no-sync")) {
			opt.no_sync = true;
		} else if (!strcmp(argv[i], "--check")) {
			opt.check = true;
		} else if (!strcmp(argv[i], "--metrics") && i + 1 < argc) {
			metrics_path = argv[++i];
		} else if (!strcmp(argv[i], "--price") && i + 1 < argc) {
			if (price_flag(argv[++i], prices, &opt.n_prices))
				return 2;
		} else if (!strcmp(argv[i], "--predict-interval") && i + 1 < argc) {
			if (gpuq_duration_parse(argv[++i], &opt.predict_interval_ms, &diag) ||
			    opt.predict_interval_ms < 1) {
				fprintf(stderr, "gpuq simulate: --predict-interval \"%s\": %s\n",
					argv[i], diag.msg[0] ? diag.msg : "must be at least 1ms");
				return 2;
			}
		} else if (!strcmp(argv[i], "--predict-runtimes") && i + 1 < argc) {
			i++;
			opt.predict_runtimes = !strcmp(argv[i], "declared")  ? 1
					       : !strcmp(argv[i], "history") ? 2
									     : -1;
			if (opt.predict_runtimes < 0) {
				fprintf(
				    stderr,
				    "gpuq simulate: --predict-runtimes \"%s\": want declared or "
				    "history\n",
				    argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--quiet")) {
			quiet = true;
		} else if (argv[i][0] == '-' || trace_path) {
			fprintf(stderr, "gpuq simulate: unexpected argument \"%s\"\n\n", argv[i]);
			usage(stderr);
			return 2;
		} else {
			trace_path = argv[i];
		}
	}
	if (!trace_path) {
		usage(stderr);
		return 2;
	}
	opt.prices = prices;
	rc = sim_trace_load(trace_path, &trace, &diag);
	if (rc) {
		fprintf(stderr, "gpuq simulate: %s\n", diag.msg[0] ? diag.msg : gpuq_strerror(rc));
		return 1;
	}
	if (opt.state_dir)
		cmd_store_fault_guard(opt.state_dir);
	if (metrics_path) {
		if (qmetrics_create(&metrics)) {
			fprintf(stderr, "gpuq simulate: out of memory\n");
			goto done;
		}
		qmetrics_leader_set(metrics, true); /* the run is the one replica acting */
		opt.metrics = metrics;
	}
	rc = sim_run(trace, &opt, &report, &diag);
	if (!rc && starvation_limited(trace))
		rc = run_without(trace, &opt, report, &diag);
	if (rc) {
		fprintf(stderr, "gpuq simulate: %s: %s\n", trace_path,
			diag.msg[0] ? diag.msg : gpuq_strerror(rc));
		goto done;
	}
	if (write_report(report, out_path) ||
	    (metrics_path && write_metrics(metrics, metrics_path)))
		goto done;
	if (!quiet)
		sim_report_write_summary(report, stderr);
	status = 0;
done:
	qmetrics_destroy(metrics);
	sim_report_destroy(report);
	sim_trace_destroy(trace);
	return status;
}
