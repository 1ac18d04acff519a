/* webhook server: `gpuq serve` flags, the serving pair, and the HTTPS server
 * (libmicrohttpd + GnuTLS). See webhook.h Section B for the design. */
#include "webhook/webhook.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <inttypes.h>
#include <limits.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MODULE "webhook"

/* ==== Flags ==== */

static const char usage_text[] =
    "usage: gpuq serve --listen HOST:PORT --cert-dir DIR --policy-dir DIR --state-dir DIR\n"
    "                  [--gpu-resource NAME]... [--controller-user NAME] [--threads N]\n"
    "                  [--log-level LEVEL]\n"
    "\n"
    "Serve gpuq's admission webhook over HTTPS (TLS 1.2 and 1.3 only):\n"
    "  POST /mutate, POST /validate   AdmissionReview (admission.k8s.io/v1), JSON, <= 3 MiB\n"
    "  GET /healthz, /readyz, /metrics\n"
    "\n"
    "  --listen HOST:PORT      address to listen on: an IPv4 address, [IPv6], a name, or\n"
    "                          an empty HOST for every IPv4 address (\":8443\")\n"
    "  --cert-dir DIR          holds tls.crt (chain, leaf first) and tls.key, PEM;\n"
    "                          reloaded within a second when they change\n"
    "  --policy-dir DIR        policy manifests (*.yaml, *.yml, *.json); reloaded on\n"
    "                          SIGHUP and when a file changes; a bad policy is refused\n"
    "  --state-dir DIR         state store directory, created (mode 0700) if missing\n"
    "  --gpu-resource NAME     an extra resource name to count as a GPU (repeatable,\n"
    "                          at most 32), e.g. nvidia.com/gpu.shared\n"
    "  --controller-user NAME  username of gpuq's controller\n"
    "                          (default " WEBHOOK_CONTROLLER_USER_DEFAULT ")\n"
    "  --threads N             worker threads, 1..256 (default: online CPUs, at least 2)\n"
    "  --log-level LEVEL       debug, info, warn or error (default info)\n"
    "  -h, --help              print this text\n"
    "\n"
    "Signals: SIGHUP reloads the policy; SIGTERM or SIGINT stop gracefully (requests\n"
    "in flight finish, then exit 0).\n"
    "Exit status: 0 after a graceful stop; 1 when the certificates, the policy or the\n"
    "address cannot be used; 2 on a usage error (bad or missing flag, missing or\n"
    "unreadable directory or file).\n";

const char *webhook_serve_usage(void)
{
	return usage_text;
}

/* --listen HOST:PORT, "[v6]:PORT" or ":PORT". */
static int parse_listen(const char *value, webhook_serve_opts_t *opts, gpuq_diag_t *diag)
{
	const char *colon, *host = value;
	size_t host_len;
	char *end;
	unsigned long port;

	if (value[0] == '[') {
		const char *close = strchr(value, ']');
		if (!close || close[1] != ':')
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "--listen \"%s\": expected [IPv6]:PORT", value);
		host = value + 1;
		host_len = (size_t)(close - host);
		colon = close + 1;
	} else {
		colon = strrchr(value, ':');
		if (!colon)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "--listen \"%s\": expected HOST:PORT", value);
		host_len = (size_t)(colon - value);
		if (memchr(value, ':', host_len))
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "--listen \"%s\": write an IPv6 address in brackets, "
					     "[::1]:PORT",
					     value);
	}
	if (host_len > WEBHOOK_NAME_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "--listen \"%s\": host is too long", value);
	for (size_t i = 0; i < host_len; i++)
		if (host[i] <= ' ' || host[i] == '/' || host[i] == 0x7f)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "--listen \"%s\": bad character in host", value);
	memcpy(opts->host, host, host_len);
	opts->host[host_len] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (colon[1] < '0' || colon[1] > '9' || *end || errno || port < 1 || port > 65535)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--listen \"%s\": port \"%s\" is not a number in 1..65535",
				     value, colon + 1);
	opts->port = (uint16_t)port;
	opts->listen = value;
	return GPUQ_OK;
}

/* An extended resource name: domain-qualified ("nvidia.com/gpu"), at most
 * WEBHOOK_NAME_MAX characters of [A-Za-z0-9._-] around exactly one '/'. */
static bool resource_name_ok(const char *name)
{
	size_t len = strlen(name), slashes = 0;
	const char *slash = strchr(name, '/');

	if (len == 0 || len > WEBHOOK_NAME_MAX || !slash || slash == name || !slash[1])
		return false;
	for (const char *p = name; *p; p++) {
		if (*p == '/')
			slashes++;
		else if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			   (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'))
			return false;
	}
	return slashes == 1;
}

/* A Kubernetes username: printable ASCII, no spaces, 1..WEBHOOK_NAME_MAX. */
static bool user_name_ok(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > WEBHOOK_NAME_MAX)
		return false;
	for (const char *p = name; *p; p++)
		if (*p <= ' ' || *p >= 0x7f)
			return false;
	return true;
}

static int parse_threads(const char *value, unsigned *out, gpuq_diag_t *diag)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(value, &end, 10);
	if (value[0] < '0' || value[0] > '9' || *end || errno || n < 1 || n > WEBHOOK_THREADS_MAX)
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--threads \"%s\": expected a number in 1..%d", value,
				     WEBHOOK_THREADS_MAX);
	*out = (unsigned)n;
	return GPUQ_OK;
}

static int parse_log_level(const char *value, gpuq_log_level_t *out, gpuq_diag_t *diag)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(value, names[i])) {
			*out = (gpuq_log_level_t)i;
			return GPUQ_OK;
		}
	return gpuq_diag_set(diag, GPUQ_EINVAL,
			     "--log-level \"%s\": expected debug, info, warn or error", value);
}

typedef enum {
	FLAG_LISTEN,
	FLAG_CERT_DIR,
	FLAG_POLICY_DIR,
	FLAG_STATE_DIR,
	FLAG_GPU_RESOURCE,
	FLAG_CONTROLLER_USER,
	FLAG_THREADS,
	FLAG_LOG_LEVEL,
	FLAG_COUNT,
} flag_t;

static const char *const flag_names[FLAG_COUNT] = {
    "--listen",	      "--cert-dir",	   "--policy-dir", "--state-dir",
    "--gpu-resource", "--controller-user", "--threads",	   "--log-level"};

