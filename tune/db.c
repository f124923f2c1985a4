/* Tuning database: JSON Lines, one self-contained record a line, appended
 * with one write() and an fsync each, read back with libqkrt's JSON reader. */
#define _POSIX_C_SOURCE 200809L
#include "db.h"
#include "bench.h"   /* QK_TWO_PASS_PREFIX */
#include "qk_json.h" /* libqkrt's reader */

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The first field of a record that is missing or wrong, for the message. */
typedef struct field_check {
    bool ok;
    const char *in; /* "device.", "case." or "" */
    char why[160];
} field_check;

static void bad_field(field_check *fc, const char *key, const char *want) {
    if (fc->ok) snprintf(fc->why, sizeof fc->why, "%s%s: missing or not %s", fc->in, key, want);
    fc->ok = false;
}

/* value must be one of the names (a NULL-ended list of two or three) */
static void one_of(field_check *fc, const char *key, const char *value, const char *const *names) {
    for (const char *const *n = names; *n; n++)
        if (!strcmp(value, *n)) return;
    if (fc->ok) { /* "is not a, b or c" */
        int at = snprintf(fc->why, sizeof fc->why, "%s: '%.40s' is not %s", key, value, names[0]);
        for (const char *const *n = names + 1; *n && at > 0 && (size_t)at < sizeof fc->why; n++)
            at += snprintf(fc->why + at, sizeof fc->why - (size_t)at, "%s%s", n[1] ? ", " : " or ",
                           *n);
    }
    fc->ok = false;
}

static void str_of(const qkrt_json *o, const char *key, char *out, size_t size, field_check *fc) {
    const qkrt_json *v = qkrt_json_get(o, key);
    if (!v || v->type != QKRT_JSON_STRING) {
        bad_field(fc, key, "a string");
    } else if (strlen(v->string) >= size) {
        if (fc->ok)
            snprintf(fc->why, sizeof fc->why, "%s%s: longer than %zu bytes", fc->in, key, size - 1);
        fc->ok = false;
    } else {
        memcpy(out, v->string, strlen(v->string) + 1);
    }
}

static double num_of(const qkrt_json *o, const char *key, field_check *fc) {
    const qkrt_json *v = qkrt_json_get(o, key);
    if (!v || v->type != QKRT_JSON_NUMBER) {
        bad_field(fc, key, "a number");
        return 0;
    }
    return v->number;
}

/* The record's time: seconds since 1970, finite (the writer prints it as a
 * whole number, which infinity is not) and not negative. */
static double time_of(const qkrt_json *o, const char *key, field_check *fc) {
    const qkrt_json *v = qkrt_json_get(o, key);
    if (!v || v->type != QKRT_JSON_NUMBER || !isfinite(v->number) || v->number < 0) {
        bad_field(fc, key, "a finite number of seconds since 1970");
        return 0;
    }
    return v->number;
}

/* A time of the record in microseconds (or its NMSE): finite, not
 * negative and at most max, so that every writer prints it as a number its
 * reader takes back and no comparison meets an infinity. */
static double bounded_of(const qkrt_json *o, const char *key, double max, field_check *fc) {
    const qkrt_json *v = qkrt_json_get(o, key);
    if (!v || v->type != QKRT_JSON_NUMBER || !isfinite(v->number) || v->number < 0 ||
        v->number > max) {
        if (fc->ok)
            snprintf(fc->why, sizeof fc->why, "%s%s: missing or not a number from 0 to %g", fc->in,
                     key, max);
        fc->ok = false;
        return 0;
    }
    return v->number;
}

bool qk_tune_two_pass_parts(const char *variant, char *first, char *second, size_t size) {
    const size_t np = strlen(QK_TWO_PASS_PREFIX);
    if (strncmp(variant, QK_TWO_PASS_PREFIX, np)) return false;
    const char *a = variant + np, *plus = strchr(a, '+');
    if (!plus || plus == a || !plus[1] || (size_t)(plus - a) >= size || strlen(plus + 1) >= size)
        return false;
    snprintf(first, size, "%.*s", (int)(plus - a), a);
    snprintf(second, size, "%s", plus + 1);
    return true;
}

/* value is made of the characters allowed, exactly exact of them (0: any
 * number, even none): the names a record writes into a manifest, a header and a report
 * are names of kernels, operations and formats, never text to escape */
