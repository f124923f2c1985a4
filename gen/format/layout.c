/* Reads block structs from C headers through libclang (the compiler's own view of sizes and
 * offsets, not a hand parser) and compares them with the layouts the format specs declare. */
#include "layout.h"

#include "clang_dl.h"
#include "qk_util.h"
#include "../spec/spec.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#define LAYOUT_MAX_FIELDS (sizeof(((qk_layout *)0)->fields) / sizeof(qk_layout_field))

static void set_err(char *err, size_t err_size, const char *fmt, ...) {
    if (!err || err_size == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
}

/* strlcpy: copies what fits of src and says whether all of it did. */
static int copy_string(char *dst, size_t size, const char *src) {
    size_t n = strlen(src);
    if (size == 0) return 0;
    size_t k = n < size ? n : size - 1;
    memcpy(dst, src, k);
    dst[k] = '\0';
    return n < size;
}

/* Copies a CXString into a fixed buffer and frees it; returns 0 if it did not fit. */
static int take_string(CXString s, char *dst, size_t size) {
    const char *c = clang_getCString(s);
    int fits = copy_string(dst, size, c ? c : "");
    clang_disposeString(s);
    return fits;
}

/* ---- finding clang's resource directory ---- */

static int is_resource_dir(const char *dir) {
    static const char probe[] = "/include/stddef.h";
    char path[512];
    size_t n = strlen(dir);
    if (n + sizeof probe > sizeof path) return 0;
    memcpy(path, dir, n);
    memcpy(path + n, probe, sizeof probe);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    fclose(f);
    return 1;
}

/* libclang derives its resource directory (stddef.h, stdint.h, ...) from where the shared
 * library was loaded, which packagers move (Debian's lives in /usr/lib/x86_64-linux-gnu, the
 * headers under /usr/lib/llvm-14/lib/clang), and a wrong guess makes <stddef.h> vanish. So look
 * where the build said (QK_CLANG_RESOURCE_DIR, from `clang -print-resource-dir`), then in the
 * usual places for the version of the library actually loaded. Returns 0 if none is found, and
 * libclang is left to its own guess. */
static int find_resource_dir(char *dir, size_t size) {
#ifdef QK_CLANG_RESOURCE_DIR
    if (is_resource_dir(QK_CLANG_RESOURCE_DIR))
        return copy_string(dir, size, QK_CLANG_RESOURCE_DIR);
#endif
    char version[64] = "", major[16] = "";
    take_string(clang_getClangVersion(), version, sizeof version);
    const char *v = strstr(version, "version ");
    v = v ? v + strlen("version ") : version;
    size_t n = strspn(v, "0123456789.");
    if (n == 0 || n >= 32) return 0;
    char full[32];
    memcpy(full, v, n);
    full[n] = '\0';
    snprintf(major, sizeof major, "%.*s", (int)strspn(full, "0123456789"), full);

    char candidates[5][128];
    snprintf(candidates[0], sizeof candidates[0], "/usr/lib/llvm-%s/lib/clang/%s", major, full);
    snprintf(candidates[1], sizeof candidates[1], "/usr/lib/llvm-%s/lib/clang/%s", major, major);
    snprintf(candidates[2], sizeof candidates[2], "/usr/lib/clang/%s", full);
    snprintf(candidates[3], sizeof candidates[3], "/usr/lib/clang/%s", major);
    snprintf(candidates[4], sizeof candidates[4], "/usr/local/lib/clang/%s", major);
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        if (is_resource_dir(candidates[i])) return copy_string(dir, size, candidates[i]);
    }
    return 0;
}

/* ---- parsing ---- */

static void location_of(CXSourceLocation loc, char *where, size_t size) {
    CXString file;
    unsigned line = 0, col = 0;
    clang_getPresumedLocation(loc, &file, &line, &col);
    char name[512];
    take_string(file, name, sizeof name);
    snprintf(where, size, "%s:%u:%u", name, line, col);
}

/* The first error clang reported, as file:line:col: message; 0 if there was none. */
static int first_error(CXTranslationUnit tu, char *err, size_t err_size) {
    unsigned n = clang_getNumDiagnostics(tu);
    for (unsigned i = 0; i < n; i++) {
        CXDiagnostic d = clang_getDiagnostic(tu, i);
        int is_error = clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error;
        if (is_error) {
            char where[600], text[512];
            location_of(clang_getDiagnosticLocation(d), where, sizeof where);
            take_string(clang_getDiagnosticSpelling(d), text, sizeof text);
            set_err(err, err_size, "%s: %s", where, text);
        }
        clang_disposeDiagnostic(d);
        if (is_error) return 1;
    }
    return 0;
}

