/*
 * ledger: the usage ledger behind chargeback. It records how long each
 * workload held quota, per (LocalQueue, ClusterQueue, flavor, resource)
 * series, split into the part within its ClusterQueue's nominal quota and
 * the part borrowed from the cohort, and answers one question: how much of
 * each was held over a window (ledger_window, the one function the report,
 * the simulator and anything else read usage through).
 *
 * Pure: no I/O, no clock (times are arguments, int64 ms), no globals,
 * deterministic. Not thread-safe: one ledger is used by one thread at a time
 * (the queue core owns one and feeds it; tools build their own from records).
 *
 * The design decision that matters: closed work is kept in hour buckets
 * (amount x ms per series, nominal and borrowed apart), open work as one
 * interval per admitted workload (its start and its per-series amounts,
 * the borrowed part decided at admission). So the ledger's size is bounded
 * by hours x series, not by the number of workloads that ever ran, and a
 * window is exact to the hour: it starts at the beginning of the hour
 * holding `since` and ends at the end of the hour holding `until` (closed
 * work), open work being clipped to the same bounds and to `now`.
 *
 * Bounds, each stated where it bites: LEDGER_HOURS_MAX hour buckets (past
 * it the oldest hour is dropped and its totals added to the "dropped"
 * tally that reports show); LEDGER_SERIES_MAX series (a part of a new
 * series past it is not recorded and is counted as unrecorded); one open
 * interval per workload uid, LEDGER_PARTS_MAX parts each.
 *
 * Records (for a store; keys sort in the order a restore needs them:
 * meta, series, hours, open intervals): "0meta" (clock, dropped and
 * unrecorded tallies), "1series/XXXXXXXX" (hex id: the four names),
 * "2hour/XXXXXXXXXXXXXXXX" (offset-binary hex hour: per series nominal and
 * borrowed amount-ms), "3open/<uid>" (start, per series nominal and
 * borrowed amounts). Values start with a one-byte version (1), then
 * little-endian fixed-width fields and u16-length-prefixed strings.
 */
#ifndef GPUQ_LEDGER_H
#define GPUQ_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

#define LEDGER_HOUR_MS 3600000LL /* one bucket: an hour of ms */
/* Hour buckets kept: 400 days, so a year's report is whole. An hour
 * bucket is at most LEDGER_SERIES_MAX x 20 bytes encoded. */
#define LEDGER_HOURS_MAX (24 * 400)
/* Distinct (LocalQueue, ClusterQueue, flavor, resource) series: 50,000,
 * so one hour's record (20 bytes a series) stays under the core's 1 MiB
 * record cap. */
#define LEDGER_SERIES_MAX 50000
#define LEDGER_PARTS_MAX 128	/* parts of one workload: 8 pod sets x 16 resources */
#define LEDGER_NAME_MAX 253	/* bytes in one name (the core's QUEUE_NAME_MAX) */
#define LEDGER_KEY_MAX 512	/* bytes in a record key */
#define LEDGER_OPEN_MAX 1000000 /* open intervals (the core's workloads cap) */
/* A price per hour above this is refused: a typo, not a GPU. */
#define LEDGER_PRICE_MAX 1000000.0

typedef struct ledger ledger_t; /* opaque */

/* One part of a workload's quota: `nominal + borrowed` of `resource` on
 * `flavor`, charged to a LocalQueue of a ClusterQueue. Amounts in the
 * core's units (millicores for cpu, bytes for memory, units otherwise). */
typedef struct {
	const char *local_queue;   /* "namespace/name" */
	const char *cluster_queue; /* its ClusterQueue */
	const char *flavor;	   /* ResourceFlavor */
	const char *resource;	   /* e.g. "nvidia.com/gpu" */
	int64_t nominal;	   /* within the CQ's nominal quota (>= 0) */
	int64_t borrowed;	   /* above it, borrowed from the cohort (>= 0) */
} ledger_part_t;

/* Create an empty ledger (*out, the caller's: ledger_destroy). GPUQ_ENOMEM. */
int ledger_create(ledger_t **out);

