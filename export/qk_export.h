/* The exporter's one entry point (export/): a bundle folder as one C header,
 * for engines that compile the bundle in (docs/engines.md, section 7). */
#ifndef QK_EXPORT_PUBLIC_H
#define QK_EXPORT_PUBLIC_H

#include "qk_util.h"

#include <stdbool.h>

/* Writes the bundle folder dir (manifest.json and its .spv files) as the C
 * header out_path (atomically; its folder made where missing), its names
 * prefixed with prefix (a C identifier shorter than 48). False with e set:
 * "manifest:line:col: ..." for a bad bundle, "cannot write/create ..." for
 * an output that cannot be written. */
bool qk_export_bundle(const char *dir, const char *out_path, const char *prefix, qk_error *e);

#endif
