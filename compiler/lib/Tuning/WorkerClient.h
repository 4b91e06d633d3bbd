//===- WorkerClient.h - runs xf-tune-worker in a child process --*- C++ -*-===//
//
// In: a request (kernel, cases, candidates as JSON). Out: one result per
// candidate — timed cases, or why it failed ("compile_error: ...",
// "wrong: ...", "crashed", "timeout"). The worker writes JSON lines as it
// goes; when it dies, the last "compiling" line names the candidate that
// was running, and candidates it never reached are reported as not run.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_TUNING_WORKERCLIENT_H
#define XF_LIB_TUNING_WORKERCLIENT_H

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::xf::tuning {

struct CaseTime {
  int64_t rows = 0, keys = 0;
  double wallMinMs = 0, wallMedianMs = 0, cpuMedianMs = 0;
  std::vector<double> wallMs; // per round, in the batch's round order
};

struct CandidateResult {
  bool ran = false;    // false: the worker died before reaching it
  std::string failure; // empty when timed
  std::vector<CaseTime> cases;
  double maxRelErr = 0;
};

struct MachineCeilings {
  double fmaGflops = 0, readGBs = 0;
  std::string isa, cpu;
};

class WorkerClient {
public:
  WorkerClient(std::string workerPath, int64_t threads)
      : worker(std::move(workerPath)), threads(threads) {}

  /// Runs one batch; `request` holds everything but "candidates".
  llvm::Expected<std::vector<CandidateResult>> run(llvm::json::Object request,
                                                   const std::vector<llvm::json::Value> &candidates,
                                                   double timeoutSeconds);

  llvm::Expected<MachineCeilings> measureMachine();

private:
  /// Runs the worker; `exitCode` is its status (-2 killed: by the timeout or a signal, which
  /// `ended` then says, e.g. "Child timed out" or "Illegal instruction").
  llvm::Expected<std::vector<llvm::json::Value>> exec(llvm::ArrayRef<std::string> args,
                                                      std::optional<std::string> stdinText,
                                                      double timeoutSeconds, int &exitCode,
                                                      std::string &stderrText, std::string &ended);
  std::string worker;
  int64_t threads;
};

} // namespace mlir::xf::tuning

#endif // XF_LIB_TUNING_WORKERCLIENT_H
