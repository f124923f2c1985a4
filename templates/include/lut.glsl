// A 16-entry table of floats in shared memory, for the formats whose 4-bit
// codes index a non-linear table (iq4_nl, mxfp4): one shared load per code,
// against the selects, variable bit-field extract and int-to-float conversion
// of qk_lut16 in registers (with those, iq4_nl's one-token mat-vec took 2.7x
// q4_0's time for the same bytes: bench/RESULTS.md, run 35). The format
// defines QK_FORMAT_INIT and fills the table from its packed bytes with
// qk_lut_init; every template with a format calls qk_format_init() first
// thing in main, in uniform control flow, and its barrier makes the table
// visible. The format's YAML declares the 64 bytes (shared_memory: 64), which
// the plan adds to each kernel's own.
#define QK_FORMAT_INIT 1

shared float qk_lut[16];

void qk_lut_init(uvec4 table) {
    const uint n = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;
    for (uint i = gl_LocalInvocationIndex; i < 16u; i += n) qk_lut[i] = float(qk_lut16(table, i));
    barrier();
}
