/* The escaping functions of common/qk_escape.c on random and hostile strings:
 * JSON read back by libqkrt's reader, C literals and comments compiled with cc
 * and run, SVG text well formed; and the tuning report's SVG with a hostile name. */
#define _POSIX_C_SOURCE 200809L
#include "qk_json.h"
#include "qk_util.h"
#include "tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static uint64_t rng_state;
static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

/* What writers meet: names, quotes, comment ends, trigraphs, controls, bytes of
 * other encodings and broken UTF-8. */
static const char *const hostile[] = {
    "*/ int qk_injected_probe = 1; /*",
    "\"; int qk_injected_probe2; //",
    "a\\\"b\\",
    "?\?/\n#define X 1",
    "<script>alert(1)</script>",
    "x\" onload=\"alert(1)",
    "&amp; &lt; ' \"",
    "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
    "\xff\xfe\x80 \xc3 \xed\xa0\x80 \xf4\x90\x80\x80",
    "\x01\x1f\x7f\t\r\n",
    "",
};
#define N_HOSTILE (sizeof hostile / sizeof *hostile)

/* A random string: mostly the troublesome bytes. */
static void random_string(char *s, size_t max) {
    static const char pick[] = "\"\\*/?<>&'\n\t\x01\x7f\x80\xc3\xa9\xff ab09{}";
    size_t n = rnd() % max;
    for (size_t i = 0; i < n; i++) {
        char c = rnd() % 4 ? pick[rnd() % (sizeof pick - 1)] : (char)(1 + rnd() % 255);
        s[i] = c;
    }
    s[n] = '\0';
}

/* Whether s is all valid UTF-8 (the JSON writer keeps such strings whole),
 * decoded here on its own: no stray or missing continuation byte, no
 * overlong form, surrogate or code point past U+10FFFF. */
static bool utf8_ok(const char *str) {
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        unsigned c = *s, n = c < 0x80                 ? 1
                             : c >= 0xc2 && c <= 0xdf ? 2
                             : c >= 0xe0 && c <= 0xef ? 3
                             : c >= 0xf0 && c <= 0xf4 ? 4
                                                      : 0;
        if (!n) return false;
        unsigned cp = n == 1 ? c : c & (0x7f >> n);
        for (unsigned i = 1; i < n; i++) {
            if ((s[i] & 0xc0) != 0x80) return false;
            cp = cp << 6 | (s[i] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        s += n;
    }
    return true;
}

static void json_strings(void) {
    char s[64];
    for (uint32_t i = 0; i < 20000 + N_HOSTILE; i++) {
        if (i < N_HOSTILE)
            snprintf(s, sizeof s, "%s", hostile[i]);
        else
            random_string(s, sizeof s);
        qk_str o = {0};
        qk_str_add(&o, "{\"k\": ");
        qk_json_string(&o, s);
        qk_str_add(&o, ", \"after\": 1}");
        char err[256];
        qkrt_json *j = qkrt_json_parse(o.s, o.len, err, sizeof err);
        const qkrt_json *k = j ? qkrt_json_get(j, "k") : NULL;
        CHECK(j && k && k->type == QKRT_JSON_STRING && qkrt_json_get(j, "after"),
              "JSON of %s does not read back: %s", o.s, err);
        if (k && utf8_ok(s)) CHECK(!strcmp(k->string, s), "JSON string changed: %s", o.s);
        if (k) { /* what was read back is written as the same text */
            qk_str again = {0};
            qk_str_add(&again, "{\"k\": ");
            qk_json_string(&again, k->string);
            qk_str_add(&again, ", \"after\": 1}");
            CHECK(!strcmp(again.s, o.s), "JSON of %s read back is written as %s", o.s, again.s);
            qk_str_free(&again);
        }
        for (size_t c = 0; c < o.len; c++)
            CHECK((unsigned char)o.s[c] >= 0x20 && o.s[c] != 0x7f, "a raw control byte: %s", o.s);
        qkrt_json_free(j);
        qk_str_free(&o);
    }
}

static void json_numbers(void) {
    double fixed[] = {0,
                      -0.0,
                      1,
                      1e60,
                      -1e60,
                      1e300,
                      1e-300,
                      4.9e-324,
                      1.7976931348623157e308,
                      0.1,
                      18.334799999999998,
                      1764081000,
                      1e9,
                      123.456};
    for (uint32_t i = 0; i < 20000; i++) {
        double v;
        if (i < sizeof fixed / sizeof *fixed) {
            v = fixed[i];
        } else {
            uint64_t bits = (uint64_t)rnd() << 32 | rnd();
            memcpy(&v, &bits, sizeof v);
            if (!isfinite(v)) continue;
        }
        qk_str o = {0};
        qk_str_add(&o, "[");
        qk_json_number(&o, v);
        qk_str_add(&o, "]");
        char err[256];
        qkrt_json *j = qkrt_json_parse(o.s, o.len, err, sizeof err);
        CHECK(j && j->count == 1 && j->items[0].type == QKRT_JSON_NUMBER && j->items[0].number == v,
              "%.17g written as %s does not read back: %s", v, o.s, j ? "another value" : err);
        CHECK(o.len <= 26, "%.17g written in %zu characters: %s", v, o.len - 2, o.s);
        qkrt_json_free(j);
        qk_str_free(&o);
    }
    qk_str o = {0};
    qk_json_number(&o, INFINITY), qk_json_number(&o, -INFINITY), qk_json_number(&o, NAN);
    CHECK(!strcmp(o.s, "nullnullnull"), "non-finite numbers written as %s", o.s);
    qk_str_free(&o);
}

/* Every string as a literal under a comment of itself, compiled with cc
 * -Werror and run: it prints each literal's bytes, which must be the input's. */
static void c_literals(const char *dir) {
    enum { N = 300 };
    static char strs[N][64];
    qk_str src = {0}, want = {0};
    qk_str_add(&src, "#include <stdio.h>\n#include <string.h>\n");
    for (uint32_t i = 0; i < N; i++) {
        if (i < N_HOSTILE)
            snprintf(strs[i], sizeof strs[i], "%s", hostile[i]);
        else
            random_string(strs[i], sizeof strs[i]);
        qk_str_add(&src, "/* ");
        qk_c_comment(&src, strs[i]);
        qk_str_addf(&src, " */\nstatic const char s%u[] = ", i);
        qk_c_string(&src, strs[i]);
        qk_str_add(&src, ";\n");
        for (const char *p = strs[i]; *p; p++)
            qk_str_addf(&want, "%02x", (unsigned char)*p);
        qk_str_add(&want, "\n");
    }
    qk_str_add(&src, "static const char *const all[] = {");
    for (uint32_t i = 0; i < N; i++)
        qk_str_addf(&src, "s%u, ", i);
    qk_str_add(&src,
               "};\nint main(void) {\n    size_t i, j;\n"
               "    for (i = 0; i < sizeof all / sizeof *all; i++) {\n"
               "        for (j = 0; all[i][j]; j++) printf(\"%02x\", (unsigned char)all[i][j]);\n"
               "        printf(\"\\n\");\n    }\n    return 0;\n}\n");
    char *c = qk_path_join(dir, "lit.c"), *exe = qk_path_join(dir, "lit"),
         *out = qk_path_join(dir, "lit.out");
    qk_error e = {0};
    CHECK(qk_write_file(c, src.s, src.len, &e), "%s", e.msg);
    qk_str cmd = {0};
    qk_str_addf(&cmd, "cc -std=c99 -Wall -Wextra -Wcomment -Wtrigraphs -Werror %s -o %s && %s > %s",
                c, exe, exe, out);
    int rc = system(cmd.s);
    char *got = rc == 0 ? qk_read_file(out, NULL, &e) : NULL;
    CHECK(rc == 0, "%s: exit %d", cmd.s, rc);
    CHECK(!got || !strcmp(got, want.s), "C literals compiled back differ (source %s)", c);
    free(got), free(c), free(exe), free(out);
    qk_str_free(&cmd), qk_str_free(&src), qk_str_free(&want);
}

/* Escaped text has no markup: '&' only as one of the entities written. */
static bool xml_clean(const char *t) {
    static const char *const ents[] = {"&lt;", "&gt;", "&amp;", "&quot;", "&apos;", "&#xfffd;"};
    for (const char *p = t; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '<' || c == '>' || c == '"' || c == '\'' || c == 0x7f ||
            (c < 0x20 && c != '\t' && c != '\n'))
            return false;
        if (c != '&') continue;
        bool known = false;
        for (size_t i = 0; i < sizeof ents / sizeof *ents && !known; i++)
            known = !strncmp(p, ents[i], strlen(ents[i]));
        if (!known) return false;
    }
    return true;
}

