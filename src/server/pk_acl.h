/*
 * pk_acl: ACL users in Redis 7.0's model -- the user set, the rules of
 * ACL SETUSER, the permission check of a command, the description that
 * ACL LIST / GETUSER / SAVE print, and the ACL log.  No I/O: the ACL
 * command, AUTH and the ACL file are pk_cmd_acl.c.
 *
 * A user has flags (on/off, nopass), SHA-256 password hashes (hex, never
 * the password) and selectors: the root selector and those added with
 * "(...)".  A selector holds a bitmap of command ids (the command table's
 * index, then the subcommands of container commands such as CONFIG GET,
 * then one bit that only +@all sets: "future commands"), allowed first
 * arguments (+select|0), key patterns with read/write permissions and
 * channel patterns.  A command is allowed when one selector allows it
 * and every key it names.
 *
 * It lives in src/server, not src/core, because a rule names commands of
 * the command table (pk_cmd.h) and patterns match with the store's glob.
 * Not thread-safe: the loop thread owns it.
 */
#ifndef PK_SERVER_PK_ACL_H
#define PK_SERVER_PK_ACL_H

#include <stddef.h>
#include <stdint.h>

#include "proto/pk_resp.h"

typedef struct pk_acl pk_acl;
typedef struct pk_acl_user pk_acl_user;
struct pk_cmd;

/* Outcomes of pk_acl_check, in Redis's order (a later one is reported
 * over an earlier one when selectors disagree). */
enum {
    PK_ACL_OK = 0,
    PK_ACL_DENIED_CMD = 1,
    PK_ACL_DENIED_KEY = 2,
    PK_ACL_DENIED_AUTH = 3,
    PK_ACL_DENIED_CHANNEL = 4,
};

/* The command table (sorted by name, static storage) ACL rules name and
 * bitmaps index: given once, on the loop before any other thread uses
 * pk_acl (the server does it); later calls change nothing. */
void pk_acl_commands(const struct pk_cmd *table, size_t n);

/* The set with only "default": on, nopass, ~*, &*, +@all.  NULL when out
 * of memory or before pk_acl_commands. */
pk_acl *pk_acl_new(void);
void pk_acl_free(pk_acl *a);

/* The user named so, or NULL.  The pointer stays valid until the user is
 * deleted (pk_acl_deluser, pk_acl_load_swap). */
pk_acl_user *pk_acl_find(const pk_acl *a, const char *name, size_t len);
pk_acl_user *pk_acl_default(const pk_acl *a);
const char *pk_acl_user_name(const pk_acl_user *u); /* NUL-terminated */
int pk_acl_user_on(const pk_acl_user *u);
int pk_acl_user_nopass(const pk_acl_user *u);
/* 1 when u may run every command on every key and channel (the root
 * selector has allcommands, allkeys and allchannels): the dispatcher
 * skips the check.  O(1). */
int pk_acl_user_unrestricted(const pk_acl_user *u);

/*
 * Applies rules to the user named name, creating it (off, no rights) when
 * missing; all or nothing.  Returns 0, PK_EINVAL with *err set to Redis's
 * text ("Error in ACL SETUSER modifier '...': ..."; malloc'd, the
 * caller frees it), or PK_ENOMEM.  A rule may be binary (>password).
 * Rules spanning a selector ("(~a*", "+get)") are merged first.
 */
int pk_acl_setuser(pk_acl *a, const char *name, size_t nlen, int nrules,
                   const pk_arg *rules, char **err);

/* Removes the user (never "default"): 1 if it existed, else 0.  gone
 * (if not NULL) is called with the user first, so that the caller drops
 * the connections that use it: the pointer is invalid after. */
int pk_acl_deluser(pk_acl *a, const char *name, size_t nlen,
                   void (*gone)(void *arg, const pk_acl_user *u), void *arg);

/* 1 when pass is a password of u (or u is nopass) and u is on. */
int pk_acl_user_auth(const pk_acl_user *u, const void *pass, size_t len);

/* The users in name order: pk_acl_first, then pk_acl_next until NULL. */
pk_acl_user *pk_acl_first(const pk_acl *a);
pk_acl_user *pk_acl_next(const pk_acl_user *u);
size_t pk_acl_count(const pk_acl *a);

/*
 * Whether u may run cmd with these arguments (argv[0] is the command's
 * name): PK_ACL_OK, or a PK_ACL_DENIED_* with *pos the argument at fault
 * (for keys).  The name Redis gives the command ("config|get") goes to
 * *fullname (static storage), when fullname is not NULL.
 */
