/* chatgpt: import ChatGPT's data export (SPEC 13.3, `svc import --from chatgpt FILE`): its
 * conversations.json, or the export .zip holding it (the zip's central directory read here,
 * the member inflated with zlib). One session per conversation, id chatgpt-<id>, along its
 * current branch (current_node back to the root through the mapping's parents), with its
 * title and create_time/update_time; user and assistant text parts become Strands messages
 * (a run of one role is one message, so roles alternate), anything else is left out and
 * counted, as are the other branches. The whole file is read and checked first: a damaged
 * one is an error and nothing is written. Each session is staged in the root and renamed
 * into place; an id the root has is skipped. *report: {"conversations", "imported": [ids],
 * "skipped": [{"session_id", "reason"}], "messages", "left_out", "other_branches"}. */
#ifndef SVC_CHATGPT_H
#define SVC_CHATGPT_H

#include <json-c/json.h>

#include "config.h"
#include "err.h"
#include "import.h"

/* opt: dry_run and progress (overwrite is not taken: SVC_E_INVALID_FIELD). */
int svc_chatgpt_import(const struct svc_config *cfg, const char *file,
                       const struct svc_import_options *opt, json_object **report,
                       struct svc_err *err);

#endif