static void chars_of(field_check *fc, const char *key, const char *value, const char *allowed,
                     size_t exact) {
    size_t n = strlen(value);
    bool ok = n == strspn(value, allowed) && (exact ? n == exact : true);
    if (!ok && fc->ok) {
        if (exact)
            snprintf(fc->why, sizeof fc->why, "%s: '%.40s' is not %zu hex digits (0-9, a-f)", key,
                     value, exact);
        else
            snprintf(fc->why, sizeof fc->why,
                     "%s: '%.40s' is not a name (letters, digits, '_' and '-')", key, value);
    }
    fc->ok &= ok;
}

static uint32_t u32_of(const qkrt_json *o, const char *key, field_check *fc) {
    const qkrt_json *v = qkrt_json_get(o, key);
    double d = v && v->type == QKRT_JSON_NUMBER ? v->number : -1;
    if (d < 0 || d > 4294967295.0 || d != floor(d)) {
        bad_field(fc, key, "an integer 0..4294967295");
        return 0;
    }
    return (uint32_t)d;
}

/* A record from one parsed line; false (why in why) if a field is missing or
 * of the wrong type. */
static bool record_of(const qkrt_json *j, qk_tune_record *r, char *why, size_t why_size) {
    field_check fc = {.ok = true, .in = ""};
    bool ok = true;
    memset(r, 0, sizeof *r);
    if (j->type != QKRT_JSON_OBJECT) {
        snprintf(why, why_size, "not a JSON object");
        return false;
    }
    double v = num_of(j, "v", &fc);
    if (fc.ok && v > QK_TUNE_DB_VERSION) {
        snprintf(why, why_size, "a record of a newer version (%g; this qkgen reads %d)", v,
                 QK_TUNE_DB_VERSION);
        return false;
    }
    const qkrt_json *d = qkrt_json_get(j, "device"), *c = qkrt_json_get(j, "case");
    if (fc.ok && (!d || d->type != QKRT_JSON_OBJECT)) bad_field(&fc, "device", "an object");
    if (fc.ok && (!c || c->type != QKRT_JSON_OBJECT)) bad_field(&fc, "case", "an object");
    field_check *f = &fc;
    if (fc.ok) {
        f->in = "device.";
        r->dev.vendor_id = u32_of(d, "vendor_id", f);
        r->dev.device_id = u32_of(d, "device_id", f);
        r->dev.driver_version = u32_of(d, "driver_version", f);
        str_of(d, "cache_uuid", r->dev.cache_uuid, sizeof r->dev.cache_uuid, f);
        str_of(d, "name", r->dev.name, sizeof r->dev.name, f);
        f->in = "case.";
        str_of(c, "op", r->c.op, sizeof r->c.op, f);
        str_of(c, "format", r->c.format, sizeof r->c.format, f);
        str_of(c, "format_variant", r->c.format_variant, sizeof r->c.format_variant, f);
        /* absent in version 1: f32 */
        if (qkrt_json_get(c, "activations"))
            str_of(c, "activations", r->c.activations, sizeof r->c.activations, f);
        else
            snprintf(r->c.activations, sizeof r->c.activations, "f32");
        r->c.M = u32_of(c, "M", f), r->c.K = u32_of(c, "K", f), r->c.T = u32_of(c, "T", f);
        r->c.E = u32_of(c, "E", f), r->c.top_k = u32_of(c, "top_k", f);
        f->in = "";
        str_of(j, "variant", r->variant, sizeof r->variant, f);
        str_of(j, "family", r->family, sizeof r->family, f);
        str_of(j, "spv_sha256", r->spv_sha256, sizeof r->spv_sha256, f);
        str_of(j, "precision", r->precision, sizeof r->precision, f);
        str_of(j, "status", r->status, sizeof r->status, f);
        str_of(j, "stage", r->stage, sizeof r->stage, f);
        str_of(j, "note", r->note, sizeof r->note, f);
        r->nmse = bounded_of(j, "nmse", QK_TUNE_NMSE_MAX, f);
        r->us = bounded_of(j, "us", QK_TUNE_US_MAX, f);
        r->us_min = bounded_of(j, "us_min", QK_TUNE_US_MAX, f);
        r->us_max = bounded_of(j, "us_max", QK_TUNE_US_MAX, f), r->runs = u32_of(j, "runs", f);
        r->time = time_of(j, "time", f);
        static const char *const precisions[] = {"f32", "f16", "q8", NULL};
        static const char *const statuses[] = {"ok", "wrong", "failed", "unsupported", NULL};
        static const char *const stages[] = {"check", "screen", "full", NULL};
        one_of(f, "precision", r->precision, precisions);
        one_of(f, "status", r->status, statuses);
        one_of(f, "stage", r->stage, stages);
        static const char *const activations[] = {"f32", "f16", NULL};
        one_of(f, "case.activations", r->c.activations, activations);
        static const char hex[] = "0123456789abcdef";
        static const char name[] = "abcdefghijklmnopqrstuvwxyz"
                                   "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
        chars_of(f, "device.cache_uuid", r->dev.cache_uuid, hex, 32);
        chars_of(f, "spv_sha256", r->spv_sha256, hex, 64);
        /* a two-pass pair: "twopass:A+B", of two names */
        char pa[256], pb[256];
        if (qk_tune_two_pass_parts(r->variant, pa, pb, sizeof pa))
            chars_of(f, "variant", pa, name, 0), chars_of(f, "variant", pb, name, 0);
        else
            chars_of(f, "variant", r->variant, name, 0);
        chars_of(f, "family", r->family, name, 0);
        chars_of(f, "case.op", r->c.op, name, 0);
        chars_of(f, "case.format", r->c.format, name, 0);
        chars_of(f, "case.format_variant", r->c.format_variant, name, 0);
        /* text that is not UTF-8 would be written back changed (and longer) */
        if (f->ok && (!qk_utf8_valid(r->dev.name) || !qk_utf8_valid(r->note))) {
            snprintf(f->why, sizeof f->why, "%s: not UTF-8 text",
                     qk_utf8_valid(r->dev.name) ? "note" : "device.name");
            f->ok = false;
        }
        /* a select rule's ranges lie between the tuned values, from 1 */
        if (f->ok && (!r->c.M || !r->c.K || !r->c.T)) {
            snprintf(f->why, sizeof f->why, "case: M %u, K %u, T %u: a shape is at least 1", r->c.M,
                     r->c.K, r->c.T);
            f->ok = false;
        }
        if (f->ok && (!r->variant[0] || !r->family[0] || !r->c.op[0] || !r->c.format[0])) {
            snprintf(f->why, sizeof f->why, "an empty variant, family, case.op or case.format");
            f->ok = false;
        }
    }
    ok = fc.ok;
    if (!ok) snprintf(why, why_size, "%s", fc.why);
    return ok;
}

