//===- KernelFuncNames.h - Funcs and GPU kernels named after their kernel -*- C++ -*-===//
//
// Halide names a Func("f") uniquely in the process (f, f$1, f$2, ... by a counter per hash of
// the name) and a GPU kernel after its block loop the same way, so the names of a kernel's
// device functions (what ncu, --profile and --emit=ptx show) depended on what the process had
// compiled before: the object cache, the order of the kernels. Here both are a pure function
// of the kernel: while a KernelFuncScope for a function is open, kernelFunc(role) is the Func
// `<function>_<role>` exactly, and deterministicKernelNames renames a lowered CUDA module's
// kernels after their block loops.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CODEGEN_HALIDEKERNELS_KERNELFUNCNAMES_H
#define XF_LIB_CODEGEN_HALIDEKERNELS_KERNELFUNCNAMES_H

#include "Halide.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <set>
#include <string>
#include <vector>

namespace mlir::xf {

/// Names the Funcs kernelFunc makes on this thread after `function` (the Halide function being
/// built: xf_gemm_3, xf_attention_0_decode_ranges, ...) until it closes. Scopes nest; the
/// innermost names.
class KernelFuncScope {
public:
  explicit KernelFuncScope(std::string function);
  ~KernelFuncScope();
  KernelFuncScope(const KernelFuncScope &) = delete;
  KernelFuncScope &operator=(const KernelFuncScope &) = delete;

  /// `<function>_<role>`; a role asked for again in the scope gets `_2`, `_3`, ... (in the
  /// order the builder defines them, so still a function of the kernel).
  std::string nameFor(llvm::StringRef role);

private:
  std::string function;
  std::set<std::string> used;
  KernelFuncScope *outer;
};

/// A Func named `<function>_<role>` exactly (no Halide uniquifier) in the innermost open
/// KernelFuncScope; outside any scope (a test defining a piece on its own), Func(role).
Halide::Func kernelFunc(llvm::StringRef role);

/// `lowered` (a pipeline's module, as compile_to_module returns it) with each GPU kernel named
/// `_kernel_<its block loop>` and, where a loop name repeats (a specialization's copy of the
/// loop), `__<n>` for its n-th repeat — in the host code's launches and in the PTX — and each
/// CPU parallel loop's closure `<function>_par_for_<loop>`, its n-th repeat `__<n>`. Halide
/// appends its process-wide counters instead. An error if the launches and the module's
/// block loops do not correspond.
llvm::Expected<Halide::Module> deterministicKernelNames(const Halide::Module &lowered);

/// `pipeline` lowered as the CUDA function `function` (compile_to_module), its kernels named
/// by deterministicKernelNames; Halide's errors as an llvm::Error.
llvm::Expected<Halide::Module> lowerCudaPipeline(Halide::Pipeline pipeline,
                                                 const std::vector<Halide::Argument> &arguments,
                                                 const std::string &function,
                                                 const Halide::Target &target);

} // namespace mlir::xf

#endif // XF_LIB_CODEGEN_HALIDEKERNELS_KERNELFUNCNAMES_H
