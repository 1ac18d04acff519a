/* cmd: the subcommands of bin/gpuq. Each takes argv with argv[0] = its own
 * name, returns the process exit code (0 ok, 1 failure, 2 usage error). */
#ifndef GPUQ_CMD_H
#define GPUQ_CMD_H

int cmd_serve(int argc, char **argv);
int cmd_certs(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_store(int argc, char **argv);
int cmd_status(int argc, char **argv);

#endif