/* Free everything; NULL is fine. */
void ledger_destroy(ledger_t *l);

/* A deep copy of src into *out (the caller's), its changed set empty.
 * GPUQ_ENOMEM. */
int ledger_clone(const ledger_t *src, ledger_t **out);

/* Workload `uid` starts holding the parts at `now`. Parts with no amount
 * are skipped; a part of a new series past LEDGER_SERIES_MAX is counted
 * unrecorded. GPUQ_EEXIST (uid already open: nothing changes), GPUQ_EINVAL
 * (empty uid or name, negative amount, now outside +-2^62), GPUQ_ELIMIT
 * (more than LEDGER_PARTS_MAX parts, a name past LEDGER_NAME_MAX, or
 * LEDGER_OPEN_MAX open), GPUQ_ENOMEM (nothing changes). */
int ledger_open(ledger_t *l, const char *uid, int64_t now, const ledger_part_t *parts, size_t n);

/* Workload `uid` stops holding at `now`: its interval is split into the
 * hour buckets it spans (before its start: nothing). GPUQ_ENOTFOUND (not
 * open), GPUQ_ENOMEM (the interval stays open: close again). */
int ledger_close(ledger_t *l, const char *uid, int64_t now);

/* Whether uid has an open interval. */
bool ledger_is_open(const ledger_t *l, const char *uid);

/* Open intervals held. */
size_t ledger_open_count(const ledger_t *l);

/* Call fn for each open interval's uid, in uid order; fn may not change l.
 * Returns the first non-zero fn return, else GPUQ_OK. */
int ledger_open_each(const ledger_t *l, int (*fn)(void *ctx, const char *uid), void *ctx);

/* The latest `now` the ledger was given (open, close), or 0. */
int64_t ledger_clock(const ledger_t *l);

/* ---- Reading a window ---- */

typedef enum {
	LEDGER_BY_NAMESPACE = 0,    /* the LocalQueue's namespace */
	LEDGER_BY_LOCALQUEUE = 1,   /* "namespace/name" */
	LEDGER_BY_CLUSTERQUEUE = 2, /* ClusterQueue */
	LEDGER_BY_FLAVOR = 3,	    /* ResourceFlavor */
} ledger_by_t;

typedef struct {
	const char *flavor; /* ResourceFlavor */
	double per_hour;    /* price of one accelerator unit for an hour */
} ledger_price_t;

typedef struct {
	int64_t since;		      /* window start (rounded down to its hour) */
	int64_t until;		      /* window end (rounded up to its hour's end) */
	int64_t now;		      /* open work counts up to here */
	ledger_by_t by;		      /* grouping of rows */
	const ledger_price_t *prices; /* per flavor; a flavor not listed has no
					 price: its hours go to unpriced_hours */
	size_t n_prices;	      /* entries */
} ledger_query_t;

/* One row: a group and a resource. Hours are amount x ms / 3,600,000 in
 * display units: cores for cpu (the core's millicores / 1000), GiB for
 * memory (bytes / 2^30), units otherwise (GPUs, MIG slices). */
typedef struct {
	char *group;	       /* the group's name (owned by the rows) */
	char *resource;	       /* resource name (owned by the rows) */
	bool accelerator;      /* priced: not cpu, memory, ephemeral-storage,
				  pods, hugepages-* */
	double nominal_hours;  /* held within nominal quota */
	double borrowed_hours; /* held borrowed from the cohort */
	double cost;	       /* accelerator hours x their flavor's price */
	double unpriced_hours; /* accelerator hours of flavors with no price
				  (in the hours above, not in cost): a report
				  says "no price", never a cost of 0 */
} ledger_row_t;

typedef struct {
	ledger_row_t *rows;   /* sorted by group, then resource (owned) */
	size_t n_rows;	      /* entries */
	int64_t from_ms;      /* the window as counted: hour-aligned start */
	int64_t to_ms;	      /* ... and end (min(until rounded up, now) for open work) */
	double dropped_hours; /* accelerator hours in hours dropped past
				 LEDGER_HOURS_MAX (all groups), or 0 */
	int64_t kept_from_ms; /* the oldest hour still kept, or INT64_MIN if none dropped */
	uint64_t unrecorded;  /* parts never recorded (series cap) */
} ledger_report_t;

