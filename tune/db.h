/* The tuning database: one JSON Lines file of measurements (docs/tuning-db.md),
 * appended a whole record at a time and flushed, so a tune killed at any
 * moment loses at most the record it was writing, which loading reports. */
#ifndef QK_TUNE_DB_H
#define QK_TUNE_DB_H

#include "qk_util.h"

#include <stdio.h>

/* The newest record version this qkgen reads and writes: 1, or 2 for a case
 * on activations other than f32 (readers of version 1 skip those). */
#define QK_TUNE_DB_VERSION 2

/* The largest time (microseconds: 1000 s) and NMSE a record may hold; a
 * result that is not a number has its NMSE written as 1e300. */
#define QK_TUNE_US_MAX   1e9
#define QK_TUNE_NMSE_MAX 1e300

/* A device as the database knows it: records of another are not its own. */
typedef struct qk_tune_device {
    uint32_t vendor_id, device_id, driver_version;
    char cache_uuid[33]; /* VkPhysicalDeviceProperties.pipelineCacheUUID, hex */
    char name[128];
} qk_tune_device;

/* The product measured: the operation (a kernel family), format, the
 * activations' type and shape. */
typedef struct qk_tune_case {
    char op[24];
    char format[64];
    char format_variant[16]; /* MLX scale type, else "" */
    char activations[8];     /* "f32" (also "" in a case built in code) or "f16" */
    uint32_t M, K, T, E, top_k;
} qk_tune_case;

/* The case's activation type: "f32" where it names none. */
const char *qk_tune_case_activations(const qk_tune_case *c);

typedef struct qk_tune_record {
    qk_tune_device dev;
    char variant[256];   /* the kernel's name, a string (never parsed) */
    char family[24];     /* the kernel's family, from the manifest */
    char spv_sha256[65]; /* the manifest's spv_sha256: stale once the generator's differs */
    qk_tune_case c;
    char precision[8]; /* "f32", "f16", "q8" */
    double nmse;
    char status[12]; /* "ok", "wrong" (never selected), "failed" (it did not run), "unsupported"
                        (the device lacks what it requires) */
    char stage[8];   /* "check" (wrong, failed or unsupported), "screen" or "full" */
    double us, us_min, us_max; /* median and spread of `runs` dispatches, microseconds */
    uint32_t runs;
    char note[256]; /* why it failed, or how it was timed */
    double time;    /* seconds since the epoch */
} qk_tune_record;

typedef struct qk_tune_db {
    char path[1024];
    qk_tune_record *recs;
    uint32_t count;
    uint32_t torn, bad, dup; /* lines ignored on loading: torn last line, malformed, repeated */
    /* the whole lines loading could not read (malformed, or of a newer
     * version), verbatim without their newline: what a merge keeps */
    char **unread;
    uint32_t unread_count;
    int fd;      /* open for appending, or -1 */
    bool failed; /* an append failed: nothing more is appended */
} qk_tune_db;

/* Loads path (a missing file is an empty database). Malformed lines, a torn
 * last line and repeated records are skipped and each reported on log (may be
 * NULL) as "path:line: ..."; only an unreadable file or a newer version fails. */
bool qk_tune_db_load(const char *path, qk_tune_db *db, FILE *log, qk_error *e);
/* Opens the file for appending; a torn last line is ended first, so that the
 * next record starts a line of its own. */
bool qk_tune_db_open_append(qk_tune_db *db, qk_error *e);
/* Appends one record as one line with a single write, then fsync; the record
 * is also added to db->recs. The record starts a line of its own (a newline
 * first where the file does not end in one). A write cut short (a full disk,
 * a file size limit) is cut back off the file, the system's reason is in e,
 * and every later append fails at once: a tune stops at its first lost
 * record, and never leaves a torn line followed by a record. */
bool qk_tune_db_append(qk_tune_db *db, const qk_tune_record *r, qk_error *e);
void qk_tune_db_free(qk_tune_db *db);
/* Takes the database's lock, .NAME.lock beside it (the folder made where
 * missing), for a writer's whole run
 * (qk_lock_file: wait or fail at once with *busy set). Loading after it is
 * taken sees every record of an earlier writer. Returns the descriptor to
 * close when done, or -1 with why in e. */
int qk_tune_db_lock(const char *path, bool wait, FILE *log, bool *busy, qk_error *e);

/* The identity that decides whether a record is this device's: vendor, device,
 * driver version and pipeline-cache UUID. */
bool qk_tune_same_device(const qk_tune_device *a, const qk_tune_device *b);
bool qk_tune_same_case(const qk_tune_case *a, const qk_tune_case *b);
/* The record of (device, variant, content hash, case, stage), or NULL. */
const qk_tune_record *qk_tune_db_find(const qk_tune_db *db, const qk_tune_device *dev,
                                      const char *variant, const char *spv_sha256,
                                      const qk_tune_case *c, const char *stage);
/* The current content hash of a variant, or NULL if the generator no longer
 * makes it. */
typedef const char *(*qk_tune_hash_fn)(void *user, const char *variant);
/* Keeps in memory only the records of device dev (NULL: any) whose content
 * hash is the generator's (hash NULL: any hash); reports what it drops on log, as counts
 * with an example. Returns how many were dropped. The file is unchanged. */
uint32_t qk_tune_db_keep(qk_tune_db *db, const qk_tune_device *dev, qk_tune_hash_fn hash,
                         void *user, FILE *log);
/* Appends a record's line (no newline) to o. */
void qk_tune_record_json(qk_str *o, const qk_tune_record *r);
/* Writes the records of inputs[0 .. n) into out (its own records first when
 * it exists), each distinct record once, atomically; the whole lines of any
 * of them that it cannot read (malformed, or of a newer version) are kept
 * verbatim after the records, each distinct line once. */
bool qk_tune_db_merge(const char *const *inputs, uint32_t n, const char *out, FILE *log,
                      uint32_t *written, qk_error *e);

/* A two-pass candidate's parts: its name "twopass:A+B" (QK_TWO_PASS_PREFIX)
 * split into the first pass A and the second B (each at most size bytes);
 * false for any other name. */
bool qk_tune_two_pass_parts(const char *variant, char *first, char *second, size_t size);

#endif
