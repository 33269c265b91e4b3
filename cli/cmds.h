/* cmds: the commands of the svc tool that live in their own files. Each takes the loaded
 * configuration and the arguments after its name, and returns the exit code
 * (0 ok, 1 failure, 2 usage). */
#ifndef SVC_CLI_CMDS_H
#define SVC_CLI_CMDS_H

#include "config.h"

/* export.c: svc export, svc import (SPEC 5, 7) */
int cmd_export(struct svc_config *cfg, int argc, char **argv);
int cmd_import(struct svc_config *cfg, int argc, char **argv);

/* search.c: svc search (SPEC 13.3) */
int cmd_search(struct svc_config *cfg, int argc, char **argv);

/* svc.c: for a command that reads every session of the root (export, fsck), called
 * once its arguments are parsed: when the session root does not exist, prints the one error
 * line and returns 1 (a backup run with the wrong SVC_HOME must not report "0 sessions
 * exported" and succeed); else 0. */
int svc_cli_root_missing(const struct svc_config *cfg);
/* svc.c: why (NULL: none) on stderr, then the usage of command cmd (NULL: of every command)
 * from svc.c's table of commands; returns 2. */
int svc_cli_usage(const char *cmd, const char *why);
/* svc.c: err as the one line "svc: <code>: <message>" on stderr; returns 1. */
int svc_cli_fail(const struct svc_err *err);
/* svc.c: o as svc writes JSON (indented) on stdout, and a newline; o is released. Returns 0. */
int svc_cli_print_json(json_object *o);

#endif
