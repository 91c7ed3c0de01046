/*
 * pk_acl: the SETUSER rule parser (Redis 7.0's rules, errors and
 * all-or-nothing application), password hashing (SHA-256 known answers),
 * the permission check of commands and keys with read/write patterns,
 * the description of command rules (categories round-trip), selectors,
 * the log, and the ACL file's text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/pk_err.h"
#include "server/pk_acl.h"
#include "server/pk_acl_int.h"
#include "server/pk_cmd.h"

/* SETUSER name with the rules in a NULL-terminated list; returns rc and
 * leaves the error text (or "") in err_out. */
static char err_out[1024];

static int setuser(pk_acl *a, const char *name, const char *const *rules)
{
    pk_arg v[32];
    int n = 0, rc;
    char *err = NULL;

    for (; rules[n]; n++)
        v[n] = (pk_arg){rules[n], strlen(rules[n])};
    rc = pk_acl_setuser(a, name, strlen(name), n, v, &err);
    strcpy(err_out, err ? err : "");
    free(err);
    return rc;
}
#define SET(a, name, ...)                                                      \
    setuser((a), (name), (const char *const[]){__VA_ARGS__, NULL})

/* pk_acl_check on "cmd args..." for user u. */
static int check(const pk_acl_user *u, const char *const *words)
{
    pk_arg v[16];
    int n = 0, pos = 0;
    const pk_cmd *c;

    for (; words[n]; n++)
        v[n] = (pk_arg){words[n], strlen(words[n])};
    c = pk_cmd_find(v[0].ptr, v[0].len);
    assert_non_null(c);
    return pk_acl_check(u, c, n, v, &pos, NULL);
}
#define CHECK(u, ...) check((u), (const char *const[]){__VA_ARGS__, NULL})

static char *cmds_of(const pk_acl_user *u)
{
    char *c, *k, *ch;

    assert_int_equal(pk_acl_selector_describe(u, 0, &c, &k, &ch), 0);
    free(k);
    free(ch);
    return c;
}

static void test_hash_known_answers(void **state)
{
    char hex[65];

    (void)state;
    pk_acl_hash("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb924"
                             "27ae41e4649b934ca495991b7852b855");
    pk_acl_hash("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223"
                             "b00361a396177a9cb410ff61f20015ad");
}

static void test_default_user(void **state)
{
    pk_acl *a = pk_acl_new();
    pk_acl_user *d;
    char *desc;

    (void)state;
    assert_non_null(a);
    d = pk_acl_default(a);
    assert_ptr_equal(pk_acl_find(a, "default", 7), d);
    assert_true(pk_acl_user_unrestricted(d));
    assert_true(pk_acl_user_auth(d, "anything", 8));
    desc = pk_acl_describe(d);
    assert_string_equal(desc, "on nopass ~* &* +@all");
    free(desc);
    assert_int_equal(pk_acl_deluser(a, "default", 7, NULL, NULL), 0);
    pk_acl_free(a);
}

static void test_passwords(void **state)
{
    pk_acl *a = pk_acl_new();
    pk_acl_user *u;
    char hex[65];

    (void)state;
    assert_int_equal(SET(a, "u", ">p1", ">p2"), 0);
    u = pk_acl_find(a, "u", 1);
    assert_non_null(u);
    assert_false(pk_acl_user_auth(u, "p1", 2)); /* new users are off */
    assert_int_equal(SET(a, "u", "on"), 0);
    assert_true(pk_acl_user_auth(u, "p1", 2));
    assert_true(pk_acl_user_auth(u, "p2", 2));
    assert_false(pk_acl_user_auth(u, "p3", 2));
    assert_int_equal(pk_acl_user_passwords(u), 2);
    pk_acl_hash("p1", 2, hex);
    assert_string_equal(pk_acl_user_pass(u, 0), hex);
    assert_int_equal(SET(a, "u", "<p1"), 0);
    assert_false(pk_acl_user_auth(u, "p1", 2));
    assert_int_equal(SET(a, "u", "<p1"), PK_EINVAL);
    assert_string_equal(err_out,
                        "Error in ACL SETUSER modifier '<p1': The password "
                        "you are trying to remove from the user does not "
                        "exist");
    assert_int_equal(SET(a, "u", "#abc"), PK_EINVAL);
    assert_int_equal(SET(a, "u",
                         "#ABCDEF0123456789ABCDEF0123456789"
                         "ABCDEF0123456789ABCDEF0123456789"),
                     PK_EINVAL);
    pk_acl_hash("p9", 2, hex);
    {
        char rule[66] = "#";
        strcat(rule, hex);
        assert_int_equal(SET(a, "u", rule), 0);
        assert_true(pk_acl_user_auth(u, "p9", 2));
        rule[0] = '!';
        assert_int_equal(SET(a, "u", rule), 0);
        assert_false(pk_acl_user_auth(u, "p9", 2));
    }
    assert_int_equal(SET(a, "u", "nopass"), 0);
    assert_true(pk_acl_user_auth(u, "x", 1));
    assert_int_equal(SET(a, "u", "resetpass"), 0);
    assert_false(pk_acl_user_auth(u, "x", 1));
    assert_int_equal(SET(a, "u", "nopass", "off"), 0);
    assert_false(pk_acl_user_auth(u, "x", 1));
    pk_acl_free(a);
}

