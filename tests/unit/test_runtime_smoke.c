/* Smoke test of libqkrt on whatever Vulkan device is there (lavapipe in CI):
 * devices, a hand-made bundle run with a grid rule, indirect and array bindings,
 * timestamps, copies, expressions, and the errors that callers rely on. All of it
 * under the validation layer (set QKRT_SMOKE_NO_VALIDATION=1 where it is missing).
 *
 * The SPIR-V below was made, outside the test, with
 *   glslangValidator -V --target-env vulkan1.2 --vn NAME -o NAME.h NAME.comp
 * from these shaders; the hashes in MANIFEST are `sha256sum NAME.spv`.
 *
 * scale.comp:  layout(local_size_x = 64) in;
 *              readonly buffer X { float x[]; };     // binding 0
 *              writeonly buffer Y { float y[]; };    // binding 1
 *              push_constant { uint N; float M; } pc;
 *              if (i < pc.N) y[i] = x[i] * 2.0 + pc.M;
 * addarr.comp: layout(local_size_x = 32) in;
 *              readonly buffer A { float v[]; } a[2]; // binding 0, count 2
 *              writeonly buffer Y { float y[]; };    // binding 1
 *              push_constant { uint N; } pc;
 *              if (i < pc.N) y[i] = a[0].v[i] + a[1].v[i];
 */
#define _POSIX_C_SOURCE 200809L
#include "../../runtime/qkrt_bench.h" /* libqkrt and its timing hooks */
#include "qk_util.h"                  /* qk_sha256_hex */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const uint32_t SPV_SCALE[] = {
    0x07230203, 0x00010500, 0x0008000b, 0x00000036, 0x00000000, 0x00020011, 0x00000001, 0x0006000b,
    0x00000001, 0x4c534c47, 0x6474732e, 0x3035342e, 0x00000000, 0x0003000e, 0x00000000, 0x00000001,
    0x0009000f, 0x00000005, 0x00000004, 0x6e69616d, 0x00000000, 0x0000000b, 0x00000014, 0x00000021,
    0x00000026, 0x00060010, 0x00000004, 0x00000011, 0x00000040, 0x00000001, 0x00000001, 0x00030003,
    0x00000002, 0x000001c2, 0x00040005, 0x00000004, 0x6e69616d, 0x00000000, 0x00030005, 0x00000008,
    0x00000069, 0x00080005, 0x0000000b, 0x475f6c67, 0x61626f6c, 0x766e496c, 0x7461636f, 0x496e6f69,
    0x00000044, 0x00030005, 0x00000012, 0x00004350, 0x00040006, 0x00000012, 0x00000000, 0x0000004e,
    0x00040006, 0x00000012, 0x00000001, 0x0000004d, 0x00030005, 0x00000014, 0x00006370, 0x00030005,
    0x0000001f, 0x00000059, 0x00040006, 0x0000001f, 0x00000000, 0x00000079, 0x00030005, 0x00000021,
    0x00000000, 0x00030005, 0x00000024, 0x00000058, 0x00040006, 0x00000024, 0x00000000, 0x00000078,
    0x00030005, 0x00000026, 0x00000000, 0x00040047, 0x0000000b, 0x0000000b, 0x0000001c, 0x00050048,
    0x00000012, 0x00000000, 0x00000023, 0x00000000, 0x00050048, 0x00000012, 0x00000001, 0x00000023,
    0x00000004, 0x00030047, 0x00000012, 0x00000002, 0x00040047, 0x0000001e, 0x00000006, 0x00000004,
    0x00040048, 0x0000001f, 0x00000000, 0x00000019, 0x00050048, 0x0000001f, 0x00000000, 0x00000023,
    0x00000000, 0x00030047, 0x0000001f, 0x00000002, 0x00040047, 0x00000021, 0x00000022, 0x00000000,
    0x00040047, 0x00000021, 0x00000021, 0x00000001, 0x00040047, 0x00000023, 0x00000006, 0x00000004,
    0x00040048, 0x00000024, 0x00000000, 0x00000018, 0x00050048, 0x00000024, 0x00000000, 0x00000023,
    0x00000000, 0x00030047, 0x00000024, 0x00000002, 0x00040047, 0x00000026, 0x00000022, 0x00000000,
    0x00040047, 0x00000026, 0x00000021, 0x00000000, 0x00040047, 0x00000035, 0x0000000b, 0x00000019,
    0x00020013, 0x00000002, 0x00030021, 0x00000003, 0x00000002, 0x00040015, 0x00000006, 0x00000020,
    0x00000000, 0x00040020, 0x00000007, 0x00000007, 0x00000006, 0x00040017, 0x00000009, 0x00000006,
    0x00000003, 0x00040020, 0x0000000a, 0x00000001, 0x00000009, 0x0004003b, 0x0000000a, 0x0000000b,
    0x00000001, 0x0004002b, 0x00000006, 0x0000000c, 0x00000000, 0x00040020, 0x0000000d, 0x00000001,
    0x00000006, 0x00030016, 0x00000011, 0x00000020, 0x0004001e, 0x00000012, 0x00000006, 0x00000011,
    0x00040020, 0x00000013, 0x00000009, 0x00000012, 0x0004003b, 0x00000013, 0x00000014, 0x00000009,
    0x00040015, 0x00000015, 0x00000020, 0x00000001, 0x0004002b, 0x00000015, 0x00000016, 0x00000000,
    0x00040020, 0x00000017, 0x00000009, 0x00000006, 0x00020014, 0x0000001a, 0x0003001d, 0x0000001e,
    0x00000011, 0x0003001e, 0x0000001f, 0x0000001e, 0x00040020, 0x00000020, 0x0000000c, 0x0000001f,
    0x0004003b, 0x00000020, 0x00000021, 0x0000000c, 0x0003001d, 0x00000023, 0x00000011, 0x0003001e,
    0x00000024, 0x00000023, 0x00040020, 0x00000025, 0x0000000c, 0x00000024, 0x0004003b, 0x00000025,
    0x00000026, 0x0000000c, 0x00040020, 0x00000028, 0x0000000c, 0x00000011, 0x0004002b, 0x00000011,
    0x0000002b, 0x40000000, 0x0004002b, 0x00000015, 0x0000002d, 0x00000001, 0x00040020, 0x0000002e,
    0x00000009, 0x00000011, 0x0004002b, 0x00000006, 0x00000033, 0x00000040, 0x0004002b, 0x00000006,
    0x00000034, 0x00000001, 0x0006002c, 0x00000009, 0x00000035, 0x00000033, 0x00000034, 0x00000034,
    0x00050036, 0x00000002, 0x00000004, 0x00000000, 0x00000003, 0x000200f8, 0x00000005, 0x0004003b,
    0x00000007, 0x00000008, 0x00000007, 0x00050041, 0x0000000d, 0x0000000e, 0x0000000b, 0x0000000c,
    0x0004003d, 0x00000006, 0x0000000f, 0x0000000e, 0x0003003e, 0x00000008, 0x0000000f, 0x0004003d,
    0x00000006, 0x00000010, 0x00000008, 0x00050041, 0x00000017, 0x00000018, 0x00000014, 0x00000016,
    0x0004003d, 0x00000006, 0x00000019, 0x00000018, 0x000500b0, 0x0000001a, 0x0000001b, 0x00000010,
    0x00000019, 0x000300f7, 0x0000001d, 0x00000000, 0x000400fa, 0x0000001b, 0x0000001c, 0x0000001d,
    0x000200f8, 0x0000001c, 0x0004003d, 0x00000006, 0x00000022, 0x00000008, 0x0004003d, 0x00000006,
    0x00000027, 0x00000008, 0x00060041, 0x00000028, 0x00000029, 0x00000026, 0x00000016, 0x00000027,
    0x0004003d, 0x00000011, 0x0000002a, 0x00000029, 0x00050085, 0x00000011, 0x0000002c, 0x0000002a,
    0x0000002b, 0x00050041, 0x0000002e, 0x0000002f, 0x00000014, 0x0000002d, 0x0004003d, 0x00000011,
    0x00000030, 0x0000002f, 0x00050081, 0x00000011, 0x00000031, 0x0000002c, 0x00000030, 0x00060041,
    0x00000028, 0x00000032, 0x00000021, 0x00000016, 0x00000022, 0x0003003e, 0x00000032, 0x00000031,
    0x000200f9, 0x0000001d, 0x000200f8, 0x0000001d, 0x000100fd, 0x00010038,
};

