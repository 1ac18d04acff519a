/* cmd: the subcommands of bin/gpuq. Each takes argv with argv[0] = its own
 * name, returns the process exit code (0 ok, 1 failure, 2 usage error). */
#ifndef GPUQ_CMD_H
#define GPUQ_CMD_H

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

#endif
