/* http tls: the serving certificate pair (GnuTLS) and its reload when
 * tls.crt/tls.key change on disk. See http.h. */
#include "http/http.h"

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

#define MODULE "http"

/* ==== The serving pair ==== */

#include "http/tls_internal.h"

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

static void pair_free(http_tls_pair_t *pair)
{
	for (unsigned i = 0; i < pair->n_pcerts; i++)
		gnutls_pcert_deinit(&pair->pcerts[i]);
	free(pair->pcerts);
	if (pair->key)
		gnutls_privkey_deinit(pair->key);
	free(pair);
}

/* Parse the chain into pair; remember the leaf's serial and notAfter. */
static int pair_import_chain(http_tls_pair_t *pair, const char *dir, const gnutls_datum_t *pem,
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
		size_t skip = 0;

		/* DER puts a 00 before a serial whose top bit is set; openssl
		 * prints the number without it. */
		while (skip + 1 < serial_len && serial[skip] == 0)
			skip++;
		for (size_t i = skip; i < serial_len; i++)
			snprintf(pair->serial + 2 * (i - skip), 3, "%02X", serial[i]);
	}
out:
	for (unsigned i = 0; i < n; i++)
		gnutls_x509_crt_deinit(crts[i]);
	gnutls_free(crts);
	return rc;
}

/* Whether key is the private half of the leaf certificate's public key. */
static int pair_check_key(http_tls_pair_t *pair, const char *dir, gpuq_diag_t *diag)
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

int http_tls_pair_load(const char *dir, http_tls_pair_t **out, gpuq_diag_t *diag)
{
	gnutls_datum_t crt = {NULL, 0}, key = {NULL, 0};
	http_tls_pair_t *pair;
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

http_tls_pair_t *http_tls_pair_ref(http_tls_pair_t *pair)
{
	if (pair)
		atomic_fetch_add_explicit(&pair->refs, 1, memory_order_relaxed);
	return pair;
}

void http_tls_pair_unref(http_tls_pair_t *pair)
{
	if (pair && atomic_fetch_sub_explicit(&pair->refs, 1, memory_order_acq_rel) == 1)
		pair_free(pair);
}

const char *http_tls_pair_serial(const http_tls_pair_t *pair)
{
	return pair->serial;
}

int64_t http_tls_pair_not_after(const http_tls_pair_t *pair)
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

struct http_tls {
	char *dir;		  /* the cert dir (owned copy) */
	pthread_mutex_t lock;	  /* guards current */
	http_tls_pair_t *current; /* the serving pair (one reference) */
	pair_stamp_t seen;	  /* the files as last acted on */
	bool pending;		  /* the files at `seen` failed to load once */
};

int http_tls_create(const char *dir, http_tls_t **out, gpuq_diag_t *diag)
{
	http_tls_t *tls;
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
	rc = http_tls_pair_load(dir, &tls->current, diag);
	if (rc) {
		http_tls_destroy(tls);
		return rc;
	}
	*out = tls;
	return GPUQ_OK;
}

void http_tls_destroy(http_tls_t *tls)
{
	if (!tls)
		return;
	http_tls_pair_unref(tls->current);
	pthread_mutex_destroy(&tls->lock);
	free(tls->dir);
	free(tls);
}

http_tls_pair_t *http_tls_current(http_tls_t *tls)
{
	http_tls_pair_t *pair;

	pthread_mutex_lock(&tls->lock);
	pair = http_tls_pair_ref(tls->current);
	pthread_mutex_unlock(&tls->lock);
	return pair;
}

http_tls_poll_t http_tls_poll(http_tls_t *tls, gpuq_diag_t *diag)
{
	http_tls_pair_t *pair = NULL, *old;
	pair_stamp_t now;
	bool changed;
	int rc;

	stamp_file(tls->dir, "tls.crt", &now.crt);
	stamp_file(tls->dir, "tls.key", &now.key);
	changed = !file_stamp_equal(&now.crt, &tls->seen.crt) ||
		  !file_stamp_equal(&now.key, &tls->seen.key);
	if (!changed && !tls->pending)
		return HTTP_TLS_UNCHANGED;
	/* Stamped before reading: a write during the load changes the stamp
	 * and brings us back next poll. */
	tls->seen = now;
	rc = http_tls_pair_load(tls->dir, &pair, diag);
	if (rc == GPUQ_OK) {
		tls->pending = false;
		pthread_mutex_lock(&tls->lock);
		old = tls->current;
		tls->current = pair;
		pthread_mutex_unlock(&tls->lock);
		http_tls_pair_unref(old);
		return HTTP_TLS_RELOADED;
	}
	if (changed) {
		/* First failure for these files: a rotation writes tls.crt and
		 * tls.key one after the other, so give it one poll to settle. */
		tls->pending = true;
		return HTTP_TLS_PENDING;
	}
	tls->pending = false;
	return HTTP_TLS_REFUSED;
}
