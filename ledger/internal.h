/*
 * ledger internals, shared by the .c files of ledger/ only: the series table, hour
 * buckets, open intervals and the changed set.
 */
#ifndef GPUQ_LEDGER_INTERNAL_H
#define GPUQ_LEDGER_INTERNAL_H

#include "ledger/ledger.h"

typedef struct {
	char *lq;      /* "namespace/name"; NULL: an id not restored (yet) */
	char *cq;      /* ClusterQueue */
	char *flavor;  /* ResourceFlavor */
	char *res;     /* resource */
	uint32_t hash; /* of the four names */
	bool dirty;    /* in the changed set */
} series_t;

typedef struct {
	uint32_t s; /* series id */
	double nom; /* amount x ms within nominal */
	double bor; /* amount x ms borrowed */
} cell_t;

typedef struct {
	int64_t h;    /* hour number: start / LEDGER_HOUR_MS */
	cell_t *c;    /* cells sorted by series id (owned) */
	uint32_t n;   /* cells */
	uint32_t cap; /* allocated */
	bool dirty;   /* in the changed set */
} hour_t;

typedef struct {
	uint32_t s;  /* series id */
	int64_t nom; /* amount within nominal */
	int64_t bor; /* amount borrowed */
} opart_t;

typedef struct {
	char *uid;     /* workload uid (owned) */
	uint32_t hash; /* of uid */
	int64_t start; /* when it started holding */
	opart_t *p;    /* its parts (owned) */
	uint32_t n;    /* parts */
	bool dirty;    /* in the changed set */
} open_t;

struct ledger {
	series_t *series;    /* by id (dense, never removed) */
	uint32_t n_series;   /* entries */
	uint32_t cap_series; /* allocated */
	uint32_t *smap;	     /* open addressing: series id + 1, 0 empty */
	uint32_t smap_cap;   /* slots (a power of two) */
	hour_t *hours;	     /* sorted by hour */
	uint32_t n_hours;    /* entries, <= LEDGER_HOURS_MAX */
	uint32_t cap_hours;  /* allocated */
	open_t *opens;	     /* open intervals, unordered */
	uint32_t n_open;     /* entries */
	uint32_t cap_open;   /* allocated */
	uint32_t *omap;	     /* open addressing: open index + 1, 0 empty */
	uint32_t omap_cap;   /* slots (a power of two) */
	int64_t clock;	     /* latest now seen */
	double dropped_acc;  /* accelerator amount x ms in dropped hours */
	int64_t kept_from;   /* oldest kept hour after a drop, INT64_MIN if none */
	uint64_t unrecorded; /* parts not recorded (series cap) */
	bool meta_dirty;     /* meta in the changed set */
	char **dirty;	     /* changed keys (owned) */
	size_t n_dirty;	     /* entries */
	size_t cap_dirty;    /* allocated */
	bool dirty_lost;     /* a change could not be recorded */
};

uint32_t ledger_hash(const char *s, uint32_t h);
int ledger_grow(void *pp, uint32_t *cap, uint32_t need, size_t size);
int ledger_series_find(const ledger_t *l, const char *lq, const char *cq, const char *flavor,
		       const char *res, uint32_t *id);
int ledger_series_add(ledger_t *l, const char *lq, const char *cq, const char *flavor,
		      const char *res, uint32_t *id);
int ledger_series_put(ledger_t *l, uint32_t id, const char *lq, const char *cq, const char *flavor,
		      const char *res);
int ledger_open_find(const ledger_t *l, const char *uid, uint32_t *idx);
int ledger_open_insert(ledger_t *l, open_t *o);
int ledger_hour_find(const ledger_t *l, int64_t h, uint32_t *idx);
int ledger_hour_insert(ledger_t *l, int64_t h, uint32_t *idx);
void ledger_mark(ledger_t *l, char kind, const void *obj);
void ledger_mark_deleted(ledger_t *l, char *key);
/* Add nom and bor (amount x ms) to series s in hour h, the hour bound
 * kept (the oldest hour dropped past LEDGER_HOURS_MAX). GPUQ_ERANGE: h is
 * older than the ledger keeps (nothing added); GPUQ_ENOMEM. */
int ledger_hour_credit(ledger_t *l, int64_t h, uint32_t s, double nom, double bor);
/* The clock moves to now if later (meta marked changed). */
void ledger_clock_advance(ledger_t *l, int64_t now);
int ledger_key(char kind, const ledger_t *l, const void *obj, char *out, size_t cap);

#define LEDGER_K_META 'm'
#define LEDGER_K_SERIES 's'
#define LEDGER_K_HOUR 'h'
#define LEDGER_K_OPEN 'o'

#endif