static int apply_flag(flag_t f, const char *value, webhook_serve_opts_t *opts, gpuq_diag_t *diag)
{
	switch (f) {
	case FLAG_LISTEN:
		return parse_listen(value, opts, diag);
	case FLAG_CERT_DIR:
	case FLAG_POLICY_DIR:
	case FLAG_STATE_DIR:
		if (!value[0] || strlen(value) >= PATH_MAX - 16)
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s \"%s\": expected a directory",
					     flag_names[f], value);
		if (f == FLAG_CERT_DIR)
			opts->cert_dir = value;
		else if (f == FLAG_POLICY_DIR)
			opts->policy_dir = value;
		else
			opts->state_dir = value;
		return GPUQ_OK;
	case FLAG_GPU_RESOURCE:
		if (!resource_name_ok(value))
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "--gpu-resource \"%s\": expected a domain-qualified "
					     "resource name such as nvidia.com/gpu",
					     value);
		if (opts->n_gpu_resources == WEBHOOK_GPU_RESOURCES_MAX)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "--gpu-resource \"%s\": at most %d may be given",
					     value, WEBHOOK_GPU_RESOURCES_MAX);
		opts->gpu_resources[opts->n_gpu_resources++] = value;
		return GPUQ_OK;
	case FLAG_CONTROLLER_USER:
		if (!user_name_ok(value))
			return gpuq_diag_set(
			    diag, GPUQ_EINVAL,
			    "--controller-user \"%s\": expected a username of 1..%d "
			    "printable characters without spaces",
			    value, WEBHOOK_NAME_MAX);
		opts->controller_user = value;
		return GPUQ_OK;
	case FLAG_THREADS:
		return parse_threads(value, &opts->threads, diag);
	case FLAG_LOG_LEVEL:
		return parse_log_level(value, &opts->log_level, diag);
	case FLAG_COUNT:
		break;
	}
	GPUQ_ASSERT(0);
}

static unsigned default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 2)
		return 2;
	return n > WEBHOOK_THREADS_MAX ? WEBHOOK_THREADS_MAX : (unsigned)n;
}

int webhook_serve_opts_parse(int argc, char **argv, webhook_serve_opts_t *opts, gpuq_diag_t *diag)
{
	bool seen[FLAG_COUNT] = {false};
	int rc;

	memset(opts, 0, sizeof(*opts));
	opts->controller_user = WEBHOOK_CONTROLLER_USER_DEFAULT;
	opts->threads = default_threads();
	opts->log_level = GPUQ_LOG_INFO;
	opts->poll_ms = WEBHOOK_POLL_MS_DEFAULT;
	opts->body_budget = WEBHOOK_BODY_BUDGET_DEFAULT;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *eq, *value;
		size_t name_len;
		flag_t f;

		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			opts->help = true;
			continue;
		}
		eq = strchr(arg, '=');
		name_len = eq ? (size_t)(eq - arg) : strlen(arg);
		for (f = 0; f < FLAG_COUNT; f++)
			if (strlen(flag_names[f]) == name_len &&
			    !strncmp(arg, flag_names[f], name_len))
				break;
		if (f == FLAG_COUNT)
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "unknown flag \"%s\" (see gpuq serve --help)", arg);
		if (eq)
			value = eq + 1;
		else if (i + 1 < argc)
			value = argv[++i];
		else
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s needs a value", flag_names[f]);
		if (seen[f] && f != FLAG_GPU_RESOURCE)
			return gpuq_diag_set(diag, GPUQ_EINVAL, "%s \"%s\": given more than once",
					     flag_names[f], value);
		seen[f] = true;
		rc = apply_flag(f, value, opts, diag);
		if (rc)
			return rc;
	}
	if (opts->help)
		return GPUQ_OK;
	for (flag_t f = FLAG_LISTEN; f <= FLAG_STATE_DIR; f++)
		if (!seen[f])
			return gpuq_diag_set(diag, GPUQ_EINVAL,
					     "%s is required (see gpuq serve --help)",
					     flag_names[f]);
	return GPUQ_OK;
}

static int check_dir(const char *flag, const char *dir, gpuq_diag_t *diag)
{
	struct stat st;

	if (stat(dir, &st))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s \"%s\": %s", flag, dir,
				     strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "%s \"%s\": not a directory", flag, dir);
	return GPUQ_OK;
}

static int check_readable(const char *dir, const char *name, gpuq_diag_t *diag)
{
	char path[PATH_MAX];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gpuq_diag_set(diag, GPUQ_EINVAL, "--cert-dir \"%s\": cannot read %s: %s",
				     dir, name, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return gpuq_diag_set(diag, GPUQ_EINVAL,
				     "--cert-dir \"%s\": %s is not a regular file", dir, name);
	}
	close(fd);
	return GPUQ_OK;
}

int webhook_serve_opts_check(const webhook_serve_opts_t *opts, gpuq_diag_t *diag)
{
	int rc;

	rc = check_dir("--cert-dir", opts->cert_dir, diag);
	if (!rc)
		rc = check_readable(opts->cert_dir, "tls.crt", diag);
	if (!rc)
		rc = check_readable(opts->cert_dir, "tls.key", diag);
	if (!rc)
		rc = check_dir("--policy-dir", opts->policy_dir, diag);
	if (rc)
		return rc;
	if (mkdir(opts->state_dir, 0700) && errno != EEXIST)
		return gpuq_diag_set(diag, GPUQ_EIO, "--state-dir \"%s\": cannot create: %s",
				     opts->state_dir, strerror(errno));
	rc = check_dir("--state-dir", opts->state_dir, diag);
	if (rc)
		return rc;
	if (access(opts->state_dir, W_OK | X_OK))
		return gpuq_diag_set(diag, GPUQ_EINVAL, "--state-dir \"%s\": not writable: %s",
				     opts->state_dir, strerror(errno));
	return GPUQ_OK;
}

/* ==== The serving pair ==== */

/* A PEM file we read: a chain of a few certificates or one key. 1 MiB is
 * hundreds of certificates; anything bigger is not a serving pair. */
#define PEM_FILE_MAX (1u << 20)
/* Certificates in tls.crt: leaf plus intermediates; real chains have 2-4. */
#define CHAIN_MAX 16
/* Serial as hex: at most 20 octets (RFC 5280), 40 digits + NUL. */
#define SERIAL_HEX_MAX 41

struct webhook_tls_pair {
	atomic_uint refs;	     /* references: the webhook_tls, each connection */
	gnutls_pcert_st *pcerts;     /* the chain, leaf first */
	unsigned n_pcerts;	     /* entries in pcerts */
	gnutls_privkey_t key;	     /* the leaf's private key */
	char serial[SERIAL_HEX_MAX]; /* leaf serial, upper-case hex */
	int64_t not_after;	     /* leaf notAfter, Unix seconds */
};

