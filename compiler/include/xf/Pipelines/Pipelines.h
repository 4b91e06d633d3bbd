//===- Pipelines.h - the compiler's stages as lists of passes ---*- C++ -*-===//
//
// spec → xf (frontend) → buildFusionPipeline → lowerToHost (the host module,
// its kernels declared in it) → buildHostToLLVMPipeline → object files (host +
// Halide kernels) → link. Every stage after the lowering reads the host
// module alone.
//
//===----------------------------------------------------------------------===//

#ifndef XF_PIPELINES_PIPELINES_H
#define XF_PIPELINES_PIPELINES_H

#include "xf/Target/TensorCoreGemm.h"
#include "xf/Conversion/LowerToHost.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::xf {

class ObjectCache;

/// scf/arith/math/func on raw pointers → the LLVM dialect.
void buildHostToLLVMPipeline(OpPassManager &pm);

struct CodegenOptions {
  std::string target = "host"; // Halide target string for the kernels
  int optLevel = 3;
  bool keepIntermediates = false; // leave the object files next to the output
  /// Objects are taken from and stored into this cache when set (ObjectCache.h).
  ObjectCache *cache = nullptr;
  /// When set, a line per object (cache hit or miss, compile time) and the link time.
  llvm::raw_ostream *log = nullptr;
  /// Link a shared object instead (no main; -Bsymbolic, so its Halide runtime
  /// and libxfrt stay its own), which `xfc --check` loads with dlopen.
  bool sharedLibrary = false;
  /// A model library (`xfc --emit=lib`): a shared object that links the public C API
  /// (libxfrt_capi, xf/xf.h) in and exports it alone; xf.h is copied next to it.
  bool publicApi = false;
  /// With publicApi: a static archive (libmodel.a) instead of a shared object.
  bool staticArchive = false;
  /// Link the trainer's main (libxfrt_train_main, docs/training.md) instead
  /// of the inference one: for programs lowered from @loss_and_gradients too.
  bool trainer = false;
  // The tensor-core precision of CUDA builds is the host module's (`xf.gpu_matmul`, set by
  // the lowering): the host code's calls depend on it.
};

/// Runs the host-to-LLVM pipeline on a copy of `host`'s code (its kernel
/// declarations left out; null on failure).
OwningOpRef<ModuleOp> lowerHostToLLVM(ModuleOp host);

/// Objects (host, the kernels `host` declares, Halide runtime) linked with
/// libxfrt into `output`.
llvm::Error buildExecutable(ModuleOp host, const CodegenOptions &options, llvm::StringRef output);

/// `xfc tune --target cuda --export`'s timing program (docs/tuning.md): `objects` (the
/// candidates' pipelines, a Halide runtime) and the generated C table `tableSource`
/// (xfrt/GpuTimingTable.h) linked with libxfrt_gpu_timing_main and libxfrt into `output`.
llvm::Error linkGpuTimingProgram(llvm::ArrayRef<std::string> objects, llvm::StringRef tableSource,
                                 llvm::StringRef output);

/// The Halide loop nests of every kernel, for `--emit=halide` (CUDA targets:
/// before the GPU loops become launches, loop kernels included), or with
/// `ptx` each CUDA kernel's PTX (`--emit=ptx`).
llvm::Expected<std::string> describeKernels(ModuleOp host, const CodegenOptions &options,
                                            bool ptx = false);

/// `--emit=mlir-gpu` (or with `nvvm`, `--emit=nvvm`): each tensor-core GEMM kernel of a
/// CUDA build with --gpu-matmul=tf32|bf16, and for every GEMM the path it takes and why.
llvm::Expected<std::string> describeTensorCoreKernels(ModuleOp host,
                                                      const CodegenOptions &options, bool nvvm);

} // namespace mlir::xf

#endif // XF_PIPELINES_PIPELINES_H
