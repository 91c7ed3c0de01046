/*
 * pk_acl_int: what pk_acl.c (users, rules, checks) and pk_acl_ids.c (the
 * command id space, categories, rule descriptions) share.  Internal.
 *
 * Command ids: 0 .. ntable-1 are the command table's entries in table
 * order, then the subcommands of container commands (CONFIG GET ...),
 * each parent's together; PK_ACL_FUTURE is the bit only +@all sets.
 */
#ifndef PK_SERVER_PK_ACL_INT_H
#define PK_SERVER_PK_ACL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "server/pk_acl.h"

#define PK_ACL_BITS 1024
#define PK_ACL_WORDS (PK_ACL_BITS / 64)
#define PK_ACL_FUTURE (PK_ACL_BITS - 1)
#define PK_ACL_NCATS 21

/* Selector flags, as Redis names them. */
#define SEL_ALLKEYS 0x1u
#define SEL_ALLCHANNELS 0x2u
#define SEL_ALLCOMMANDS 0x4u

/* User flags. */
#define USER_ON 0x1u
#define USER_OFF 0x2u
#define USER_NOPASS 0x4u
#define USER_SKIP_SANITIZE 0x8u
#define USER_SANITIZE 0x10u

#define PERM_R 0x1u
#define PERM_W 0x2u

typedef struct acl_pat {
    char *p; /* owned, NUL-terminated (no NUL inside: rules refuse one) */
    size_t len;
    unsigned perm; /* PERM_R | PERM_W; 0 for a channel */
} acl_pat;

typedef struct acl_farg { /* +select|0: a first argument allowed */
    uint16_t id;
    char *arg; /* owned */
} acl_farg;

typedef struct acl_sel {
    unsigned flags;
    uint64_t bits[PK_ACL_WORDS];
    acl_pat *keys;
    size_t nkeys;
    acl_pat *chans;
    size_t nchans;
    acl_farg *fargs;
    size_t nfargs;
} acl_sel;

struct pk_acl_user {
    char *name; /* owned, NUL-terminated */
    size_t nlen;
    unsigned flags;
    char (*pass)[65]; /* owned: hex SHA-256, NUL-terminated */
    size_t npass;
    acl_sel *sel; /* owned; sel[0] is the root selector */
    size_t nsel;
    pk_acl_user *next; /* in name order */
    int mark;          /* pk_acl_sync_text: defined by the new text */
};

struct pk_acl {
    pk_acl_user *users; /* owned, in name order; "default" always there */
    pk_acl_user *def;
    size_t nusers;
    pk_acl_log_entry *log; /* owned, newest first; room for maxlog */
    size_t nlog, maxlog;
};

/* pk_acl.c: users -- new (off, no rights; NULL when out of memory),
 * freed (NULL ok), cleared of their rights, a list freed, the initial
 * default user; the link where name is or would go in a's list; src's
 * rights moved into dst (dst keeps its name and place; src is freed). */
void pk__acl_pats_free(acl_pat *p, size_t n);
void pk__acl_sel_clear(acl_sel *s);
pk_acl_user *pk__acl_user_new(const char *name, size_t len);
void pk__acl_user_free(pk_acl_user *u);
void pk__acl_user_clear(pk_acl_user *u);
void pk__acl_users_free(pk_acl_user *u);
pk_acl_user *pk__acl_default_new(void);
pk_acl_user **pk__acl_slot_of(pk_acl *a, const char *name, size_t len);
void pk__acl_take_rights(pk_acl_user *dst, pk_acl_user *src);

/* pk_acl_rules.c: one rule applied to u: 0, PK_ENOMEM, or PK_EINVAL with
 * *why Redis's reason (static); pk__acl_e_noent is the reason of an
 * unknown command or category.  pk__acl_rules_merge joins the arguments
 * of a selector ("(~a", "+get)") into one rule: 0, PK_ENOMEM, or
 * PK_EINVAL with *open the argument that opened an unclosed one; the
 * vector is freed with pk__acl_rulev_free in every case. */
/* Rules as one string each, a selector's parts joined (Redis's
 * ACLMergeSelectorArguments); *out is malloc'd strings and lengths. */
typedef struct acl_rulev {
    char **s;
    size_t *len;
    int n;
} acl_rulev;

int pk__acl_user_rule(pk_acl_user *u, const char *op, size_t len,
                      const char **why);
int pk__acl_rules_merge(int n, const pk_arg *a, acl_rulev *v, int *open);
void pk__acl_rulev_free(acl_rulev *v);
extern const char pk__acl_e_noent[];
extern const char pk__acl_e_wrong[];

/* The id space (pk_acl_ids.c); built once, thread-safe after. */
size_t pk__acl_nids(void);              /* table entries + subcommands */
const char *pk__acl_id_name(size_t id); /* "get", "config|get" */
int pk__acl_id_parent(size_t id);       /* parent's id, or -1 */
/* A container's subcommand ids: [*first, *first + *n). */
void pk__acl_id_subs(size_t id, size_t *first, size_t *n);
/* The id of a command (table entry), and of its subcommand sub when the
 * command is a container that has one (else the command's). */
size_t pk__acl_cmd_id(const struct pk_cmd *cmd);
size_t pk__acl_sub_id(size_t id, const char *sub, size_t len);
/* The id named "name" or "name|sub" (any case), or -1. */
long pk__acl_lookup(const char *name, size_t len);
/* Category index by name (any case), or -1; its ids as a bitmap. */
int pk__acl_cat_find(const char *name, size_t len);
const uint64_t *pk__acl_cat_bits(int cat);

/* Selector bit operations shared by rules and descriptions. */
static inline int sel_bit(const acl_sel *s, size_t id)
{
    return (s->bits[id / 64] >> (id % 64)) & 1u;
}
void pk__acl_sel_perm(acl_sel *s, size_t id, int allow);
void pk__acl_sel_cat(acl_sel *s, int cat, int allow);

/* GETUSER's "commands" string of a selector (malloc'd or NULL). */
char *pk__acl_describe_cmds(const acl_sel *s);

#endif