static const uint32_t SPV_ADDARR[] = {
    0x07230203, 0x00010500, 0x0008000b, 0x00000036, 0x00000000, 0x00020011, 0x00000001, 0x0006000b,
    0x00000001, 0x4c534c47, 0x6474732e, 0x3035342e, 0x00000000, 0x0003000e, 0x00000000, 0x00000001,
    0x0009000f, 0x00000005, 0x00000004, 0x6e69616d, 0x00000000, 0x0000000b, 0x00000013, 0x00000021,
    0x00000028, 0x00060010, 0x00000004, 0x00000011, 0x00000020, 0x00000001, 0x00000001, 0x00030003,
    0x00000002, 0x000001c2, 0x00040005, 0x00000004, 0x6e69616d, 0x00000000, 0x00030005, 0x00000008,
    0x00000069, 0x00080005, 0x0000000b, 0x475f6c67, 0x61626f6c, 0x766e496c, 0x7461636f, 0x496e6f69,
    0x00000044, 0x00030005, 0x00000011, 0x00004350, 0x00040006, 0x00000011, 0x00000000, 0x0000004e,
    0x00030005, 0x00000013, 0x00006370, 0x00030005, 0x0000001f, 0x00000059, 0x00040006, 0x0000001f,
    0x00000000, 0x00000079, 0x00030005, 0x00000021, 0x00000000, 0x00030005, 0x00000024, 0x00000041,
    0x00040006, 0x00000024, 0x00000000, 0x00000076, 0x00030005, 0x00000028, 0x00000061, 0x00040047,
    0x0000000b, 0x0000000b, 0x0000001c, 0x00050048, 0x00000011, 0x00000000, 0x00000023, 0x00000000,
    0x00030047, 0x00000011, 0x00000002, 0x00040047, 0x0000001e, 0x00000006, 0x00000004, 0x00040048,
    0x0000001f, 0x00000000, 0x00000019, 0x00050048, 0x0000001f, 0x00000000, 0x00000023, 0x00000000,
    0x00030047, 0x0000001f, 0x00000002, 0x00040047, 0x00000021, 0x00000022, 0x00000000, 0x00040047,
    0x00000021, 0x00000021, 0x00000001, 0x00040047, 0x00000023, 0x00000006, 0x00000004, 0x00040048,
    0x00000024, 0x00000000, 0x00000018, 0x00050048, 0x00000024, 0x00000000, 0x00000023, 0x00000000,
    0x00030047, 0x00000024, 0x00000002, 0x00040047, 0x00000028, 0x00000022, 0x00000000, 0x00040047,
    0x00000028, 0x00000021, 0x00000000, 0x00040047, 0x00000035, 0x0000000b, 0x00000019, 0x00020013,
    0x00000002, 0x00030021, 0x00000003, 0x00000002, 0x00040015, 0x00000006, 0x00000020, 0x00000000,
    0x00040020, 0x00000007, 0x00000007, 0x00000006, 0x00040017, 0x00000009, 0x00000006, 0x00000003,
    0x00040020, 0x0000000a, 0x00000001, 0x00000009, 0x0004003b, 0x0000000a, 0x0000000b, 0x00000001,
    0x0004002b, 0x00000006, 0x0000000c, 0x00000000, 0x00040020, 0x0000000d, 0x00000001, 0x00000006,
    0x0003001e, 0x00000011, 0x00000006, 0x00040020, 0x00000012, 0x00000009, 0x00000011, 0x0004003b,
    0x00000012, 0x00000013, 0x00000009, 0x00040015, 0x00000014, 0x00000020, 0x00000001, 0x0004002b,
    0x00000014, 0x00000015, 0x00000000, 0x00040020, 0x00000016, 0x00000009, 0x00000006, 0x00020014,
    0x00000019, 0x00030016, 0x0000001d, 0x00000020, 0x0003001d, 0x0000001e, 0x0000001d, 0x0003001e,
    0x0000001f, 0x0000001e, 0x00040020, 0x00000020, 0x0000000c, 0x0000001f, 0x0004003b, 0x00000020,
    0x00000021, 0x0000000c, 0x0003001d, 0x00000023, 0x0000001d, 0x0003001e, 0x00000024, 0x00000023,
    0x0004002b, 0x00000006, 0x00000025, 0x00000002, 0x0004001c, 0x00000026, 0x00000024, 0x00000025,
    0x00040020, 0x00000027, 0x0000000c, 0x00000026, 0x0004003b, 0x00000027, 0x00000028, 0x0000000c,
    0x00040020, 0x0000002a, 0x0000000c, 0x0000001d, 0x0004002b, 0x00000014, 0x0000002d, 0x00000001,
    0x0004002b, 0x00000006, 0x00000033, 0x00000020, 0x0004002b, 0x00000006, 0x00000034, 0x00000001,
    0x0006002c, 0x00000009, 0x00000035, 0x00000033, 0x00000034, 0x00000034, 0x00050036, 0x00000002,
    0x00000004, 0x00000000, 0x00000003, 0x000200f8, 0x00000005, 0x0004003b, 0x00000007, 0x00000008,
    0x00000007, 0x00050041, 0x0000000d, 0x0000000e, 0x0000000b, 0x0000000c, 0x0004003d, 0x00000006,
    0x0000000f, 0x0000000e, 0x0003003e, 0x00000008, 0x0000000f, 0x0004003d, 0x00000006, 0x00000010,
    0x00000008, 0x00050041, 0x00000016, 0x00000017, 0x00000013, 0x00000015, 0x0004003d, 0x00000006,
    0x00000018, 0x00000017, 0x000500b0, 0x00000019, 0x0000001a, 0x00000010, 0x00000018, 0x000300f7,
    0x0000001c, 0x00000000, 0x000400fa, 0x0000001a, 0x0000001b, 0x0000001c, 0x000200f8, 0x0000001b,
    0x0004003d, 0x00000006, 0x00000022, 0x00000008, 0x0004003d, 0x00000006, 0x00000029, 0x00000008,
    0x00070041, 0x0000002a, 0x0000002b, 0x00000028, 0x00000015, 0x00000015, 0x00000029, 0x0004003d,
    0x0000001d, 0x0000002c, 0x0000002b, 0x0004003d, 0x00000006, 0x0000002e, 0x00000008, 0x00070041,
    0x0000002a, 0x0000002f, 0x00000028, 0x0000002d, 0x00000015, 0x0000002e, 0x0004003d, 0x0000001d,
    0x00000030, 0x0000002f, 0x00050081, 0x0000001d, 0x00000031, 0x0000002c, 0x00000030, 0x00060041,
    0x0000002a, 0x00000032, 0x00000021, 0x00000015, 0x00000022, 0x0003003e, 0x00000032, 0x00000031,
    0x000200f9, 0x0000001c, 0x000200f8, 0x0000001c, 0x000100fd, 0x00010038,
};

