/* libclang loaded at run time: qkgen needs it only to check formats against C
 * structs, so machines without it (a GPU box running benchmarks) still run qkgen. */
#ifndef QK_CLANG_DL_H
#define QK_CLANG_DL_H

#include <clang-c/Index.h>
#include <stdbool.h>
#include <stddef.h>

#define QK_CLANG_FUNCS(X)                                                                          \
    X(clang_Cursor_isAnonymousRecordDecl)                                                          \
    X(clang_Cursor_isBitField)                                                                     \
    X(clang_Cursor_isNull)                                                                         \
    X(clang_Type_getNamedType)                                                                     \
    X(clang_Type_getOffsetOf)                                                                      \
    X(clang_Type_getSizeOf)                                                                        \
    X(clang_createIndex)                                                                           \
    X(clang_disposeDiagnostic)                                                                     \
    X(clang_disposeIndex)                                                                          \
    X(clang_disposeString)                                                                         \
    X(clang_disposeTranslationUnit)                                                                \
    X(clang_getArrayElementType)                                                                   \
    X(clang_getArraySize)                                                                          \
    X(clang_getCString)                                                                            \
    X(clang_getCanonicalType)                                                                      \
    X(clang_getClangVersion)                                                                       \
    X(clang_getCursorDefinition)                                                                   \
    X(clang_getCursorKind)                                                                         \
    X(clang_getCursorLocation)                                                                     \
    X(clang_getCursorSpelling)                                                                     \
    X(clang_getCursorType)                                                                         \
    X(clang_getDiagnostic)                                                                         \
    X(clang_getDiagnosticLocation)                                                                 \
    X(clang_getDiagnosticSeverity)                                                                 \
    X(clang_getDiagnosticSpelling)                                                                 \
    X(clang_getNumDiagnostics)                                                                     \
    X(clang_getPresumedLocation)                                                                   \
    X(clang_getTranslationUnitCursor)                                                              \
    X(clang_getTypeDeclaration)                                                                    \
    X(clang_getTypeSpelling)                                                                       \
    X(clang_getTypedefDeclUnderlyingType)                                                          \
    X(clang_getTypedefName)                                                                        \
    X(clang_parseTranslationUnit)                                                                  \
    X(clang_parseTranslationUnit2)                                                                 \
    X(clang_visitChildren)

typedef struct qk_clang_api {
#define QK_CLANG_MEMBER(f) __typeof__(f) *f;
    QK_CLANG_FUNCS(QK_CLANG_MEMBER)
#undef QK_CLANG_MEMBER
} qk_clang_api;

extern qk_clang_api qk_clang;

/* Loads libclang once; false with a message naming the package if it is missing. */
bool qk_clang_load(char *err, size_t err_size);

#ifndef QK_CLANG_NO_MACROS
/* From here on, calls go through the loaded table. */
#define clang_Cursor_isAnonymousRecordDecl (qk_clang.clang_Cursor_isAnonymousRecordDecl)
#define clang_Cursor_isBitField            (qk_clang.clang_Cursor_isBitField)
#define clang_Cursor_isNull                (qk_clang.clang_Cursor_isNull)
#define clang_Type_getNamedType            (qk_clang.clang_Type_getNamedType)
#define clang_Type_getOffsetOf             (qk_clang.clang_Type_getOffsetOf)
#define clang_Type_getSizeOf               (qk_clang.clang_Type_getSizeOf)
#define clang_createIndex                  (qk_clang.clang_createIndex)
#define clang_disposeDiagnostic            (qk_clang.clang_disposeDiagnostic)
#define clang_disposeIndex                 (qk_clang.clang_disposeIndex)
#define clang_disposeString                (qk_clang.clang_disposeString)
#define clang_disposeTranslationUnit       (qk_clang.clang_disposeTranslationUnit)
#define clang_getArrayElementType          (qk_clang.clang_getArrayElementType)
#define clang_getArraySize                 (qk_clang.clang_getArraySize)
#define clang_getCString                   (qk_clang.clang_getCString)
#define clang_getCanonicalType             (qk_clang.clang_getCanonicalType)
#define clang_getClangVersion              (qk_clang.clang_getClangVersion)
#define clang_getCursorDefinition          (qk_clang.clang_getCursorDefinition)
#define clang_getCursorKind                (qk_clang.clang_getCursorKind)
#define clang_getCursorLocation            (qk_clang.clang_getCursorLocation)
#define clang_getCursorSpelling            (qk_clang.clang_getCursorSpelling)
#define clang_getCursorType                (qk_clang.clang_getCursorType)
#define clang_getDiagnostic                (qk_clang.clang_getDiagnostic)
#define clang_getDiagnosticLocation        (qk_clang.clang_getDiagnosticLocation)
#define clang_getDiagnosticSeverity        (qk_clang.clang_getDiagnosticSeverity)
#define clang_getDiagnosticSpelling        (qk_clang.clang_getDiagnosticSpelling)
#define clang_getNumDiagnostics            (qk_clang.clang_getNumDiagnostics)
#define clang_getPresumedLocation          (qk_clang.clang_getPresumedLocation)
#define clang_getTranslationUnitCursor     (qk_clang.clang_getTranslationUnitCursor)
#define clang_getTypeDeclaration           (qk_clang.clang_getTypeDeclaration)
#define clang_getTypeSpelling              (qk_clang.clang_getTypeSpelling)
#define clang_getTypedefDeclUnderlyingType (qk_clang.clang_getTypedefDeclUnderlyingType)
#define clang_getTypedefName               (qk_clang.clang_getTypedefName)
#define clang_parseTranslationUnit         (qk_clang.clang_parseTranslationUnit)
#define clang_parseTranslationUnit2        (qk_clang.clang_parseTranslationUnit2)
#define clang_visitChildren                (qk_clang.clang_visitChildren)

#endif

#endif
