/* gpuq certs: make (or keep) a CA and issue a serving certificate into a
 * directory; see certs/certs.h for what is issued and how files are written. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "certs/certs.h"
#include "cmd/cmd.h"

/* --dns and --ip may repeat; each value is kept (and split in place) here. */
#define OWNED_MAX ((size_t)2 * CERTS_SAN_MAX)

typedef struct {
	const char *out;		/* --out DIR */
	const char *dns[CERTS_SAN_MAX]; /* --dns names, pointing into owned */
	size_t n_dns;			/* entries in dns */
	const char *ips[CERTS_SAN_MAX]; /* --ip addresses, pointing into owned */
	size_t n_ips;			/* entries in ips */
	int days;			/* --days, serving validity */
	int ca_days;			/* --ca-days, validity of a new CA */
	char *owned[OWNED_MAX];		/* copies of --dns/--ip values */
	size_t n_owned;			/* entries in owned */
} certs_opts_t;

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpuq certs --out DIR --dns NAME[,NAME...] --ip ADDR[,ADDR...] [--days N]\n"
		"\n"
		"Write a CA (ca.crt, ca.key) and a serving certificate signed by it (tls.crt,\n"
		"tls.key) into DIR, as PEM; keys are mode 0600. When DIR already holds a valid\n"
		"CA, it is kept and only a new serving certificate is issued, so the caBundle\n"
		"registered in the cluster stays valid. Files are replaced atomically.\n"
		"\n"
		"  --out DIR         directory to write (created if missing)\n"
		"  --dns NAME,...    DNS subjectAltNames; the first is also the subject CN\n"
		"  --ip ADDR,...     IP subjectAltNames (IPv4 or IPv6), e.g. 127.0.0.1\n"
		"  --days N          serving certificate validity, %d..%d (default %d)\n"
		"  --ca-days N       validity of a newly made CA (default %d)\n"
		"  --help            show this help\n"
		"\n"
		"At least one --dns or --ip is required; both may repeat. Exit 0 on success,\n"
		"1 on bad values or failure, 2 on usage errors (a missing required flag too).\n",
		CERTS_DAYS_MIN, CERTS_DAYS_MAX, CERTS_DAYS_DEFAULT, CERTS_CA_DAYS_DEFAULT);
}

static void opts_deinit(certs_opts_t *o)
{
	for (size_t i = 0; i < o->n_owned; i++)
		free(o->owned[i]);
}

/* Split a comma list into list[]; fails naming the flag and the value. */
static int list_add(certs_opts_t *o, const char *flag, const char *value, const char **list,
		    size_t *n, gpuq_diag_t *diag)
{
	char *copy;

	if (o->n_owned == OWNED_MAX)
		return gpuq_diag_set(diag, GPUQ_ELIMIT, "%s: given too many times", flag);
	copy = strdup(value);
	if (!copy)
		return gpuq_diag_set(diag, GPUQ_ENOMEM, "%s: out of memory", flag);
	o->owned[o->n_owned++] = copy;
	return certs_names_split(flag, copy, list, n, diag);
}

static int days_parse(const char *flag, const char *value, int *out, gpuq_diag_t *diag)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(value, &end, 10);
	if (errno || end == value || *end || v < -1000000 || v > 1000000)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s: \"%s\": not a whole number of days",
				     flag, value);
	*out = (int)v;
	return GPUQ_OK;
}

enum { OPT_OUT = 'o', OPT_DNS = 'd', OPT_IP = 'i', OPT_DAYS = 'n', OPT_CA_DAYS = 'c' };

