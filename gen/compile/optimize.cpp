// The few lines of C++ around spvtools::Optimizer: SPIRV-Tools 2023.1 has no
// C interface to its optimizer.
#include <spirv-tools/optimizer.hpp>

#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" {
#include "compile.h"
}

// The Vulkan version a module targets, from its SPIR-V version (compile.c).
static spv_target_env env_of(const qk_spirv *m) {
    return qk_spirv_vulkan13(m) ? SPV_ENV_VULKAN_1_3 : SPV_ENV_VULKAN_1_2;
}

extern "C" bool qk_optimize(const char *name, qk_spirv *m, qk_error *e) {
    spvtools::Optimizer opt(env_of(m));
    std::string log;
    opt.SetMessageConsumer([&log](spv_message_level_t level, const char *,
                                  const spv_position_t &pos, const char *msg) {
        if (level <= SPV_MSG_ERROR) log += "word " + std::to_string(pos.index) + ": " + msg + "\n";
    });
    // The performance recipe of spirv-opt -O. It folds only spec constants
    // that no one can override, so OpSpecConstant* stay in the module. glslang
    // writes an expression of specialization constants anew at each use (a
    // matmul tile's macros made 13,016 OpSpecConstantOp, 360 KB), so the
    // equal ones are merged before and after (81, 48 KB). Not
    // eliminate-dead-const: it drops the WorkgroupSize built-in (a
    // decoration is no use), and with it what ties the workgroup's size to
    // specialization constant 0. Ids compacted last: the merges leave gaps.
    opt.RegisterPass(spvtools::CreateUnifyConstantPass());
    opt.RegisterPerformancePasses();
    opt.RegisterPass(spvtools::CreateUnifyConstantPass())
        .RegisterPass(spvtools::CreateCompactIdsPass());
    std::vector<uint32_t> out;
    spvtools::ValidatorOptions vopts;
    spvtools::OptimizerOptions oopts;
    oopts.set_run_validator(false);
    oopts.set_validator_options(vopts);
    if (!opt.Run(m->words, m->count, &out, oopts)) {
        qk_error_set(e, "%s: spirv-opt: %s", name, log.empty() ? "failed" : log.c_str());
        return false;
    }
    qk_spirv_free(m);
    m->count = out.size();
    m->words = static_cast<uint32_t *>(qk_xmalloc(out.size() * 4));
    std::memcpy(m->words, out.data(), out.size() * 4);
    return true;
}

// Freezes the given specialization constants at their values and folds what
// depends on them, as a driver does at pipeline creation: the generator
// validates and measures (shared memory) each variant on this form, while the
// bundle ships the module with its specialization constants open.
extern "C" bool qk_specialize(const char *name, const qk_spirv *in, const uint32_t *ids,
                              const uint32_t *values, uint32_t n, qk_spirv *out, qk_error *e) {
    spvtools::Optimizer opt(env_of(in));
    std::string log;
    opt.SetMessageConsumer([&log](spv_message_level_t level, const char *,
                                  const spv_position_t &pos, const char *msg) {
        if (level <= SPV_MSG_ERROR) log += "word " + std::to_string(pos.index) + ": " + msg + "\n";
    });
    std::unordered_map<uint32_t, std::string> map;
    for (uint32_t i = 0; i < n; i++)
        map[ids[i]] = std::to_string(values[i]);
    opt.RegisterPass(spvtools::CreateSetSpecConstantDefaultValuePass(map))
        .RegisterPass(spvtools::CreateFreezeSpecConstantValuePass())
        .RegisterPass(spvtools::CreateFoldSpecConstantOpAndCompositePass())
        .RegisterPass(spvtools::CreateUnifyConstantPass())
        .RegisterPass(spvtools::CreateEliminateDeadConstantPass());
    std::vector<uint32_t> words;
    spvtools::OptimizerOptions oopts;
    oopts.set_run_validator(false);
    if (!opt.Run(in->words, in->count, &words, oopts)) {
        qk_error_set(e, "%s: specializing: %s", name, log.empty() ? "failed" : log.c_str());
        return false;
    }
    out->count = words.size();
    out->words = static_cast<uint32_t *>(qk_xmalloc(words.size() * 4));
    std::memcpy(out->words, words.data(), words.size() * 4);
    return true;
}
