// matvec_xs: matvec_staged.comp with the activations copied to shared memory
// a slab at a time (QK_X_SHARED), so that a warp's activation loads are
// contiguous in global memory and conflict-free in shared memory.
#define QK_X_SHARED 1
#define QK_XS_ELEMS 4096u // activations per slab (over the workgroup's NR1 tokens)
#include "matvec_staged.comp"