/* Usage over a window, grouped: the one rule for "usage over a window".
 * Closed work in every hour bucket whose start lies in [hour(since),
 * hour(until)]; open work clipped to [hour(since), min(end of hour(until),
 * now)]. *out is the caller's (ledger_report_deinit). GPUQ_EINVAL (since
 * after until, a price that is not finite or is negative), GPUQ_ENOMEM. */
int ledger_window(const ledger_t *l, const ledger_query_t *query, ledger_report_t *out);

/* Free a report's rows and zero it. NULL is fine. */
void ledger_report_deinit(ledger_report_t *rep);

/* Whether a resource is an accelerator (priced, counted as GPU-hours). */
bool ledger_resource_accelerator(const char *resource);

/* Parse a price per hour ("2.50", "0", "12"): a plain decimal number of at
 * most 32 bytes, 0..LEDGER_PRICE_MAX. GPUQ_EINVAL with diag naming the
 * value ("price \"abc\": not a decimal number"). */
int ledger_price_parse(const char *s, double *out, gpuq_diag_t *diag);

/* The prices in force into out[0..cap) (*n entries): every flag (e.g.
 * `--price FLAVOR=PRICE`), then each declared price (a ResourceFlavor's
 * annotation) whose flavor no flag names: a flag wins. Strings stay the
 * callers'. GPUQ_ELIMIT when more than cap would be needed. */
int ledger_prices_merge(const ledger_price_t *flags, size_t n_flags, const ledger_price_t *declared,
			size_t n_declared, ledger_price_t *out, size_t cap, size_t *n);

/* ---- Checkpoints: the ledger carried across a failover ----
 *
 * A checkpoint is the ledger's usage up to a time `at` as hour cells
 * (closed work, plus open work clipped to `at` folded into its hours),
 * split into self-contained parts of at most a given size (each names its
 * own series), newest hours first; what does not fit in
 * LEDGER_CKPT_PARTS_MAX parts (the oldest hours) is left out. A part:
 *
 *   "GQLC", u8 version (1), i64 at (ms), u32 series, then per series four
 *   u16-length-prefixed names (LocalQueue, ClusterQueue, flavor,
 *   resource), u32 hours, then per hour (ascending, distinct) i64 hour
 *   number, u32 cells, per cell LEB128 varints: series index (ascending,
 *   < series), nominal and borrowed amount x ms (rounded to integers,
 *   saturating at 2^64-1). Little-endian; nothing after the last hour.
 *
 * Merging adds, per (hour, series) cell and nominal and borrowed apart,
 * only what the part holds beyond what the ledger itself counts for that
 * cell up to `at` (its closed work there plus its open intervals clipped
 * to `at`), never less than nothing. So a part merged twice, or one whose
 * hours the ledger counted itself (the same replica's own checkpoint), adds
 * nothing; a new leader whose core started after `at` takes the part whole. */

#define LEDGER_CKPT_VERSION 1
/* Bytes in one part at most: a ConfigMap holds at most 1 MiB of data and
 * travels as base64 (4/3) in JSON; 512 KiB is 683 KiB on the wire, under
 * etcd's 1.5 MiB request cap with room for the object around it. */
#define LEDGER_CKPT_PART_MAX (512u << 10)
/* Parts at most (one ConfigMap each): 4 MiB, about 500,000 cells of ~8
 * bytes, so 400 days of hours (9,600) for ~50 busy series. */
#define LEDGER_CKPT_PARTS_MAX 8

typedef struct {
	size_t parts;		 /* parts made */
	size_t bytes;		 /* their total size */
	uint32_t hours;		 /* hours carried */
	uint32_t cells;		 /* cells carried */
	uint32_t hours_left_out; /* the ledger's oldest hours not carried (no room) */
	int64_t oldest_ms;	 /* start of the oldest hour carried, or INT64_MIN */
} ledger_ckpt_info_t;