static int read_file(const char *dir, const char *name, gnutls_datum_t *out, gpuq_diag_t *diag)
{
	char path[PATH_MAX];
	struct stat st;
	ssize_t n;
	size_t got = 0;
	int fd;

	out->data = NULL;
	out->size = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gpuq_diag_set(diag, GPUQ_EIO, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > (off_t)PEM_FILE_MAX) {
		close(fd);
		return gpuq_diag_set(diag, GPUQ_EIO, "%s: not a regular file of at most %u bytes",
				     path, PEM_FILE_MAX);
	}
	out->data = gnutls_malloc((size_t)st.st_size + 1);
	if (!out->data) {
		close(fd);
		return GPUQ_ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		n = read(fd, out->data + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	out->data[got] = '\0';
	out->size = (unsigned)got;
	return GPUQ_OK;
}

static void pair_free(webhook_tls_pair_t *pair)
{
	for (unsigned i = 0; i < pair->n_pcerts; i++)
		gnutls_pcert_deinit(&pair->pcerts[i]);
	free(pair->pcerts);
	if (pair->key)
		gnutls_privkey_deinit(pair->key);
	free(pair);
}

/* Parse the chain into pair; remember the leaf's serial and notAfter. */
static int pair_import_chain(webhook_tls_pair_t *pair, const char *dir, const gnutls_datum_t *pem,
			     gpuq_diag_t *diag)
{
	gnutls_x509_crt_t *crts = NULL;
	unsigned n = 0;
	unsigned char serial[SERIAL_HEX_MAX / 2];
	size_t serial_len = sizeof(serial);
	int ret, rc = GPUQ_OK;

	ret = gnutls_x509_crt_list_import2(&crts, &n, pem, GNUTLS_X509_FMT_PEM, 0);
	if (ret < 0 || n == 0)
		return gpuq_diag_set(diag, GPUQ_ETLS, "%s/tls.crt: no PEM certificate: %s", dir,
				     ret < 0 ? gnutls_strerror(ret) : "empty");
	if (n > CHAIN_MAX) {
		rc = gpuq_diag_set(diag, GPUQ_ETLS, "%s/tls.crt: %u certificates, at most %d", dir,
				   n, CHAIN_MAX);
		goto out;
	}
	pair->pcerts = calloc(n, sizeof(*pair->pcerts));
	if (!pair->pcerts) {
		rc = GPUQ_ENOMEM;
		goto out;
	}
	ret = gnutls_pcert_import_x509_list(pair->pcerts, crts, &n, 0);
	if (ret < 0) {
		rc = gpuq_diag_set(diag, GPUQ_ETLS, "%s/tls.crt: %s", dir, gnutls_strerror(ret));
		goto out;
	}
	pair->n_pcerts = n;
	pair->not_after = (int64_t)gnutls_x509_crt_get_expiration_time(crts[0]);
	if (gnutls_x509_crt_get_serial(crts[0], serial, &serial_len) == 0) {
		for (size_t i = 0; i < serial_len; i++)
			snprintf(pair->serial + 2 * i, 3, "%02X", serial[i]);
	}
out:
	for (unsigned i = 0; i < n; i++)
		gnutls_x509_crt_deinit(crts[i]);
	gnutls_free(crts);
	return rc;
}

/* Whether key is the private half of the leaf certificate's public key. */
static int pair_check_key(webhook_tls_pair_t *pair, const char *dir, gpuq_diag_t *diag)
{
	unsigned char id_cert[64], id_key[64];
	size_t len_cert = sizeof(id_cert), len_key = sizeof(id_key);
	gnutls_pubkey_t pub = NULL;
	int ret;

	ret = gnutls_pubkey_init(&pub);
	if (ret < 0)
		return GPUQ_ENOMEM;
	ret = gnutls_pubkey_import_privkey(pub, pair->key, 0, 0);
	if (ret >= 0)
		ret = gnutls_pubkey_get_key_id(pub, GNUTLS_KEYID_USE_SHA256, id_key, &len_key);
	if (ret >= 0)
		ret = gnutls_pubkey_get_key_id(pair->pcerts[0].pubkey, GNUTLS_KEYID_USE_SHA256,
					       id_cert, &len_cert);
	gnutls_pubkey_deinit(pub);
	if (ret < 0)
		return gpuq_diag_set(diag, GPUQ_ETLS, "%s/tls.key: %s", dir, gnutls_strerror(ret));
	if (len_cert != len_key || memcmp(id_cert, id_key, len_key) != 0)
		return gpuq_diag_set(diag, GPUQ_ETLS,
				     "%s/tls.key does not match the certificate in %s/tls.crt", dir,
				     dir);
	return GPUQ_OK;
}

int webhook_tls_pair_load(const char *dir, webhook_tls_pair_t **out, gpuq_diag_t *diag)
{
	gnutls_datum_t crt = {NULL, 0}, key = {NULL, 0};
	webhook_tls_pair_t *pair;
	int ret, rc;

	*out = NULL;
	pair = calloc(1, sizeof(*pair));
	if (!pair)
		return GPUQ_ENOMEM;
	atomic_init(&pair->refs, 1);
	rc = read_file(dir, "tls.crt", &crt, diag);
	if (rc)
		goto fail;
	rc = read_file(dir, "tls.key", &key, diag);
	if (rc)
		goto fail;
	rc = pair_import_chain(pair, dir, &crt, diag);
	if (rc)
		goto fail;
	ret = gnutls_privkey_init(&pair->key);
	if (ret < 0) {
		rc = GPUQ_ENOMEM;
		goto fail;
	}
	ret = gnutls_privkey_import_x509_raw(pair->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (ret < 0) {
		rc = gpuq_diag_set(diag, GPUQ_ETLS, "%s/tls.key: no usable PEM private key: %s",
				   dir, gnutls_strerror(ret));
		goto fail;
	}
	rc = pair_check_key(pair, dir, diag);
	if (rc)
		goto fail;
	gnutls_free(crt.data);
	gnutls_memset(key.data, 0, key.size);
	gnutls_free(key.data);
	*out = pair;
	return GPUQ_OK;
fail:
	gnutls_free(crt.data);
	if (key.data)
		gnutls_memset(key.data, 0, key.size);
	gnutls_free(key.data);
	pair_free(pair);
	return rc;
}

webhook_tls_pair_t *webhook_tls_pair_ref(webhook_tls_pair_t *pair)
{
	if (pair)
		atomic_fetch_add_explicit(&pair->refs, 1, memory_order_relaxed);
	return pair;
}

void webhook_tls_pair_unref(webhook_tls_pair_t *pair)
{
	if (pair && atomic_fetch_sub_explicit(&pair->refs, 1, memory_order_acq_rel) == 1)
		pair_free(pair);
}

const char *webhook_tls_pair_serial(const webhook_tls_pair_t *pair)
{
	return pair->serial;
}

int64_t webhook_tls_pair_not_after(const webhook_tls_pair_t *pair)
{
	return pair->not_after;
}

/* What the files looked like: a change in any field means "reload". */
typedef struct {
	bool present;	       /* stat() succeeded */
	dev_t dev;	       /* device */
	ino_t ino;	       /* inode: a rename() or a Secret's symlink swap changes it */
	off_t size;	       /* bytes */
	struct timespec mtime; /* last write */
	struct timespec ctime; /* last inode change */
} file_stamp_t;

typedef struct {
	file_stamp_t crt, key; /* tls.crt, tls.key */
} pair_stamp_t;

static void stamp_file(const char *dir, const char *name, file_stamp_t *out)
{
	char path[PATH_MAX];
	struct stat st;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (stat(path, &st))
		return;
	out->present = true;
	out->dev = st.st_dev;
	out->ino = st.st_ino;
	out->size = st.st_size;
	out->mtime = st.st_mtim;
	out->ctime = st.st_ctim;
}

static bool file_stamp_equal(const file_stamp_t *a, const file_stamp_t *b)
{
	return a->present == b->present && a->dev == b->dev && a->ino == b->ino &&
	       a->size == b->size && a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec && a->ctime.tv_sec == b->ctime.tv_sec &&
	       a->ctime.tv_nsec == b->ctime.tv_nsec;
}

struct webhook_tls {
	char *dir;		     /* the cert dir (owned copy) */
	pthread_mutex_t lock;	     /* guards current */
	webhook_tls_pair_t *current; /* the serving pair (one reference) */
	pair_stamp_t seen;	     /* the files as last acted on */
	bool pending;		     /* the files at `seen` failed to load once */
};

int webhook_tls_create(const char *dir, webhook_tls_t **out, gpuq_diag_t *diag)
{
	webhook_tls_t *tls;
	int rc;

	*out = NULL;
	tls = calloc(1, sizeof(*tls));
	if (!tls)
		return GPUQ_ENOMEM;
	tls->dir = strdup(dir);
	if (!tls->dir) {
		free(tls);
		return GPUQ_ENOMEM;
	}
	pthread_mutex_init(&tls->lock, NULL);
	stamp_file(dir, "tls.crt", &tls->seen.crt);
	stamp_file(dir, "tls.key", &tls->seen.key);
	rc = webhook_tls_pair_load(dir, &tls->current, diag);
	if (rc) {
		webhook_tls_destroy(tls);
		return rc;
	}
	*out = tls;
	return GPUQ_OK;
}

void webhook_tls_destroy(webhook_tls_t *tls)
{
	if (!tls)
		return;
	webhook_tls_pair_unref(tls->current);
	pthread_mutex_destroy(&tls->lock);
	free(tls->dir);
	free(tls);
}

webhook_tls_pair_t *webhook_tls_current(webhook_tls_t *tls)
{
	webhook_tls_pair_t *pair;

	pthread_mutex_lock(&tls->lock);
	pair = webhook_tls_pair_ref(tls->current);
	pthread_mutex_unlock(&tls->lock);
	return pair;
}

webhook_tls_poll_t webhook_tls_poll(webhook_tls_t *tls, gpuq_diag_t *diag)
{
	webhook_tls_pair_t *pair = NULL, *old;
	pair_stamp_t now;
	bool changed;
	int rc;

	stamp_file(tls->dir, "tls.crt", &now.crt);
	stamp_file(tls->dir, "tls.key", &now.key);
	changed = !file_stamp_equal(&now.crt, &tls->seen.crt) ||
		  !file_stamp_equal(&now.key, &tls->seen.key);
	if (!changed && !tls->pending)
		return WEBHOOK_TLS_UNCHANGED;
	/* Stamped before reading: a write during the load changes the stamp
	 * and brings us back next poll. */
	tls->seen = now;
	rc = webhook_tls_pair_load(tls->dir, &pair, diag);
	if (rc == GPUQ_OK) {
		tls->pending = false;
		pthread_mutex_lock(&tls->lock);
		old = tls->current;
		tls->current = pair;
		pthread_mutex_unlock(&tls->lock);
		webhook_tls_pair_unref(old);
		return WEBHOOK_TLS_RELOADED;
	}
	if (changed) {
		/* First failure for these files: a rotation writes tls.crt and
		 * tls.key one after the other, so give it one poll to settle. */
		tls->pending = true;
		return WEBHOOK_TLS_PENDING;
	}
	tls->pending = false;
	return WEBHOOK_TLS_REFUSED;
}

/* ==== The server ==== */

/* Per TLS connection: the pair its handshake used, held until it closes. */
typedef struct {
	webhook_server_t *srv;	  /* owner */
	webhook_tls_pair_t *pair; /* one reference, or NULL before the handshake */
} conn_slot_t;

/* Per request, freed by on_completed. */
typedef struct {
	webhook_route_t route; /* which route the path named */
	uint64_t start_ns;     /* CLOCK_MONOTONIC when the headers were in */
	bool collecting;       /* an admission body is being read */
	bool replied;	       /* a response was queued */
	char *body;	       /* the body so far (collecting only) */
	size_t len;	       /* bytes in body */
	size_t cap;	       /* bytes allocated (and taken from the body budget); never
				  above WEBHOOK_REVIEW_MAX */
} request_t;

struct webhook_server {
	const webhook_serve_opts_t *opts; /* flags (borrowed) */
	webhook_metrics_t *metrics;	  /* counters (owned) */
	webhook_tls_t *tls;		  /* the serving pair (owned) */
	webhook_config_t review_cfg;	  /* what webhook_review_handle gets */

	pthread_mutex_t policy_lock; /* guards policy */
	policy_t *policy;	     /* the snapshot requests start on (one reference) */
	pthread_mutex_t reload_lock; /* one policy reload at a time; guards the next four */
	uint64_t policy_generation;  /* successful loads so far */
	uint64_t policy_seen_fp;     /* fingerprint of the dir as last acted on */

	struct MHD_Daemon *daemon; /* NULL until started */
	pthread_t watcher;	   /* polls certs and policy */
	pthread_mutex_t stop_lock; /* guards stop_flag */
	pthread_cond_t stop_cond;  /* wakes the watcher */
	pthread_mutex_t log_lock;  /* guards start_msg while starting */
	MHD_socket listen_fd;	   /* after quiesce: ours to close */
	atomic_int inflight;	   /* requests between their first callback and completion */
	atomic_size_t body_bytes;  /* bytes of body buffers allocated, <= opts->body_budget */
	atomic_bool draining;	   /* stop requested: /readyz 503, Connection: close */
	bool policy_pending;	   /* the dir at policy_seen_fp failed to load once */
	bool policy_fp_failed;	   /* the last fingerprint failed (logged once) */
	bool watcher_running;	   /* watcher was started and not yet joined */
	bool stop_flag;		   /* watcher must exit */
	bool stopped;		   /* webhook_server_stop completed */
	bool starting;		   /* MHD_start_daemon is running */
	char start_msg[256];	   /* last libmicrohttpd message during start */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static policy_t *policy_current(webhook_server_t *srv)
{
	policy_t *p;

	pthread_mutex_lock(&srv->policy_lock);
	p = policy_ref(srv->policy);
	pthread_mutex_unlock(&srv->policy_lock);
	return p;
}

static void policy_swap(webhook_server_t *srv, policy_t *p)
{
	policy_t *old;

	pthread_mutex_lock(&srv->policy_lock);
	old = srv->policy;
	srv->policy = p;
	pthread_mutex_unlock(&srv->policy_lock);
	policy_unref(old);
}

/* Load the policy dir; on success swap it in. Caller holds reload_lock.
 * report: log and count a failure now (else leave it pending for one poll). */
static int policy_reload_locked(webhook_server_t *srv, bool report)
{
	gpuq_diag_t diag = {{0}};
	policy_t *p = NULL;
	uint64_t fp = 0;
	int rc;

	if (policy_dir_fingerprint(srv->opts->policy_dir, &fp, NULL))
		fp = 0;
	rc = policy_load_dir(srv->opts->policy_dir, NULL, &p, &diag);
	if (rc == GPUQ_OK) {
		srv->policy_seen_fp = policy_fingerprint(p);
		srv->policy_pending = false;
		srv->policy_generation++;
		policy_swap(srv, p);
		webhook_metrics_policy_reload_count(srv->metrics, true);
		webhook_metrics_policy_generation_set(srv->metrics, srv->policy_generation);
		gpuq_log(GPUQ_LOG_INFO, MODULE, "policy reloaded from %s (generation %" PRIu64 ")",
			 srv->opts->policy_dir, srv->policy_generation);
		return GPUQ_OK;
	}
	srv->policy_seen_fp = fp;
	if (!report) {
		srv->policy_pending = true;
		gpuq_log(GPUQ_LOG_DEBUG, MODULE, "policy dir changed but does not load yet: %s",
			 diag.msg);
		return rc;
	}
	srv->policy_pending = false;
	webhook_metrics_policy_reload_count(srv->metrics, false);
	gpuq_log(GPUQ_LOG_ERROR, MODULE,
		 "policy reload refused (%s), generation %" PRIu64 " keeps serving: %s",
		 gpuq_strerror(rc), srv->policy_generation, diag.msg);
	return rc;
}

int webhook_server_policy_reload(webhook_server_t *srv)
{
	int rc;

	pthread_mutex_lock(&srv->reload_lock);
	rc = policy_reload_locked(srv, true);
	pthread_mutex_unlock(&srv->reload_lock);
	return rc;
}

static void poll_policy(webhook_server_t *srv)
{
	gpuq_diag_t diag = {{0}};
	uint64_t fp;

	pthread_mutex_lock(&srv->reload_lock);
	if (policy_dir_fingerprint(srv->opts->policy_dir, &fp, &diag)) {
		if (!srv->policy_fp_failed)
			gpuq_log(GPUQ_LOG_ERROR, MODULE, "cannot watch --policy-dir: %s", diag.msg);
		srv->policy_fp_failed = true;
	} else {
		srv->policy_fp_failed = false;
		if (fp != srv->policy_seen_fp)
			/* A first failure waits one poll: an editor may be mid-write. */
			policy_reload_locked(srv, false);
		else if (srv->policy_pending)
			policy_reload_locked(srv, true);
	}
	pthread_mutex_unlock(&srv->reload_lock);
}

static void poll_certs(webhook_server_t *srv)
{
	gpuq_diag_t diag = {{0}};
	webhook_tls_pair_t *pair;

	switch (webhook_tls_poll(srv->tls, &diag)) {
	case WEBHOOK_TLS_UNCHANGED:
		break;
	case WEBHOOK_TLS_RELOADED:
		pair = webhook_tls_current(srv->tls);
		webhook_metrics_cert_reload_count(srv->metrics, true);
		webhook_metrics_cert_not_after_set(srv->metrics, webhook_tls_pair_not_after(pair));
		gpuq_log(GPUQ_LOG_INFO, MODULE,
			 "serving certificate reloaded from %s: serial %s, notAfter %" PRId64,
			 srv->opts->cert_dir, webhook_tls_pair_serial(pair),
			 webhook_tls_pair_not_after(pair));
		webhook_tls_pair_unref(pair);
		break;
	case WEBHOOK_TLS_PENDING:
		gpuq_log(GPUQ_LOG_DEBUG, MODULE, "certificate files changed, not loadable yet: %s",
			 diag.msg);
		break;
	case WEBHOOK_TLS_REFUSED:
		webhook_metrics_cert_reload_count(srv->metrics, false);
		gpuq_log(GPUQ_LOG_ERROR, MODULE,
			 "certificate reload refused, the previous pair keeps serving: %s",
			 diag.msg);
		break;
	}
}

static void *watcher_main(void *arg)
{
	webhook_server_t *srv = arg;
	struct timespec deadline;

	pthread_mutex_lock(&srv->stop_lock);
	while (!srv->stop_flag) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += srv->opts->poll_ms / 1000;
		deadline.tv_nsec += (long)(srv->opts->poll_ms % 1000) * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
		while (!srv->stop_flag &&
		       pthread_cond_timedwait(&srv->stop_cond, &srv->stop_lock, &deadline) == 0)
			;
		if (srv->stop_flag)
			break;
		pthread_mutex_unlock(&srv->stop_lock);
		poll_certs(srv);
		poll_policy(srv);
		pthread_mutex_lock(&srv->stop_lock);
	}
	pthread_mutex_unlock(&srv->stop_lock);
	return NULL;
}

/* ---- libmicrohttpd callbacks ---- */

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	webhook_server_t *srv = cls;
	char msg[512];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	pthread_mutex_lock(&srv->log_lock);
	if (srv->starting)
		gpuq_strlcpy(srv->start_msg, msg, sizeof(srv->start_msg));
	pthread_mutex_unlock(&srv->log_lock);
	/* Handshake failures from scanners and TLS-version probes are routine:
	 * keep them at debug so they cannot flood the log. */
	gpuq_log(GPUQ_LOG_DEBUG, MODULE, "libmicrohttpd: %s", msg);
}

/* gnutls_certificate_retrieve_function2: hand GnuTLS the current pair and
 * pin it to the connection until it closes (see on_connection). */
static int on_certificate(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
			  const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
			  gnutls_pcert_st **pcert, unsigned int *pcert_length,
			  gnutls_privkey_t *key)
{
	struct MHD_Connection *conn = gnutls_session_get_ptr(session);
	const union MHD_ConnectionInfo *info;
	webhook_tls_pair_t *pair;
	conn_slot_t *slot;

	(void)req_ca_dn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_length;
	if (!conn)
		return -1;
	info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	if (!info || !info->socket_context)
		return -1;
	slot = info->socket_context;
	pair = webhook_tls_current(slot->srv->tls);
	webhook_tls_pair_unref(slot->pair); /* a renegotiation replaces it */
	slot->pair = pair;
	*pcert = pair->pcerts;
	*pcert_length = pair->n_pcerts;
	*key = pair->key;
	return 0;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	conn_slot_t *slot;

	(void)conn;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		/* On allocation failure the handshake fails (no slot): the
		 * connection is refused, the server goes on. */
		slot = calloc(1, sizeof(*slot));
		if (slot)
			slot->srv = cls;
		*socket_context = slot;
		return;
	}
	slot = *socket_context;
	*socket_context = NULL;
	if (slot) {
		/* GnuTLS is done with the session (gnutls_deinit ran before this
		 * notification), so the pair may go. */
		webhook_tls_pair_unref(slot->pair);
		free(slot);
	}
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	webhook_server_t *srv = cls;
	request_t *rq = *con_cls;

	(void)conn;
	(void)toe;
	if (!rq)
		return;
	atomic_fetch_sub_explicit(&srv->body_bytes, rq->cap, memory_order_relaxed);
	free(rq->body);
	free(rq);
	*con_cls = NULL;
	atomic_fetch_sub_explicit(&srv->inflight, 1, memory_order_acq_rel);
}

static webhook_route_t route_of(const char *url)
{
	static const char *const paths[] = {"/mutate", "/validate", "/healthz", "/readyz",
					    "/metrics"};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (!strcmp(url, paths[i]))
			return (webhook_route_t)i;
	return WEBHOOK_ROUTE_OTHER;
}

#define TEXT_PLAIN "text/plain; charset=utf-8"

/* Queue one reply. body is copied. count: add it to gpuq_http_requests_total. */
static enum MHD_Result reply(webhook_server_t *srv, struct MHD_Connection *conn, request_t *rq,
			     unsigned code, const char *content_type, const char *body, size_t len,
			     bool count)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
					rq->route <= WEBHOOK_ROUTE_VALIDATE ? "POST" : "GET, HEAD");
	if (atomic_load(&srv->draining))
		/* Send the peer to another replica for its next request. */
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(conn, code, resp);
	MHD_destroy_response(resp);
	rq->replied = true;
	if (count)
		webhook_metrics_http_count(srv->metrics, rq->route, code);
	return ret;
}

