//===- Options.h - xfc's command line ---------------------------*- C++ -*-===//
//
// The flags of `xfc FILE` and `xfc tune FILE` (llvm::cl options, defined in Options.cpp) and
// parseCommandLine, which parses argv and refuses the combinations xfc does not build (each
// with one error line) before the spec is read. The driver (xfc.cpp) reads the flags.
//
//===----------------------------------------------------------------------===//

#ifndef XFC_OPTIONS_H
#define XFC_OPTIONS_H

#include "xf/Target/TensorCoreGemm.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <optional>
#include <string>
#include <vector>

namespace xfc {

enum class Emit { AST, Xf, Fused, Kernels, Host, Halide, MlirGpu, Nvvm, Ptx, LLVM, Asm, Obj, Exe, Lib };
enum class WeightType { F32, BF16 };
enum class PackWeights { Load, Call };
enum class KvCacheType { F32, F16 };
enum class Bf16Products { Auto, On, Off };

extern llvm::cl::opt<std::string> inputFilename, outputFilename;
extern llvm::cl::opt<Emit> emitAction;
extern llvm::cl::opt<unsigned> optLevel;
extern llvm::cl::opt<std::string> target;
extern llvm::cl::opt<WeightType> weightType;
extern llvm::cl::opt<PackWeights> packWeights;
extern llvm::cl::opt<bool> bf16GemmInputs;
extern llvm::cl::opt<Bf16Products> bf16Products;
extern llvm::cl::opt<std::string> quantizedLike;
extern llvm::cl::opt<bool> q8GemmInputs;
extern llvm::cl::opt<bool> halideDecodeAttention;
extern llvm::cl::opt<KvCacheType> kvCacheType;
extern llvm::cl::opt<mlir::xf::GpuMatmul> gpuMatmul;
extern llvm::cl::opt<bool> keepTemps, noCache, verbose;
extern llvm::cl::opt<bool> check;
extern llvm::cl::opt<std::string> checkFault;
extern llvm::cl::opt<bool> train;
extern llvm::cl::list<std::string> defines;
// `xfc tune`'s (--lengths and --seed also --check's).
extern llvm::cl::opt<std::string> tuneBudget, tuneLengths, tuneReport, tuneCompare;
extern llvm::cl::opt<unsigned> tuneSeed, tuneBatch;
// `xfc tune --target cuda`'s (docs/tuning.md, "CUDA GEMMs"), and the build's --gpu-name.
extern llvm::cl::opt<std::string> tuneExport, tuneImport, gpuName, tuneAnderson2021;
extern llvm::cl::opt<unsigned> tuneCandidates;
extern llvm::cl::opt<bool> tuneBaselines;

/// `xfc tune ...` (argv[1] is "tune").
extern bool tuneMode;
/// The resolved --tuning-db, or `xfc tune`'s --db (empty: none).
extern std::string tuningDbPath;

/// Parses argv (`tune` taken off), resolves the tuning database, defaults --emit to exe with
/// -o, and refuses what xfc does not build; false after the error line.
bool parseCommandLine(int argc, char **argv);

/// --num-threads, else this machine's hardware threads.
int64_t threadCount();
/// "90s", "10m", "1h", or plain seconds.
std::optional<double> parseDuration(llvm::StringRef text);
/// --lengths: comma-separated lengths from 1 to 8192.
mlir::LogicalResult parseLengths(std::vector<int64_t> &lengths);

} // namespace xfc

#endif // XFC_OPTIONS_H