/* A C header of block structs is kilobytes; past this it is not one. */
#define HEADER_MAX ((size_t)4 << 20)

static CXTranslationUnit parse_header(CXIndex index, const char *header, char *err,
                                      size_t err_size) {
    /* libclang reads the header itself: a FIFO or /dev/zero would never end */
    qk_error fe = {0};
    if (!qk_check_file(header, HEADER_MAX, &fe)) {
        set_err(err, err_size, "%s", fe.msg);
        return NULL;
    }

    /* The header's own folder goes on the include path so it can include its neighbours. */
    char include[600];
    const char *slash = strrchr(header, '/');
    if (!slash)
        snprintf(include, sizeof include, "-I.");
    else if (slash == header)
        snprintf(include, sizeof include, "-I/");
    else
        snprintf(include, sizeof include, "-I%.*s", (int)(slash - header), header);

    char resource[512];
    const char *args[] = {"-x", "c", "-std=c11", include, "-resource-dir", resource};
    int argc = find_resource_dir(resource, sizeof resource) ? 6 : 4;

    CXTranslationUnit tu = NULL;
    enum CXErrorCode rc = clang_parseTranslationUnit2(index, header, args, argc, NULL, 0,
                                                      CXTranslationUnit_SkipFunctionBodies, &tu);
    if (rc != CXError_Success || !tu) {
        set_err(err, err_size, "%s: libclang could not parse it (error code %d)", header, rc);
        return NULL;
    }
    if (first_error(tu, err, err_size)) {
        clang_disposeTranslationUnit(tu);
        return NULL;
    }
    return tu;
}

/* ---- finding the struct ---- */

typedef struct find_ctx {
    const char *name;
    CXCursor found;
    int matched; /* 1: a definition, -1: the name exists but is no struct definition */
} find_ctx;

static enum CXChildVisitResult find_block(CXCursor c, CXCursor parent, CXClientData data) {
    (void)parent;
    find_ctx *fc = data;
    enum CXCursorKind k = clang_getCursorKind(c);
    if (k != CXCursor_TypedefDecl && k != CXCursor_StructDecl && k != CXCursor_UnionDecl)
        return CXChildVisit_Continue;
    char name[256];
    take_string(clang_getCursorSpelling(c), name, sizeof name);
    if (strcmp(name, fc->name) != 0) return CXChildVisit_Continue;

    /* Both `struct block_x {...}` and `typedef struct {...} block_x` name a block. */
    CXType t = clang_getCanonicalType(clang_getCursorType(c));
    CXCursor def = clang_getCursorDefinition(clang_getTypeDeclaration(t));
    if (t.kind != CXType_Record || clang_Cursor_isNull(def)) {
        fc->matched = -1;
        fc->found = c;
        return CXChildVisit_Continue; /* a forward declaration; the definition may follow */
    }
    fc->matched = 1;
    fc->found = def;
    return CXChildVisit_Break;
}

/* ---- fields ---- */

typedef struct walk_ctx {
    qk_layout *out;
    CXType block; /* the whole block, for absolute offsets of fields in anonymous members */
    char *err;
    size_t err_size;
    int failed;
} walk_ctx;

/* The layout type of a 2-byte typedef whose name says it is a float: the canonical type of
 * ggml_half is uint16_t, so only the name tells f16 from u16. NULL for other typedefs. */
