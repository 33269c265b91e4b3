/* cmds: the commands of the svc tool that live in their own files. Each takes the loaded
 * configuration and the arguments after its name, and returns the exit code
 * (0 ok, 1 failure, 2 usage). */
#ifndef SVC_CLI_CMDS_H
#define SVC_CLI_CMDS_H

#include "config.h"

/* export.c: svc export, svc import (SPEC 5, 7) */
int cmd_export(struct svc_config *cfg, int argc, char **argv);
int cmd_import(struct svc_config *cfg, int argc, char **argv);

#endif
