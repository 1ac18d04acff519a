/* cmd: the subcommands of bin/gpuq. Each takes argv with argv[0] = its own
 * name, returns the process exit code (0 ok, 1 failure, 2 usage error). */
#ifndef GPUQ_CMD_H
#define GPUQ_CMD_H

#include "base/base.h"
#include "ledger/ledger.h"

int cmd_serve(int argc, char **argv);
int cmd_certs(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_store(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* For the tools that read a state store (`gpuq store`, `gpuq simulate
 * --state-dir`): a SIGBUS or SIGSEGV (a damaged data.mdb the store's checks
 * did not catch: LMDB follows its page pointers into the map) ends the
 * process with "store corrupt: ..." naming dir on stderr and exit 1, not a
 * crash. dir is copied; call once, before opening the store. */
void cmd_store_fault_guard(const char *dir);

/* One `--price FLAVOR=PRICE` flag (v is split in place: out->flavor points
 * into it). GPUQ_EINVAL with diag naming the value. */
int cmd_price_flag(char *v, ledger_price_t *out, gpuq_diag_t *diag);

/* Prices gpuq report usage takes from a live cluster's ResourceFlavors. */
#define CMD_LIVE_PRICES_MAX 256 /* POLICY_FLAVORS_MAX: one per flavor */

/* What cmd_report_live_load found (cmd_live_usage_deinit frees it). */
typedef struct {
	ledger_price_t prices[CMD_LIVE_PRICES_MAX]; /* the flavors' price annotations */
	char *names[CMD_LIVE_PRICES_MAX];	    /* owned: prices[i].flavor */
	size_t n_prices;			    /* entries */
	size_t parts;				    /* checkpoint ConfigMaps merged */
	int64_t newest_at_ms;			    /* the newest part's time (ms) */
} cmd_live_usage_t;

/* `gpuq report usage --kubeconfig F` (kubeconfig NULL: in cluster): merge
 * the leader's checkpoint ConfigMaps gpuq-usage-0..7 of lease_ns into l (an
 * empty ledger, the caller's) and read every ResourceFlavor's price
 * annotation into *u. GPUQ_ENOTFOUND when no part exists, GPUQ_ECORRUPT
 * naming a part that fails its checks, the apiserver's errors; diag says
 * which. */
int cmd_report_live_load(const char *kubeconfig, const char *lease_ns, ledger_t *l,
			 cmd_live_usage_t *u, gpuq_diag_t *diag);
void cmd_live_usage_deinit(cmd_live_usage_t *u);

#endif