static enum MHD_Result reply_text(webhook_server_t *srv, struct MHD_Connection *conn, request_t *rq,
				  unsigned code, const char *text)
{
	return reply(srv, conn, rq, code, TEXT_PLAIN, text, strlen(text), true);
}

/* Whether a Content-Type header names application/json (parameters such as
 * charset allowed, case-insensitive). */
static bool is_json(const char *ctype)
{
	static const char want[] = "application/json";
	size_t n = sizeof(want) - 1;

	if (!ctype || strncasecmp(ctype, want, n) != 0)
		return false;
	ctype += n;
	while (*ctype == ' ' || *ctype == '\t')
		ctype++;
	return *ctype == '\0' || *ctype == ';';
}

/* Grow rq's body buffer to want bytes, taking them from the server's body
 * budget. GPUQ_EAGAIN when the budget is spent, GPUQ_ENOMEM. */
static int body_reserve(webhook_server_t *srv, request_t *rq, size_t want)
{
	size_t more = want - rq->cap;
	size_t before = atomic_fetch_add_explicit(&srv->body_bytes, more, memory_order_relaxed);
	char *nb;

	if (before + more > srv->opts->body_budget) {
		atomic_fetch_sub_explicit(&srv->body_bytes, more, memory_order_relaxed);
		return GPUQ_EAGAIN;
	}
	nb = realloc(rq->body, want);
	if (!nb) {
		atomic_fetch_sub_explicit(&srv->body_bytes, more, memory_order_relaxed);
		return GPUQ_ENOMEM;
	}
	rq->body = nb;
	rq->cap = want;
	return GPUQ_OK;
}

