/*
 * queue/util.c: interned names (the containers themselves are inline in internal.h).
 * See queue.h for the contracts and docs/queueing.md for the rules.
 */
#include "queue/internal.h"

#include <stdlib.h>
#include <string.h>

/* ================================================================== */
/* Interned names                                                      */
/* ================================================================== */

static bool name_eq(const void *ctx, uint32_t id, const void *key)
{
	const names_t *t = ctx;

	return strcmp(t->s[id], key) == 0;
}

int queue_names_find(const names_t *t, const char *s, uint32_t *id)
{
	return queue_map_find(&t->map, queue_hash_str(s), name_eq, t, s, id) ? GPUQ_OK
									     : GPUQ_ENOTFOUND;
}

int queue_names_intern(names_t *t, const char *s, uint32_t *id)
{
	size_t len;
	char *c;

	if (queue_names_find(t, s, id) == GPUQ_OK)
		return GPUQ_OK;
	len = strlen(s);
	if (queue_grow(&t->s, &t->cap, t->n + 1, sizeof(*t->s)) || queue_map_reserve(&t->map))
		return GPUQ_ENOMEM;
	c = malloc(len + 1);
	if (!c)
		return GPUQ_ENOMEM;
	memcpy(c, s, len + 1);
	t->s[t->n] = c;
	queue_map_put(&t->map, queue_hash_str(s), (uint32_t)t->n);
	*id = (uint32_t)t->n++;
	return GPUQ_OK;
}

void queue_names_free(names_t *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->map.e);
}
