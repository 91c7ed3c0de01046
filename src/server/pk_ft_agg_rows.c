/*
 * pk_ft_agg_rows: FT.AGGREGATE's finished rows -- each merged group
 * finished (a count, a sum, an average from its sum and count, a distinct
 * count from its values), or each loaded document's fields; then sorted by
 * SORTBY (numbers as numbers, missing values last), cut by MAX and LIMIT,
 * and answered as RediSearch shapes them: [n, row*], a row being
 * [field, value, ...].
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pk_err.h"
#include "proto/pk_rreply.h"
#include "server/pk_ft_agg_int.h"

/* A finished row: names and values (owned strings), for sorting. */
typedef struct frow {
    int n;
    char **name, **val;
    size_t *vlen;
} frow;

static void frow_free(frow *f)
{
    for (int i = 0; i < f->n; i++) {
        free(f->name[i]);
        free(f->val[i]);
    }
    free(f->name);
    free(f->val);
    free(f->vlen);
}

static int frow_put(frow *f, const char *name, const char *v, size_t len)
{
    int i = f->n++;

    f->name[i] = strdup(name);
    f->val[i] = v ? strndup(v, len) : NULL;
    f->vlen[i] = len;
    return f->name[i] == NULL || (v && f->val[i] == NULL) ? PK_ENOMEM : 0;
}

static void fmt_num(char *buf, size_t cap, double x)
{
    snprintf(buf, cap, "%.15g", x);
}

/* The finished row of group gr. */
static int finish_group(const pk__ftagg *g, const group *gr, frow *f)
{
    int cells = g->ngroup + g->nred, rc = 0;
    char num[64];

    f->n = 0;
    f->name = calloc((size_t)cells + 1, sizeof(*f->name));
    f->val = calloc((size_t)cells + 1, sizeof(*f->val));
    f->vlen = calloc((size_t)cells + 1, sizeof(*f->vlen));
    if (f->name == NULL || f->val == NULL || f->vlen == NULL)
        return PK_ENOMEM;
    for (int i = 0; rc == 0 && i < g->ngroup; i++) {
        char name[PK_FT_NAME_MAX + 1];
        snprintf(name, sizeof(name), "%.*s", (int)g->gf[i].len,
                 (const char *)g->gf[i].ptr);
        rc = frow_put(f, name, gr->val[i], gr->vlen[i]);
    }
    for (int i = 0; rc == 0 && i < g->nred; i++) {
        const partial *p = &gr->p[i];
        const char *v = num;
        switch (g->red[i].fn) {
        case R_COUNT:
            snprintf(num, sizeof(num), "%lld", (long long)p->count);
            break;
        case R_SUM:
            fmt_num(num, sizeof(num), p->sum);
            break;
        case R_MIN:
        case R_MAX:
            if (p->count == 0)
                v = NULL;
            else
                fmt_num(num, sizeof(num),
                        g->red[i].fn == R_MIN ? p->min : p->max);
            break;
        case R_AVG:
            fmt_num(num, sizeof(num), p->count ? p->sum / (double)p->count : 0);
            break;
        case R_DISTINCT:
            snprintf(num, sizeof(num), "%zu", p->set.n);
            break;
        default: /* TOLIST: kept as the set itself, written at reply */
            v = NULL;
            break;
        }
        rc = frow_put(f, g->red[i].as, v, v ? strlen(v) : 0);
    }
    return rc;
}

/* The finished row of an ungrouped row's reply. */
static int finish_row(const pk_obuf *o, frow *f)
{
    pk_rreply_reader *rd = NULL;
    pk_rr *r = NULL;
    int rc = PK_ENOMEM;

    if (pk_rreply_reader_new(NULL, &rd) == 0 &&
        pk_rreply_feed(rd, o->data + o->head, o->len - o->head) == 0 &&
        pk_rreply_next(rd, &r) == 1) {
        size_t pairs = r->n / 2;
        f->n = 0;
        f->name = calloc(pairs + 1, sizeof(*f->name));
        f->val = calloc(pairs + 1, sizeof(*f->val));
        f->vlen = calloc(pairs + 1, sizeof(*f->vlen));
        rc = f->name && f->val && f->vlen ? 0 : PK_ENOMEM;
        for (size_t k = 0; rc == 0 && k < pairs; k++)
            rc = frow_put(f, r->elems[2 * k].str, r->elems[2 * k + 1].str,
                          r->elems[2 * k + 1].len);
    }
    pk_rr_free(r);
    pk_rreply_reader_free(rd);
    return rc;
}