/* Append a piece of the body, growing the buffer up to WEBHOOK_REVIEW_MAX.
 * GPUQ_ELIMIT past the cap, GPUQ_EAGAIN past the budget, GPUQ_ENOMEM. */
static int body_append(webhook_server_t *srv, request_t *rq, const char *data, size_t n)
{
	int rc;

	if (n > WEBHOOK_REVIEW_MAX - rq->len)
		return GPUQ_ELIMIT;
	if (rq->len + n > rq->cap) {
		size_t want = rq->cap ? rq->cap : 65536;

		while (want < rq->len + n)
			want *= 2;
		if (want > WEBHOOK_REVIEW_MAX)
			want = WEBHOOK_REVIEW_MAX;
		rc = body_reserve(srv, rq, want);
		if (rc)
			return rc;
	}
	memcpy(rq->body + rq->len, data, n);
	rq->len += n;
	return GPUQ_OK;
}

/* First callback of an admission request: check method, type and size,
 * then get ready to collect the body. */
static enum MHD_Result admission_begin(webhook_server_t *srv, struct MHD_Connection *conn,
				       request_t *rq, const char *method)
{
	const char *ctype, *clen;
	char msg[160];

	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
		return reply_text(srv, conn, rq, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "method not allowed: use POST\n");
	ctype = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!is_json(ctype)) {
		/* The peer's value is not echoed: it could be anything. */
		return reply_text(srv, conn, rq, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
				  "unsupported media type: Content-Type must be "
				  "application/json\n");
	}
	clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (clen) {
		char *end;
		unsigned long long n;

		errno = 0;
		n = strtoull(clen, &end, 10);
		if (!errno && !*end && n > WEBHOOK_REVIEW_MAX) {
			snprintf(msg, sizeof(msg),
				 "request body too large: %llu bytes, at most %u\n", n,
				 WEBHOOK_REVIEW_MAX);
			return reply_text(srv, conn, rq, MHD_HTTP_CONTENT_TOO_LARGE, msg);
		}
		if (!errno && !*end && n > 0) {
			int rc = body_reserve(srv, rq, (size_t)n);

			if (rc == GPUQ_EAGAIN)
				return reply_text(
				    srv, conn, rq, MHD_HTTP_SERVICE_UNAVAILABLE,
				    "busy: too many request bodies in flight, retry\n");
			if (rc)
				return reply_text(srv, conn, rq, MHD_HTTP_INTERNAL_SERVER_ERROR,
						  "out of memory\n");
		}
	}
	rq->collecting = true;
	return MHD_YES;
}