static void test_rule_errors_change_nothing(void **state)
{
    pk_acl *a = pk_acl_new();
    char *c;

    (void)state;
    assert_int_equal(SET(a, "u", "+get"), 0);
    assert_int_equal(SET(a, "u", "+set", "+nosuch"), PK_EINVAL);
    assert_string_equal(err_out, "Error in ACL SETUSER modifier '+nosuch': "
                                 "Unknown command or category name in ACL");
    c = cmds_of(pk_acl_find(a, "u", 1));
    assert_string_equal(c, "-@all +get");
    free(c);
    assert_int_equal(SET(a, "u", "+@nosuch"), PK_EINVAL);
    assert_int_equal(SET(a, "u", "bogus"), PK_EINVAL);
    assert_string_equal(err_out, "Error in ACL SETUSER modifier 'bogus': "
                                 "Syntax error");
    assert_int_equal(SET(a, "u", "+config|get|x"), PK_EINVAL);
    assert_non_null(strstr(err_out, "first-arg of a subcommand"));
    assert_int_equal(SET(a, "u", "+config|nosuch"), PK_EINVAL);
    assert_int_equal(SET(a, "u", "-select|0"), PK_EINVAL);
    assert_int_equal(SET(a, "u", "+select|"), PK_EINVAL);
    assert_int_equal(SET(a, "u", "allkeys", "~a"), PK_EINVAL);
    assert_non_null(strstr(err_out, "'allkeys' flag"));
    assert_int_equal(SET(a, "u", "allchannels", "&a"), PK_EINVAL);
    assert_int_equal(SET(a, "u", "%X~a"), PK_EINVAL);
    assert_int_equal(SET(a, "u", "%~a"), PK_EINVAL); /* no rights */
    assert_int_equal(SET(a, "u", "%"), PK_EINVAL);
    assert_int_equal(SET(a, "u", "(~a", "+get"), PK_EINVAL);
    assert_string_equal(err_out, "Unmatched parenthesis in acl selector "
                                 "starting at '(~a'.");
    /* What would not read back from ACL LIST or the file (partkv only):
     * a first argument with a space or newline, a parenthesis inside a
     * selector. */
    assert_int_equal(SET(a, "u", "+select|0\nuser evil on +@all"), PK_EINVAL);
    assert_string_equal(err_out, "Error in ACL SETUSER modifier '+select|0\n"
                                 "user evil on +@all': Syntax error");
    assert_int_equal(SET(a, "u", "(~a)b", "+get)"), PK_EINVAL);
    assert_null(pk_acl_find(a, "v", 1));
    assert_int_equal(SET(a, "v", "+nosuch"), PK_EINVAL);
    assert_null(pk_acl_find(a, "v", 1)); /* not created either */
    pk_acl_free(a);
}

