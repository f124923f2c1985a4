/* The strict YAML reader of the spec module. libyaml marks are 0-based; every
 * message here is 1-based, as editors count. */
#include "yamlw.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Specs are a few KiB; a larger file is not one. */
#define SPEC_MAX_BYTES ((size_t)4 << 20)

/* libyaml's reader errors (bad UTF-8) carry a byte offset, not a mark. */
static yaml_mark_t mark_of_offset(const char *text, size_t n, size_t offset) {
    yaml_mark_t m = {0};
    for (size_t i = 0; i < offset && i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n')
            m.line++, m.column = 0;
        else if ((c & 0xc0) != 0x80)
            m.column++;
    }
    return m;
}

/* libyaml's scanner is quadratic in the nesting of flow collections (20,000
 * "[" take seconds, 100,000 minutes), so the depth is bounded by a pass over
 * the events before the document is built. Syntax errors are left to that
 * second pass, which reports them. */
static bool check_depth(const char *path, const char *text, size_t n, qk_error *e) {
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, n);
    int depth = 0;
    bool ok = true, more = true;
    while (ok && more) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) break;
        if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
            if (++depth > QK_SPEC_MAX_DEPTH) {
                qk_error_set(e, "%s:%zu:%zu: nested deeper than %d levels", path,
                             ev.start_mark.line + 1, ev.start_mark.column + 1, QK_SPEC_MAX_DEPTH);
                ok = false;
            }
        } else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
            depth--;
        }
        more = ev.type != YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return ok;
}

bool yw_open(yw *w, const char *path, qk_error *e) {
    memset(w, 0, sizeof *w);
    w->path = path;
    w->e = e;
    size_t n = 0;
    char *text = qk_read_file_max(path, SPEC_MAX_BYTES, &n, e);
    if (!text) return false;
    if (!check_depth(path, text, n, e)) {
        free(text);
        return false;
    }
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, n);
    bool ok = yaml_parser_load(&p, &w->doc);
    if (!ok) {
        yaml_mark_t m = p.problem_mark;
        if (p.error == YAML_READER_ERROR) m = mark_of_offset(text, n, p.problem_offset);
        char opened[64] = "";
        if (p.context && p.context_mark.line != m.line)
            snprintf(opened, sizeof opened, " (opened at %zu:%zu)", p.context_mark.line + 1,
                     p.context_mark.column + 1);
        qk_error_set(e, "%s:%zu:%zu: YAML syntax error: %s%s%s%s", path, m.line + 1, m.column + 1,
                     p.problem ? p.problem : "unknown", p.context ? " " : "",
                     p.context ? p.context : "", opened);
    } else if (!yaml_document_get_root_node(&w->doc)) {
        qk_error_set(e, "%s:1:1: the file is empty", path);
        yaml_document_delete(&w->doc);
        ok = false;
    } else {
        /* a spec is one document: a second one would be silently ignored */
        yaml_document_t next;
        if (yaml_parser_load(&p, &next)) {
            yaml_node_t *root = yaml_document_get_root_node(&next);
            if (root) {
                qk_error_set(e, "%s:%zu:%zu: a second YAML document; a spec is one document", path,
                             next.start_mark.line + 1, next.start_mark.column + 1);
                ok = false;
            }
            yaml_document_delete(&next);
        } else {
            qk_error_set(e, "%s:%zu:%zu: YAML syntax error: %s", path, p.problem_mark.line + 1,
                         p.problem_mark.column + 1, p.problem ? p.problem : "unknown");
            ok = false;
        }
        if (!ok) yaml_document_delete(&w->doc);
    }
    yaml_parser_delete(&p);
    free(text);
    return ok;
}

void yw_close(yw *w) {
    yaml_document_delete(&w->doc);
}

ynode *yw_root(yw *w) {
    return yaml_document_get_root_node(&w->doc);
}

qk_mark yw_mark(const ynode *n) {
    return (qk_mark){(int)n->start_mark.line + 1, (int)n->start_mark.column + 1};
}

bool yw_fail(yw *w, const ynode *n, const char *where, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    qk_mark m = yw_mark(n);
    qk_error_set(w->e, "%s:%d:%d: %s%s%s", w->path, m.line, m.col, where ? where : "",
                 where && where[0] ? ": " : "", msg);
    return false;
}

bool yw_is_map(const ynode *n) {
    return n && n->type == YAML_MAPPING_NODE;
}

bool yw_is_seq(const ynode *n) {
    return n && n->type == YAML_SEQUENCE_NODE;
}

static const char *kind_name(const ynode *n) {
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return "a scalar";
    case YAML_SEQUENCE_NODE:
        return "a list";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "nothing";
    }
}

size_t yw_map_len(const ynode *n) {
    return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
}

ynode *yw_map_key(yw *w, ynode *n, size_t i) {
    return yaml_document_get_node(&w->doc, n->data.mapping.pairs.start[i].key);
}

ynode *yw_map_value(yw *w, ynode *n, size_t i) {
    return yaml_document_get_node(&w->doc, n->data.mapping.pairs.start[i].value);
}