bool qk_tune_same_device(const qk_tune_device *a, const qk_tune_device *b) {
    return a->vendor_id == b->vendor_id && a->device_id == b->device_id &&
           a->driver_version == b->driver_version && !strcmp(a->cache_uuid, b->cache_uuid);
}

const char *qk_tune_case_activations(const qk_tune_case *c) {
    return c->activations[0] ? c->activations : "f32";
}

bool qk_tune_same_case(const qk_tune_case *a, const qk_tune_case *b) {
    return !strcmp(a->op, b->op) && !strcmp(a->format, b->format) &&
           !strcmp(qk_tune_case_activations(a), qk_tune_case_activations(b)) &&
           !strcmp(a->format_variant, b->format_variant) && a->M == b->M && a->K == b->K &&
           a->T == b->T && a->E == b->E && a->top_k == b->top_k;
}

const qk_tune_record *qk_tune_db_find(const qk_tune_db *db, const qk_tune_device *dev,
                                      const char *variant, const char *spv_sha256,
                                      const qk_tune_case *c, const char *stage) {
    for (uint32_t i = 0; i < db->count; i++) {
        const qk_tune_record *r = &db->recs[i];
        if (!strcmp(r->variant, variant) && !strcmp(r->stage, stage) &&
            !strcmp(r->spv_sha256, spv_sha256) && qk_tune_same_device(&r->dev, dev) &&
            qk_tune_same_case(&r->c, c))
            return r;
    }
    return NULL;
}

static void push(qk_tune_db *db, const qk_tune_record *r) {
    db->recs = qk_xrealloc(db->recs, sizeof *db->recs * (db->count + 1));
    db->recs[db->count++] = *r;
}

