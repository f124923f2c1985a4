// The cooperative-matrix types and calls of the f16 x f16 + f32 paths, for
// NV's extension (MMA_coopmat) or KHR's (MMA_coopmat_khr, the portable form
// AMD and Intel GPUs run), so a template writes its products once. CM is the
// matrix side (16); buf is an array of any type, at and stride in its units.
// Weights are A (rows x K, loaded row-major), activations B (K x tokens,
// column-major); QK_F32MAT accumulates.
#ifdef MMA_coopmat_khr
#define QK_AMAT   coopmat<float16_t, gl_ScopeSubgroup, CM, CM, gl_MatrixUseA>
#define QK_BMAT   coopmat<float16_t, gl_ScopeSubgroup, CM, CM, gl_MatrixUseB>
#define QK_F32MAT coopmat<float, gl_ScopeSubgroup, CM, CM, gl_MatrixUseAccumulator>
#define QK_LOAD_ROWS(m, buf, at, stride) coopMatLoad(m, buf, at, stride, gl_CooperativeMatrixLayoutRowMajor)
#define QK_LOAD_COLS(m, buf, at, stride) coopMatLoad(m, buf, at, stride, gl_CooperativeMatrixLayoutColumnMajor)
#define QK_STORE_COLS(m, buf, at, stride) coopMatStore(m, buf, at, stride, gl_CooperativeMatrixLayoutColumnMajor)
#define QK_MULADD(a, b, c) coopMatMulAdd(a, b, c)
#else
#define QK_AMAT   fcoopmatNV<16, gl_ScopeSubgroup, CM, CM>
#define QK_BMAT   QK_AMAT
#define QK_F32MAT fcoopmatNV<32, gl_ScopeSubgroup, CM, CM>
#define QK_LOAD_ROWS(m, buf, at, stride) coopMatLoadNV(m, buf, at, stride, false)
#define QK_LOAD_COLS(m, buf, at, stride) coopMatLoadNV(m, buf, at, stride, true)
#define QK_STORE_COLS(m, buf, at, stride) coopMatStoreNV(m, buf, at, stride, true)
#define QK_MULADD(a, b, c) coopMatMulAddNV(a, b, c)
#endif
