/* tls_gen: a local CA and a node certificate (see tls_gen.h). */
#include "cli/tls_gen.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#define DAYS 3650

static EVP_PKEY *new_key(void)
{
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509_EXTENSION *ext;
    int ok;

    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (ext == NULL)
        return 0;
    ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    return ok;
}

/* A certificate for key named cn, signed by (issuer, ikey), or self-signed
 * when issuer is NULL. */
static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer,
                       EVP_PKEY *ikey, long serial)
{
    X509 *c = X509_new();
    X509_NAME *name;
    int ok;

    if (c == NULL)
        return NULL;
    ok = X509_set_version(c, 2) &&
         ASN1_INTEGER_set(X509_get_serialNumber(c), serial) &&
         X509_gmtime_adj(X509_getm_notBefore(c), -3600) &&
         X509_gmtime_adj(X509_getm_notAfter(c), 86400L * DAYS) &&
         X509_set_pubkey(c, key) && (name = X509_get_subject_name(c)) &&
         X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                    (const unsigned char *)cn, -1, -1, 0) &&
         X509_set_issuer_name(c, issuer ? X509_get_subject_name(issuer) : name);
    if (ok && issuer == NULL)
        ok = add_ext(c, c, NID_basic_constraints, "critical,CA:TRUE") &&
             add_ext(c, c, NID_key_usage, "critical,keyCertSign,cRLSign");
    else if (ok)
        ok = add_ext(c, issuer, NID_basic_constraints, "CA:FALSE") &&
             add_ext(c, issuer, NID_subject_alt_name,
                     "DNS:localhost,IP:127.0.0.1,IP:::1") &&
             add_ext(c, issuer, NID_ext_key_usage, "serverAuth,clientAuth");
    if (!ok || !X509_sign(c, issuer ? ikey : key, EVP_sha256())) {
        X509_free(c);
        return NULL;
    }
    return c;
}

static int write_pem(const char *dir, const char *file, EVP_PKEY *key,
                     X509 *cert)
{
    char path[4200];
    FILE *f;
    int ok;

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    if ((f = fopen(path, "w")) == NULL)
        return 0;
    if (key)
        fchmod(fileno(f), 0600);
    ok = key ? PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL)
             : PEM_write_X509(f, cert);
    return fclose(f) == 0 && ok;
}

int pk_tls_gen(const char *dir)
{
    char path[4200];
    struct stat st;
    EVP_PKEY *cakey = NULL, *key = NULL;
    X509 *ca = NULL, *cert = NULL;
    int ok;

    snprintf(path, sizeof(path), "%s/" PK_TLS_GEN_CERT, dir);
    if (stat(path, &st) == 0)
        return 0; /* made by an earlier start */
    if (mkdir(dir, 0700) != 0 && stat(dir, &st) != 0)
        return -1;
    ok = (cakey = new_key()) && (key = new_key()) &&
         (ca = make_cert(cakey, "partkv local CA", NULL, NULL, 1)) &&
         (cert = make_cert(key, "partkv node", ca, cakey, 2)) &&
         write_pem(dir, "ca.key", cakey, NULL) &&
         write_pem(dir, PK_TLS_GEN_CA, NULL, ca) &&
         write_pem(dir, PK_TLS_GEN_KEY, key, NULL) &&
         write_pem(dir, PK_TLS_GEN_CERT, NULL, cert);
    X509_free(ca);
    X509_free(cert);
    EVP_PKEY_free(cakey);
    EVP_PKEY_free(key);
    ERR_clear_error();
    return ok ? 0 : -1;
}
