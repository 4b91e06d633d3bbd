//===- Checker.h - xfc --check's checker, shared by its files ---*- C++ -*-===//
//
// The tolerances, how a build's rows are compared with the interpreter's, the
// sink that bisects (Bisector) and the checker: building, bisecting and
// reporting in Check.cpp, each entry point's check (xf_forward, cached,
// packed, cached-packed) in CheckEntryPoints.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef XF_CHECK_CHECKER_H
#define XF_CHECK_CHECKER_H

#include "xf/Check/Check.h"
#include "CompiledModel.h"

#include "xf/Interpreter/Interpreter.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>

namespace mlir::xf::check {

// The checker's files read as if inside mlir::xf.
namespace interp = mlir::xf::interp;
using interp::Tensor;
using mlir::FailureOr;
using mlir::LogicalResult;
using mlir::ModuleOp;
using mlir::Operation;
using mlir::OwningOpRef;
using mlir::xf::HostKernels;

/// max|out − ref| / max|ref| over the whole output (docs/correctness.md): the
/// bound the examples meet against test/reference.
constexpr double kModelTolerance = 1e-4;
/// One kernel on exact inputs: its own float32 rounding only (docs/pipeline.md).
constexpr double kKernelTolerance = 1e-5;
/// The kernel-level module against the frontend's, both in double.
constexpr double kFusionTolerance = 1e-9;
inline constexpr const char *kSiteAttr = "xf.check_op";

struct Comparison {
  double err = 0, maxDiff = 0, maxRef = 0;
  int64_t row = 0; // of the largest difference, counted in the reference
};

/// Rows [0, rows) of `out` (`stride` floats apart) against rows refRow(0..) of `ref`.
template <typename RefRow>
Comparison compareRows(const float *out, int64_t rows, int64_t stride, const Tensor &ref,
                       RefRow refRow) {
  Comparison c;
  const int64_t cols = ref.cols();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      double expected = ref.row(refRow(r))[j];
      double diff = std::fabs(double(out[r * stride + j]) - expected);
      if (std::isnan(diff))
        diff = INFINITY;
      if (diff > c.maxDiff || (r == 0 && j == 0))
        c.maxDiff = diff, c.row = refRow(r);
      c.maxRef = std::max(c.maxRef, std::fabs(expected));
    }
  c.err = c.maxDiff == 0 ? 0 : c.maxRef > 0 ? c.maxDiff / c.maxRef : INFINITY;
  return c;
}

/// Rows [0, rows) of `out` against rows first.. of `ref`.
Comparison compare(const float *out, int64_t rows, int64_t stride, const interp::Tensor &ref,
                   int64_t first);

/// The larger of two errors; a NaN counts as larger.
void keepWorst(Comparison &worst, const Comparison &c);

/// Two values of the interpreter, element by element.
Comparison compare(const interp::Tensor &a, const interp::Tensor &b);

/// `count` tokens below `vocab`, from stream `stream` of `seed`.
std::vector<int32_t> randomTokens(uint64_t seed, uint64_t stream, int64_t count, int64_t vocab);

/// Compares each kernel's output with the interpreter's value of its op and
/// replaces it by that value (rounded to float32).
class Bisector : public mlir::xf::check::KernelOutputSink {
public:
  struct Call {
    int32_t site;
    Comparison c;
  };
  std::vector<Call> calls;
  std::vector<const Tensor *> reference; // per site; null: not a kernel of the module
  /// xf_forward_cached: the positions computed after this call; the output's
  /// rows are the last ones before it (one row after the last attention).
  std::optional<int64_t> endPosition;
  /// xf_forward_cached_packed: the reference row of each row of the batch
  /// (`batchRows`, before the last attention) and of each sequence's newest
  /// row (`newestRows`, after it); a kernel's output is matched by its rows.
  std::vector<int64_t> batchRows, newestRows;