/* Adds r unless the database has its (device, variant, hash, case, stage). */
static bool add_unique(qk_tune_db *db, const qk_tune_record *r) {
    if (qk_tune_db_find(db, &r->dev, r->variant, r->spv_sha256, &r->c, r->stage)) return false;
    push(db, r);
    return true;
}

bool qk_tune_db_load(const char *path, qk_tune_db *db, FILE *log, qk_error *e) {
    memset(db, 0, sizeof *db);
    db->fd = -1;
    snprintf(db->path, sizeof db->path, "%s", path);
    if (!qk_is_file(path)) return true;
    size_t n = 0;
    char *text = qk_read_file(path, &n, e);
    if (!text) return false;
    uint32_t line = 0;
    for (size_t at = 0; at < n; line++) {
        size_t len = strcspn(text + at, "\n");
        bool last_torn = at + len >= n; /* no newline: the write was cut off */
        char err[256] = "", whybuf[256] = "", where[16] = "";
        const char *why = NULL;
        qkrt_json *j = len ? qkrt_json_parse(text + at, len, err, sizeof err) : NULL;
        qk_tune_record r;
        if (!len) {
            why = "an empty line";
        } else if (!j) {
            /* the parser's "1:COL: what" of the one line, as the file's line:col */
            unsigned col = 0;
            int skip = 0;
            if (sscanf(err, "1:%u: %n", &col, &skip) == 1 && skip) {
                snprintf(whybuf, sizeof whybuf, "%s", err + skip);
                snprintf(where, sizeof where, ":%u", col);
            }
            why = last_torn ? NULL : whybuf[0] ? whybuf : err;
        } else if (!record_of(j, &r, whybuf, sizeof whybuf)) {
            why = whybuf;
        } else if (last_torn) {
            why = NULL; /* whole but not ended: kept, ended on the next append */
            if (!add_unique(db, &r)) db->dup++;
        } else if (!add_unique(db, &r)) {
            db->dup++;
            why = "";
        }
        if (!j && last_torn && len) {
            db->torn++;
            if (log)
                fprintf(log, "%s:%u: a torn last record (the writer stopped), ignored\n", path,
                        line + 1);
        } else if (why && why[0]) {
            db->bad++;
            if (log) fprintf(log, "%s:%u%s: %s, ignored\n", path, line + 1, where, why);
            if (j || !last_torn) { /* a whole line: kept as it is by a merge */
                db->unread = qk_grow(db->unread, db->unread_count, sizeof *db->unread);
                qk_str keep = {0};
                qk_str_addn(&keep, text + at, len);
                db->unread[db->unread_count++] = qk_str_take(&keep);
            }
        }
        qkrt_json_free(j);
        at += len + 1;
    }
    free(text);
    if (db->dup && log)
        fprintf(log, "%s: %u repeated records ignored (the first of each kept)\n", path, db->dup);
    return true;
}

