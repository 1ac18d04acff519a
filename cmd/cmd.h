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

#endif