  void kernelOutput(int32_t site, float *out, int64_t rows, int64_t stride) override {
    const Tensor *ref = size_t(site) < reference.size() ? reference[site] : nullptr;
    if (!ref || ref->shape.size() != 2)
      return;
    std::function<int64_t(int64_t)> refRow;
    if (!batchRows.empty()) {
      const std::vector<int64_t> *map = rows == int64_t(batchRows.size())    ? &batchRows
                                        : rows == int64_t(newestRows.size()) ? &newestRows
                                                                             : nullptr;
      if (!map || llvm::any_of(*map, [&](int64_t r) { return r >= ref->rows(); }))
        return;
      refRow = [map](int64_t r) { return (*map)[size_t(r)]; };
    } else {
      int64_t first = endPosition ? *endPosition - rows : 0;
      if (first < 0 || first + rows > ref->rows())
        return;
      refRow = [first](int64_t r) { return first + r; };
    }
    calls.push_back({site, compareRows(out, rows, stride, *ref, refRow)});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < ref->cols(); ++j)
        out[r * stride + j] = float(ref->row(refRow(r))[j]);
  }
};

class Checker {
public:
  Checker(ModuleOp xf, ModuleOp kernels, const CheckOptions &options, llvm::raw_ostream &out)
      : xf(xf), kernels(kernels), options(options), out(out) {}

  LogicalResult run();

private:
  LogicalResult build();
  LogicalResult checkLength(int64_t l);
  LogicalResult checkCached(int64_t l);
  /// The interpreter's runs a check compares with: (inputs, the xf module's
  /// result) per sequence, one for a single sequence.
  using Runs = llvm::ArrayRef<std::pair<const interp::Inputs *, const Tensor *>>;
  /// Runs `calls` (the build's entry points, in order) under a Bisector fed by
  /// the interpreter on the kernel-level module (a batch: each op's values of
  /// the sequences stacked row after row as the batch is), and reports the
  /// first kernel above the tolerance. `modelErr` is the mismatch that started it.
  LogicalResult bisect(Runs runs, llvm::function_ref<llvm::Error(Bisector &)> calls,
                       const char *what, std::optional<Comparison> modelErr);
  /// A check's line, "xfc: check <what>: <measured>: max rel err … at row
  /// …<rowsOf> (tolerance …)", then, if `worst` is above the tolerance (or
  /// with -v), the bisection of `rerun`.
  LogicalResult reportThenBisect(Runs runs, const std::string &what, const std::string &measured,
                                 const char *rowsOf, Comparison worst,
                                 llvm::function_ref<llvm::Error(Bisector &)> rerun);
  /// The interpreter on each item of a batch alone (an item's token
  /// sequences: the source first for an encoder-decoder), kept for the
  /// batch's comparison and its bisection.
  struct Interpreted {
    std::vector<interp::Inputs> inputs;
    std::vector<Tensor> references;
    std::vector<std::pair<const interp::Inputs *, const Tensor *>> runs() const {
      std::vector<std::pair<const interp::Inputs *, const Tensor *>> r;
      for (size_t i = 0; i < inputs.size(); ++i)
        r.push_back({&inputs[i], &references[i]});
      return r;
    }
  };
  FailureOr<Interpreted> interpretEach(const std::vector<std::vector<std::vector<int32_t>>> &items);
  LogicalResult checkPacked(int64_t l);
  LogicalResult checkCachedPacked(int64_t l);
  void describeSite(int32_t site, llvm::raw_ostream &os, std::string &schedule);
  interp::Inputs inputsFor(std::vector<std::vector<int32_t>> sequences);
  llvm::Expected<Tensor> interpret(ModuleOp module, const interp::Inputs &inputs);
  LogicalResult fail(const llvm::Twine &message) {
    out.flush();
    llvm::errs() << "xfc: error: " << message << "\n";
    return mlir::failure();
  }

  ModuleOp xf, kernels;
  const CheckOptions &options;
  llvm::raw_ostream &out;
  OwningOpRef<ModuleOp> built; // the module compiled (a copy of kernels, perhaps with a fault)
  OwningOpRef<ModuleOp> host; // built's host module, its kernels declared in it
  HostKernels hostKernels;
  std::vector<Operation *> siteOps; // per site: the op of `built` it computes
  std::unique_ptr<CompiledModel> model;
  std::vector<Operation *> siteReference; // per site: the op of `kernels` it computes
  /// Parameter i as float32: a bfloat16 one widened exactly (its bits are a
  /// float32's top half), ggml blocks dequantized, once.
  const float *parameterFloats(size_t i);
  std::map<size_t, std::vector<float>> widened;
};

} // namespace mlir::xf::check

#endif // XF_CHECK_CHECKER_H