/* The whole body is in: decide it against the current policy. */
static enum MHD_Result admission_decide(webhook_server_t *srv, struct MHD_Connection *conn,
					request_t *rq)
{
	webhook_endpoint_t ep =
	    rq->route == WEBHOOK_ROUTE_VALIDATE ? WEBHOOK_VALIDATE : WEBHOOK_MUTATE;
	webhook_reply_t out;
	enum MHD_Result ret;
	policy_t *policy;
	uint64_t elapsed;
	int rc;

	memset(&out, 0, sizeof(out));
	policy = policy_current(srv);
	rc = webhook_review_handle(ep, policy, &srv->review_cfg, rq->body ? rq->body : "", rq->len,
				   &out);
	policy_unref(policy);
	if (rc) {
		gpuq_log(GPUQ_LOG_ERROR, MODULE, "%s: review failed: %s",
			 ep == WEBHOOK_VALIDATE ? "/validate" : "/mutate", gpuq_strerror(rc));
		ret = reply_text(srv, conn, rq, MHD_HTTP_INTERNAL_SERVER_ERROR,
				 "internal error: the review could not be decided\n");
		webhook_metrics_admission_observe(srv->metrics, ep, "other", "error",
						  now_ns() - rq->start_ns);
		return ret;
	}
	ret = reply(srv, conn, rq, (unsigned)out.http_status,
		    out.content_type ? out.content_type : "application/json",
		    out.body ? out.body : "", out.len, out.http_status != MHD_HTTP_OK);
	elapsed = now_ns() - rq->start_ns;
	webhook_metrics_admission_observe(srv->metrics, ep, out.kind, out.decision, elapsed);
	gpuq_log(GPUQ_LOG_DEBUG, MODULE, "%s: %d %s %s, %zu bytes in %" PRIu64 " us",
		 ep == WEBHOOK_VALIDATE ? "/validate" : "/mutate", out.http_status,
		 out.kind ? out.kind : "-", out.decision ? out.decision : "-", rq->len,
		 elapsed / 1000);
	webhook_reply_deinit(&out);
	return ret;
}

