/* The tuning database: round trip, merge (keeping what it cannot read),
 * records of another device and stale ones, a full disk (a file size limit),
 * and a writer killed with SIGKILL at random moments (at least 20 times)
 * that resumes: no record lost, repeated or torn. */
#define _POSIX_C_SOURCE 200809L
#include "db.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fails;
#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

static const qk_tune_device dev_a = {0x10de, 0x2330, 100, "00112233445566778899aabbccddeeff",
                                     "NVIDIA \"H100\""};
static const qk_tune_device dev_b = {0x10005, 0, 1, "ffeeddccbbaa99887766554433221100", "llvmpipe"};

/* Record i: a distinct variant and case; a long note so that a kill can land
 * in the middle of a line. */
static qk_tune_record rec(uint32_t i, const qk_tune_device *dev) {
    qk_tune_record r = {0};
    r.dev = *dev;
    snprintf(r.variant, sizeof r.variant, "matvec_q4_0_f32_v%u", i);
    snprintf(r.family, sizeof r.family, "matvec");
    snprintf(r.spv_sha256, sizeof r.spv_sha256, "%064x", i * 2654435761u);
    snprintf(r.c.op, sizeof r.c.op, "matvec");
    snprintf(r.c.format, sizeof r.c.format, "q4_0");
    r.c.M = 4096, r.c.K = 14336, r.c.T = 1 + i % 8;
    snprintf(r.precision, sizeof r.precision, i % 3 ? "f32" : "q8");
    r.nmse = 1e-14 * (i + 1);
    snprintf(r.status, sizeof r.status, "ok");
    snprintf(r.stage, sizeof r.stage, i % 2 ? "full" : "screen");
    r.us = 10.0 + i, r.us_min = 9.5 + i, r.us_max = 11.25 + i, r.runs = 50;
    for (int j = 0; j < 200; j++)
        r.note[j] = (char)('a' + (i + j) % 26);
    r.time = 1764000000 + i;
    return r;
}

static bool same(const qk_tune_record *a, const qk_tune_record *b) {
    return qk_tune_same_device(&a->dev, &b->dev) && !strcmp(a->dev.name, b->dev.name) &&
           !strcmp(a->variant, b->variant) && !strcmp(a->spv_sha256, b->spv_sha256) &&
           qk_tune_same_case(&a->c, &b->c) && !strcmp(a->precision, b->precision) &&
           !strcmp(a->status, b->status) && !strcmp(a->stage, b->stage) && a->us == b->us &&
           a->us_min == b->us_min && a->us_max == b->us_max && a->runs == b->runs &&
           !strcmp(a->note, b->note) && a->time == b->time &&
           (a->nmse - b->nmse) <= 1e-6 * a->nmse && (b->nmse - a->nmse) <= 1e-6 * a->nmse;
}

static void round_trip(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/rt.jsonl", dir);
    qk_tune_db db;
    qk_error e = {0};
    CHECK(qk_tune_db_load(path, &db, stdout, &e) && db.count == 0, "empty: %s", e.msg);
    for (uint32_t i = 0; i < 10; i++) {
        qk_tune_record r = rec(i, i < 8 ? &dev_a : &dev_b);
        CHECK(qk_tune_db_append(&db, &r, &e), "append: %s", e.msg);
    }
    qk_tune_db_free(&db);
    CHECK(qk_tune_db_load(path, &db, stdout, &e), "load: %s", e.msg);
    CHECK(db.count == 10 && !db.torn && !db.bad && !db.dup, "10 records back, got %u", db.count);
    for (uint32_t i = 0; i < db.count; i++) {
        qk_tune_record r = rec(i, i < 8 ? &dev_a : &dev_b);
        CHECK(same(&db.recs[i], &r), "record %u differs after the round trip", i);
    }
    qk_tune_record r3 = rec(3, &dev_a);
    CHECK(qk_tune_db_find(&db, &dev_a, r3.variant, r3.spv_sha256, &r3.c, r3.stage), "find");
    CHECK(!qk_tune_db_find(&db, &dev_b, r3.variant, r3.spv_sha256, &r3.c, r3.stage),
          "another device's record found");
    /* other devices' records and stale ones are dropped with a message */
    uint32_t dropped = qk_tune_db_keep(&db, &dev_a, NULL, NULL, stdout);
    CHECK(dropped == 2 && db.count == 8, "foreign: dropped %u, kept %u", dropped, db.count);
    qk_tune_db_free(&db);
}

/* f16 activations: a case of their own, written as version 2 with the
 * field; f32 ones as version 1 without it (older readers skip the others) */