#define SCALE_SHA  "d804e141ad17e78bdeb45cf359a7ec6e6045085ae8a86e6b969d0e668ec88817"
#define ADDARR_SHA "a697e98737ba7ac6f98e11a8b9030177de4dddb4a717d9857c6108e6d08a1a7c"

/* kernels 0 and 1 run; 2 asks for a tensor-core feature; 3 has a broken grid;
 * 0, 2 and 3 share module "scale", whose entry gives them its workgroup size */
static const char *MANIFEST =
    "{\n"
    "  \"schema\": \"qkgen-bundle/3\",\n"
    "  \"generator\": { \"name\": \"smoke\", \"version\": \"0\", \"hash\": \"\" },\n"
    "  \"kernels\": [\n"
    "    { \"name\": \"scale\", \"family\": \"test\", \"format\": \"f32\", \"activation\": "
    "\"f32\",\n"
    "      \"tile\": { \"NR0\": 1, \"NR1\": 1, \"NK\": 1 }, \"module\": \"scale\",\n"
    "      \"entry_point\": \"main\",\n"
    "      \"required_subgroup_size\": 0, \"min_subgroup_size\": 0, \"shared_memory_bytes\": 0,\n"
    "      \"vulkan_version\": \"1.2\", \"extensions\": [], \"features\": [],\n"
    "      \"bindings\": [\n"
    "        { \"set\": 0, \"binding\": 0, \"count\": 1, \"name\": \"x\", \"role\": "
    "\"activations\", "
    "\"type\": \"f32\", \"access\": \"read\" },\n"
    "        { \"set\": 0, \"binding\": 1, \"count\": 1, \"name\": \"y\", \"role\": \"output\", "
    "\"type\": \"f32\", \"access\": \"write\" } ],\n"
    "      \"push_constants\": [ { \"name\": \"N\", \"offset\": 0, \"type\": \"u32\" },\n"
    "                          { \"name\": \"M\", \"offset\": 4, \"type\": \"f32\" } ],\n"
    "      \"push_constant_size\": 8, \"specialization_constants\": [],\n"
    "      \"dispatch\": { \"grid\": [\"(N + 63) / 64\", \"1\", \"1\"] }, \"constraints\": [\"M >= "
    "0\"] },\n"
    "    { \"name\": \"addarr\", \"module\": \"addarr\",\n"
    "      \"workgroup_size\": [32, 1, 1],\n"
    "      \"bindings\": [\n"
    "        { \"binding\": 0, \"count\": 2, \"name\": \"a\", \"type\": \"f32\", \"access\": "
    "\"read\" },\n"
    "        { \"binding\": 1, \"name\": \"y\", \"type\": \"f32\", \"access\": \"write\" } ],\n"
    "      \"push_constants\": [ { \"name\": \"N\", \"offset\": 0, \"type\": \"u32\" } ],\n"
    "      \"push_constant_size\": 4,\n"
    "      \"dispatch\": { \"grid\": [\"(N + 31) / 32\", \"1\", \"1\"] } },\n"
    "    { \"name\": \"tensor\", \"module\": \"scale\",\n"
    "      \"features\": [\"cooperative_matrix_nv\"],\n"
    "      \"bindings\": [ { \"binding\": 0, \"name\": \"x\" }, { \"binding\": 1, \"name\": "
    "\"y\" } ],\n"
    "      \"push_constants\": [ { \"name\": \"N\", \"offset\": 0, \"type\": \"u32\" },\n"
    "                          { \"name\": \"M\", \"offset\": 4, \"type\": \"f32\" } ],\n"
    "      \"push_constant_size\": 8, \"dispatch\": { \"grid\": [\"1\", \"1\", \"1\"] } },\n"
    "    { \"name\": \"badgrid\", \"module\": \"scale\",\n"
    "      \"bindings\": [\n"
    "        { \"binding\": 0, \"name\": \"x\" }, { \"binding\": 1, \"name\": \"y\" } ],\n"
    "      \"push_constants\": [ { \"name\": \"N\", \"offset\": 0, \"type\": \"u32\" },\n"
    "                          { \"name\": \"M\", \"offset\": 4, \"type\": \"f32\" } ],\n"
    "      \"push_constant_size\": 8,\n"
    "      \"dispatch\": { \"grid\": [\"(Q+1)/2\", \"1\", \"1\"] } }\n"
    "  ],\n"
    "  \"modules\": [\n"
    "    { \"name\": \"scale\", \"spv\": \"scale.spv\", \"spv_sha256\": \"" SCALE_SHA "\",\n"
    "      \"workgroup_size\": [64, 1, 1], \"specialization_constants\": [] },\n"
    "    { \"name\": \"addarr\", \"spv\": \"addarr.spv\", \"spv_sha256\": \"" ADDARR_SHA "\" }\n"
    "  ]\n"
    "}\n";

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                 \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