static void test_commands_and_subcommands(void **state)
{
    pk_acl *a = pk_acl_new();
    pk_acl_user *u;
    char *c;

    (void)state;
    assert_int_equal(SET(a, "u", "on", "~*", "+@all", "-client", "+client|id"),
                     0);
    u = pk_acl_find(a, "u", 1);
    assert_int_equal(CHECK(u, "get", "k"), PK_ACL_OK);
    assert_int_equal(CHECK(u, "client", "id"), PK_ACL_OK);
    assert_int_equal(CHECK(u, "client", "list"), PK_ACL_DENIED_CMD);
    c = cmds_of(u);
    assert_string_equal(c, "+@all -client +client|id");
    free(c);
    assert_int_equal(SET(a, "u", "-@all", "+select|0"), 0);
    assert_int_equal(CHECK(u, "select", "0"), PK_ACL_OK);
    assert_int_equal(CHECK(u, "select", "1"), PK_ACL_DENIED_CMD);
    c = cmds_of(u);
    assert_string_equal(c, "-@all +select|0");
    free(c);
    /* AUTH and HELLO run whatever the rules (no-auth commands). */
    assert_int_equal(CHECK(u, "auth", "a", "b"), PK_ACL_OK);
    assert_int_equal(SET(a, "u", "+@all", "-@dangerous"), 0);
    assert_int_equal(CHECK(u, "flushall"), PK_ACL_DENIED_CMD);
    assert_int_equal(CHECK(u, "config", "set", "a", "b"), PK_ACL_DENIED_CMD);
    assert_int_equal(CHECK(u, "acl", "whoami"), PK_ACL_OK);
    assert_int_equal(CHECK(u, "acl", "setuser", "x"), PK_ACL_DENIED_CMD);
    pk_acl_free(a);
}

static void test_categories_round_trip(void **state)
{
    pk_acl *a = pk_acl_new();
    char rule[64], want[80];

    (void)state;
    for (int i = 0; pk_acl_category(i); i++) {
        const char *cat = pk_acl_category(i);
        char *c;
        int empty = strcmp(cat, "geo") == 0 || strcmp(cat, "stream") == 0 ||
                    strcmp(cat, "pubsub") == 0; /* no such commands here */
        if (empty)
            continue;
        snprintf(rule, sizeof(rule), "-@%s", cat);
        assert_int_equal(SET(a, "u", "reset", "+@all", rule), 0);
        c = cmds_of(pk_acl_find(a, "u", 1));
        snprintf(want, sizeof(want), "+@all -@%s", cat);
        assert_string_equal(c, want);
        free(c);
        rule[0] = '+';
        assert_int_equal(SET(a, "u", "reset", "-@all", rule), 0);
        c = cmds_of(pk_acl_find(a, "u", 1));
        snprintf(want, sizeof(want), "-@all +@%s", cat);
        assert_string_equal(c, want);
        free(c);
    }
    pk_acl_free(a);
}

static void test_keys_read_write(void **state)
{
    pk_acl *a = pk_acl_new();
    pk_acl_user *u;

    (void)state;
    assert_int_equal(SET(a, "u", "on", "+@all", "%R~r:*", "%W~w:*", "~rw:*"),
                     0);
    u = pk_acl_find(a, "u", 1);
    assert_false(pk_acl_user_unrestricted(u));
    assert_int_equal(CHECK(u, "get", "r:1"), PK_ACL_OK);
    assert_int_equal(CHECK(u, "get", "w:1"), PK_ACL_DENIED_KEY);
    assert_int_equal(CHECK(u, "set", "w:1", "v"), PK_ACL_OK);
    assert_int_equal(CHECK(u, "set", "w:1", "v", "GET"), PK_ACL_DENIED_KEY);
    assert_int_equal(CHECK(u, "set", "r:1", "v"), PK_ACL_DENIED_KEY);
    assert_int_equal(CHECK(u, "incr", "w:1"), PK_ACL_DENIED_KEY);
    assert_int_equal(CHECK(u, "incr", "rw:1"), PK_ACL_OK);
    assert_int_equal(CHECK(u, "lpush", "w:1", "x"), PK_ACL_OK);
    assert_int_equal(CHECK(u, "copy", "r:1", "w:1"), PK_ACL_OK);
    assert_int_equal(CHECK(u, "copy", "w:1", "r:1"), PK_ACL_DENIED_KEY);
    assert_int_equal(CHECK(u, "sunionstore", "w:d", "r:1", "r:2"), PK_ACL_OK);
    assert_int_equal(CHECK(u, "sunionstore", "w:d", "r:1", "x"),
                     PK_ACL_DENIED_KEY);
    assert_int_equal(CHECK(u, "mget", "r:1", "rw:2", "x:3"), PK_ACL_DENIED_KEY);
    {
        pk_arg v[] = {{"mget", 4}, {"r:1", 3}, {"x:3", 3}};
        int pos = 0;
        assert_int_equal(
            pk_acl_check(u, pk_cmd_find("mget", 4), 3, v, &pos, NULL),
            PK_ACL_DENIED_KEY);
        assert_int_equal(pos, 2);
    }
    assert_true(pk_acl_key_readable(u, "r:x", 3));
    assert_false(pk_acl_key_readable(u, "w:x", 3));
    /* The same pattern twice merges its rights. */
    assert_int_equal(SET(a, "u", "resetkeys", "%R~k", "%W~k"), 0);
    {
        char *c, *k, *ch;
        assert_int_equal(pk_acl_selector_describe(u, 0, &c, &k, &ch), 0);
        assert_string_equal(k, "~k");
        assert_string_equal(ch, "");
        free(c);
        free(k);
        free(ch);
    }
    pk_acl_free(a);
}