static const char *frow_get(const frow *f, pk_slice name, size_t *len)
{
    for (int i = 0; i < f->n; i++)
        if (strlen(f->name[i]) == name.len &&
            memcmp(f->name[i], name.ptr, name.len) == 0) {
            *len = f->vlen[i];
            return f->val[i];
        }
    return NULL;
}

typedef struct sortctx {
    const pk__ftagg *g;
    const frow *rows;
} sortctx;

static int cmp_rows(const void *pa, const void *pb, void *ctx)
{
    const sortctx *sc = ctx;
    const pk__ftagg *g = sc->g;
    const frow *a = &sc->rows[*(const size_t *)pa],
               *b = &sc->rows[*(const size_t *)pb];

    for (int i = 0; i < g->nsort; i++) {
        size_t al = 0, bl = 0;
        const char *x = frow_get(a, g->sortf[i], &al),
                   *y = frow_get(b, g->sortf[i], &bl);
        double dx, dy;
        int c;
        if (x == NULL || y == NULL) {
            c = x == NULL ? (y != NULL) : -1; /* missing last */
            if (c)
                return c;
            continue;
        }
        if (pk_ft_number(x, al, &dx) && pk_ft_number(y, bl, &dy))
            c = (dx > dy) - (dx < dy);
        else if ((c = memcmp(x, y, al < bl ? al : bl)) == 0)
            c = (al > bl) - (al < bl);
        if (c)
            return g->sdesc[i] ? -c : c;
    }
    return 0;
}

void pk__ftagg_answer(pk__ftagg *g, pk_obuf *out)
{
    size_t n = g->grouped ? g->ngroups : g->nrows, k = 0, from, to, *ord = NULL;
    frow *rows = calloc(n ? n : 1, sizeof(*rows));
    group **src = calloc(n ? n : 1, sizeof(*src));
    int rc = rows && src ? 0 : PK_ENOMEM;

    if (g->grouped)
        for (size_t b = 0; rc == 0 && b < g->ntab; b++)
            for (group *gr = g->tab[b]; rc == 0 && gr; gr = gr->next) {
                src[k] = gr;
                rc = finish_group(g, gr, &rows[k++]);
            }
    else
        for (; rc == 0 && k < n; k++)
            rc = finish_row(&g->rows[k], &rows[k]);
    if (rc != 0) {
        pk__ft_error(out, "ERR out of memory");
        goto out;
    }
    if ((ord = malloc((n ? n : 1) * sizeof(*ord))) == NULL) {
        pk__ft_error(out, "ERR out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        ord[i] = i;
    if (g->nsort) {
        sortctx sc = {g, rows};
        qsort_r(ord, n, sizeof(*ord), cmp_rows, &sc);
    }
    to = n;
    if (g->nsort && g->max > 0 && (size_t)g->max < to)
        to = (size_t)g->max;
    from = (size_t)g->offset < to ? (size_t)g->offset : to;
    if ((size_t)g->num < to - from)
        to = from + (size_t)g->num;
    pk_reply_array(out, 1 + (to - from));
    pk_reply_int(out, (int64_t)n);
    for (size_t i = from; i < to; i++) {
        frow *f = &rows[ord[i]];
        pk_reply_array(out, 2 * (size_t)f->n);
        for (int c = 0; c < f->n; c++) {
            int red = c - g->ngroup;
            pk_reply_bulk_str(out, f->name[c]);
            if (g->grouped && red >= 0 && g->red[red].fn == R_TOLIST) {
                const vset *s = &src[ord[i]]->p[red].set;
                pk_reply_array(out, s->n);
                for (size_t v = 0; v < s->n; v++)
                    pk_reply_bulk(out, s->v[v], s->len[v]);
            } else if (f->val[c]) {
                pk_reply_bulk(out, f->val[c], f->vlen[c]);
            } else {
                pk_reply_null(out, 2);
            }
        }
    }
out:
    for (size_t i = 0; rows && i < k; i++)
        frow_free(&rows[i]);
    free(rows);
    free(src);
    free(ord);
}