/* Checks a call succeeded, printing the context's message otherwise. */
#define OK(ctx, call) CHECK((call) == QKRT_OK, "%s", qkrt_last_error(ctx))

static void on_log(void *user, int level, const char *message) {
    (void)user;
    if (level >= QKRT_LOG_WARN) fprintf(stderr, "qkrt: %s\n", message);
}

static bool write_file(const char *dir, const char *name, const void *data, size_t size) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, size, f) == size;
    if (f && fclose(f) != 0) ok = false;
    return ok;
}

static void remove_file(const char *dir, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    remove(path);
}

/* Two variables, kept in v (a qkrt_shape points to its names and values). */
typedef struct vars2 {
    const char *names[2];
    int64_t values[2];
} vars2;

static qkrt_shape shape2(vars2 *v, const char *a, int64_t va, const char *b, int64_t vb) {
    *v = (vars2){{a, b}, {va, vb}};
    return (qkrt_shape){2, v->names, v->values};
}

/* Loads the bundle in dir and runs its kernel 0 (scale: N, M) once on a
 * 64-byte buffer; the run's result (the context keeps its error). */
static qkrt_result run_scale_bundle(qkrt_context *ctx, const char *dir) {
    qkrt_bundle *bundle = NULL;
    qkrt_buffer *b = NULL;
    OK(ctx, qkrt_bundle_load(ctx, dir, &bundle));
    OK(ctx, qkrt_buffer_create(ctx, 64, &b));
    vars2 v;
    qkrt_buffer *bb[] = {b, b};
    qkrt_dispatch d = {
        .bundle = bundle, .buffer_count = 2, .buffers = bb, .shape = shape2(&v, "N", 1, "M", 0)};
    qkrt_result r = bundle && b ? qkrt_run(ctx, &d, 1) : QKRT_OK;
    qkrt_buffer_destroy(ctx, b);
    qkrt_bundle_destroy(ctx, bundle);
    return r;
}