static void test_selectors(void **state)
{
    pk_acl *a = pk_acl_new();
    pk_acl_user *u;
    char *desc;

    (void)state;
    assert_int_equal(SET(a, "u", "on", "+get", "~a*", "(+set", "~b*)"), 0);
    u = pk_acl_find(a, "u", 1);
    assert_int_equal(pk_acl_user_selectors(u), 1);
    assert_int_equal(CHECK(u, "get", "a1"), PK_ACL_OK);
    assert_int_equal(CHECK(u, "set", "b1", "v"), PK_ACL_OK);
    assert_int_equal(CHECK(u, "set", "a1", "v"), PK_ACL_DENIED_KEY);
    assert_int_equal(CHECK(u, "del", "a1"), PK_ACL_DENIED_CMD);
    desc = pk_acl_describe(u);
    assert_string_equal(desc, "on ~a* resetchannels -@all +get "
                              "(~b* resetchannels -@all +set)");
    free(desc);
    assert_int_equal(SET(a, "u", "clearselectors"), 0);
    assert_int_equal(CHECK(u, "set", "b1", "v"), PK_ACL_DENIED_CMD);
    pk_acl_free(a);
}

static int ngone;
static void gone(void *arg, const pk_acl_user *u)
{
    (void)arg;
    (void)u;
    ngone++;
}

static void test_file_text(void **state)
{
    pk_acl *a = pk_acl_new();
    pk_acl_user *def = pk_acl_default(a);
    const char good[] = "user bob on >pw ~b:* +get\n\n"
                        "user default on nopass ~* &* +@all\r\n"
                        "user alice off (~x +del)\n";
    const char bad[] = "user z +nosuch\nfoo bar\nuser z on\n";
    char *err = NULL, *text;

    (void)state;
    assert_int_equal(SET(a, "old", "on"), 0);
    ngone = 0;
    assert_int_equal(
        pk_acl_load_text(a, good, strlen(good), "f.acl", gone, NULL, &err), 0);
    assert_int_equal(ngone, 1);
    assert_ptr_equal(pk_acl_default(a), def);
    assert_int_equal(pk_acl_count(a), 3);
    assert_string_equal(pk_acl_user_name(pk_acl_first(a)), "alice");
    text = pk_acl_save_text(a);
    assert_non_null(strstr(text, "user bob on #"));
    assert_non_null(strstr(text, "user default on nopass ~* &* +@all\n"));
    assert_non_null(strstr(text, "user alice off resetchannels -@all "
                                 "(~x resetchannels -@all +del)\n"));
    assert_null(strstr(text, ">pw"));
    free(text);
    assert_int_equal(
        pk_acl_load_text(a, bad, strlen(bad), "f.acl", gone, NULL, &err),
        PK_EINVAL);
    assert_non_null(strstr(err, "f.acl:1: Error in applying operation "
                                "'+nosuch': Unknown command or category name "
                                "in ACL. "));
    assert_non_null(strstr(err, "f.acl:2 should start with user keyword"));
    assert_non_null(strstr(err, "WARNING: Duplicate user 'z' found on "
                                "line 3. "));
    free(err);
    assert_int_equal(pk_acl_count(a), 3); /* unchanged */
    pk_acl_free(a);
}

