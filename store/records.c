/* store: the record types of the queue core and their structural check. */
#include "store/store.h"

#include <string.h>

#include "queue/queue.h"

/* Sub-database of each queue record type; ids are queue_rec_type_t. */
static const struct {
	queue_rec_type_t type; /* record type id */
	const char *name;      /* its sub-database */
} queue_types[] = {
    {QUEUE_REC_META, "queue_meta"},
    {QUEUE_REC_CQ, "clusterqueues"},
    {QUEUE_REC_TENANT, "tenants"},
    {QUEUE_REC_WORKLOAD, "workloads"},
};

/* The record encoding versions this build reads (queue.h: "a one-byte
 * version (1)"). */
#define RECORD_VERSION_MAX 1

_Static_assert(QUEUE_REC_WORKLOAD < STORE_TYPE_DRIVER_FIRST, "core ids below driver ids");

void store_opts_queue_types(store_opts_t *opts)
{
	for (size_t i = 0; i < sizeof(queue_types) / sizeof(queue_types[0]); i++)
		opts->types[queue_types[i].type] = queue_types[i].name;
}

int store_record_check(unsigned type, const void *key, size_t klen, const void *val, size_t vlen,
		       gpuq_diag_t *diag)
{
	const unsigned char *v = val;

	if (type < QUEUE_REC_META || type > QUEUE_REC_WORKLOAD)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "record type %u is not a queue record",
				     type);
	if (klen == 0 || klen > QUEUE_KEY_MAX)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "key of %zu bytes (want 1..%d)", klen,
				     QUEUE_KEY_MAX);
	if (type == QUEUE_REC_META && (klen != 4 || memcmp(key, "meta", 4) != 0))
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "meta record key is not \"meta\"");
	if (vlen == 0 || vlen > QUEUE_RECORD_MAX)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT, "value of %zu bytes (want 1..%d)", vlen,
				     QUEUE_RECORD_MAX);
	if (v[0] == 0 || v[0] > RECORD_VERSION_MAX)
		return gpuq_diag_set(diag, GPUQ_ECORRUPT,
				     "record version %u unknown (this gpuq reads 1..%d)", v[0],
				     RECORD_VERSION_MAX);
	return GPUQ_OK;
}