/* Returns 0 to go on, or the exit code (0 after --help, 1 bad value, 2 usage). */
static int opts_parse(int argc, char **argv, certs_opts_t *o, bool *done)
{
	static const struct option longopts[] = {
	    {"out", required_argument, NULL, OPT_OUT},
	    {"dns", required_argument, NULL, OPT_DNS},
	    {"ip", required_argument, NULL, OPT_IP},
	    {"days", required_argument, NULL, OPT_DAYS},
	    {"ca-days", required_argument, NULL, OPT_CA_DAYS},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	gpuq_diag_t diag = {{0}};
	int c;
	int rc = 0;

	opterr = 0;
	optind = 1;
	while (!rc && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_OUT:
			o->out = optarg;
			break;
		case OPT_DNS:
			rc = list_add(o, "--dns", optarg, o->dns, &o->n_dns, &diag);
			break;
		case OPT_IP:
			rc = list_add(o, "--ip", optarg, o->ips, &o->n_ips, &diag);
			break;
		case OPT_DAYS:
			rc = days_parse("--days", optarg, &o->days, &diag);
			break;
		case OPT_CA_DAYS:
			rc = days_parse("--ca-days", optarg, &o->ca_days, &diag);
			break;
		case 'h':
			usage(stdout);
			*done = true;
			return 0;
		case ':':
			fprintf(stderr, "gpuq certs: %s needs a value\n", argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "gpuq certs: unknown option \"%s\"\n", argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (rc) {
		fprintf(stderr, "gpuq certs: %s\n", diag.msg);
		return 1;
	}
	if (optind < argc) {
		fprintf(stderr, "gpuq certs: unexpected argument \"%s\"\n", argv[optind]);
		return 2;
	}
	if (!o->out) {
		fprintf(stderr, "gpuq certs: --out DIR is required\n");
		usage(stderr);
		return 2;
	}
	if (!o->n_dns && !o->n_ips) { /* a required flag missing: a usage error */
		fprintf(stderr, "gpuq certs: at least one --dns NAME or --ip ADDR is required\n");
		usage(stderr);
		return 2;
	}
	return 0;
}

static void summary_print(const char *dir, const certs_cert_summary_t *s, bool ca_created)
{
	char when[GPUQ_TIME_TEXT_MAX];

	if (!gpuq_time_format((int64_t)s->not_after * 1000, GPUQ_TIME_SECONDS, when, sizeof(when)))
		gpuq_strlcpy(when, "?", sizeof(when));
	printf("%s %s/%s, %s\n", ca_created ? "made a new CA:" : "kept the CA in", dir,
	       CERTS_FILE_CA_CERT, ca_created ? "ca.key (0600)" : "ca.key unchanged");
	printf("wrote %s/%s and %s (0600): serial %s, valid until %s, SANs:", dir,
	       CERTS_FILE_TLS_CERT, CERTS_FILE_TLS_KEY, s->serial, when);
	for (size_t i = 0; i < s->n_dns; i++)
		printf(" DNS:%s", s->dns[i]);
	for (size_t i = 0; i < s->n_ips; i++)
		printf(" IP:%s", s->ips[i]);
	printf("\n");
}

static int certs_run(const certs_opts_t *o)
{
	certs_serving_spec_t spec = {o->dns, o->n_dns, o->ips, o->n_ips, o->days};
	certs_ca_t *ca = NULL;
	certs_serving_t *serving = NULL;
	certs_cert_summary_t summary;
	gpuq_diag_t diag = {{0}};
	time_t now = time(NULL);
	bool created = false;
	int rc;

	rc = certs_serving_spec_check(&spec, &diag);
	if (!rc)
		rc = certs_ca_load_or_create(o->out, o->ca_days, now, &ca, &created, &diag);
	if (!rc)
		rc = certs_serving_issue(ca, &spec, now, &serving, &diag);
	if (!rc)
		rc = certs_write_dir(o->out, ca, created, serving, &diag);
	if (!rc)
		rc = certs_serving_inspect(serving, &summary, &diag);
	if (rc)
		fprintf(stderr, "gpuq certs: %s\n", diag.msg[0] ? diag.msg : gpuq_strerror(rc));
	else
		summary_print(o->out, &summary, created);
	certs_serving_destroy(serving);
	certs_ca_destroy(ca);
	return rc ? 1 : 0;
}

int cmd_certs(int argc, char **argv)
{
	certs_opts_t o = {.days = CERTS_DAYS_DEFAULT, .ca_days = CERTS_CA_DAYS_DEFAULT};
	bool done = false;
	int code = opts_parse(argc, argv, &o, &done);

	if (!code && !done)
		code = certs_run(&o);
	opts_deinit(&o);
	return code;
}
