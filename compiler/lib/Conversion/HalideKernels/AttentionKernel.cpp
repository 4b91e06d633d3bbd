#include "KernelPipelines.h"
namespace mlir::xf {
llvm::Expected<KernelPipeline> buildAttentionPipeline(const AttentionKernelSpec &spec,
                                                      const Halide::Target &target) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "todo");
}
} // namespace mlir::xf