static void activations(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/act.jsonl", dir);
    qk_tune_db db;
    qk_error e = {0};
    CHECK(qk_tune_db_load(path, &db, stdout, &e), "empty: %s", e.msg);
    qk_tune_record a = rec(1, &dev_a), b = a;
    snprintf(b.c.activations, sizeof b.c.activations, "f16");
    CHECK(!qk_tune_same_case(&a.c, &b.c), "f16 and f32 activations are one case");
    CHECK(qk_tune_db_append(&db, &a, &e) && qk_tune_db_append(&db, &b, &e), "append: %s", e.msg);
    qk_tune_db_free(&db);
    size_t n = 0;
    char *text = qk_read_file(path, &n, &e);
    char *second = text ? strchr(text, '\n') : NULL;
    CHECK(second && !strncmp(text, "{\"v\": 1,", 8) && !strncmp(second + 1, "{\"v\": 2,", 8) &&
              (!strstr(text, "activations\"") || strstr(text, "activations\"") > second) &&
              strstr(second, "\"activations\": \"f16\""),
          "the f32 record as version 1 without activations, the f16 one as version 2 with");
    free(text);
    CHECK(qk_tune_db_load(path, &db, stdout, &e) && db.count == 2 && !db.dup && !db.bad,
          "two records back: %u (%u repeated)", db.count, db.dup);
    CHECK(db.count == 2 && same(&db.recs[0], &a) && same(&db.recs[1], &b) &&
              !strcmp(qk_tune_case_activations(&db.recs[0].c), "f32") &&
              !strcmp(db.recs[1].c.activations, "f16"),
          "the records differ after the round trip");
    qk_tune_db_free(&db);
}

static const char *hash_even(void *user, const char *variant) {
    (void)user;
    static char h[65];
    unsigned i = (unsigned)atoi(strrchr(variant, 'v') + 1);
    snprintf(h, sizeof h, "%064x", i % 2 ? 0u : i * 2654435761u); /* odd ones: stale */
    return h;
}

static void stale(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/rt.jsonl", dir);
    qk_tune_db db;
    qk_error e = {0};
    CHECK(qk_tune_db_load(path, &db, stdout, &e), "load: %s", e.msg);
    uint32_t dropped = qk_tune_db_keep(&db, &dev_a, hash_even, NULL, stdout);
    /* 2 of dev_b, and the odd ones among 0..7 */
    CHECK(dropped == 6 && db.count == 4, "stale: dropped %u, kept %u", dropped, db.count);
    for (uint32_t i = 0; i < db.count; i++)
        CHECK(!strcmp(db.recs[i].spv_sha256, hash_even(NULL, db.recs[i].variant)), "kept stale");
    qk_tune_db_free(&db);
}

static void merge(const char *dir) {
    char a[512], b[512], c[512];
    snprintf(a, sizeof a, "%s/a.jsonl", dir), snprintf(b, sizeof b, "%s/b.jsonl", dir);
    snprintf(c, sizeof c, "%s/c.jsonl", dir);
    qk_tune_db da, db;
    qk_error e = {0};
    qk_tune_db_load(a, &da, stdout, &e), qk_tune_db_load(b, &db, stdout, &e);
    for (uint32_t i = 0; i < 6; i++) { /* a: 0..5 on dev_a, b: 3..8 on dev_b and dev_a */
        qk_tune_record r = rec(i, &dev_a);
        qk_tune_db_append(&da, &r, &e);
        r = rec(i + 3, i % 2 ? &dev_b : &dev_a);
        qk_tune_db_append(&db, &r, &e);
    }
    qk_tune_db_free(&da), qk_tune_db_free(&db);
    const char *in[2] = {a, b};
    uint32_t n = 0;
    CHECK(qk_tune_db_merge(in, 2, c, stdout, &n, &e), "merge: %s", e.msg);
    /* a's 6, b's 3 on dev_b, b's 3 on dev_a of which 3 and 5 are in a already */
    CHECK(n == 10, "merged %u records, expected 10", n);
    CHECK(qk_tune_db_merge(in, 2, c, stdout, &n, &e) && n == 10, "merge again: %u", n);
    qk_tune_db dc;
    qk_tune_db_load(c, &dc, stdout, &e);
    CHECK(dc.count == 10 && !dc.dup, "merged file: %u records, %u repeated", dc.count, dc.dup);
    qk_tune_db_free(&dc);
}

/* What a merge cannot read it keeps, verbatim: the output's own records of a
 * newer version and malformed lines, and an input's. */