static void test_sync_text(void **state)
{
    pk_acl *a = pk_acl_new();
    pk_acl_user *keep, *def = pk_acl_default(a);
    const char text[] = "user default on #"
                        "e3b0c44298fc1c149afbf4c8996fb924"
                        "27ae41e4649b934ca495991b7852b855 ~* &* +@all\n"
                        "user keep on nopass ~k* -@all +get\n"
                        "user new on nopass +@all\n";
    char *err = NULL;

    (void)state;
    assert_int_equal(SET(a, "keep", "on", "+set"), 0);
    assert_int_equal(SET(a, "gone1", "on"), 0);
    keep = pk_acl_find(a, "keep", 4);
    ngone = 0;
    assert_int_equal(pk_acl_sync_text(a, text, strlen(text), gone, NULL, &err),
                     0);
    assert_int_equal(ngone, 1);                        /* gone1 */
    assert_ptr_equal(pk_acl_find(a, "keep", 4), keep); /* same address */
    assert_ptr_equal(pk_acl_default(a), def);
    assert_int_equal(CHECK(keep, "get", "k1"), PK_ACL_OK);
    assert_int_equal(CHECK(keep, "set", "k1", "v"), PK_ACL_DENIED_CMD);
    assert_false(pk_acl_user_nopass(def));
    assert_true(pk_acl_user_auth(def, "", 0)); /* SHA-256 of "" */
    assert_non_null(pk_acl_find(a, "new", 3));
    assert_int_equal(pk_acl_count(a), 3);
    assert_string_equal(pk_acl_user_name(pk_acl_first(a)), "default");
    /* A bad text changes nothing. */
    assert_int_equal(pk_acl_sync_text(a, "nope\n", 5, gone, NULL, &err),
                     PK_EINVAL);
    free(err);
    assert_int_equal(pk_acl_count(a), 3);
    pk_acl_free(a);
}

static size_t live_fargs(const acl_sel *s)
{
    size_t n = 0;

    for (size_t i = 0; i < s->nfargs; i++)
        n += !sel_bit(s, s->fargs[i].id);
    return n;
}

/*
 * Model test of descriptions: random rules applied to a user; the rules
 * ACL LIST prints for it, applied to a fresh user, must give the same
 * command bitmap, first arguments and key patterns (what Redis checks
 * with its "No bitmap match" panic).
 */
static void test_describe_round_trip(void **state)
{
    static const char *const vocab[] = {
        "+@read",       "-@read",        "+@write",      "-@write",
        "+@admin",      "-@admin",       "+@dangerous",  "-@dangerous",
        "+@string",     "-@string",      "+@hash",       "+@keyspace",
        "-@fast",       "+@slow",        "+@connection", "-@transaction",
        "+@scripting",  "+get",          "-get",         "+set",
        "-set",         "+config",       "-config",      "+config|get",
        "-config|set",  "+client|id",    "-client|kill", "+acl",
        "-acl|setuser", "+select|0",     "+select|1",    "+memory|doctor",
        "-memory",      "+cluster|info", "-cluster",     "allcommands",
        "nocommands",   "+@all",         "-@all",        "~a*",
        "%R~b*",        "%W~c*",         "resetkeys",    "allkeys",
        "%RW~*",        "%R~*",          "~*",           "%WR~*",
        "on",           "off",           "nopass",       ">pw",
        "resetpass"};
    const size_t nv = sizeof(vocab) / sizeof(vocab[0]);
    unsigned seed = 12345;
    pk_acl *a = pk_acl_new();

    (void)state;
    for (int iter = 0; iter < 400; iter++) {
        pk_arg rules[12], back[256];
        int n = 1 + rand_r(&seed) % 12, nb = 0;
        char *desc, *err = NULL, *p;
        pk_acl_user *u, *v;

        for (int i = 0; i < n; i++) {
            const char *r = vocab[(size_t)rand_r(&seed) % nv];
            rules[i] = (pk_arg){r, strlen(r)};
        }
        assert_int_equal(
            pk_acl_setuser(a, "u", 1, 1, &(pk_arg){"reset", 5}, &err), 0);
        /* Some sequences are refused (a pattern after allkeys): skip. */
        if (pk_acl_setuser(a, "u", 1, n, rules, &err) != 0) {
            free(err);
            err = NULL;
            continue;
        }
        u = pk_acl_find(a, "u", 1);
        desc = pk_acl_describe(u);
        assert_non_null(desc);
        for (p = strtok(desc, " "); p && nb < 256; p = strtok(NULL, " "))
            back[nb++] = (pk_arg){p, strlen(p)};
        assert_int_equal(
            pk_acl_setuser(a, "v", 1, 1, &(pk_arg){"reset", 5}, &err), 0);
        assert_int_equal(pk_acl_setuser(a, "v", 1, nb, back, &err), 0);
        v = pk_acl_find(a, "v", 1);
        assert_memory_equal(u->sel[0].bits, v->sel[0].bits,
                            sizeof(u->sel[0].bits));
        /* allcommands may come back from a full bitmap: the same rights
         * (Redis alike). */
        assert_int_equal(u->sel[0].flags & ~SEL_ALLCOMMANDS,
                         v->sel[0].flags & ~SEL_ALLCOMMANDS);
        assert_int_equal(u->flags, v->flags);
        /* First arguments count only while their command is denied (a
         * "+select|0" of an allowed SELECT is kept but means nothing,
         * and is not described: as in Redis). */
        assert_int_equal(live_fargs(&u->sel[0]), live_fargs(&v->sel[0]));
        assert_int_equal(u->sel[0].nkeys, v->sel[0].nkeys);
        for (size_t k = 0; k < u->sel[0].nkeys; k++) {
            assert_string_equal(u->sel[0].keys[k].p, v->sel[0].keys[k].p);
            assert_int_equal(u->sel[0].keys[k].perm, v->sel[0].keys[k].perm);
        }
        free(desc);
    }
    pk_acl_free(a);
}

