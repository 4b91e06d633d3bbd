//===- Request.h - The measurement request of xf-tune-worker ----*- C++ -*-===//
//
// In: the JSON request (see xf-tune-worker.cpp for the protocol). Out: a
// validated Request with the kernel (decoded from its description,
// #xf.gemm_kernel<...> / #xf.attention_kernel<...>), the cases and, per
// candidate, either a schedule (missing fields take the description's), an
// autoscheduler name, or the reason the candidate is invalid. Problems with
// the request itself are errors; problems with one candidate only mark that
// candidate, so that one bad schedule does not lose the batch.
//
//===----------------------------------------------------------------------===//

#ifndef XF_TOOLS_XF_TUNE_WORKER_REQUEST_H
#define XF_TOOLS_XF_TUNE_WORKER_REQUEST_H

#include "KernelPipelines.h"

#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace xftune {

enum class KernelKind { Gemm, Attention };

/// The kernel being tuned; `schedule` in the specs is its description's.
struct KernelDesc {
  KernelKind kind = KernelKind::Gemm;
  mlir::xf::GemmKernelSpec gemm;
  mlir::xf::AttentionKernelSpec attention;
};

/// One problem size: GEMM rows = M; attention rows = M queries, keys = Mz.
struct Case {
  int64_t rows = 0, keys = 0;
};

struct Candidate {
  std::string invalid;       // non-empty: why the candidate was rejected
  std::string autoscheduler; // non-empty: a Halide autoscheduler baseline
  mlir::xf::GemmSchedule gemm;
  mlir::xf::AttentionSchedule attention;
};

struct Request {
  std::string targetName;
  Halide::Target target;
  int threads = 1, repeats = 7;
  double maxSeconds = 20;
  KernelDesc kernel;
  std::vector<Case> cases;
  std::vector<Candidate> candidates;
};

/// The autoscheduler plugins the worker knows (name → library stem).
const char *autoschedulerLibrary(llvm::StringRef name);

llvm::Expected<Request> parseRequest(const llvm::json::Value &json);

} // namespace xftune

#endif // XF_TOOLS_XF_TUNE_WORKER_REQUEST_H