static void merge_unread(const char *dir) {
    char a[512], c[512];
    snprintf(a, sizeof a, "%s/ua.jsonl", dir), snprintf(c, sizeof c, "%s/uc.jsonl", dir);
    const char *newer = "{\"v\": 99, \"device\": {\"future\": true}, \"variant\": \"x\"}";
    const char *garbage = "not a record";
    const char *newer_a = "{\"v\": 3, \"variant\": \"from a\"}";
    qk_tune_db da, dc;
    qk_error e = {0};
    qk_tune_db_load(a, &da, NULL, &e), qk_tune_db_load(c, &dc, NULL, &e);
    qk_tune_record r = rec(1, &dev_a);
    qk_tune_db_append(&da, &r, &e);
    r = rec(2, &dev_a);
    qk_tune_db_append(&dc, &r, &e);
    qk_tune_db_free(&da), qk_tune_db_free(&dc);
    FILE *f = fopen(c, "a");
    fprintf(f, "%s\n%s\n", newer, garbage);
    fclose(f);
    f = fopen(a, "a");
    fprintf(f, "%s\n%s\n", newer_a, newer); /* newer: in both, kept once */
    fclose(f);
    const char *in[1] = {a};
    uint32_t n = 0;
    CHECK(qk_tune_db_merge(in, 1, c, stdout, &n, &e) && n == 2, "merge: %u records: %s", n, e.msg);
    char *text = qk_read_file(c, NULL, &e);
    const char *lines[] = {newer, garbage, newer_a};
    for (int i = 0; i < 3; i++) {
        char *at = text ? strstr(text, lines[i]) : NULL;
        CHECK(at && (at == text || at[-1] == '\n') && at[strlen(lines[i])] == '\n',
              "merge dropped the line it cannot read: %s", lines[i]);
        CHECK(!at || !strstr(at + 1, lines[i]), "merge kept a line twice: %s", lines[i]);
    }
    free(text);
    CHECK(qk_tune_db_load(c, &dc, NULL, &e) && dc.count == 2 && dc.bad == 3,
          "merged: %u records, %u unread", dc.count, dc.bad);
    qk_tune_db_free(&dc);
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* A full disk: a file size limit (RLIMIT_FSIZE, SIGXFSZ ignored, so that
 * the write past it fails with EFBIG) in a child. The append that does not
 * fit fails with the system's reason, the file is left as it was, and no
 * later append is made; a later writer appends after whole lines only. */
static void full(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/full.jsonl", dir);
    qk_tune_db db;
    qk_error e = {0};
    qk_tune_db_load(path, &db, stdout, &e);
    for (uint32_t i = 0; i < 2; i++) {
        qk_tune_record r = rec(i, &dev_a);
        qk_tune_db_append(&db, &r, &e);
    }
    qk_tune_db_free(&db);
    const long good = file_size(path);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        struct rlimit lim;
        getrlimit(RLIMIT_FSIZE, &lim);
        lim.rlim_cur = (rlim_t)good + 300; /* a record is longer: a short write */
        signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(77);
        qk_tune_db_load(path, &db, NULL, &e);
        qk_tune_record r = rec(2, &dev_a);
        qk_error we = {0};
        if (qk_tune_db_append(&db, &r, &we)) printf("FAIL full: a record past the limit\n"), bad++;
        if (!strstr(we.msg, strerror(EFBIG)))
            printf("FAIL full: '%s' does not give the reason (%s)\n", we.msg, strerror(EFBIG)),
                bad++;
        if (file_size(path) != good)
            printf("FAIL full: %ld bytes after the failed append, %ld before\n", file_size(path),
                   good),
                bad++;
        r = rec(3, &dev_a); /* would fit: the writer has stopped */
        qk_error we2 = {0};
        if (qk_tune_db_append(&db, &r, &we2) || file_size(path) != good)
            printf("FAIL full: appended after a failed append\n"), bad++;
        fflush(stdout);
        _exit(bad ? 1 : 0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 77),
          "full: the limited writer failed (%d)", st);
    qk_tune_record r = rec(4, &dev_a);
    CHECK(qk_tune_db_load(path, &db, stdout, &e) && qk_tune_db_append(&db, &r, &e), "after: %s",
          e.msg);
    qk_tune_db_free(&db);
    CHECK(qk_tune_db_load(path, &db, stdout, &e) && db.count == 3 && !db.bad && !db.torn,
          "full: %u records, %u bad, %u torn (expected 3, 0, 0)", db.count, db.bad, db.torn);
    qk_tune_db_free(&db);
    /* a torn line another writer left (killed mid-write): the next record
     * starts a line of its own though the file was opened before */
    qk_tune_db_load(path, &db, stdout, &e);
    r = rec(5, &dev_a);
    qk_tune_db_append(&db, &r, &e);
    FILE *f = fopen(path, "a");
    fputs("{\"v\": 1, \"dev", f);
    fclose(f);
    r = rec(6, &dev_a);
    CHECK(qk_tune_db_append(&db, &r, &e), "after a torn line: %s", e.msg);
    qk_tune_db_free(&db);
    CHECK(qk_tune_db_load(path, &db, stdout, &e) && db.count == 5 && db.bad == 1,
          "after another's torn line: %u records, %u bad (expected 5, 1)", db.count, db.bad);
    qk_tune_db_free(&db);
}