bool qk_tune_db_open_append(qk_tune_db *db, qk_error *e) {
    db->fd = open(db->path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (db->fd < 0) {
        qk_error_set(e, "%s: cannot open for appending: %s", db->path, strerror(errno));
        return false;
    }
    off_t end = lseek(db->fd, 0, SEEK_END);
    char last = '\n';
    if (end > 0 && pread(db->fd, &last, 1, end - 1) != 1) last = '\n';
    if (last != '\n' && (write(db->fd, "\n", 1) != 1 || fsync(db->fd))) {
        qk_error_set(e, "%s: cannot end its torn last line: %s", db->path, strerror(errno));
        return false;
    }
    return true;
}

static void num(qk_str *o, const char *key, double v) {
    /* JSON has no infinity: a NaN result's NMSE is written as 1e300 */
    qk_str_addf(o, ", \"%s\": ", key);
    qk_json_number(o, isfinite(v) ? v : 1e300);
}

void qk_tune_record_json(qk_str *o, const qk_tune_record *r) {
    /* version 1 where it says all (f32 activations), so that older readers
     * keep reading such records and skip the others */
    const bool f32 = !strcmp(qk_tune_case_activations(&r->c), "f32");
    qk_str_addf(o,
                "{\"v\": %d, \"device\": {\"vendor_id\": %u, \"device_id\": %u, "
                "\"driver_version\": %u, \"cache_uuid\": ",
                f32 ? 1 : QK_TUNE_DB_VERSION, r->dev.vendor_id, r->dev.device_id,
                r->dev.driver_version);
    qk_json_string(o, r->dev.cache_uuid);
    qk_str_add(o, ", \"name\": ");
    qk_json_string(o, r->dev.name);
    qk_str_add(o, "}, \"variant\": ");
    qk_json_string(o, r->variant);
    qk_str_add(o, ", \"family\": ");
    qk_json_string(o, r->family);
    qk_str_add(o, ", \"spv_sha256\": ");
    qk_json_string(o, r->spv_sha256);
    qk_str_add(o, ", \"case\": {\"op\": ");
    qk_json_string(o, r->c.op);
    qk_str_add(o, ", \"format\": ");
    qk_json_string(o, r->c.format);
    qk_str_add(o, ", \"format_variant\": ");
    qk_json_string(o, r->c.format_variant);
    if (!f32) {
        qk_str_add(o, ", \"activations\": ");
        qk_json_string(o, r->c.activations);
    }
    qk_str_addf(o, ", \"M\": %u, \"K\": %u, \"T\": %u, \"E\": %u, \"top_k\": %u}, \"precision\": ",
                r->c.M, r->c.K, r->c.T, r->c.E, r->c.top_k);
    qk_json_string(o, r->precision);
    num(o, "nmse", r->nmse);
    qk_str_add(o, ", \"status\": ");
    qk_json_string(o, r->status);
    qk_str_add(o, ", \"stage\": ");
    qk_json_string(o, r->stage);
    num(o, "us", r->us), num(o, "us_min", r->us_min), num(o, "us_max", r->us_max);
    qk_str_addf(o, ", \"runs\": %u, \"note\": ", r->runs);
    qk_json_string(o, r->note);
    qk_str_add(o, ", \"time\": "); /* whole seconds */
    qk_json_number(o, isfinite(r->time) ? round(r->time) : 0);
    qk_str_add(o, "}");
}

bool qk_tune_db_append(qk_tune_db *db, const qk_tune_record *r, qk_error *e) {
    if (db->failed) {
        qk_error_set(e, "%s: not appended: an earlier append failed", db->path);
        return false;
    }
    if (db->fd < 0 && !qk_tune_db_open_append(db, e)) return false;
    /* where the file ends: a write cut short is cut back to here, and a
     * record after a line that does not end (another writer's, killed)
     * starts a line of its own */
    off_t end = lseek(db->fd, 0, SEEK_END);
    char last = '\n';
    if (end > 0 && pread(db->fd, &last, 1, end - 1) != 1) last = '\n';
    qk_str line = {0};
    if (last != '\n') qk_str_add(&line, "\n");
    qk_tune_record_json(&line, r);
    qk_str_add(&line, "\n");
    /* one write of the whole line: a kill leaves the line whole or a torn
     * tail that loading reports, never two records interleaved. A short
     * write says nothing of why: the next write of the rest does (ENOSPC,
     * EFBIG), or completes the line. */
    size_t done = 0;
    int err = 0;
    while (done < line.len && !err) {
        ssize_t w = write(db->fd, line.s + done, line.len - done);
        if (w > 0)
            done += (size_t)w;
        else if (w < 0 && errno != EINTR)
            err = errno;
        else if (w == 0)
            err = EIO; /* (a regular file never writes nothing without a reason) */
    }
    if (!err && fsync(db->fd) != 0) err = errno;
    qk_str_free(&line);
    if (!err) {
        push(db, r);
        return true;
    }
    db->failed = true;
    /* the torn part off again, so that the file holds whole records only */
    bool cut = end < 0 || (ftruncate(db->fd, end) == 0 && fsync(db->fd) == 0);
    qk_error_set(e, "%s: cannot append a record: %s%s", db->path, strerror(err),
                 cut ? "" : " (and its torn part stays at the end of the file)");
    return false;
}

uint32_t qk_tune_db_keep(qk_tune_db *db, const qk_tune_device *dev, qk_tune_hash_fn hash,
                         void *user, FILE *log) {
    uint32_t kept = 0, foreign = 0, stale = 0;
    qk_tune_record ex_foreign, ex_stale; /* copies: compaction overwrites the array */
    for (uint32_t i = 0; i < db->count; i++) {
        qk_tune_record *r = &db->recs[i];
        const char *h = NULL;
        if (dev && !qk_tune_same_device(&r->dev, dev)) {
            foreign++;
            if (foreign == 1) ex_foreign = *r;
        } else if (hash && (!(h = hash(user, r->variant)) || strcmp(h, r->spv_sha256))) {
            stale++;
            if (stale == 1) ex_stale = *r;
        } else {
            db->recs[kept++] = *r;
        }
    }
    if (foreign && log)
        fprintf(log, "%s: %u records of other devices ignored (e.g. %s, driver %u)\n", db->path,
                foreign, ex_foreign.dev.name, ex_foreign.dev.driver_version);
    if (stale && log)
        fprintf(log,
                "%s: %u stale records ignored: their variant's SPIR-V is no longer what the "
                "generator makes (e.g. %s)\n",
                db->path, stale, ex_stale.variant);
    db->count = kept;
    return foreign + stale;
}

void qk_tune_db_free(qk_tune_db *db) {
    if (db->fd >= 0) close(db->fd);
    free(db->recs);
    for (uint32_t i = 0; i < db->unread_count; i++)
        free(db->unread[i]);
    free(db->unread);
    memset(db, 0, sizeof *db);
    db->fd = -1;
}

int qk_tune_db_lock(const char *path, bool wait, FILE *log, bool *busy, qk_error *e) {
    /* beside the file, not on it: --merge replaces the file by a rename */
    char *dir = qk_path_dir(path);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    qk_str lock = {0};
    qk_str_addf(&lock, "%s/.%s.lock", dir, base);
    *busy = false;
    /* the database's folder, made where it is missing (as --out's) */
    int fd = qk_mkdirs(dir, e) ? qk_lock_file(lock.s, wait, log, busy, e) : -1;
    qk_str_free(&lock);
    free(dir);
    return fd;
}

/* Adds db's unread lines to text, each distinct line once (seen). */
static void keep_unread(const qk_tune_db *db, qk_strset *seen, qk_str *text, uint32_t *kept) {
    for (uint32_t i = 0; i < db->unread_count; i++)
        if (qk_strset_add(seen, db->unread[i], i, NULL) == 1) {
            qk_str_add(text, db->unread[i]);
            qk_str_add(text, "\n");
            (*kept)++;
        }
}

bool qk_tune_db_merge(const char *const *inputs, uint32_t n, const char *out, FILE *log,
                      uint32_t *written, qk_error *e) {
    qk_tune_db all;
    bool ok = qk_tune_db_load(out, &all, log, e);
    /* the inputs stay loaded: their unread lines are kept after the records */
    qk_tune_db *in = qk_xcalloc(n ? n : 1, sizeof *in);
    uint32_t loaded = 0;
    for (uint32_t i = 0; ok && i < n; i++) {
        if (!qk_is_file(inputs[i])) {
            qk_error_set(e, "%s: no such database", inputs[i]);
            ok = false;
            break;
        }
        ok = qk_tune_db_load(inputs[i], &in[i], log, e);
        if (ok) loaded++;
        for (uint32_t j = 0; ok && j < in[i].count; j++)
            add_unique(&all, &in[i].recs[j]);
    }
    qk_str text = {0};
    for (uint32_t i = 0; ok && i < all.count; i++) {
        qk_tune_record_json(&text, &all.recs[i]);
        qk_str_add(&text, "\n");
    }
    qk_strset seen = {0};
    uint32_t kept = 0;
    if (ok) keep_unread(&all, &seen, &text, &kept);
    for (uint32_t i = 0; ok && i < loaded; i++)
        keep_unread(&in[i], &seen, &text, &kept);
    qk_strset_free(&seen);
    if (ok && kept && log)
        fprintf(log, "%s: %u lines this qkgen cannot read kept as they are\n", out, kept);
    if (ok) ok = qk_write_file(out, text.s ? text.s : "", text.len, e);
    if (written) *written = all.count;
    qk_str_free(&text);
    for (uint32_t i = 0; i < loaded; i++)
        qk_tune_db_free(&in[i]);
    free(in);
    qk_tune_db_free(&all);
    return ok;
}
