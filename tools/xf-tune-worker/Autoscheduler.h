//===- Autoscheduler.h - Halide's autoschedulers as baselines ---*- C++ -*-===//
//
// In: a pipeline with estimates, an autoscheduler name (Adams2019, Li2018,
// Mullapudi2016), the target and the thread count. Out: the pipeline
// scheduled by that autoscheduler, loaded as a plugin from
// $XF_HALIDE_PLUGIN_DIR, else from the directory of the libHalide.so the
// worker was built against (the wheel ships the plugins beside it).
//
//===----------------------------------------------------------------------===//

#ifndef XF_TOOLS_XF_TUNE_WORKER_AUTOSCHEDULER_H
#define XF_TOOLS_XF_TUNE_WORKER_AUTOSCHEDULER_H

#include "KernelPipelines.h"

namespace xftune {

std::string pluginDirectory();

llvm::Error applyAutoscheduler(const Halide::Pipeline &pipeline, const std::string &name,
                               const Halide::Target &target, int threads);

} // namespace xftune

#endif // XF_TOOLS_XF_TUNE_WORKER_AUTOSCHEDULER_H