static void test_devices(void) {
    char error[256];
    uint32_t count = 0;
    CHECK(qkrt_enumerate_devices(NULL, &count, error, sizeof error) == QKRT_OK, "%s", error);
    CHECK(count > 0, "no device");
    qkrt_device_info infos[8];
    if (count > 8) count = 8;
    CHECK(qkrt_enumerate_devices(infos, &count, error, sizeof error) == QKRT_OK, "%s", error);
    for (uint32_t i = 0; i < count; i++) {
        const qkrt_device_info *d = &infos[i];
        printf("device %u: %s [%s] %s, Vulkan %u.%u, subgroup %u (%u..%u)%s, shared %u, "
               "8/16-bit %d/%d, f16 %d, i8 %d, i64 %d, coopmat nv %d (%ux%ux%u) khr %d, "
               "%.1f GiB, timestamp %.3f ns\n",
               d->index, d->name, d->type, d->driver, d->api_version >> 22,
               (d->api_version >> 12) & 0x3ff, d->subgroup_size, d->min_subgroup_size,
               d->max_subgroup_size, d->subgroup_arithmetic ? " arith" : "", d->max_shared_memory,
               d->storage_8bit, d->storage_16bit, d->float16, d->int8, d->int64,
               d->cooperative_matrix_nv, d->coopmat_m, d->coopmat_n, d->coopmat_k,
               d->cooperative_matrix_khr, d->device_local_bytes / 1073741824.0,
               d->timestamp_period_ns);
        CHECK(d->subgroup_size > 0, "device %u: subgroup size 0", i);
    }
}

static void test_eval(void) {
    vars2 v2;
    qkrt_shape s = shape2(&v2, "M", 7, "K", 64);
    char error[256];
    int64_t v = 0;
    CHECK(qkrt_eval("(M + 1) / 2", &s, &v, error, sizeof error) == QKRT_OK && v == 4, "%s", error);
    CHECK(qkrt_eval("-M / 2 + K % 10 * 3", &s, &v, error, sizeof error) == QKRT_OK && v == 8,
          "v = %lld %s", (long long)v, error);
    CHECK(qkrt_eval("(Q+1)/2", &s, &v, error, sizeof error) == QKRT_ERROR_ARGUMENT &&
              strstr(error, "unknown variable 'Q' in expression '(Q+1)/2'"),
          "%s", error);
    CHECK(qkrt_eval("K / (M - 7)", &s, &v, error, sizeof error) == QKRT_ERROR_ARGUMENT &&
              strstr(error, "division by zero"),
          "%s", error);
    CHECK(qkrt_eval("2 * (M", &s, &v, error, sizeof error) == QKRT_ERROR_ARGUMENT &&
              strstr(error, "unclosed '('"),
          "%s", error);
    CHECK(qkrt_eval("M)", &s, &v, error, sizeof error) == QKRT_ERROR_ARGUMENT, "accepted 'M)'");
    CHECK(qkrt_eval("", &s, &v, error, sizeof error) == QKRT_ERROR_ARGUMENT, "accepted ''");
    CHECK(qkrt_eval("9223372036854775807 + 1", &s, &v, error, sizeof error) ==
                  QKRT_ERROR_ARGUMENT &&
              strstr(error, "overflow"),
          "%s", error);
    bool b = false;
    CHECK(qkrt_eval_bool("K % 32 == 0", &s, &b, error, sizeof error) == QKRT_OK && b, "%s", error);
    CHECK(qkrt_eval_bool("(M + 1) >= K", &s, &b, error, sizeof error) == QKRT_OK && !b, "%s",
          error);
    CHECK(qkrt_eval_bool("K = 64", &s, &b, error, sizeof error) == QKRT_ERROR_ARGUMENT, "'='");
    CHECK(qkrt_eval_bool("1 < M < 9", &s, &b, error, sizeof error) == QKRT_ERROR_ARGUMENT &&
              strstr(error, "second comparison"),
          "%s", error);
    CHECK(qkrt_eval_bool("K % 32", &s, &b, error, sizeof error) == QKRT_ERROR_ARGUMENT, "no op");
    /* the generator's evaluator: conditions joined, arithmetic checked */
    CHECK(qkrt_eval_bool("K % 32 == 0 && !(M > K)", &s, &b, error, sizeof error) == QKRT_OK && b,
          "%s", error);
    CHECK(qkrt_eval("K * 0 + (0 - 9223372036854775807 - 1) % -1", &s, &v, error, sizeof error) ==
                  QKRT_OK &&
              v == 0,
          "%s", error);
    CHECK(qkrt_eval("(0 - 9223372036854775807 - 1) / -1", &s, &v, error, sizeof error) ==
                  QKRT_ERROR_ARGUMENT &&
              strstr(error, "'/' overflows 64-bit integers in expression"),
          "%s", error);
}