/* Encode l's usage up to `at` into at most LEDGER_CKPT_PARTS_MAX parts of
 * at most part_max bytes (0: LEDGER_CKPT_PART_MAX; at least 64), newest
 * hours in parts[0]. parts[i] (malloc'd) and lens[i] for i < info->parts,
 * the caller frees each; an empty ledger gives one part with no hours.
 * Open work before `at` minus LEDGER_HOURS_MAX hours is not carried.
 * GPUQ_ENOMEM (nothing returned). */
int ledger_checkpoint_encode(const ledger_t *l, int64_t at, size_t part_max,
			     uint8_t *parts[LEDGER_CKPT_PARTS_MAX],
			     size_t lens[LEDGER_CKPT_PARTS_MAX], ledger_ckpt_info_t *info);

typedef struct {
	int64_t at;		/* the part's time */
	uint32_t series;	/* series it names */
	uint32_t hours;		/* hours it holds */
	uint32_t cells_added;	/* cells that added usage to the ledger */
	uint32_t cells_skipped; /* cells not merged: older than the ledger keeps
				   (LEDGER_HOURS_MAX before `at`, or dropped), or
				   of a series past LEDGER_SERIES_MAX */
	double added_acc_hours; /* accelerator amount-hours added (GPU-hours) */
} ledger_merge_info_t;

/* Check part buf[0..len) whole, then merge it into l (rule above); the
 * records it changes join l's changed set, and l's clock moves to at least
 * the part's `at`. GPUQ_ECORRUPT with diag naming what is wrong (bad magic,
 * unknown version, truncated, trailing bytes, a count past its cap, a name
 * empty or too long, hours not ascending, a series index out of range or
 * repeated) and l unchanged; GPUQ_ENOMEM (l may hold part of the merge:
 * merging the same part again completes it). info may be NULL. */
int ledger_checkpoint_merge(ledger_t *l, const uint8_t *buf, size_t len, ledger_merge_info_t *info,
			    gpuq_diag_t *diag);

/* ---- Records ---- */

typedef struct {
	size_t pos; /* cursor; zero-initialize */
} ledger_dirty_iter_t;

/* Next record key changed since ledger_dirty_clear (borrowed: valid until
 * the next change or clear), GPUQ_ENOTFOUND when done. A key closed and
 * opened again in one batch may appear twice; encoding gives its current
 * value both times. GPUQ_ENOMEM: a change could not be recorded; call
 * ledger_dirty_all and iterate again. */
int ledger_dirty_next(const ledger_t *l, ledger_dirty_iter_t *it, const uint8_t **key,
		      size_t *klen);
size_t ledger_dirty_count(const ledger_t *l);
void ledger_dirty_clear(ledger_t *l);
/* Mark every record changed, in restore order. GPUQ_ENOMEM. */
int ledger_dirty_all(ledger_t *l);

/* Encode record `key` into buf[0..cap) (*len: its length, or the length
 * needed with GPUQ_ELIMIT). GPUQ_ENOTFOUND: no such record (delete it). */
int ledger_record_encode(const ledger_t *l, const uint8_t *key, size_t klen, uint8_t *buf,
			 size_t cap, size_t *len);

/* Apply one record into a ledger being restored (records in any order;
 * then ledger_restore_done). GPUQ_ECORRUPT (bad version, key, length, a
 * record twice, a value out of range) or GPUQ_ENOMEM, with diag; a failed
 * apply leaves the ledger as it was. Does not mark anything changed. */
int ledger_record_apply(ledger_t *l, const uint8_t *key, size_t klen, const uint8_t *val,
			size_t vlen, gpuq_diag_t *diag);

/* After the last record: every series id named has its series record.
 * GPUQ_ECORRUPT with diag naming the missing one; the ledger is then not
 * to be used. */
int ledger_restore_done(const ledger_t *l, gpuq_diag_t *diag);

/* Bytes held on the heap. */
size_t ledger_memory_bytes(const ledger_t *l);

#endif