static enum MHD_Result serve_metrics(webhook_server_t *srv, struct MHD_Connection *conn,
				     request_t *rq)
{
	char *text;
	size_t len;
	enum MHD_Result ret;

	/* Counted before rendering, so this scrape sees itself. */
	webhook_metrics_http_count(srv->metrics, rq->route, MHD_HTTP_OK);
	if (webhook_metrics_render(srv->metrics, &text, &len))
		return reply_text(srv, conn, rq, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "cannot render metrics\n");
	ret = reply(srv, conn, rq, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text,
		    len, false);
	free(text);
	return ret;
}

static enum MHD_Result serve_readyz(webhook_server_t *srv, struct MHD_Connection *conn,
				    request_t *rq)
{
	webhook_tls_pair_t *pair;
	policy_t *policy;
	bool ready;

	if (atomic_load(&srv->draining))
		return reply_text(srv, conn, rq, MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down\n");
	pair = webhook_tls_current(srv->tls);
	policy = policy_current(srv);
	ready = pair && policy;
	webhook_tls_pair_unref(pair);
	policy_unref(policy);
	if (!ready)
		return reply_text(srv, conn, rq, MHD_HTTP_SERVICE_UNAVAILABLE,
				  "not ready: certificates or policy not loaded\n");
	return reply_text(srv, conn, rq, MHD_HTTP_OK, "ok\n");
}

/* Answer a request outside the admission routes. */
static enum MHD_Result route_serve(webhook_server_t *srv, struct MHD_Connection *conn,
				   request_t *rq, const char *method)
{
	bool get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);

	if (rq->route == WEBHOOK_ROUTE_OTHER)
		return reply_text(srv, conn, rq, MHD_HTTP_NOT_FOUND, "not found\n");
	if (!get)
		return reply_text(srv, conn, rq, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "method not allowed: use GET\n");
	if (rq->route == WEBHOOK_ROUTE_HEALTHZ)
		return reply_text(srv, conn, rq, MHD_HTTP_OK, "ok\n");
	if (rq->route == WEBHOOK_ROUTE_READYZ)
		return serve_readyz(srv, conn, rq);
	return serve_metrics(srv, conn, rq);
}

/* Whether the request announces a body (a length above 0, or chunks). */
static bool has_body(struct MHD_Connection *conn)
{
	const char *clen, *te;

	te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
	clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	return te || (clen && strcmp(clen, "0") != 0);
}

/* libmicrohttpd calls this first when the headers are in, then once per
 * piece of body, then once more with *upload_size 0. A reply queued in the
 * first call makes it close the connection after the reply (it has not read
 * the body), so replies that should keep the connection open are queued in
 * the last call; early replies are for refusals only. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	webhook_server_t *srv = cls;
	request_t *rq = *con_cls;
	int rc;

	(void)version;
	if (!rq) {
		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		rq->start_ns = now_ns();
		rq->route = route_of(url); /* the query string (?timeout=10s) is not in url */
		*con_cls = rq;
		atomic_fetch_add_explicit(&srv->inflight, 1, memory_order_acq_rel);
		if (rq->route <= WEBHOOK_ROUTE_VALIDATE)
			return admission_begin(srv, conn, rq, method);
		if (has_body(conn)) /* nothing here takes a body: refuse, do not read it */
			return route_serve(srv, conn, rq, method);
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;

		*upload_size = 0;
		if (!rq->collecting)
			return MHD_YES;
		rc = body_append(srv, rq, upload, n);
		if (rc) {
			/* Only a chunked body gets here (a Content-Length above the
			 * cap or the budget was refused up front); libmicrohttpd
			 * cannot answer in the middle of a body, so the connection
			 * goes. */
			webhook_metrics_http_count(srv->metrics, rq->route,
						   rc == GPUQ_ELIMIT
						       ? MHD_HTTP_CONTENT_TOO_LARGE
						       : MHD_HTTP_SERVICE_UNAVAILABLE);
			gpuq_log(GPUQ_LOG_WARN, MODULE, "%s: chunked body: %s: connection closed",
				 rq->route == WEBHOOK_ROUTE_VALIDATE ? "/validate" : "/mutate",
				 rc == GPUQ_ELIMIT   ? "larger than 3 MiB"
				 : rc == GPUQ_EAGAIN ? "body budget spent"
						     : "out of memory");
			return MHD_NO;
		}
		return MHD_YES;
	}
	if (rq->replied)
		return MHD_YES;
	if (rq->collecting) {
		rq->collecting = false;
		return admission_decide(srv, conn, rq);
	}
	return route_serve(srv, conn, rq, method);
}

/* ---- Lifecycle ---- */