static void xml_text(void) {
    char s[64];
    for (uint32_t i = 0; i < 20000 + N_HOSTILE; i++) {
        if (i < N_HOSTILE)
            snprintf(s, sizeof s, "%s", hostile[i]);
        else
            random_string(s, sizeof s);
        qk_str o = {0};
        qk_xml_text(&o, s);
        CHECK(xml_clean(o.s ? o.s : ""), "XML text of %s: %s", s, o.s);
        qk_str_free(&o);
    }
}

/* The report's SVG names each candidate: a name with markup stays text. */
static void report_svg(void) {
    qk_tune_record r[2];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 2; i++) {
        snprintf(r[i].dev.cache_uuid, sizeof r[i].dev.cache_uuid, "%032x", 7);
        snprintf(r[i].dev.name, sizeof r[i].dev.name, "<b>dev</b>");
        snprintf(r[i].c.op, sizeof r[i].c.op, "matvec");
        snprintf(r[i].c.format, sizeof r[i].c.format, "q4_0");
        r[i].c.M = 64, r[i].c.K = 256, r[i].c.T = 1;
        snprintf(r[i].precision, sizeof r[i].precision, "f32");
        snprintf(r[i].stage, sizeof r[i].stage, "full");
        r[i].us = 10 + i, r[i].runs = 5;
    }
    snprintf(r[0].variant, sizeof r[0].variant, "<script>alert(1)</script>");
    snprintf(r[0].status, sizeof r[0].status, "ok");
    snprintf(r[1].variant, sizeof r[1].variant, "x\"/><script>alert(2)</script>");
    snprintf(r[1].status, sizeof r[1].status, "wrong");
    qk_tune_db db = {.recs = r, .count = 2, .fd = -1};
    qk_tune_outcome *oc;
    uint32_t n = qk_tune_outcomes(&db, "any", NULL, NULL, &oc);
    qk_str svg = {0};
    qk_tune_report_svg(&svg, &db, oc, n);
    CHECK(!strstr(svg.s, "<script"), "the report's SVG runs a script:\n%s", svg.s);
    CHECK(strstr(svg.s, "&lt;script&gt;alert(1)"), "the winner's name is not in the SVG");
    free(oc);
    qk_str_free(&svg);
}

int main(void) {
    const char *env = getenv("QKGEN_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)getpid();
    rng_state = seed;
    printf("seed %llu (QKGEN_SEED repeats it)\n", (unsigned long long)seed);
    char dir[] = "/tmp/qk_escape_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    json_strings();
    json_numbers();
    c_literals(dir);
    xml_text();
    report_svg();
    if (!fails) qk_rmtree(dir);
    printf("%s (%d failures)\n", fails ? "FAIL" : "ok", fails);
    return fails != 0;
}