int pk_acl_check(const pk_acl_user *u, const struct pk_cmd *cmd, int argc,
                 const pk_arg *argv, int *pos, const char **fullname);

/* Whether a selector of u allows cmd with these arguments and may read
 * every key (allkeys, ~* or %R~*): SORT BY and GET need it. */
int pk_acl_reads_all(const pk_acl_user *u, const struct pk_cmd *cmd, int argc,
                     const pk_arg *argv);

/* Whether u may read key (some selector's pattern with read rights). */
int pk_acl_key_readable(const pk_acl_user *u, const void *key, size_t len);

/* The user's rules as ACL LIST shows them, without "user name ":
 * "on nopass ~* &* +@all".  malloc'd, or NULL when out of memory. */
char *pk_acl_describe(const pk_acl_user *u);

/* GETUSER's pieces.  flags: "on"/"off", "nopass", the sanitize flags
 * (up to 5), returns how many.
 * pk_acl_user_passwords: number of hashes, hash i via pk_acl_user_pass.
 * nsel: selectors besides root; for selector i (0: root) the three
 * strings of GETUSER -- commands, keys, channels -- malloc'd. */
int pk_acl_user_flags(const pk_acl_user *u, const char *flags[5]);
size_t pk_acl_user_passwords(const pk_acl_user *u);
const char *pk_acl_user_pass(const pk_acl_user *u, size_t i); /* 64 hex */
size_t pk_acl_user_selectors(const pk_acl_user *u);
int pk_acl_selector_describe(const pk_acl_user *u, size_t i, char **cmds,
                             char **keys, char **chans);

/* The 21 categories in Redis's order (ACL CAT): name i, or NULL past the
 * end.  pk_acl_cat_cmds calls fn for every command and subcommand name
 * in category name; returns PK_ENOTFOUND for an unknown category. */
const char *pk_acl_category(int i);
int pk_acl_cat_cmds(const char *name, size_t len,
                    void (*fn)(void *arg, const char *name), void *arg);

/* SHA-256 of pass as 64 lower-case hex digits and a NUL into hex. */
void pk_acl_hash(const void *pass, size_t len, char hex[65]);

/*
 * The ACL log: pk_acl_log_add records a denial (reason PK_ACL_DENIED_*,
 * context "toplevel" or "multi", the object: command, key or user name),
 * merged with a like entry of the last minute (count + 1); at most
 * pk_acl_log_limit entries (PK_ACL_LOG_MAX at first; acllog-max-len),
 * newest first.  pk_acl_log_get gives entry i.  pk_acl_log_limit drops
 * the oldest entries over n; 0 or PK_ENOMEM.
 */
#define PK_ACL_LOG_MAX 128
int pk_acl_log_limit(pk_acl *a, size_t n);
typedef struct pk_acl_log_entry {
    uint64_t count;
    int reason;
    const char *context;
    char *object, *username, *cinfo; /* owned by the log */
    uint64_t ctime_ms;
} pk_acl_log_entry;
void pk_acl_log_add(pk_acl *a, int reason, const char *context,
                    const void *object, size_t olen, const char *username,
                    const char *cinfo, uint64_t now_ms);
size_t pk_acl_log_len(const pk_acl *a);
const pk_acl_log_entry *pk_acl_log_get(const pk_acl *a, size_t i);
void pk_acl_log_reset(pk_acl *a);

/*
 * ACL LOAD: parses a file's text (lines "user name rules...") into a new
 * user set, checking every line; on success swaps it in and returns 0:
 * "default" keeps its address (connections hold it) and takes the file's
 * rules (or the initial ones when the file has none); every other old
 * user is passed to gone (if not NULL) and freed, as Redis drops their
 * connections.  Else PK_EINVAL with *err (malloc'd) in Redis's words and
 * the set unchanged, or PK_ENOMEM.  path names the file in messages.
 */
int pk_acl_load_text(pk_acl *a, const char *text, size_t len, const char *path,
                     void (*gone)(void *arg, const pk_acl_user *u), void *arg,
                     char **err);

/*
 * A cluster node takes the users the coordinator holds (text as ACL SAVE
 * writes it): users in both keep their address and connections and take
 * the new rules, new ones are added, the others are passed to gone and
 * freed.  Returns 0, PK_EINVAL (*err malloc'd; nothing changed) or
 * PK_ENOMEM.
 */
int pk_acl_sync_text(pk_acl *a, const char *text, size_t len,
                     void (*gone)(void *arg, const pk_acl_user *u), void *arg,
                     char **err);

/* The file ACL SAVE writes: one "user name rules" line each (malloc'd). */
char *pk_acl_save_text(const pk_acl *a);

#endif