int webhook_server_create(const webhook_serve_opts_t *opts, webhook_server_t **out,
			  gpuq_diag_t *diag)
{
	webhook_server_t *srv;
	int rc;

	*out = NULL;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return GPUQ_ENOMEM;
	srv->opts = opts;
	srv->listen_fd = MHD_INVALID_SOCKET;
	srv->review_cfg.gpu_resources = opts->gpu_resources;
	srv->review_cfg.n_gpu_resources = opts->n_gpu_resources;
	srv->review_cfg.controller_user = opts->controller_user;
	atomic_init(&srv->inflight, 0);
	atomic_init(&srv->body_bytes, 0);
	atomic_init(&srv->draining, false);
	pthread_mutex_init(&srv->policy_lock, NULL);
	pthread_mutex_init(&srv->reload_lock, NULL);
	pthread_mutex_init(&srv->stop_lock, NULL);
	pthread_mutex_init(&srv->log_lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&srv->stop_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	rc = webhook_metrics_create(&srv->metrics);
	if (rc)
		goto fail;
	rc = webhook_tls_create(opts->cert_dir, &srv->tls, diag);
	if (rc) {
		gpuq_diag_prefix(diag, "--cert-dir \"%s\": ", opts->cert_dir);
		goto fail;
	}
	{
		webhook_tls_pair_t *pair = webhook_tls_current(srv->tls);

		webhook_metrics_cert_not_after_set(srv->metrics, webhook_tls_pair_not_after(pair));
		gpuq_log(GPUQ_LOG_INFO, MODULE, "serving certificate: serial %s, notAfter %" PRId64,
			 webhook_tls_pair_serial(pair), webhook_tls_pair_not_after(pair));
		if (webhook_tls_pair_not_after(pair) < (int64_t)time(NULL))
			gpuq_log(GPUQ_LOG_WARN, MODULE, "the serving certificate has expired");
		webhook_tls_pair_unref(pair);
	}
	if (policy_dir_fingerprint(opts->policy_dir, &srv->policy_seen_fp, NULL))
		srv->policy_seen_fp = 0;
	rc = policy_load_dir(opts->policy_dir, NULL, &srv->policy, diag);
	if (rc) {
		gpuq_diag_prefix(diag, "--policy-dir \"%s\": ", opts->policy_dir);
		goto fail;
	}
	srv->policy_seen_fp = policy_fingerprint(srv->policy);
	srv->policy_generation = 1;
	webhook_metrics_policy_generation_set(srv->metrics, 1);
	*out = srv;
	return GPUQ_OK;
fail:
	srv->stopped = true;
	webhook_server_destroy(srv);
	return rc;
}

static int resolve(const webhook_serve_opts_t *opts, struct sockaddr_storage *addr,
		   gpuq_diag_t *diag)
{
	struct addrinfo hints, *res = NULL;
	char port[8];
	int ret;

	memset(addr, 0, sizeof(*addr));
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%u", (unsigned)opts->port);
	ret = getaddrinfo(opts->host[0] ? opts->host : "0.0.0.0", port, &hints, &res);
	if (ret)
		return gpuq_diag_set(diag, GPUQ_EIO, "--listen \"%s\": cannot resolve \"%s\": %s",
				     opts->listen, opts->host, gai_strerror(ret));
	memset(addr, 0, sizeof(*addr));
	memcpy(addr, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return GPUQ_OK;
}

int webhook_server_start(webhook_server_t *srv, gpuq_diag_t *diag)
{
	struct sockaddr_storage addr;
	unsigned flags = MHD_USE_TLS | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
			 MHD_USE_ITC | MHD_USE_ERROR_LOG;
	int rc;

	rc = resolve(srv->opts, &addr, diag);
	if (rc)
		return rc;
	if (addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	pthread_mutex_lock(&srv->log_lock);
	srv->starting = true;
	srv->start_msg[0] = '\0';
	pthread_mutex_unlock(&srv->log_lock);
	srv->daemon = MHD_start_daemon(
	    flags, srv->opts->port, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER,
	    mhd_log, srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
	    MHD_OPTION_HTTPS_CERT_CALLBACK, on_certificate, MHD_OPTION_HTTPS_PRIORITIES,
	    WEBHOOK_TLS_PRIORITIES, MHD_OPTION_THREAD_POOL_SIZE,
	    srv->opts->threads > 1 ? srv->opts->threads : 0, MHD_OPTION_CONNECTION_LIMIT,
	    (unsigned)WEBHOOK_CONNECTIONS_MAX, MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned)WEBHOOK_IDLE_TIMEOUT_S, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv, MHD_OPTION_END);
	pthread_mutex_lock(&srv->log_lock);
	srv->starting = false;
	pthread_mutex_unlock(&srv->log_lock);
	if (!srv->daemon)
		return gpuq_diag_set(diag, GPUQ_EIO, "--listen \"%s\": cannot serve there: %s",
				     srv->opts->listen,
				     srv->start_msg[0] ? srv->start_msg : "libmicrohttpd refused");
	srv->stop_flag = false;
	if (pthread_create(&srv->watcher, NULL, watcher_main, srv)) {
		MHD_stop_daemon(srv->daemon);
		srv->daemon = NULL;
		return gpuq_diag_set(diag, GPUQ_EIO, "cannot start the watcher thread");
	}
	srv->watcher_running = true;
	gpuq_log(
	    GPUQ_LOG_INFO, MODULE,
	    "serving https://%s%s%s:%u (TLS 1.2/1.3, %u threads), policy generation 1",
	    addr.ss_family == AF_INET6 ? "[" : "", srv->opts->host[0] ? srv->opts->host : "0.0.0.0",
	    addr.ss_family == AF_INET6 ? "]" : "", (unsigned)srv->opts->port, srv->opts->threads);
	return GPUQ_OK;
}

void webhook_server_stop(webhook_server_t *srv, unsigned drain_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)drain_ms * 1000000u;
	int zero_reads = 0;

	if (srv->stopped)
		return;
	srv->stopped = true;
	atomic_store(&srv->draining, true);
	if (srv->daemon) {
		srv->listen_fd = MHD_quiesce_daemon(srv->daemon);
		/* Two idle readings 20 ms apart: a request whose headers were
		 * just read gets to its first callback in between. */
		while (zero_reads < 2 && now_ns() < deadline) {
			if (atomic_load(&srv->inflight) == 0)
				zero_reads++;
			else
				zero_reads = 0;
			struct timespec ts = {0, 20000000L};
			nanosleep(&ts, NULL);
		}
		if (atomic_load(&srv->inflight) > 0)
			gpuq_log(GPUQ_LOG_WARN, MODULE,
				 "stopping with %d requests still in flight after %u ms",
				 atomic_load(&srv->inflight), drain_ms);
	}
	if (srv->watcher_running) {
		pthread_mutex_lock(&srv->stop_lock);
		srv->stop_flag = true;
		pthread_cond_broadcast(&srv->stop_cond);
		pthread_mutex_unlock(&srv->stop_lock);
		pthread_join(srv->watcher, NULL);
		srv->watcher_running = false;
	}
	if (srv->daemon) {
		MHD_stop_daemon(srv->daemon);
		srv->daemon = NULL;
	}
	if (srv->listen_fd != MHD_INVALID_SOCKET) {
		close(srv->listen_fd);
		srv->listen_fd = MHD_INVALID_SOCKET;
	}
}

void webhook_server_destroy(webhook_server_t *srv)
{
	if (!srv)
		return;
	webhook_server_stop(srv, 0);
	policy_unref(srv->policy);
	webhook_tls_destroy(srv->tls);
	webhook_metrics_destroy(srv->metrics);
	pthread_cond_destroy(&srv->stop_cond);
	pthread_mutex_destroy(&srv->policy_lock);
	pthread_mutex_destroy(&srv->reload_lock);
	pthread_mutex_destroy(&srv->stop_lock);
	pthread_mutex_destroy(&srv->log_lock);
	free(srv);
}

webhook_metrics_t *webhook_server_metrics(webhook_server_t *srv)
{
	return srv->metrics;
}
