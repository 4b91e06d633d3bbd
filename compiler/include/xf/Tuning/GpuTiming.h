//===- GpuTiming.h - `xfc tune --target cuda` in two halves -----*- C++ -*-===//
//
// The GPU machines xf gets have the driver but no LLVM/MLIR/Halide, so the CUDA GEMMs' and
// attentions' schedules (#xf.gpu_gemm_schedule, #xf.gpu_attention_schedule) are tuned in two
// halves that work apart (docs/tuning.md, "CUDA GEMMs"):
//  1. exportGpuTiming, here: each distinct GEMM and attention of the model, its bounded
//     candidate set (GpuScheduleSpace.h, the default first) compiled for the CUDA target into one
//     self-contained program, DIR/xf-gpu-timing (the candidates' Halide pipelines, a Halide
//     runtime, libxfrt and runtime/lib/GpuTimingMain.cpp, which times them with CUDA events
//     and writes every round's times as JSON), and DIR/manifest.json (what it holds); with
//     each GEMM, per length, the baseline to beat: the same math scheduled by Halide's
//     Anderson2021 GPU autoscheduler (GemmAnderson2021.cpp), timed but never stored.
//  2. importGpuTimes, here again: that JSON judged kernel by kernel with the CPU tuner's rule
//     (PairedComparison.h: the finalist against the default in paired, interleaved batches,
//     kept only when it wins by the noise-derived margin) into tuning database entries keyed
//     by gpuTuningTarget(GPU name, capability), one thread, this xf version.
// A CUDA build with --tuning-db takes the entries of one GPU (selectGpuTarget).
//
//===----------------------------------------------------------------------===//

#ifndef XF_TUNING_GPUTIMING_H
#define XF_TUNING_GPUTIMING_H

#include "xf/Tuning/TuningDatabase.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
class ModuleOp;
} // namespace mlir

namespace mlir::xf::tuning {

struct GpuExportOptions {
  std::string target;               // --target: cuda, cuda-sm_NN or a Halide target with cuda
  std::vector<int64_t> lengths;     // the rows each kernel is timed at
  size_t candidates = 16;           // per kernel, the default included
  uint64_t seed = 1;                // of the random part of the candidate set
  std::string directory;            // gets xf-gpu-timing and manifest.json
  // The baseline: Halide's Anderson2021 autoscheduler's schedule of each GEMM at each length,
  // timed beside the candidates, never stored: its plugin ("" the one beside libHalide), or
  // "none" to leave it out.
  std::string anderson2021Plugin;
};

/// Half 1: the timing program of the GEMMs and attentions `host` declares (their schedules
/// must be the default: a module lowered without a tuning database).
llvm::Error exportGpuTiming(MLIRContext &ctx, ModuleOp host, const GpuExportOptions &options,
                            llvm::raw_ostream &log);

struct GpuImportOptions {
  std::string timesPath;  // what xf-gpu-timing wrote
  std::string dbPath;     // the database to add the entries to
  std::string reportPath; // optional JSON report (as `xfc tune --report`'s)
};

/// Half 2: the times judged into database entries (one per kernel timed).
llvm::Error importGpuTimes(MLIRContext &ctx, const GpuImportOptions &options,
                           llvm::raw_ostream &log);

/// A GPU's key in the database's "target" field: "GPU <name> | <capability>", e.g.
/// "GPU NVIDIA H200 | sm_90" (the key --profile keeps its ceilings under).
std::string gpuTuningTarget(llvm::StringRef name, llvm::StringRef capability);

/// The database's CUDA entries' targets, distinct, in order of first appearance.
std::vector<std::string> gpuTargetsIn(const TuningDatabase &db);

/// For a CUDA build: the target key whose entries it takes, from `gpuName` (--gpu-name; may
/// be empty) and the database at `dbPath`: the entries of the GPU named, or, unnamed, of
/// the one GPU the database holds; "" where it holds none (and no GPU is named). Errors, one
/// line each: a GPU named that the database lacks, several GPUs and none named.
llvm::Expected<std::string> selectGpuTarget(llvm::StringRef dbPath, llvm::StringRef gpuName);

} // namespace mlir::xf::tuning

#endif // XF_TUNING_GPUTIMING_H