static const char *float_typedef(CXType t) {
    char name[128];
    take_string(clang_getTypedefName(t), name, sizeof name);
    for (char *p = name; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    if (clang_Type_getSizeOf(t) != 2) return NULL;
    if (strstr(name, "bf16")) return "bf16";
    if (strstr(name, "half") || strstr(name, "fp16")) return "f16";
    return NULL;
}

static const char *builtin_type(CXType t) {
    switch (clang_getCanonicalType(t).kind) {
    case CXType_UChar:
        return "u8";
    case CXType_SChar:
    case CXType_Char_S:
    case CXType_Char_U:
        return "i8";
    case CXType_UShort:
        return "u16";
    case CXType_Short:
        return "i16";
    case CXType_UInt:
        return "u32";
    case CXType_Int:
        return "i32";
    case CXType_Half:
    case CXType_Float16:
        return "f16";
    case CXType_BFloat16:
        return "bf16";
    case CXType_Float:
        return "f32";
    default:
        return NULL;
    }
}

/* Peels arrays (multiplying their lengths into *count) and typedefs down to a layout type
 * name; NULL if the element type is not one a layout can describe. */
static const char *element_type(CXType t, uint64_t *count) {
    *count = 1;
    for (;;) {
        if (t.kind == CXType_Elaborated) {
            t = clang_Type_getNamedType(t);
        } else if (t.kind == CXType_ConstantArray) {
            *count *= (uint64_t)clang_getArraySize(t);
            if (*count > UINT32_MAX) return NULL;
            t = clang_getArrayElementType(t);
        } else if (t.kind == CXType_Typedef) {
            const char *f = float_typedef(t);
            if (f) return f;
            t = clang_getTypedefDeclUnderlyingType(clang_getTypeDeclaration(t));
        } else {
            return builtin_type(t);
        }
    }
}

/* Fails the walk with "file:line:col: field X of struct Y ..." at the field's declaration. */
static void field_error(walk_ctx *w, CXCursor c, const char *name, const char *fmt, ...) {
    char where[600], what[400];
    location_of(clang_getCursorLocation(c), where, sizeof where);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    set_err(w->err, w->err_size, "%s: field %s of struct %s %s", where, name, w->out->name, what);
    w->failed = 1;
}

static void add_field(walk_ctx *w, CXCursor c) {
    qk_layout *l = w->out;
    char name[256], type[256];
    take_string(clang_getCursorSpelling(c), name, sizeof name);
    take_string(clang_getTypeSpelling(clang_getCursorType(c)), type, sizeof type);

    if (clang_Cursor_isBitField(c)) {
        field_error(w, c, name, "is a bit-field");
        return;
    }
    uint64_t count = 0;
    const char *elem = element_type(clang_getCursorType(c), &count);
    if (!elem) {
        field_error(w, c, name, "has unsupported type %s", type);
        return;
    }
    if (strlen(name) >= sizeof l->fields[0].name) {
        field_error(w, c, name, "has a name of over %zu bytes", sizeof l->fields[0].name - 1);
        return;
    }
    if (l->field_count == LAYOUT_MAX_FIELDS) {
        field_error(w, c, name, "is past the %zu fields a layout holds", LAYOUT_MAX_FIELDS);
        return;
    }
    /* Looked up from the whole block so fields of anonymous members get absolute offsets. */
    long long bits = clang_Type_getOffsetOf(w->block, name);
    if (bits < 0 || bits % 8 != 0) {
        field_error(w, c, name, "has no byte offset");
        return;
    }
    qk_layout_field *f = &l->fields[l->field_count++];
    memcpy(f->name, name, strlen(name) + 1); /* its length was checked above */
    copy_string(f->type, sizeof f->type, elem);
    f->offset = (uint32_t)(bits / 8);
    f->count = (uint32_t)count;
}

static enum CXChildVisitResult visit_member(CXCursor c, CXCursor parent, CXClientData data) {
    walk_ctx *w = data;
    enum CXCursorKind k = clang_getCursorKind(c);
    if (k == CXCursor_FieldDecl) {
        add_field(w, c);
    } else if ((k == CXCursor_StructDecl || k == CXCursor_UnionDecl) &&
               clang_Cursor_isAnonymousRecordDecl(c)) {
        /* An anonymous member's fields are the block's own, as C11 sees them. */
        clang_visitChildren(c, visit_member, w);
    } else {
        return CXChildVisit_Continue; /* attributes, named nested type declarations */
    }
    if (w->failed) return CXChildVisit_Break;
    /* A union's members overlay each other; its first one (ggml's {d, m} beside dm) is taken
     * as the layout, as that is how the GLSL side reads the bytes. */
    return clang_getCursorKind(parent) == CXCursor_UnionDecl ? CXChildVisit_Break
                                                             : CXChildVisit_Continue;
}

static int read_block(CXTranslationUnit tu, const char *header, const char *struct_name,
                      qk_layout *out, char *err, size_t err_size) {
    find_ctx fc = {.name = struct_name, .matched = 0};
    clang_visitChildren(clang_getTranslationUnitCursor(tu), find_block, &fc);
    if (fc.matched == 0) {
        set_err(err, err_size, "%s: no struct named '%s'", header, struct_name);
        return -1;
    }
    if (fc.matched < 0) {
        char where[600];
        location_of(clang_getCursorLocation(fc.found), where, sizeof where);
        set_err(err, err_size, "%s: '%s' is not a defined struct", where, struct_name);
        return -1;
    }

    walk_ctx w = {
        .out = out, .block = clang_getCursorType(fc.found), .err = err, .err_size = err_size};
    long long size = clang_Type_getSizeOf(w.block);
    if (size < 0 || size > UINT32_MAX) {
        set_err(err, err_size, "%s: struct '%s' has no size", header, struct_name);
        return -1;
    }
    out->size = (uint32_t)size;
    clang_visitChildren(fc.found, visit_member, &w);
    return w.failed ? -1 : 0;
}

int qk_layout_read(const char *header, const char *struct_name, qk_layout *out, char *err,
                   size_t err_size) {
    memset(out, 0, sizeof *out);
    if (!qk_clang_load(err, err_size)) return QK_LAYOUT_NO_LIBCLANG;
    if (strlen(struct_name) >= sizeof out->name) {
        set_err(err, err_size, "%s: struct name '%s' is too long", header, struct_name);
        return -1;
    }
    copy_string(out->name, sizeof out->name, struct_name);
    copy_string(out->source, sizeof out->source, header); /* for messages only */

    /* No diagnostics on stderr: the first error comes back in err instead. */
    CXIndex index = clang_createIndex(0, 0);
    CXTranslationUnit tu = parse_header(index, header, err, err_size);
    int rc = tu ? read_block(tu, header, struct_name, out, err, err_size) : -1;
    if (tu) clang_disposeTranslationUnit(tu);
    clang_disposeIndex(index);
    return rc;
}

/* ---- output and comparison ---- */

void qk_layout_print_yaml(const qk_layout *l, FILE *f) {
    fprintf(f, "# %s%s%s: %u bytes; offsets:", l->name, l->source[0] ? " in " : "", l->source,
            l->size);
    for (uint32_t i = 0; i < l->field_count; i++)
        fprintf(f, " %s %u", l->fields[i].name, l->fields[i].offset);
    fprintf(f, "\nblock: { bytes: %u }\nfields:\n", l->size);
    for (uint32_t i = 0; i < l->field_count; i++) {
        const qk_layout_field *fl = &l->fields[i];
        fprintf(f, "  - { name: %s, type: %s", fl->name, fl->type);
        if (fl->count != 1) fprintf(f, ", count: %u", fl->count);
        fprintf(f, " }\n");
    }
}

/* The spec's type table (gen/spec/spec.c), the one every part reads. */
uint32_t qk_layout_type_bytes(const char *type) {
    return qk_type_size(qk_type_parse(type));
}

/* Writes "block_x in header: " (or "block_x: ") into err, returning the length used. */
static size_t compare_prefix(const qk_layout *c, char *err, size_t err_size) {
    int n = c->source[0] ? snprintf(err, err_size, "%s in %s: ", c->name, c->source)
                         : snprintf(err, err_size, "%s: ", c->name);
    return n < 0 ? 0 : (size_t)n >= err_size ? err_size - 1 : (size_t)n;
}

int qk_layout_compare(const qk_layout *expected_from_yaml, const qk_layout *from_c, char *err,
                      size_t err_size) {
    const qk_layout *y = expected_from_yaml, *c = from_c;
    char what[400] = "";
    uint32_t packed = 0; /* the YAML field's offset in a packed block */
    uint32_t n = y->field_count < c->field_count ? y->field_count : c->field_count;

    for (uint32_t i = 0; i < n && !what[0]; i++) {
        const qk_layout_field *yf = &y->fields[i], *cf = &c->fields[i];
        uint32_t ybytes = qk_layout_type_bytes(yf->type), cbytes = qk_layout_type_bytes(cf->type);
        char label[200];
        if (strcmp(yf->name, cf->name) == 0)
            snprintf(label, sizeof label, "field %s", cf->name);
        else
            snprintf(label, sizeof label, "field %s (the YAML's %s)", cf->name, yf->name);

        if (ybytes == 0)
            snprintf(what, sizeof what, "%s: the YAML's type %s is unknown", label, yf->type);
        else if (cf->count != yf->count)
            snprintf(what, sizeof what, "%s: count %u, the YAML says %u", label, cf->count,
                     yf->count);
        else if (cbytes != ybytes)
            snprintf(what, sizeof what, "%s: %s of %u bytes, the YAML says %s of %u", label,
                     cf->type, cbytes, yf->type, ybytes);
        else if (cf->offset != packed)
            snprintf(what, sizeof what, "%s: offset %u, the YAML says %u", label, cf->offset,
                     packed);
        packed += ybytes * yf->count;
    }
    if (!what[0] && c->field_count != y->field_count)
        snprintf(what, sizeof what, "%u fields, the YAML says %u", c->field_count, y->field_count);
    if (!what[0] && c->size != y->size)
        snprintf(what, sizeof what, "size %u bytes, the YAML says %u", c->size, y->size);
    if (!what[0]) return 0;

    if (err && err_size > 0) {
        size_t used = compare_prefix(c, err, err_size);
        snprintf(err + used, err_size - used, "%s", what);
    }
    return -1;
}
