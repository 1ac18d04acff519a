/* controller/map.c: a string-keyed hash map (open addressing, linear probing),
 * and the small set of namespace names a policy change reaches. */
#include <stdlib.h>
#include <string.h>

#include "controller/internal.h"

#define MAP_CAP_MIN 64 /* first table size */

uint64_t controller_map_hash(const char *s)
{
	return gpuq_fnv1a_str(GPUQ_FNV1A_BASIS, s); /* FNV-1a 64 as published */
}

uint64_t controller_map_hash_bytes(const void *p, size_t n)
{
	return gpuq_fnv1a(GPUQ_FNV1A_BASIS, p, n);
}

void controller_map_init(controller_map_t *m)
{
	memset(m, 0, sizeof(*m));
}

void controller_map_deinit(controller_map_t *m)
{
	for (size_t i = 0; i < m->cap; i++)
		if (!m->slots[i].borrowed)
			free(m->slots[i].key);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

static controller_map_slot_t *find(const controller_map_t *m, const char *key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = controller_map_hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		controller_map_slot_t *s = &m->slots[i];
		if (!s->key && !s->dead)
			return NULL;
		if (s->key && strcmp(s->key, key) == 0)
			return s;
	}
}

void *controller_map_get(const controller_map_t *m, const char *key)
{
	controller_map_slot_t *s = find(m, key);

	return s ? s->value : NULL;
}

static int grow(controller_map_t *m)
{
	size_t cap = m->cap ? m->cap * 2 : MAP_CAP_MIN;
	controller_map_slot_t *slots;

	/* a table full of tombstones is rebuilt at the same size */
	if (m->cap && m->n * 2 < m->cap)
		cap = m->cap;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return GPUQ_ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		controller_map_slot_t *s = &m->slots[i];
		size_t j;
		if (!s->key)
			continue;
		for (j = controller_map_hash(s->key) & (cap - 1); slots[j].key;
		     j = (j + 1) & (cap - 1))
			;
		slots[j] = *s;
		slots[j].dead = false;
	}
	free(m->slots);
	m->slots = slots;
	m->cap = cap;
	m->used = m->n;
	return GPUQ_OK;
}

static int put(controller_map_t *m, const char *key, void *value, void **old, bool borrow)
{
	controller_map_slot_t *s = find(m, key);
	size_t i;

	if (old)
		*old = NULL;
	if (s) {
		if (old)
			*old = s->value;
		s->value = value;
		return GPUQ_OK;
	}
	if (m->n >= CONTROLLER_OBJECTS_MAX)
		return GPUQ_ELIMIT;
	if ((m->used + 1) * 4 > m->cap * 3 && grow(m))
		return GPUQ_ENOMEM;
	for (i = controller_map_hash(key) & (m->cap - 1); m->slots[i].key;
	     i = (i + 1) & (m->cap - 1))
		;
	m->slots[i].key = borrow ? (char *)key : strdup(key);
	if (!m->slots[i].key)
		return GPUQ_ENOMEM;
	m->slots[i].borrowed = borrow;
	if (!m->slots[i].dead)
		m->used++;
	m->slots[i].dead = false;
	m->slots[i].value = value;
	m->n++;
	return GPUQ_OK;
}

int controller_map_put(controller_map_t *m, const char *key, void *value, void **old)
{
	return put(m, key, value, old, false);
}

int controller_map_put_borrowed(controller_map_t *m, const char *key, void *value, void **old)
{
	return put(m, key, value, old, true);
}

void controller_map_rekey(controller_map_t *m, const char *key)
{
	controller_map_slot_t *s = find(m, key);

	if (s && s->borrowed)
		s->key = (char *)(uintptr_t)key;
}

void *controller_map_del(controller_map_t *m, const char *key)
{
	controller_map_slot_t *s = find(m, key);
	void *v;

	if (!s)
		return NULL;
	v = s->value;
	if (!s->borrowed)
		free(s->key);
	s->borrowed = false;
	s->key = NULL;
	s->value = NULL;
	s->dead = true;
	m->n--;
	return v;
}

controller_map_slot_t *controller_map_next(const controller_map_t *m, size_t *pos)
{
	while (*pos < m->cap) {
		controller_map_slot_t *s = &m->slots[(*pos)++];
		if (s->key)
			return s;
	}
	return NULL;
}

/* ---- the namespaces a policy change reaches ---- */

void controller_nsset_add(controller_nsset_t *s, const char *ns, size_t len)
{
	if (s->all)
		return;
	for (size_t i = 0; i < s->n; i++)
		if (strlen(s->names[i]) == len && !memcmp(s->names[i], ns, len))
			return;
	if (s->n == CONTROLLER_NSSET_MAX || len >= sizeof(s->names[0])) {
		s->all = true;
		return;
	}
	memcpy(s->names[s->n], ns, len);
	s->names[s->n++][len] = '\0';
}

bool controller_nsset_has(const controller_nsset_t *s, const char *ns)
{
	if (!s || s->all)
		return true;
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->names[i], ns ? ns : ""))
			return true;
	return false;
}
