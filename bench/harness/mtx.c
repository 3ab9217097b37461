#include "harness/mtx.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

typedef struct reader {
    gzFile file;
    const char *path;
    long line;
    char buf[1024];
    char *err;
    size_t errlen;
} reader_t;

static int fail(reader_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(reader_t *r, const char *fmt, ...)
{
    char what[256];
    va_list args;
    va_start(args, fmt);
    vsnprintf(what, sizeof what, fmt, args);
    va_end(args);
    if (r->err && r->errlen)
        snprintf(r->err, r->errlen, "%s:%ld: %s", r->path, r->line, what);
    return -1;
}

/* The next line (without its newline) into r->buf; 0 at the end, -1 on a
 * line too long or a read error. */
static int next_line(reader_t *r)
{
    if (!gzgets(r->file, r->buf, (int)sizeof r->buf)) {
        int code = 0;
        const char *why = gzerror(r->file, &code);
        if (code == Z_OK || code == Z_STREAM_END)
            return 0;
        /* zlib says "unexpected end of file" for a cut-off .gz */
        return fail(r, "cannot read past this line: %s (truncated or corrupt gzip data?)",
                    code == Z_ERRNO ? strerror(errno) : why);
    }
    r->line++;
    size_t n = strlen(r->buf);
    if (n == sizeof r->buf - 1 && r->buf[n - 1] != '\n' && !gzeof(r->file))
        return fail(r, "line longer than %zu characters", sizeof r->buf - 2);
    while (n > 0 && (r->buf[n - 1] == '\n' || r->buf[n - 1] == '\r'))
        r->buf[--n] = '\0';
    return 1;
}

static int blank(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return *s == '\0';
}

/* The next line that is neither a comment nor blank; 0 at the end. */
static int next_data_line(reader_t *r)
{
    int got;
    while ((got = next_line(r)) == 1)
        if (r->buf[0] != '%' && !blank(r->buf))
            return 1;
    return got;
}

enum { FIELD_REAL, FIELD_INTEGER, FIELD_PATTERN };
enum { SYM_GENERAL, SYM_SYMMETRIC, SYM_SKEW };

static int read_header(reader_t *r, int *field, int *symmetry)
{
    char banner[64], object[64], format[64], fieldname[64], symname[64];
    if (next_line(r) != 1)
        return fail(r, "empty file: expected a %%%%MatrixMarket header");
    if (sscanf(r->buf, "%63s %63s %63s %63s %63s", banner, object, format, fieldname, symname) !=
            5 ||
        strcmp(banner, "%%MatrixMarket") != 0)
        return fail(r, "expected '%%%%MatrixMarket matrix coordinate <field> <symmetry>'");
    if (strcasecmp(object, "matrix") != 0)
        return fail(r, "object '%s': only 'matrix' is supported", object);
    if (strcasecmp(format, "coordinate") != 0)
        return fail(r, "format '%s': only 'coordinate' (sparse) is supported", format);
    if (!strcasecmp(fieldname, "real"))
        *field = FIELD_REAL;
    else if (!strcasecmp(fieldname, "integer"))
        *field = FIELD_INTEGER;
    else if (!strcasecmp(fieldname, "pattern"))
        *field = FIELD_PATTERN;
    else
        return fail(r, "field '%s': only real, integer and pattern are supported", fieldname);
    if (!strcasecmp(symname, "general"))
        *symmetry = SYM_GENERAL;
    else if (!strcasecmp(symname, "symmetric"))
        *symmetry = SYM_SYMMETRIC;
    else if (!strcasecmp(symname, "skew-symmetric"))
        *symmetry = SYM_SKEW;
    else
        return fail(r, "symmetry '%s': only general, symmetric and skew-symmetric are supported",
                    symname);
    return 0;
}

/* A whole number in [lo, hi] at *s, which moves past it. */
static int read_long(reader_t *r, char **s, long lo, long hi, const char *what, long *value)
{
    char *end;
    errno = 0;
    long v = strtol(*s, &end, 10);
    if (end == *s || errno || v < lo || v > hi || (*end && !isspace((unsigned char)*end)))
        return fail(r, "%s: expected a whole number in %ld..%ld", what, lo, hi);
    *s = end;
    *value = v;
    return 0;
}

typedef struct entry {
    int row, col;
    double val;
} entry_t;

static int by_row_col(const void *a, const void *b)
{
    const entry_t *x = a, *y = b;
    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    return (x->col > y->col) - (x->col < y->col);
}

/* Sorted, repeated entries summed, into CSR. */
static int to_csr(entry_t *e, long n, int pattern, bh_matrix_t *m)
{
    qsort(e, (size_t)n, sizeof *e, by_row_col);
    long kept = 0;
    for (long k = 0; k < n; k++) {
        if (kept > 0 && e[kept - 1].row == e[k].row && e[kept - 1].col == e[k].col)
            e[kept - 1].val += e[k].val;
        else
            e[kept++] = e[k];
    }
    m->nnz = kept;
    m->row_offsets = calloc((size_t)m->rows + 1, sizeof(long));
    m->col = malloc(((size_t)kept + 1) * sizeof(int));
    m->val = pattern ? NULL : malloc(((size_t)kept + 1) * sizeof(double));
    if (!m->row_offsets || !m->col || (!pattern && !m->val))
        return -1;
    for (long k = 0; k < kept; k++) {
        m->row_offsets[e[k].row + 1]++;
        m->col[k] = e[k].col;
        if (m->val)
            m->val[k] = e[k].val;
    }
    for (int i = 0; i < m->rows; i++)
        m->row_offsets[i + 1] += m->row_offsets[i];
    return 0;
}

int bh_matrix_read(const char *path, bh_matrix_t *m, char *err, size_t errlen)
{
    reader_t r = {.path = path, .err = err, .errlen = errlen};
    memset(m, 0, sizeof *m);
    entry_t *e = NULL;
    int field = 0, symmetry = 0, rc = -1;
    if (!(r.file = gzopen(path, "rb"))) {
        fail(&r, "cannot open: %s", strerror(errno));
        return -1;
    }
    if (read_header(&r, &field, &symmetry) != 0)
        goto out;
    if (next_data_line(&r) != 1) {
        fail(&r, "expected the size line 'rows cols entries'");
        goto out;
    }
    long rows, cols, entries;
    char *s = r.buf;
    if (read_long(&r, &s, 1, INT_MAX, "rows", &rows) ||
        read_long(&r, &s, 1, INT_MAX, "columns", &cols) ||
        read_long(&r, &s, 0, LONG_MAX / 4, "entries", &entries))
        goto out;
    if (!blank(s)) {
        fail(&r, "the size line has more than 3 numbers");
        goto out;
    }
    if (symmetry != SYM_GENERAL && rows != cols) {
        fail(&r, "a symmetric matrix must be square, this one is %ld x %ld", rows, cols);
        goto out;
    }
    m->rows = (int)rows;
    m->cols = (int)cols;
    long mirrored = symmetry == SYM_GENERAL ? 1 : 2, n = 0;
    if (!(e = malloc(((size_t)entries * (size_t)mirrored + 1) * sizeof *e))) {
        fail(&r, "no memory for %ld entries", entries);
        goto out;
    }
    for (long k = 0; k < entries; k++) {
        int got = next_data_line(&r);
        if (got != 1) {
            if (got == 0)
                fail(&r, "the file ends after %ld of %ld entries", k, entries);
            goto out;
        }
        long i, j;
        double v = 1.0;
        s = r.buf;
        if (read_long(&r, &s, 1, rows, "row", &i) || read_long(&r, &s, 1, cols, "column", &j))
            goto out;
        if (field != FIELD_PATTERN) {
            char *end;
            errno = 0;
            v = strtod(s, &end);
            if (end == s || errno == ERANGE) {
                fail(&r, "expected a value after the row and column");
                goto out;
            }
            s = end;
        }
        if (!blank(s)) {
            fail(&r, "unexpected text after the entry");
            goto out;
        }
        if (symmetry != SYM_GENERAL && j > i) {
            fail(&r, "a %s file stores the lower triangle, entry (%ld, %ld) is above it",
                 symmetry == SYM_SKEW ? "skew-symmetric" : "symmetric", i, j);
            goto out;
        }
        if (symmetry == SYM_SKEW && i == j) {
            fail(&r, "a skew-symmetric matrix has no diagonal entry (%ld, %ld)", i, j);
            goto out;
        }
        e[n++] = (entry_t){(int)i - 1, (int)j - 1, v};
        if (symmetry != SYM_GENERAL && i != j)
            e[n++] = (entry_t){(int)j - 1, (int)i - 1, symmetry == SYM_SKEW ? -v : v};
    }
    if (next_data_line(&r) == 1) {
        fail(&r, "more entries than the %ld the size line announced", entries);
        goto out;
    }
    if (to_csr(e, n, field == FIELD_PATTERN, m) != 0) {
        fail(&r, "no memory for the matrix");
        goto out;
    }
    rc = 0;
out:
    free(e);
    gzclose(r.file);
    if (rc != 0)
        bh_matrix_free(m);
    return rc;
}

void bh_matrix_free(bh_matrix_t *m)
{
    free(m->row_offsets);
    free(m->col);
    free(m->val);
    memset(m, 0, sizeof *m);
}