static void test_bad_bundles(qkrt_context *ctx, const char *dir) {
    qkrt_bundle *bundle = NULL;
    char *text = strdup(MANIFEST);
    char *schema = strstr(text, "qkgen-bundle/3");
    schema[strlen("qkgen-bundle/")] = '9';
    CHECK(write_file(dir, "manifest.json", text, strlen(text)), "write");
    CHECK(qkrt_bundle_load(ctx, dir, &bundle) == QKRT_ERROR_MANIFEST &&
              strstr(qkrt_last_error(ctx), "schema 'qkgen-bundle/9'"),
          "%s", qkrt_last_error(ctx));
    printf("other schema: %s\n", qkrt_last_error(ctx));
    strcpy(text, MANIFEST);
    char *hash = strstr(text, SCALE_SHA);
    hash[0] = hash[0] == '0' ? '1' : '0';
    CHECK(write_file(dir, "manifest.json", text, strlen(text)), "write");
    CHECK(qkrt_bundle_load(ctx, dir, &bundle) == QKRT_ERROR_MANIFEST &&
              strstr(qkrt_last_error(ctx), "stale bundle"),
          "%s", qkrt_last_error(ctx));
    /* a field both in a kernel and in its module; a module not in "modules" */
    strcpy(text, MANIFEST);
    char *field = strstr(text, "\"entry_point\": \"main\",\n");
    memcpy(field, "\"workgroup_size\":[64],", 22); /* as long as the field it replaces */
    CHECK(write_file(dir, "manifest.json", text, strlen(text)), "write");
    CHECK(qkrt_bundle_load(ctx, dir, &bundle) == QKRT_ERROR_MANIFEST &&
              strstr(qkrt_last_error(ctx), "\"workgroup_size\" is also a field of its module "
                                           "'scale' (modules[0])"),
          "%s", qkrt_last_error(ctx));
    printf("a field twice: %s\n", qkrt_last_error(ctx));
    strcpy(text, MANIFEST);
    char *mod = strstr(text, "\"module\": \"addarr\"");
    memcpy(mod, "\"module\": \"adder!\"", strlen("\"module\": \"adder!\""));
    CHECK(write_file(dir, "manifest.json", text, strlen(text)), "write");
    CHECK(qkrt_bundle_load(ctx, dir, &bundle) == QKRT_ERROR_MANIFEST &&
              strstr(qkrt_last_error(ctx), "\"module\": 'adder!' is not in \"modules\""),
          "%s", qkrt_last_error(ctx));
    printf("no such module: %s\n", qkrt_last_error(ctx));
    const char *broken = "{\n  \"schema\": \"qkgen-bundle/3\",\n  \"kernels\": [ 1, ]\n}\n";
    CHECK(write_file(dir, "manifest.json", broken, strlen(broken)), "write");
    CHECK(qkrt_bundle_load(ctx, dir, &bundle) == QKRT_ERROR_MANIFEST &&
              strstr(qkrt_last_error(ctx), "manifest.json:3:"),
          "%s", qkrt_last_error(ctx));
    printf("broken json: %s\n", qkrt_last_error(ctx));
    CHECK(bundle == NULL, "bundle set on failure");
    free(text);
    remove_file(dir, "manifest.json");
}

