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

/* The key of a deleted slot (a tombstone): its address only. */
static char tomb[1];

static bool live(const controller_map_slot_t *s)
{
	return s->key && s->key != tomb;
}

static bool borrowed(const controller_map_t *m, size_t i)
{
	return m->borrowed && (m->borrowed[i / 8] >> (i % 8)) & 1;
}

static void borrowed_set(uint8_t *bits, size_t i, bool on)
{
	if (on)
		bits[i / 8] |= (uint8_t)(1u << (i % 8));
	else if (bits)
		bits[i / 8] &= (uint8_t) ~(1u << (i % 8));
}

void controller_map_init(controller_map_t *m)
{
	memset(m, 0, sizeof(*m));
}

void controller_map_deinit(controller_map_t *m)
{
	for (size_t i = 0; i < m->cap; i++)
		if (live(&m->slots[i]) && !borrowed(m, i))
			free(m->slots[i].key);
	free(m->slots);
	free(m->borrowed);
	memset(m, 0, sizeof(*m));
}

static controller_map_slot_t *find(const controller_map_t *m, const char *key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = controller_map_hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		controller_map_slot_t *s = &m->slots[i];
		if (!s->key)
			return NULL;
		if (s->key != tomb && strcmp(s->key, key) == 0)
			return s;
	}
}

void *controller_map_get(const controller_map_t *m, const char *key)
{
	controller_map_slot_t *s = find(m, key);

	return s ? s->value : NULL;
}

/* Rebuild the table at cap slots (and the borrowed bits when any, or when
 * `bits` asks for them), without tombstones. */
static int rebuild(controller_map_t *m, size_t cap, bool bits)
{
	controller_map_slot_t *slots = calloc(cap, sizeof(*slots));
	uint8_t *b = bits || m->borrowed ? calloc(cap / 8 + 1, 1) : NULL;

	if (!slots || ((bits || m->borrowed) && !b)) {
		free(slots);
		free(b);
		return GPUQ_ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		controller_map_slot_t *s = &m->slots[i];
		size_t j;
		if (!live(s))
			continue;
		for (j = controller_map_hash(s->key) & (cap - 1); slots[j].key;
		     j = (j + 1) & (cap - 1))
			;
		slots[j] = *s;
		if (borrowed(m, i))
			borrowed_set(b, j, true);
	}
	free(m->slots);
	free(m->borrowed);
	m->slots = slots;
	m->borrowed = b;
	m->cap = cap;
	m->used = m->n;
	return GPUQ_OK;
}

static int grow(controller_map_t *m, bool bits)
{
	size_t cap = m->cap ? m->cap * 2 : MAP_CAP_MIN;

	/* a table full of tombstones is rebuilt at the same size */
	if (m->cap && m->n * 2 < m->cap)
		cap = m->cap;
	return rebuild(m, cap, bits);
}

static int put(controller_map_t *m, const char *key, void *value, void **old, bool borrow)
{
	controller_map_slot_t *s = find(m, key);
	size_t i;
	int rc = GPUQ_OK;

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
	/* 7/8 full at most (tombstones counted): 100,000 Jobs take 131,072
	   slots, not 262,144 */
	if ((m->used + 1) * 8 > m->cap * 7)
		rc = grow(m, borrow);
	else if (borrow && !m->borrowed) /* the map's first borrowed key */
		rc = rebuild(m, m->cap, true);
	if (rc)
		return rc;
	for (i = controller_map_hash(key) & (m->cap - 1); live(&m->slots[i]);
	     i = (i + 1) & (m->cap - 1))
		;
	s = &m->slots[i];
	if (!s->key)
		m->used++; /* an empty slot (a tombstone was counted) */
	s->key = borrow ? (char *)(uintptr_t)key : strdup(key);
	if (!s->key) {
		s->key = tomb; /* counted in used: stays a tombstone */
		return GPUQ_ENOMEM;
	}
	borrowed_set(m->borrowed, i, borrow);
	s->value = value;
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

	if (s && borrowed(m, (size_t)(s - m->slots)))
		s->key = (char *)(uintptr_t)key;
}

void *controller_map_del(controller_map_t *m, const char *key)
{
	controller_map_slot_t *s = find(m, key);
	size_t i = s ? (size_t)(s - m->slots) : 0;
	void *v;

	if (!s)
		return NULL;
	v = s->value;
	if (!borrowed(m, i))
		free(s->key);
	borrowed_set(m->borrowed, i, false);
	s->key = tomb;
	s->value = NULL;
	m->n--;
	return v;
}

controller_map_slot_t *controller_map_next(const controller_map_t *m, size_t *pos)
{
	while (*pos < m->cap) {
		controller_map_slot_t *s = &m->slots[(*pos)++];
		if (live(s))
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
