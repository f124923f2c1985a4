// matvec_id_sep: the MoE mat-vec of matvec.comp with each expert in its own
// buffer: ids index the QK_NW weight bindings instead of a stacked buffer.
#define QK_EXPERT_BUFFERS 1
#include "matvec.comp"
