/* Fuzz harness: the tuning database reader (tune/db.c). Whatever it keeps of
 * a file must survive being written as records and read again unchanged. */
#include "db.h"
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every record of db as the writer writes them, one a line. */
static char *lines(const qk_tune_db *db) {
    qk_str s = {0};
    for (uint32_t i = 0; i < db->count; i++) {
        qk_tune_record_json(&s, &db->recs[i]);
        qk_str_add(&s, "\n");
    }
    return qk_str_take(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *log;
    if (!log) log = fopen("/dev/null", "w"); /* the reader's reports, formatted but not kept */
    const char *path = qkfuzz_file("tune.jsonl", data, size);
    qk_tune_db db;
    qk_error e = {0};
    if (!qk_tune_db_load(path, &db, log, &e)) {
        if (!e.set || !e.msg[0]) qkfuzz_fail("a database refused without a message", NULL);
        qk_tune_db_free(&db);
        return 0;
    }
    char *first = lines(&db);
    const char *again = qkfuzz_file("again.jsonl", (const uint8_t *)first, strlen(first));
    qk_tune_db db2;
    if (!qk_tune_db_load(again, &db2, log, &e))
        qkfuzz_fail("the records written cannot be read back", e.msg);
    char *second = lines(&db2);
    if (db2.count != db.count || db2.bad || db2.torn || db2.dup || strcmp(first, second) != 0)
        qkfuzz_fail("records written and read back differ", first);
    free(first);
    free(second);
    qk_tune_db_free(&db2);
    qk_tune_db_free(&db);
    return 0;
}
