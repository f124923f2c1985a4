/* Format expansion and the code generated from a format's layout: GLSL
 * accessors for the dequant hooks and the manifest's "weights" object. The
 * layout is declared once, in YAML; everything here is derived from it. */
#include "format.h"
#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct param_env {
    const qk_format *f;
} param_env;

static bool lookup_param(void *user, const char *name, size_t len, int64_t *value) {
    const qk_format *f = ((param_env *)user)->f;
    for (uint32_t i = 0; i < f->param_count; i++) {
        if (strlen(f->param_names[i]) != len || strncmp(f->param_names[i], name, len)) continue;
        char *end;
        long long v = strtoll(f->param_values[i], &end, 10);
        if (*end) return false;
        *value = v;
        return true;
    }
    return false;
}

static bool eval_int(const qk_format *f, const qk_intexpr *x, const char *where, uint32_t *out,
                     qk_error *e) {
    param_env env = {f};
    int64_t v;
    qk_error ee = {0};
    if (!qk_expr_eval(x->text, lookup_param, &env, &v, &ee)) {
        qk_error_set(e, "%s:%d:%d: %s: %s", f->spec->path, x->mark.line, x->mark.col, where,
                     ee.msg);
        return false;
    }
    if (v <= 0 || v > (1 << 20)) {
        qk_error_set(e, "%s:%d:%d: %s: '%s' is %lld for %s, out of range 1..%d", f->spec->path,
                     x->mark.line, x->mark.col, where, x->text, (long long)v, f->name, 1 << 20);
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

/* The spec's full_search for this member: true where it is absent. */
static bool eval_full_search(qk_format *f, qk_error *e) {
    const qk_intexpr *x = &f->spec->full_search;
    param_env env = {f};
    int64_t v = 1;
    qk_error ee = {0};
    if (x->text[0] && !qk_expr_eval(x->text, lookup_param, &env, &v, &ee)) {
        qk_error_set(e, "%s:%d:%d: full_search: %s", f->spec->path, x->mark.line, x->mark.col,
                     ee.msg);
        return false;
    }
    f->full_search = v != 0;
    return true;
}

static const char *param_value(const qk_format *f, const char *name) {
    for (uint32_t i = 0; i < f->param_count; i++)
        if (!strcmp(f->param_names[i], name)) return f->param_values[i];
    return NULL;
}

/* Fills name and variant from the pattern: {p} in the pattern takes p's value;
 * parameters the pattern does not use join the variant suffix. */
static void make_names(qk_format *f) {
    const char *pat = f->spec->name;
    qk_str n = {0}, v = {0};
    for (const char *p = pat; *p;) {
        const char *close = *p == '{' ? strchr(p, '}') : NULL;
        if (!close) {
            qk_str_addn(&n, p++, 1);
            continue;
        }
        char key[QK_MAX_NAME] = {0};
        snprintf(key, sizeof key, "%.*s", (int)(close - p - 1), p + 1);
        const char *val = param_value(f, key);
        qk_str_add(&n, val ? val : key);
        p = close + 1;
    }
    for (uint32_t i = 0; i < f->param_count; i++) {
        char key[QK_MAX_NAME + 2];
        snprintf(key, sizeof key, "{%s}", f->param_names[i]);
        if (strstr(pat, key)) continue;
        qk_str_addf(&v, "%s%s", v.len ? "_" : "", f->param_values[i]);
    }
    snprintf(f->name, sizeof f->name, "%s", n.s);
    snprintf(f->variant, sizeof f->variant, "%s", v.s ? v.s : "");
    qk_str_free(&n);
    qk_str_free(&v);
}

static bool resolve(qk_format *f, qk_error *e) {
    const qk_format_spec *s = f->spec;
    make_names(f);
    f->layout = s->layout;
    if (!eval_int(f, &s->elements, "block.elements", &f->elements, e) ||
        !eval_int(f, &s->sub_elements, "sub.elements", &f->sub_elements, e) ||
        !eval_full_search(f, e))
        return false;
    if (f->elements % f->sub_elements) {
        qk_error_set(e,
                     "%s:%d:%d: sub.elements: %u does not divide the %u elements of a block of %s",
                     s->path, s->sub_elements.mark.line, s->sub_elements.mark.col, f->sub_elements,
                     f->elements, f->name);
        return false;
    }
    if (s->layout == QK_LAYOUT_BLOCK) {
        if (!eval_int(f, &s->bytes, "block.bytes", &f->block_bytes, e)) return false;
        uint32_t off = 0;
        for (uint32_t i = 0; i < s->field_count; i++) {
            qk_field *fd = &f->fields[f->field_count++];
            snprintf(fd->name, sizeof fd->name, "%s", s->fields[i].name);
            fd->type = s->fields[i].type;
            fd->count = s->fields[i].count;
            fd->offset = off;
            off += qk_type_size(fd->type) * fd->count;
        }
        if (off != f->block_bytes) {
            qk_error_set(e, "%s:%d:%d: block.bytes: %u does not match the fields (%u bytes)",
                         s->path, s->bytes.mark.line, s->bytes.mark.col, f->block_bytes, off);
            return false;
        }
    } else {
        for (uint32_t i = 0; i < s->plane_count; i++) {
            qk_plane *p = &f->planes[f->plane_count++];
            snprintf(p->name, sizeof p->name, "%s", s->planes[i].name);
            const char *t = param_value(f, s->planes[i].type);
            p->type = qk_type_parse(t ? t : s->planes[i].type);
            if (p->type != QK_TYPE_U32 && p->type != QK_TYPE_F32 && p->type != QK_TYPE_F16 &&
                p->type != QK_TYPE_BF16 && p->type != QK_TYPE_U8) {
                qk_error_set(e,
                             "%s: planes[%u]: type '%s' must be u32, f32, f16, bf16 or u8 (or a "
                             "parameter naming one)",
                             s->path, i, t ? t : s->planes[i].type);
                return false;
            }
            if (!eval_int(f, &s->planes[i].per_group, "planes.per_group", &p->per_group, e))
                return false;
        }
    }
    return true;
}

static qk_dtype dtype_of(qk_type t) {
    switch (t) {
    case QK_TYPE_U8:
        return QK_DT_U8;
    case QK_TYPE_I8:
        return QK_DT_I8;
    case QK_TYPE_U16:
        return QK_DT_U16;
    case QK_TYPE_I16:
        return QK_DT_I16;
    case QK_TYPE_F16:
        return QK_DT_F16;
    case QK_TYPE_BF16:
        return QK_DT_BF16;
    case QK_TYPE_U32:
        return QK_DT_U32;
    case QK_TYPE_I32:
        return QK_DT_I32;
    case QK_TYPE_F32:
        return QK_DT_F32;
    default:
        return QK_DT_NONE;
    }
}

static qk_dtype table_dtype(const char *t) {
    static const struct {
        const char *name;
        qk_dtype t;
    } m[] = {{"u8", QK_DT_U8},   {"i8", QK_DT_I8},   {"u16", QK_DT_U16}, {"i16", QK_DT_I16},
             {"u32", QK_DT_U32}, {"i32", QK_DT_I32}, {"u64", QK_DT_U64}, {"f32", QK_DT_F32}};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (!strcmp(m[i].name, t)) return m[i].t;
    return QK_DT_NONE;
}

bool qk_format_decode(const qk_format *f, qk_decode **out, qk_error *e) {
    const qk_format_spec *s = f->spec;
    *out = NULL;
    if (!s->has_reference) return true;
    qk_decode_var vars[QK_MAX_FIELDS];
    bool planar = f->layout == QK_LAYOUT_PLANAR;
    uint32_t nv = planar ? f->plane_count : f->field_count;
    for (uint32_t i = 0; i < nv; i++) {
        const qk_random_hint *h = planar ? &s->planes[i].random : &s->fields[i].random;
        vars[i] = (qk_decode_var){
            .name = planar ? f->planes[i].name : f->fields[i].name,
            .type = dtype_of(planar ? f->planes[i].type : f->fields[i].type),
            .offset = planar ? 0 : f->fields[i].offset,
            .count = planar ? f->planes[i].per_group : f->fields[i].count,
            .random_count = h->count,
        };
        for (uint32_t k = 0; k < h->count && k < QK_DECODE_MAX_RANGES; k++)
            vars[i].random_lo[k] = h->lo[k], vars[i].random_hi[k] = h->hi[k];
    }
    qk_decode_table tables[QK_MAX_TABLES];
    double *reals[QK_MAX_TABLES] = {0};
    for (uint32_t i = 0; i < s->table_count; i++) {
        const qk_table_spec *t = &s->tables[i];
        tables[i] = (qk_decode_table){t->name, table_dtype(t->type), t->count,
                                      &s->table_values[t->first], NULL};
        if (tables[i].type == QK_DT_F32) {
            reals[i] = qk_xcalloc(t->count, sizeof *reals[i]);
            memcpy(reals[i], &s->table_values[t->first], sizeof(double) * t->count);
            tables[i].ints = NULL;
            tables[i].reals = reals[i];
        }
    }
    const char *pnames[QK_MAX_PARAMS];
    int64_t pvalues[QK_MAX_PARAMS];
    uint32_t np = 0;
    for (uint32_t i = 0; i < f->param_count; i++) {
        char *end;
        long long v = strtoll(f->param_values[i], &end, 10);
        if (*end) continue; /* a type parameter: not a number */
        pnames[np] = f->param_names[i];
        pvalues[np++] = v;
    }
    const char *lnames[QK_MAX_LETS], *ltexts[QK_MAX_LETS];
    for (uint32_t i = 0; i < s->let_count; i++)
        lnames[i] = s->lets[i].name, ltexts[i] = s->lets[i].text;
    qk_decode_desc d = {
        .planar = planar,
        .elements = f->elements,
        .block_bytes = f->block_bytes,
        .var_count = nv,
        .vars = vars,
        .table_count = s->table_count,
        .tables = tables,
        .param_count = np,
        .param_names = pnames,
        .param_values = pvalues,
        .let_count = s->let_count,
        .let_names = lnames,
        .let_exprs = ltexts,
        .value = s->value.text,
    };
    qk_decode_error de;
    *out = qk_decode_new(&d, &de);
    for (uint32_t i = 0; i < s->table_count; i++)
        free(reals[i]);
    if (*out) return true;
    const qk_ref_expr *x =
        de.expr >= 0 && (uint32_t)de.expr < s->let_count ? &s->lets[de.expr] : &s->value;
    /* a family's formats share the text: name the one that failed */
    char which[QK_MAX_NAME + 16] = "";
    if (f->param_count) snprintf(which, sizeof which, " (format %s)", f->name);
    qk_error_set(e, "%s:%d:%d: reference.%s%s: %s%s", s->path, x->mark.line,
                 x->mark.col + de.offset, x == &s->value ? "" : "let.", x->name, de.msg, which);
    return false;
}

bool qk_format_expand(const qk_format_spec *spec, qk_format **out, uint32_t *count, qk_error *e) {
    uint32_t total = 1;
    for (uint32_t i = 0; i < spec->param_count; i++)
        total *= spec->params[i].count;
    qk_format *fs = qk_xcalloc(total, sizeof *fs);
    for (uint32_t n = 0; n < total; n++) {
        qk_format *f = &fs[n];
        f->spec = spec;
        f->param_count = spec->param_count;
        uint32_t rest = n;
        /* the last parameter varies fastest, as in nested loops written in order */
        for (uint32_t i = spec->param_count; i-- > 0;) {
            const qk_param_spec *p = &spec->params[i];
            snprintf(f->param_names[i], sizeof f->param_names[i], "%s", p->name);
            snprintf(f->param_values[i], sizeof f->param_values[i], "%s",
                     p->values[rest % p->count]);
            rest /= p->count;
        }
        qk_decode *d = NULL;
        bool ok = resolve(f, e) && qk_format_decode(f, &d, e);
        qk_decode_free(d);
        if (!ok) {
            free(fs);
            return false;
        }
    }
    *out = fs;
    *count = total;
    return true;
}

uint64_t qk_format_row_bytes(const qk_format *f, uint64_t k) {
    uint64_t groups = k / f->elements;
    if (f->layout == QK_LAYOUT_BLOCK) return groups * f->block_bytes;
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < f->plane_count; i++)
        bytes += groups * f->planes[i].per_group * qk_type_size(f->planes[i].type);
    return bytes;
}

/* ------------------------------------------------------------------ GLSL */

static void emit_params(const qk_format *f, qk_str *o) {
    for (uint32_t i = 0; i < f->param_count; i++) {
        char *end;
        strtol(f->param_values[i], &end, 10);
        if (!*end)
            qk_str_addf(o, "#define QK_P_%s %s\n", f->param_names[i], f->param_values[i]);
        else
            qk_str_addf(o, "#define QK_P_%s_%s 1\n", f->param_names[i], f->param_values[i]);
    }
}

/* The format's `tables:` as GLSL constant arrays qkt_<name>: integer types as
 * uint or int, u64 as uvec2(low, high) words, f32 as float. */
static void emit_tables(const qk_format *f, qk_str *o) {
    const qk_format_spec *s = f->spec;
    for (uint32_t i = 0; i < s->table_count; i++) {
        const qk_table_spec *t = &s->tables[i];
        const int64_t *v = &s->table_values[t->first];
        bool u64 = !strcmp(t->type, "u64"), f32 = !strcmp(t->type, "f32"), sig = t->type[0] == 'i';
        const char *gt = u64 ? "uvec2" : f32 ? "float" : sig ? "int" : "uint";
        qk_str_addf(o, "#define QKT_%s_COUNT %uu\nconst %s qkt_%s[%u] = %s[](", t->name, t->count,
                    gt, t->name, t->count, gt);
        for (uint32_t k = 0; k < t->count; k++) {
            qk_str_add(o, k ? (k % 8 ? ", " : ",\n    ") : "\n    ");
            if (u64) {
                uint64_t u = (uint64_t)v[k];
                qk_str_addf(o, "uvec2(0x%08xu, 0x%08xu)", (uint32_t)u, (uint32_t)(u >> 32));
            } else if (f32) {
                double r;
                memcpy(&r, &v[k], sizeof r);
                char num[48];
                snprintf(num, sizeof num, "%.9g", r);
                qk_str_addf(o, "%s%s", num, strpbrk(num, ".en") ? "" : ".0");
            } else if (sig) {
                qk_str_addf(o, "%lld", (long long)v[k]);
            } else {
                qk_str_addf(o, "0x%llxu", (unsigned long long)v[k]);
            }
        }
        qk_str_add(o, ");\n");
    }
}

/* A scalar read of type t at byte offset `at` of matrix m, as a GLSL expression. */
static void emit_read(qk_type t, const char *at, qk_str *o) {
    switch (t) {
    case QK_TYPE_U8:
        qk_str_addf(o, "qk_u8(m, %s)", at);
        break;
    case QK_TYPE_I8:
        qk_str_addf(o, "bitfieldExtract(int(qk_u8(m, %s)), 0, 8)", at);
        break;
    case QK_TYPE_U16:
        qk_str_addf(o, "qk_u16(m, %s)", at);
        break;
    case QK_TYPE_I16:
        qk_str_addf(o, "bitfieldExtract(int(qk_u16(m, %s)), 0, 16)", at);
        break;
    case QK_TYPE_F16:
        qk_str_addf(o, "unpackHalf2x16(qk_u16(m, %s)).x", at);
        break;
    case QK_TYPE_BF16:
        qk_str_addf(o, "uintBitsToFloat(qk_u16(m, %s) << 16)", at);
        break;
    case QK_TYPE_U32:
        qk_str_addf(o, "qk_u32(m, %s)", at);
        break;
    case QK_TYPE_I32:
        qk_str_addf(o, "int(qk_u32(m, %s))", at);
        break;
    case QK_TYPE_F32:
        qk_str_addf(o, "uintBitsToFloat(qk_u32(m, %s))", at);
        break;
    default:
        break;
    }
}

static const char *glsl_type(qk_type t) {
    switch (t) {
    case QK_TYPE_I8:
    case QK_TYPE_I16:
    case QK_TYPE_I32:
        return "int";
    case QK_TYPE_F16:
    case QK_TYPE_BF16:
    case QK_TYPE_F32:
        return "float";
    default:
        return "uint";
    }
}

static void emit_block(const qk_format *f, qk_str *o) {
    qk_str_addf(o, "#define QK_BYTES %u\n", f->block_bytes);
    qk_str_add(o, "#include \"include/bytes.glsl\"\n");
    for (uint32_t i = 0; i < f->field_count; i++) {
        const qk_field *fd = &f->fields[i];
        uint32_t size = qk_type_size(fd->type);
        qk_str_addf(o, "#define QKF_%s_OFFSET %u\n", fd->name, fd->offset);
        char at[128];
        if (fd->count == 1) {
            snprintf(at, sizeof at, "blk * QK_BYTES + %uu", fd->offset);
            qk_str_addf(o, "%s qkf_%s(uint m, uint blk) { return ", glsl_type(fd->type), fd->name);
        } else {
            snprintf(at, sizeof at, "blk * QK_BYTES + %uu + i * %uu", fd->offset, size);
            qk_str_addf(o, "%s qkf_%s(uint m, uint blk, uint i) { return ", glsl_type(fd->type),
                        fd->name);
        }
        emit_read(fd->type, at, o);
        qk_str_add(o, "; }\n");
        if (fd->count > 1 && size < 4) {
            /* packed reads of consecutive elements: 4 bytes from element i on */
            qk_str_addf(o,
                        "uint qkf_%s_u32(uint m, uint blk, uint i) { return qk_u32(m, blk * "
                        "QK_BYTES + %uu + i * %uu); }\n",
                        fd->name, fd->offset, size);
        }
        if (fd->count > 1 && size == 1)
            qk_str_addf(o,
                        "uint qkf_%s_u16(uint m, uint blk, uint i) { return qk_u16(m, blk * "
                        "QK_BYTES + %uu + i); }\n",
                        fd->name, fd->offset);
    }
}

static void emit_planes(const qk_format *f, uint32_t nw, uint32_t binding, qk_str *o) {
    for (uint32_t i = 0; i < f->plane_count; i++, binding++) {
        const qk_plane *p = &f->planes[i];
        bool f32 = p->type == QK_TYPE_F32;
        qk_str_addf(
            o,
            "layout(std430, set = 0, binding = %u) readonly buffer QkPlane_%s { %s data[]; } "
            "qkp_%s_buf[%u];\n",
            binding, p->name, f32 ? "float" : "uint", p->name, nw);
        qk_str_addf(o, "#define QKP_%s_PER_GROUP %uu\n", p->name, p->per_group);
        switch (p->type) {
        case QK_TYPE_U32:
        case QK_TYPE_F32:
            qk_str_addf(o,
                        "%s qkp_%s(uint m, uint g, uint i) { return qkp_%s_buf[m].data[g * "
                        "QKP_%s_PER_GROUP + i]; }\n",
                        f32 ? "float" : "uint", p->name, p->name, p->name);
            if (p->type == QK_TYPE_U32 && p->per_group % 4 == 0) {
                /* groups of whole uvec4s: the same words as 16-byte loads, where a
                   hook reads four aligned words at once (qkp_<plane>4, vector i of group g) */
                qk_str_addf(
                    o,
                    "layout(std430, set = 0, binding = %u) readonly buffer QkPlane4_%s { "
                    "uvec4 data[]; } qkp_%s4_buf[%u];\n"
                    "#define QKP_%s_VEC4 1\n"
                    "uvec4 qkp_%s4(uint m, uint g, uint i) { return qkp_%s4_buf[m].data[g * "
                    "(QKP_%s_PER_GROUP / 4u) + i]; }\n",
                    binding, p->name, p->name, nw, p->name, p->name, p->name, p->name);
            }
            break;
        case QK_TYPE_U8: /* bytes, four to a word (MLX's e8m0 and e4m3 scales) */
            qk_str_addf(o,
                        "uint qkp_%s(uint m, uint g, uint i) { uint j = g * QKP_%s_PER_GROUP + i; "
                        "return bitfieldExtract(qkp_%s_buf[m].data[j >> 2], int(j & 3u) * 8, 8); "
                        "}\n",
                        p->name, p->name, p->name);
            if (p->per_group % 4 == 0) /* whole words a group: four bytes at once */
                qk_str_addf(o,
                            "uint qkp_%s_u32(uint m, uint g, uint i) { return "
                            "qkp_%s_buf[m].data[g * (QKP_%s_PER_GROUP / 4u) + i]; }\n",
                            p->name, p->name, p->name);
            break;
        default: /* 16-bit values, two to a word */
            qk_str_addf(
                o,
                "float qkp_%s(uint m, uint g, uint i) { uint j = g * QKP_%s_PER_GROUP + i; "
                "uint h = bitfieldExtract(qkp_%s_buf[m].data[j >> 1], int(j & 1u) * 16, 16); "
                "return %s; }\n",
                p->name, p->name, p->name,
                p->type == QK_TYPE_F16 ? "unpackHalf2x16(h).x" : "uintBitsToFloat(h << 16)");
        }
    }
}

uint32_t qk_format_emit_glsl(const qk_format *f, uint32_t nw, uint32_t first_binding, qk_str *o) {
    qk_str_addf(o, "// format %s%s%s, generated from %s\n", f->name, f->variant[0] ? " " : "",
                f->variant, f->spec->path);
    qk_str_addf(o, "#define QK %uu\n#define QK_SUB_N %u\n#define QK_SUBS %uu\n#define QK_NW %u\n",
                f->elements, f->sub_elements, f->elements / f->sub_elements, nw);
    qk_str_addf(o, "#define QK_SUB_RUN %u\n", f->spec->sub_run ? f->spec->sub_run : 1);
    emit_params(f, o);
    emit_tables(f, o);
    if (f->layout == QK_LAYOUT_BLOCK) {
        /* one buffer seen as words, and as 2- and 4-word vectors for staged loads */
        qk_str_addf(
            o,
            "layout(std430, set = 0, binding = %u) readonly buffer QkWeights { uint data[]; } "
            "qk_w[QK_NW];\n"
            "layout(std430, set = 0, binding = %u) readonly buffer QkWeights2 { uvec2 data[]; } "
            "qk_w2[QK_NW];\n"
            "layout(std430, set = 0, binding = %u) readonly buffer QkWeights4 { uvec4 data[]; } "
            "qk_w4[QK_NW];\n",
            first_binding, first_binding, first_binding);
        emit_block(f, o);
        return 1;
    }
    qk_str_add(o, "#define QK_PLANAR 1\n");
    emit_planes(f, nw, first_binding, o);
    return f->plane_count;
}

void qk_format_emit_json(const qk_format *f, qk_str *o) {
    if (f->layout == QK_LAYOUT_BLOCK) {
        qk_str_addf(
            o,
            "{ \"layout\": \"block\", \"block_elements\": %u, \"block_bytes\": %u, \"fields\": [",
            f->elements, f->block_bytes);
        for (uint32_t i = 0; i < f->field_count; i++) {
            qk_str_add(o, i ? ", { \"name\": " : "{ \"name\": ");
            qk_json_string(o, f->fields[i].name);
            qk_str_addf(o, ", \"type\": \"%s\", \"offset\": %u, \"count\": %u }",
                        qk_type_name(f->fields[i].type), f->fields[i].offset, f->fields[i].count);
        }
        qk_str_add(o, "] }");
        return;
    }
    qk_str_addf(o, "{ \"layout\": \"planar\", \"group\": %u, \"params\": {", f->elements);
    for (uint32_t i = 0; i < f->param_count; i++) {
        qk_str_add(o, i ? ", " : " ");
        qk_json_string(o, f->param_names[i]);
        qk_str_add(o, ": ");
        qk_json_string(o, f->param_values[i]);
    }
    qk_str_add(o, " }, \"planes\": [");
    for (uint32_t i = 0; i < f->plane_count; i++) {
        qk_str_add(o, i ? ", { \"name\": " : "{ \"name\": ");
        qk_json_string(o, f->planes[i].name);
        qk_str_addf(o, ", \"type\": \"%s\", \"per_group\": %u }", qk_type_name(f->planes[i].type),
                    f->planes[i].per_group);
    }
    qk_str_add(o, "] }");
}

bool qk_format_check_c(const qk_format *f, qk_error *e) {
    const qk_format_spec *s = f->spec;
    if (!s->c_struct[0]) return true;
    char *dir = qk_path_dir(s->path);
    char *header = qk_path_join(dir, s->c_header);
    qk_layout from_c, from_yaml = {0};
    char err[1024];
    /* (qk_layout_read reads only a regular file of a bounded size) */
    int rc = qk_layout_read(header, s->c_struct, &from_c, err, sizeof err);
    if (rc == QK_LAYOUT_NO_LIBCLANG) {
        /* the check guards the YAML against its C struct where formats are
         * written; a machine that only tunes or runs them (a GPU host
         * without libclang) keeps the YAML, once told */
        static bool told;
        if (!told) fprintf(stderr, "qkgen: note: %s; c_struct checks skipped\n", err), told = true;
        free(dir);
        free(header);
        return true;
    }
    bool ok = rc == 0;
    if (ok) {
        snprintf(from_yaml.name, sizeof from_yaml.name, "%s", f->name);
        from_yaml.size = f->block_bytes;
        for (uint32_t i = 0; i < f->field_count; i++) {
            qk_layout_field *lf = &from_yaml.fields[from_yaml.field_count++];
            snprintf(lf->name, sizeof lf->name, "%s", f->fields[i].name);
            snprintf(lf->type, sizeof lf->type, "%s", qk_type_name(f->fields[i].type));
            lf->offset = f->fields[i].offset;
            lf->count = f->fields[i].count;
        }
        ok = qk_layout_compare(&from_yaml, &from_c, err, sizeof err) == 0;
    }
    if (!ok)
        qk_error_set(e, "%s:%d:%d: c_struct: %s does not match %s: %s", s->path,
                     s->c_struct_mark.line, s->c_struct_mark.col, f->name, s->c_struct, err);
    free(dir);
    free(header);
    return ok;
}