static void test_log(void **state)
{
    pk_acl *a = pk_acl_new();

    (void)state;
    pk_acl_log_add(a, PK_ACL_DENIED_CMD, "toplevel", "get", 3, "u", "i1", 1000);
    pk_acl_log_add(a, PK_ACL_DENIED_CMD, "toplevel", "get", 3, "u", "i2", 2000);
    assert_int_equal(pk_acl_log_len(a), 1);
    assert_int_equal(pk_acl_log_get(a, 0)->count, 2);
    assert_string_equal(pk_acl_log_get(a, 0)->cinfo, "i2");
    /* More than a minute later: a new entry. */
    pk_acl_log_add(a, PK_ACL_DENIED_CMD, "toplevel", "get", 3, "u", "i3",
                   70000);
    assert_int_equal(pk_acl_log_len(a), 2);
    for (int i = 0; i < 200; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        pk_acl_log_add(a, PK_ACL_DENIED_KEY, "multi", key, strlen(key), "u",
                       "i", 80000);
    }
    assert_int_equal(pk_acl_log_len(a), PK_ACL_LOG_MAX);
    assert_string_equal(pk_acl_log_get(a, 0)->object, "k199");
    assert_int_equal(pk_acl_log_limit(a, 5), 0); /* acllog-max-len */
    assert_int_equal(pk_acl_log_len(a), 5);
    assert_string_equal(pk_acl_log_get(a, 0)->object, "k199");
    pk_acl_log_add(a, PK_ACL_DENIED_KEY, "multi", "z", 1, "u", "i", 80000);
    assert_int_equal(pk_acl_log_len(a), 5);
    assert_int_equal(pk_acl_log_limit(a, 0), 0);
    pk_acl_log_add(a, PK_ACL_DENIED_KEY, "multi", "y", 1, "u", "i", 80000);
    assert_int_equal(pk_acl_log_len(a), 0);
    pk_acl_log_reset(a);
    assert_int_equal(pk_acl_log_len(a), 0);
    pk_acl_free(a);
}

int main(void)
{
    size_t n;
    const pk_cmd *t = pk_cmd_table(&n);

    pk_acl_commands(t, n);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_known_answers),
        cmocka_unit_test(test_default_user),
        cmocka_unit_test(test_passwords),
        cmocka_unit_test(test_rule_errors_change_nothing),
        cmocka_unit_test(test_commands_and_subcommands),
        cmocka_unit_test(test_categories_round_trip),
        cmocka_unit_test(test_keys_read_write),
        cmocka_unit_test(test_selectors),
        cmocka_unit_test(test_file_text),
        cmocka_unit_test(test_sync_text),
        cmocka_unit_test(test_describe_round_trip),
        cmocka_unit_test(test_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