size_t yw_seq_len(const ynode *n) {
    return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

ynode *yw_seq_at(yw *w, ynode *n, size_t i) {
    return yaml_document_get_node(&w->doc, n->data.sequence.items.start[i]);
}

static const char *scalar(const ynode *n) {
    return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

bool yw_check_map(yw *w, ynode *n, const char *where, const char *const *allowed,
                  const char *const *required) {
    if (!yw_is_map(n)) return yw_fail(w, n, where, "expected a mapping, got %s", kind_name(n));
    for (size_t i = 0; i < yw_map_len(n); i++) {
        ynode *k = yw_map_key(w, n, i);
        const char *ks = scalar(k);
        if (!ks) return yw_fail(w, k, where, "keys must be plain names");
        bool known = false;
        for (const char *const *a = allowed; *a && !known; a++)
            known = !strcmp(*a, ks);
        if (!known) {
            qk_str list = {0};
            for (const char *const *a = allowed; *a; a++)
                qk_str_addf(&list, "%s%s", a == allowed ? "" : ", ", *a);
            yw_fail(w, k, where, "unknown key '%s' (expected one of: %s)", ks, list.s);
            qk_str_free(&list);
            return false;
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(scalar(yw_map_key(w, n, j)) ? scalar(yw_map_key(w, n, j)) : "", ks))
                return yw_fail(w, k, where, "duplicate key '%s'", ks);
    }
    for (const char *const *r = required; r && *r; r++)
        if (!yw_get(w, n, *r)) return yw_fail(w, n, where, "missing required key '%s'", *r);
    return true;
}

ynode *yw_get_key(yw *w, ynode *map, const char *key) {
    for (size_t i = 0; i < yw_map_len(map); i++) {
        const char *ks = scalar(yw_map_key(w, map, i));
        if (ks && !strcmp(ks, key)) return yw_map_key(w, map, i);
    }
    return NULL;
}

ynode *yw_get(yw *w, ynode *map, const char *key) {
    for (size_t i = 0; i < yw_map_len(map); i++) {
        const char *ks = scalar(yw_map_key(w, map, i));
        if (ks && !strcmp(ks, key)) return yw_map_value(w, map, i);
    }
    return NULL;
}

bool yw_str(yw *w, ynode *n, const char *where, char *out, size_t size) {
    const char *s = scalar(n);
    if (!s) return yw_fail(w, n, where, "expected a string, got %s", kind_name(n));
    if (!s[0]) return yw_fail(w, n, where, "must not be empty");
    if (strlen(s) >= size)
        return yw_fail(w, n, where, "'%s' is too long (at most %zu characters)", s, size - 1);
    memcpy(out, s, strlen(s) + 1);
    return true;
}

bool yw_expr(yw *w, ynode *n, const char *where, qk_expr_kind kind, char *out, size_t size) {
    if (!yw_str(w, n, where, out, size)) return false;
    qk_error e = {0};
    if (!qk_expr_check(out, kind == QK_EXPR_CONDITION ? "condition" : "expression", kind, &e))
        return yw_fail(w, n, where, "%s", e.msg);
    return true;
}

bool yw_uint(yw *w, ynode *n, const char *where, uint32_t min, uint32_t max, uint32_t *out) {
    const char *s = scalar(n);
    if (!s) return yw_fail(w, n, where, "expected an integer, got %s", kind_name(n));
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!s[0] || *end || errno) return yw_fail(w, n, where, "expected an integer, got '%s'", s);
    if (v < (long long)min || v > (long long)max)
        return yw_fail(w, n, where, "%lld is out of range %u..%u", v, min, max);
    *out = (uint32_t)v;
    return true;
}

bool yw_bool(yw *w, ynode *n, const char *where, bool *out) {
    const char *s = scalar(n);
    if (s && (!strcmp(s, "true") || !strcmp(s, "false"))) {
        *out = s[0] == 't';
        return true;
    }
    return yw_fail(w, n, where, "expected true or false, got %s", s ? s : kind_name(n));
}

bool yw_uint_list(yw *w, ynode *n, const char *where, uint32_t min, uint32_t max, uint32_t *out,
                  uint32_t cap, uint32_t *count) {
    *count = 0;
    if (!yw_is_seq(n)) {
        *count = 1;
        return yw_uint(w, n, where, min, max, out);
    }
    if (yw_seq_len(n) == 0) return yw_fail(w, n, where, "the list is empty");
    if (yw_seq_len(n) > cap) return yw_fail(w, n, where, "more than %u values", cap);
    for (size_t i = 0; i < yw_seq_len(n); i++) {
        ynode *item = yw_seq_at(w, n, i);
        if (!yw_uint(w, item, where, min, max, &out[*count])) return false;
        for (uint32_t j = 0; j < *count; j++)
            if (out[j] == out[*count]) return yw_fail(w, item, where, "%u is listed twice", out[j]);
        (*count)++;
    }
    return true;
}

bool yw_str_list(yw *w, ynode *n, const char *where, char *out, size_t stride, uint32_t cap,
                 uint32_t *count) {
    *count = 0;
    if (!yw_is_seq(n)) {
        *count = 1;
        return yw_str(w, n, where, out, stride);
    }
    if (yw_seq_len(n) == 0) return yw_fail(w, n, where, "the list is empty");
    if (yw_seq_len(n) > cap) return yw_fail(w, n, where, "more than %u values", cap);
    for (size_t i = 0; i < yw_seq_len(n); i++) {
        ynode *item = yw_seq_at(w, n, i);
        char *dst = out + stride * *count;
        if (!yw_str(w, item, where, dst, stride)) return false;
        for (uint32_t j = 0; j < *count; j++)
            if (!strcmp(out + stride * j, dst))
                return yw_fail(w, item, where, "'%s' is listed twice", dst);
        (*count)++;
    }
    return true;
}

ynode *yw_list_item(yw *w, ynode *n, size_t i) {
    return yw_is_seq(n) ? yw_seq_at(w, n, i) : n;
}

bool yw_intexpr(yw *w, ynode *n, const char *where, qk_intexpr *out) {
    out->mark = yw_mark(n);
    return yw_str(w, n, where, out->text, sizeof out->text);
}
