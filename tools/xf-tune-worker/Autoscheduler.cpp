//===- Autoscheduler.cpp - Halide's autoschedulers as baselines -----------===//

#include "Autoscheduler.h"
#include "Request.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

namespace xftune {

std::string pluginDirectory() { return mlir::xf::halidePluginDirectory(); }

llvm::Error applyAutoscheduler(const Halide::Pipeline &pipeline, const std::string &name,
                               const Halide::Target &target, int threads) {
  const char *library = autoschedulerLibrary(name);
  if (!library)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "unknown autoscheduler '" + name + "'");
  // A plugin registers its autoscheduler when loaded; registering twice is
  // an error, so each is loaded once per process.
  static llvm::StringSet<> loaded;
  if (!loaded.contains(name)) {
    llvm::SmallString<256> path(pluginDirectory());
    llvm::sys::path::append(path, library);
    if (!llvm::sys::fs::exists(path))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "autoscheduler plugin not found: " + path.str() +
                                         " (set XF_HALIDE_PLUGIN_DIR)");
    if (llvm::Error err = mlir::xf::catchHalideErrors(
            ("loading " + path).str(), [&] { Halide::load_plugin(path.str().str()); }))
      return err;
    loaded.insert(name);
  }
  return mlir::xf::catchHalideErrors("autoscheduling with " + name, [&] {
    Halide::AutoSchedulerResults results = pipeline.apply_autoscheduler(
        target, Halide::AutoschedulerParams(name, {{"parallelism", std::to_string(threads)}}));
    // For looking into a baseline's result; stdout carries only the protocol.
    if (std::getenv("XF_TUNE_WORKER_PRINT_SCHEDULES"))
      llvm::errs() << "// " << name << "\n" << results.schedule_source << "\n";
  });
}

} // namespace xftune