static void torn(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/torn.jsonl", dir);
    qk_tune_db db;
    qk_error e = {0};
    qk_tune_db_load(path, &db, stdout, &e);
    qk_tune_record r = rec(1, &dev_a);
    qk_tune_db_append(&db, &r, &e);
    qk_tune_db_free(&db);
    FILE *f = fopen(path, "a");
    fputs("{\"v\": 1, \"device\": {\"vendor_id\": 4318, \"dev", f); /* cut off */
    fclose(f);
    CHECK(qk_tune_db_load(path, &db, stdout, &e) && db.count == 1 && db.torn == 1,
          "torn: %u records, %u torn", db.count, db.torn);
    r = rec(2, &dev_a);
    CHECK(qk_tune_db_append(&db, &r, &e), "append after a torn line: %s", e.msg);
    qk_tune_db_free(&db);
    CHECK(qk_tune_db_load(path, &db, stdout, &e) && db.count == 2 && db.bad == 1,
          "after: %u records, %u bad", db.count, db.bad);
    qk_tune_db_free(&db);
}

enum { N_KEYS = 400, KILLS = 24 };

/* The writer: resumes from the file and appends every record it lacks. */
static void writer(const char *path) {
    qk_tune_db db;
    qk_error e = {0};
    if (!qk_tune_db_load(path, &db, NULL, &e)) _exit(3);
    for (uint32_t i = 0; i < N_KEYS; i++) {
        qk_tune_record r = rec(i, &dev_a);
        if (qk_tune_db_find(&db, &r.dev, r.variant, r.spv_sha256, &r.c, r.stage)) continue;
        if (!qk_tune_db_append(&db, &r, &e)) _exit(4);
    }
    _exit(0);
}

static void killed(const char *dir, uint64_t seed) {
    char path[512];
    snprintf(path, sizeof path, "%s/kill.jsonl", dir);
    unlink(path);
    srand((unsigned)seed);
    uint32_t kills = 0;
    for (int round = 0; round < 200; round++) {
        pid_t pid = fork();
        if (pid == 0) writer(path);
        bool last = kills >= KILLS;
        if (!last) {
            struct timespec ts = {0, (long)(rand() % 3000) * 1000};
            nanosleep(&ts, NULL);
            if (kill(pid, SIGKILL) == 0) kills++;
        }
        int st = 0;
        waitpid(pid, &st, 0);
        if (last || (WIFEXITED(st) && WEXITSTATUS(st) == 0 && kills >= KILLS)) {
            CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the last writer failed: %d", st);
            break;
        }
        /* a writer that finished before its kill: start over, so the kills
         * keep landing while records are written */
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) unlink(path);
    }
    qk_tune_db db;
    qk_error e = {0};
    CHECK(qk_tune_db_load(path, &db, stdout, &e), "load: %s", e.msg);
    uint32_t seen[N_KEYS] = {0};
    for (uint32_t i = 0; i < db.count; i++) {
        unsigned k = (unsigned)atoi(strrchr(db.recs[i].variant, 'v') + 1);
        qk_tune_record want = rec(k, &dev_a);
        CHECK(k < N_KEYS && same(&db.recs[i], &want), "record %u is not what was written", i);
        if (k < N_KEYS) seen[k]++;
    }
    for (uint32_t k = 0; k < N_KEYS; k++)
        CHECK(seen[k] == 1, "record %u present %u times", k, seen[k]);
    CHECK(!db.dup, "%u repeated records", db.dup);
    CHECK(kills >= KILLS, "only %u kills", kills);
    printf("writer killed %u times: %u records, %u torn or cut lines reported\n", kills, db.count,
           db.torn + db.bad);
    qk_tune_db_free(&db);
}

int main(void) {
    char dir[] = "/tmp/qk-tune-db-XXXXXX";
    if (!mkdtemp(dir)) return 2;
    uint64_t seed = (uint64_t)time(NULL);
    printf("seed %llu, folder %s\n", (unsigned long long)seed, dir);
    round_trip(dir);
    activations(dir);
    stale(dir);
    merge(dir);
    merge_unread(dir);
    torn(dir);
    full(dir);
    killed(dir, seed);
    if (!fails) qk_rmtree(dir);
    printf("%s\n", fails ? "FAILED" : "all passed");
    return fails ? 1 : 0;
}
