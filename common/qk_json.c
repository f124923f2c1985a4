/* The JSON reader behind json.h: recursive descent over RFC 8259 text, strict
 * (no comments, no trailing commas, no duplicate keys) so manifests stay portable.
 * Linear in the text: duplicate keys are found through a hash set. */
#include "qk_json.h"
#include "qk_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DEPTH = 64 };

typedef struct parser {
    const char *p, *end, *line_start;
    uint32_t line;
    int depth;
    bool failed;
    char *error;
    size_t error_size;
} parser;

static bool fail(parser *ps, const char *fmt, ...) {
    if (!ps->failed && ps->error && ps->error_size) {
        int n = snprintf(ps->error, ps->error_size, "%u:%u: ", ps->line,
                         (uint32_t)(ps->p - ps->line_start) + 1);
        if (n >= 0 && (size_t)n < ps->error_size) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(ps->error + n, ps->error_size - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    ps->failed = true;
    return false;
}

static void skip_space(parser *ps) {
    while (ps->p < ps->end) {
        char c = *ps->p;
        if (c == '\n') {
            ps->line++;
            ps->line_start = ps->p + 1;
        } else if (c != ' ' && c != '\t' && c != '\r') {
            return;
        }
        ps->p++;
    }
}

static void free_children(qkrt_json *v) {
    for (uint32_t i = 0; i < v->count; i++) {
        free_children(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
    v->items = NULL;
    v->keys = NULL;
    v->string = NULL;
    v->count = 0;
}

static bool parse_value(parser *ps, qkrt_json *out);

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool parse_hex4(parser *ps, uint32_t *out) {
    if (ps->end - ps->p < 4) return fail(ps, "truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(ps->p[i]);
        if (d < 0) return fail(ps, "bad \\u escape");
        v = v * 16 + (uint32_t)d;
    }
    ps->p += 4;
    *out = v;
    return true;
}

static size_t put_utf8(char *dst, uint32_t cp) {
    if (cp < 0x80) {
        dst[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        dst[0] = (char)(0xC0 | (cp >> 6));
        dst[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        dst[0] = (char)(0xE0 | (cp >> 12));
        dst[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    dst[0] = (char)(0xF0 | (cp >> 18));
    dst[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    dst[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    dst[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* At the opening quote; the decoded text is never longer than the source. */
static bool parse_string(parser *ps, char **out) {
    ps->p++;
    const char *start = ps->p;
    while (ps->p < ps->end && *ps->p != '"')
        ps->p += (*ps->p == '\\' && ps->p + 1 < ps->end) ? 2 : 1;
    if (ps->p >= ps->end) return fail(ps, "unterminated string");
    size_t span = (size_t)(ps->p - start);
    char *s = malloc(span + 1);
    if (!s) return fail(ps, "out of memory");
    size_t n = 0;
    ps->p = start;
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20) {
            free(s);
            return fail(ps, "control character in string");
        }
        if (c != '\\') {
            s[n++] = (char)c;
            ps->p++;
            continue;
        }
        ps->p++;
        char e = *ps->p++;
        uint32_t cp = 0;
        switch (e) {
        case '"':
            s[n++] = '"';
            break;
        case '\\':
            s[n++] = '\\';
            break;
        case '/':
            s[n++] = '/';
            break;
        case 'b':
            s[n++] = '\b';
            break;
        case 'f':
            s[n++] = '\f';
            break;
        case 'n':
            s[n++] = '\n';
            break;
        case 'r':
            s[n++] = '\r';
            break;
        case 't':
            s[n++] = '\t';
            break;
        case 'u':
            if (!parse_hex4(ps, &cp)) break;
            if (cp >= 0xD800 && cp < 0xDC00) {
                uint32_t lo = 0;
                if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u') {
                    fail(ps, "unpaired surrogate in \\u escape");
                    break;
                }
                ps->p += 2;
                if (!parse_hex4(ps, &lo)) break;
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    fail(ps, "unpaired surrogate in \\u escape");
                    break;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                fail(ps, "unpaired surrogate in \\u escape");
                break;
            }
            /* 6 source bytes (12 for a pair) always cover the 1..4 UTF-8 bytes */
            n += put_utf8(s + n, cp);
            break;
        default:
            ps->p--;
            fail(ps, "bad escape '\\%c'", e);
        }
        if (ps->failed) {
            free(s);
            return false;
        }
    }
    s[n] = '\0';
    ps->p++;
    *out = s;
    return true;
}

static bool parse_number(parser *ps, qkrt_json *out) {
    const char *start = ps->p, *q = ps->p;
    bool fraction = false;
    if (q < ps->end && *q == '-') q++;
    if (q >= ps->end || *q < '0' || *q > '9') return fail(ps, "bad number");
    if (*q == '0') {
        q++;
    } else {
        while (q < ps->end && *q >= '0' && *q <= '9')
            q++;
    }
    if (q < ps->end && *q == '.') {
        fraction = true;
        q++;
        if (q >= ps->end || *q < '0' || *q > '9') return fail(ps, "bad number");
        while (q < ps->end && *q >= '0' && *q <= '9')
            q++;
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        fraction = true;
        q++;
        if (q < ps->end && (*q == '+' || *q == '-')) q++;
        if (q >= ps->end || *q < '0' || *q > '9') return fail(ps, "bad number");
        while (q < ps->end && *q >= '0' && *q <= '9')
            q++;
    }
    char buf[64];
    size_t len = (size_t)(q - start);
    if (len >= sizeof buf) return fail(ps, "number too long");
    memcpy(buf, start, len);
    buf[len] = '\0';
    out->type = QKRT_JSON_NUMBER;
    out->number = strtod(buf, NULL);
    out->integral = false;
    if (!fraction) {
        /* exact int64, accumulated negatively so INT64_MIN fits */
        bool negative = buf[0] == '-';
        int64_t v = 0;
        bool overflow = false;
        for (const char *d = buf + negative; *d; d++) {
            int digit = *d - '0';
            if (v < (INT64_MIN + digit) / 10) {
                overflow = true;
                break;
            }
            v = v * 10 - digit;
        }
        if (!overflow && (negative || v != INT64_MIN)) {
            out->integral = true;
            out->integer = negative ? v : -v;
        }
    }
    ps->p = q;
    return true;
}

static bool grow(parser *ps, qkrt_json *v, uint32_t *capacity, bool with_keys) {
    if (v->count < *capacity) return true;
    uint32_t cap = *capacity ? *capacity * 2 : 4;
    qkrt_json *items = realloc(v->items, cap * sizeof *items);
    if (!items) return fail(ps, "out of memory");
    v->items = items;
    if (with_keys) {
        char **keys = realloc(v->keys, cap * sizeof *keys);
        if (!keys) return fail(ps, "out of memory");
        v->keys = keys;
    }
    *capacity = cap;
    return true;
}

static bool parse_array(parser *ps, qkrt_json *out) {
    uint32_t capacity = 0;
    out->type = QKRT_JSON_ARRAY;
    ps->p++;
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return true;
    }
    for (;;) {
        if (!grow(ps, out, &capacity, false)) return false;
        qkrt_json *item = &out->items[out->count];
        memset(item, 0, sizeof *item);
        out->count++;
        if (!parse_value(ps, item)) return false;
        skip_space(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            return true;
        }
        return fail(ps, "expected ',' or ']' in array");
    }
}

static bool parse_members(parser *ps, qkrt_json *out, qk_strset *seen) {
    uint32_t capacity = 0;
    for (;;) {
        skip_space(ps);
        if (ps->p >= ps->end || *ps->p != '"') return fail(ps, "expected a string key");
        if (!grow(ps, out, &capacity, true)) return false;
        const char *key_at = ps->p;
        char *key = NULL;
        if (!parse_string(ps, &key)) return false;
        int added = qk_strset_add(seen, key, out->count, NULL);
        if (added <= 0) {
            ps->p = key_at;
            if (added < 0) {
                free(key);
                return fail(ps, "out of memory");
            }
            fail(ps, "duplicate key '%s'", key);
            free(key);
            return false;
        }
        qkrt_json *item = &out->items[out->count];
        memset(item, 0, sizeof *item);
        out->keys[out->count] = key;
        out->count++;
        skip_space(ps);
        if (ps->p >= ps->end || *ps->p != ':') return fail(ps, "expected ':' after key '%s'", key);
        ps->p++;
        if (!parse_value(ps, item)) return false;
        skip_space(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            return true;
        }
        return fail(ps, "expected ',' or '}' in object");
    }
}

static bool parse_object(parser *ps, qkrt_json *out) {
    out->type = QKRT_JSON_OBJECT;
    ps->p++;
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return true;
    }
    qk_strset seen = {0};
    bool ok = parse_members(ps, out, &seen);
    qk_strset_free(&seen);
    return ok;
}

static bool parse_literal(parser *ps, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return fail(ps, "unexpected character '%c'", *ps->p);
    ps->p += n;
    return true;
}

static bool parse_value(parser *ps, qkrt_json *out) {
    skip_space(ps);
    if (ps->p >= ps->end) return fail(ps, "unexpected end of input");
    out->line = ps->line;
    out->column = (uint32_t)(ps->p - ps->line_start) + 1;
    if (++ps->depth > MAX_DEPTH) return fail(ps, "nested deeper than %d", MAX_DEPTH);
    bool ok;
    switch (*ps->p) {
    case '{':
        ok = parse_object(ps, out);
        break;
    case '[':
        ok = parse_array(ps, out);
        break;
    case '"':
        out->type = QKRT_JSON_STRING;
        ok = parse_string(ps, &out->string);
        break;
    case 't':
        out->type = QKRT_JSON_BOOL;
        out->boolean = true;
        ok = parse_literal(ps, "true");
        break;
    case 'f':
        out->type = QKRT_JSON_BOOL;
        ok = parse_literal(ps, "false");
        break;
    case 'n':
        out->type = QKRT_JSON_NULL;
        ok = parse_literal(ps, "null");
        break;
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
            ok = parse_number(ps, out);
        else
            ok = fail(ps, "unexpected character '%c'", *ps->p);
    }
    ps->depth--;
    return ok;
}

qkrt_json *qkrt_json_parse(const char *text, size_t length, char *error, size_t error_size) {
    parser ps = {text, text + length, text, 1, 0, false, error, error_size};
    qkrt_json *root = calloc(1, sizeof *root);
    if (!root) {
        fail(&ps, "out of memory");
        return NULL;
    }
    if (parse_value(&ps, root)) {
        skip_space(&ps);
        if (ps.p < ps.end) fail(&ps, "unexpected text after the document");
    }
    if (ps.failed) {
        qkrt_json_free(root);
        return NULL;
    }
    return root;
}

void qkrt_json_free(qkrt_json *root) {
    if (!root) return;
    free_children(root);
    free(root);
}

const qkrt_json *qkrt_json_get(const qkrt_json *object, const char *key) {
    if (!object || object->type != QKRT_JSON_OBJECT) return NULL;
    for (uint32_t i = 0; i < object->count; i++)
        if (strcmp(object->keys[i], key) == 0) return &object->items[i];
    return NULL;
}

const qkrt_json *qkrt_json_named(const qkrt_json *array, const char *name) {
    for (uint32_t i = 0; array && array->type == QKRT_JSON_ARRAY && i < array->count; i++) {
        const qkrt_json *n = qkrt_json_get(&array->items[i], "name");
        if (n && n->type == QKRT_JSON_STRING && !strcmp(n->string, name)) return &array->items[i];
    }
    return NULL;
}

bool qkrt_json_kernel_view(const qkrt_json *kernel, const qkrt_json *module, qkrt_json *view,
                           const char **twice) {
    *view = *kernel;
    *twice = NULL;
    size_t n = (size_t)kernel->count + module->count + 1;
    view->items = malloc(sizeof *view->items * n);
    view->keys = malloc(sizeof *view->keys * n);
    if (!view->items || !view->keys) return false;
    if (kernel->count) {
        memcpy(view->items, kernel->items, sizeof *kernel->items * kernel->count);
        memcpy(view->keys, kernel->keys, sizeof *kernel->keys * kernel->count);
    }
    for (uint32_t i = 0; module->type == QKRT_JSON_OBJECT && i < module->count; i++) {
        const char *key = module->keys[i];
        if (!strcmp(key, "name") || !strcmp(key, "specialization_constants")) continue;
        if (qkrt_json_get(kernel, key)) {
            *twice = key;
            return false;
        }
        view->items[view->count] = module->items[i];
        view->keys[view->count++] = module->keys[i];
    }
    return true;
}

void qkrt_json_view_free(qkrt_json *view) {
    free(view->items);
    free(view->keys);
    view->items = NULL;
    view->keys = NULL;
    view->count = 0;
}

const char *qkrt_json_type_name(qkrt_json_type type) {
    switch (type) {
    case QKRT_JSON_NULL:
        return "null";
    case QKRT_JSON_BOOL:
        return "a boolean";
    case QKRT_JSON_NUMBER:
        return "a number";
    case QKRT_JSON_STRING:
        return "a string";
    case QKRT_JSON_ARRAY:
        return "an array";
    case QKRT_JSON_OBJECT:
        return "an object";
    }
    return "?";
}