static void test_run(qkrt_context *ctx, qkrt_bundle *bundle) {
    enum { N = 100003 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    for (int i = 0; i < N; i++)
        x[i] = (float)(i % 1000) * 0.25f - 7.0f;
    int scale = qkrt_bundle_find(bundle, "scale"), addarr = qkrt_bundle_find(bundle, "addarr");
    CHECK(scale == 0 && addarr == 1, "find: %d %d", scale, addarr);
    CHECK(qkrt_bundle_find(bundle, "nope") == -1, "found 'nope'");
    const qkrt_kernel_info *info = qkrt_bundle_kernel(bundle, 1);
    CHECK(qkrt_bundle_kernel(bundle, 0)->constraint_count == 1, "constraints of scale");
    CHECK(info && info->bindings[0].count == 2 && info->push_size == 4 &&
              strcmp(info->grid[0], "(N + 31) / 32") == 0,
          "kernel info of addarr");
    OK(ctx, qkrt_kernel_check(ctx, bundle, 0));

    qkrt_buffer *bx = NULL, *by = NULL, *bz = NULL, *ind = NULL, *unused = NULL;
    OK(ctx, qkrt_buffer_create(ctx, N * sizeof(float), &bx));
    OK(ctx, qkrt_buffer_create(ctx, N * sizeof(float), &by));
    OK(ctx, qkrt_buffer_create(ctx, N * sizeof(float), &bz));
    OK(ctx, qkrt_buffer_create(ctx, 12, &ind));
    OK(ctx, qkrt_buffer_create(ctx, 0, &unused));
    if (!bx || !by || !bz || !ind || !unused) return;
    OK(ctx, qkrt_buffer_upload(ctx, bx, 0, x, N * sizeof(float)));
    OK(ctx, qkrt_buffer_fill(ctx, by, 0x7fc00000));
    OK(ctx, qkrt_buffer_fill(ctx, bz, 0x7fc00000));
    uint32_t groups[3] = {(N + 31) / 32, 1, 1};
    OK(ctx, qkrt_buffer_upload(ctx, ind, 0, groups, sizeof groups));

    /* y = 2x + 3 by the grid rule, then z = x + y through an indirect dispatch:
     * the second reads what the first wrote, so the barrier between them matters */
    vars2 v[3];
    qkrt_buffer *b0[] = {bx, by}, *b1[] = {bx, by, bz}, *b2[] = {bx, unused};
    qkrt_dispatch d[3] = {
        {.bundle = bundle,
         .kernel = 0,
         .buffer_count = 2,
         .buffers = b0,
         .shape = shape2(&v[0], "N", N, "M", 3)},
        {.bundle = bundle,
         .kernel = 1,
         .buffer_count = 3,
         .buffers = b1,
         .shape = shape2(&v[1], "N", N, "M", 0),
         .indirect = ind},
        {.bundle = bundle,
         .kernel = 0,
         .buffer_count = 2,
         .buffers = b2,
         .shape = shape2(&v[2], "N", 0, "M", 0)},
    };
    double ns[3] = {-1, -1, -1};
    OK(ctx, qkrt_run_timed(ctx, d, 3, ns));
    printf("scale %.0f ns, addarr (indirect) %.0f ns, empty grid %.0f ns\n", ns[0], ns[1], ns[2]);
    CHECK(ns[0] > 0 && ns[1] > 0 && ns[2] == 0, "timestamps %g %g %g", ns[0], ns[1], ns[2]);
    OK(ctx, qkrt_buffer_download(ctx, by, 0, y, N * sizeof(float)));
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += !(y[i] == x[i] * 2.0f + 3.0f);
    CHECK(bad == 0, "scale: %d wrong of %d (y[0] = %g)", bad, N, y[0]);
    OK(ctx, qkrt_buffer_download(ctx, bz, 0, y, N * sizeof(float)));
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += !(fabsf(y[i] - (x[i] * 3.0f + 3.0f)) <= 1e-4f * (1 + fabsf(y[i])));
    CHECK(bad == 0, "addarr: %d wrong of %d (z[0] = %g)", bad, N, y[0]);

    /* errors a caller gets back, each naming what is wrong */
    qkrt_dispatch e = d[0];
    qkrt_buffer *no_y[] = {bx, NULL};
    e.buffers = no_y;
    CHECK(qkrt_run(ctx, &e, 1) == QKRT_ERROR_ARGUMENT &&
              strstr(qkrt_last_error(ctx), "binding 'y'"),
          "%s", qkrt_last_error(ctx));
    e = d[0];
    e.buffer_count = 1;
    CHECK(qkrt_run(ctx, &e, 1) == QKRT_ERROR_ARGUMENT &&
              strstr(qkrt_last_error(ctx), "1 buffers for its 2 descriptors"),
          "%s", qkrt_last_error(ctx));
    vars2 ve;
    e = d[0];
    e.shape = shape2(&ve, "N", N, "Mx", 3);
    CHECK(qkrt_run(ctx, &e, 1) == QKRT_ERROR_ARGUMENT &&
              strstr(qkrt_last_error(ctx), "push constant 'M'"),
          "%s", qkrt_last_error(ctx));
    e = d[0];
    e.shape = shape2(&ve, "N", N, "M", -1);
    CHECK(qkrt_run(ctx, &e, 1) == QKRT_ERROR_ARGUMENT &&
              strstr(qkrt_last_error(ctx), "breaks constraint 'M >= 0'"),
          "%s", qkrt_last_error(ctx));
    e = d[0];
    e.kernel = 3;
    CHECK(qkrt_run(ctx, &e, 1) == QKRT_ERROR_ARGUMENT &&
              strstr(qkrt_last_error(ctx), "unknown variable 'Q' in grid expression '(Q+1)/2'"),
          "%s", qkrt_last_error(ctx));
    printf("bad grid: %s\n", qkrt_last_error(ctx));
    qkrt_result r = qkrt_kernel_check(ctx, bundle, 2);
    if (qkrt_device(ctx)->cooperative_matrix_nv) {
        CHECK(r == QKRT_OK, "%s", qkrt_last_error(ctx));
    } else {
        CHECK(r == QKRT_ERROR_UNSUPPORTED && strstr(qkrt_last_error(ctx), "cooperative_matrix_nv"),
              "%s", qkrt_last_error(ctx));
        printf("unsupported: %s\n", qkrt_last_error(ctx));
    }

    /* many dispatches in one call, over several descriptor pools */
    enum { MANY = 3000 };
    qkrt_dispatch *many = calloc(MANY, sizeof *many);
    vars2 *many_vars = calloc(MANY, sizeof *many_vars);
    double *many_ns = calloc(MANY, sizeof *many_ns);
    for (int i = 0; i < MANY; i++) {
        many[i] = d[0];
        many[i].shape = shape2(&many_vars[i], "N", 1000, "M", i);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    OK(ctx, qkrt_run_timed(ctx, many, MANY, many_ns));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double host_us =
        (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
    printf("%d dispatches in one qkrt_run: %.1f us each on the host (first use of pools), "
           "last %.0f ns on the GPU\n",
           MANY, host_us / MANY, many_ns[MANY - 1]);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    OK(ctx, qkrt_run_timed(ctx, many, MANY, many_ns));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    host_us = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
    printf("%d dispatches again: %.1f us each on the host\n", MANY, host_us / MANY);
    OK(ctx, qkrt_buffer_download(ctx, by, 0, y, 1000 * sizeof(float)));
    CHECK(y[5] == x[5] * 2.0f + (MANY - 1), "last of many: %g", y[5]);
    free(many);
    free(many_vars);
    free(many_ns);

    double copy_ns[3] = {0};
    OK(ctx, qkrt_copy(ctx, bz, bx, N * sizeof(float), 3, copy_ns));
    printf("copy of %zu bytes: %.0f %.0f %.0f ns\n", N * sizeof(float), copy_ns[0], copy_ns[1],
           copy_ns[2]);
    CHECK(copy_ns[0] > 0 && copy_ns[2] > 0, "copy timestamps");
    OK(ctx, qkrt_buffer_download(ctx, bz, 4, y, 8));
    CHECK(y[0] == x[1] && y[1] == x[2], "copy content");
    CHECK(qkrt_buffer_download(ctx, bz, 8, y, N * sizeof(float)) == QKRT_ERROR_ARGUMENT,
          "download past the end accepted");

    qkrt_buffer_destroy(ctx, bx);
    qkrt_buffer_destroy(ctx, by);
    qkrt_buffer_destroy(ctx, bz);
    qkrt_buffer_destroy(ctx, ind);
    qkrt_buffer_destroy(ctx, unused);
    free(x);
    free(y);
}

int main(void) {
    bool validation = getenv("QKRT_SMOKE_NO_VALIDATION") == NULL;
    test_devices();
    test_eval();

    char dir[] = "/tmp/qkrt_smoke_XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char cache[sizeof dir + 16];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    CHECK(write_file(dir, "scale.spv", SPV_SCALE, sizeof SPV_SCALE), "write scale.spv");
    CHECK(write_file(dir, "addarr.spv", SPV_ADDARR, sizeof SPV_ADDARR), "write addarr.spv");

    for (int round = 0; round < 2; round++) {
        /* round 1 starts from the pipeline cache that round 0 wrote */
        qkrt_context *ctx = NULL;
        qkrt_desc desc = {.validation = validation, .pipeline_cache_dir = cache, .log = on_log};
        if (qkrt_create(&desc, &ctx) != QKRT_OK) {
            printf("FAIL: qkrt_create: %s\n", qkrt_create_error());
            return 1;
        }
        printf("context on '%s'%s\n", qkrt_device(ctx)->name, validation ? " with validation" : "");
        if (round == 0) test_bad_bundles(ctx, dir);
        CHECK(write_file(dir, "manifest.json", MANIFEST, strlen(MANIFEST)), "write manifest");
        qkrt_bundle *bundle = NULL;
        OK(ctx, qkrt_bundle_load(ctx, dir, &bundle));
        if (bundle) {
            CHECK(qkrt_bundle_kernel_count(bundle) == 4, "kernel count");
            test_run(ctx, bundle);
            qkrt_bundle_destroy(ctx, bundle);
        }
        uint32_t errors = qkrt_validation_errors(ctx);
        CHECK(errors == 0, "%u validation errors", errors);
        qkrt_destroy(ctx);
    }

    /* a push-constant range smaller than the shader's block is refused before
     * a pipeline is made (the module is checked against its manifest entry) */
    {
        qkrt_context *ctx = NULL;
        qkrt_desc desc = {.validation = validation, .pipeline_cache_dir = ""};
        char *text = strdup(MANIFEST);
        char *size = strstr(text, "\"push_constant_size\": 8");
        size[strlen("\"push_constant_size\": ")] = '4';
        char *offset = strstr(text, "\"offset\": 4");
        offset[strlen("\"offset\": ")] = '0';
        CHECK(write_file(dir, "manifest.json", text, strlen(text)), "write manifest");
        free(text);
        if (qkrt_create(&desc, &ctx) == QKRT_OK) {
            qkrt_result r = run_scale_bundle(ctx, dir);
            CHECK(r == QKRT_ERROR_MANIFEST &&
                      strstr(qkrt_last_error(ctx), "reads push constant 'M' (f32) at offset 4, "
                                                   "where the manifest entry has none"),
                  "%s", qkrt_last_error(ctx));
            printf("push range too small: %s\n", qkrt_last_error(ctx));
            CHECK(qkrt_validation_errors(ctx) == 0, "%u validation errors",
                  qkrt_validation_errors(ctx));
            qkrt_destroy(ctx);
        }
    }

    /* the messenger really counts: scale.spv with its push block decorated
     * BufferBlock, which SPIR-V 1.5 forbids (the layer's spirv-val sees it;
     * the manifest check, which reads no such decoration, does not) */
    if (validation) {
        uint32_t bad[sizeof SPV_SCALE / 4];
        memcpy(bad, SPV_SCALE, sizeof bad);
        bool patched = false;
        for (size_t i = 5; i + 2 < sizeof bad / 4 && !patched; i++)
            if (bad[i] == 0x00030047 && bad[i + 2] == 2 /* OpDecorate %PC Block */) {
                bad[i + 2] = 3;
                patched = true;
            }
        CHECK(patched, "no Block decoration in scale.spv");
        char sha[65];
        qk_sha256_hex(bad, sizeof bad, sha);
        CHECK(write_file(dir, "scalx.spv", bad, sizeof bad), "write scalx.spv");
        char *text = strdup(MANIFEST);
        for (char *at = text; (at = strstr(at, "scale.spv")); at += 9)
            at[4] = 'x';
        for (char *at = text; (at = strstr(at, SCALE_SHA)); at += 64)
            memcpy(at, sha, 64);
        CHECK(write_file(dir, "manifest.json", text, strlen(text)), "write manifest");
        free(text);
        qkrt_context *ctx = NULL;
        qkrt_desc desc = {.validation = true, .pipeline_cache_dir = ""};
        if (qkrt_create(&desc, &ctx) == QKRT_OK) {
            run_scale_bundle(ctx, dir);
            CHECK(qkrt_validation_errors(ctx) > 0, "an invalid module went unnoticed");
            printf("validation errors counted for a bad kernel: %u\n", qkrt_validation_errors(ctx));
            qkrt_destroy(ctx);
        }
    }

    /* the pipeline cache file was written, then found again */
    char command[512];
    snprintf(command, sizeof command, "ls %s/pipelines_*.bin >/dev/null 2>&1", cache);
    CHECK(system(command) == 0, "no pipeline cache in %s", cache);
    snprintf(command, sizeof command, "rm -rf %s", dir);
    if (system(command) != 0) printf("could not remove %s\n", dir);

    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
