// Workgroup-wide sum and max for the post-op kernels (one row per workgroup):
// a subgroup reduction, then one value per subgroup through shared memory.
// Sized for subgroups of at least MIN_SG invocations, as the kernels declare.

shared float qk_wg_part[WG / MIN_SG];

// Every invocation of the workgroup must call it (it has barriers); all get
// the same result. The first barrier keeps a previous call's readers safe.
float qk_wg_sum(float v) {
    v = subgroupAdd(v);
    barrier();
    if (subgroupElect()) qk_wg_part[gl_SubgroupID] = v;
    barrier();
    float s = 0.0;
    for (uint j = 0; j < gl_NumSubgroups; j++) s += qk_wg_part[j];
    return s;
}

float qk_wg_max(float v) {
    v = subgroupMax(v);
    barrier();
    if (subgroupElect()) qk_wg_part[gl_SubgroupID] = v;
    barrier();
    float s = qk_wg_part[0];
    for (uint j = 1; j < gl_NumSubgroups; j++) s = max(s, qk_wg_part[j]);
    return s;
}
