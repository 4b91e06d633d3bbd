//===- Check.cpp - xfc --check: a build against the xf interpreter --------===//
//
// 1. Build the kernel-level module (with the fault of --check-fault, if any)
//    as a shared object whose host code calls xf_check_kernel_output after
//    every kernel, and load it with random weights (CompiledModel).
// 2. For each length: run xf_forward (and, for models with a KV cache,
//    xf_forward_cached: a prefill and two one-token steps) and compare with
//    the interpreter on the frontend's module.
// 3. On a mismatch, bisect: evaluate the kernel-level module with the
//    interpreter, keeping every kernel's value, and run the build again with
//    a sink that compares each kernel's output with that value and then
//    overwrites it, so each kernel reads the interpreter's inputs. The first
//    kernel call above the kernel tolerance is the one reported.
//
//===----------------------------------------------------------------------===//

#include "Check.h"
#include "CheckFaults.h"
#include "CompiledModel.h"

#include "xf/Codegen/KernelSchedules.h"
#include "xf/Codegen/KernelSpecs.h"
#include "xf/IR/XfOps.h"
#include "xf/Interpreter/Interpreter.h"
#include "xfrt/GgmlType.h"
#include "xfrt/Random.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <array>
#include <cmath>
#include <functional>
#include <map>

using namespace mlir;
using namespace mlir::xf;
using interp::Tensor;

namespace {

/// max|out − ref| / max|ref| over the whole output (docs/correctness.md): the
/// bound the examples meet against test/reference.
constexpr double kModelTolerance = 1e-4;
/// One kernel on exact inputs: its own float32 rounding only (docs/pipeline.md).
constexpr double kKernelTolerance = 1e-5;
/// The kernel-level module against the frontend's, both in double.
constexpr double kFusionTolerance = 1e-9;
constexpr const char *kSiteAttr = "xf.check_op";

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
Comparison compare(const float *out, int64_t rows, int64_t stride, const Tensor &ref,
                   int64_t first) {
  return compareRows(out, rows, stride, ref, [first](int64_t r) { return first + r; });
}

/// The larger of two errors; a NaN counts as larger.
void keepWorst(Comparison &worst, const Comparison &c) {
  if (!(c.err <= worst.err))
    worst = c;
}

Comparison compare(const Tensor &a, const Tensor &b) {
  Comparison c;
  for (size_t i = 0; i < a.data.size(); ++i) {
    double diff = std::fabs(a.data[i] - b.data[i]);
    if (std::isnan(diff))
      diff = INFINITY;
    if (diff > c.maxDiff)
      c.maxDiff = diff, c.row = int64_t(i) / a.cols();
    c.maxRef = std::max(c.maxRef, std::fabs(b.data[i]));
  }
  c.err = c.maxDiff == 0 ? 0 : c.maxRef > 0 ? c.maxDiff / c.maxRef : INFINITY;
  return c;
}

} // namespace

std::string xfc::sourceLine(Location loc) {
  std::string text;
  loc->walk([&](Location l) {
    if (auto file = dyn_cast<FileLineColLoc>(l); file && text.empty())
      text = llvm::formatv("{0}:{1}:{2}", file.getFilename().getValue(), file.getLine(),
                           file.getColumn());
    return WalkResult::advance();
  });
  return text.empty() ? "unknown location" : text;
}

namespace {

std::vector<int32_t> randomTokens(uint64_t seed, uint64_t stream, int64_t count, int64_t vocab) {
  xfrt::Pcg32 rng(seed, stream);
  std::vector<int32_t> tokens;
  tokens.resize(size_t(count));
  for (int32_t &t : tokens)
    t = int32_t(rng.next() % uint64_t(vocab));
  return tokens;
}

/// Compares each kernel's output with the interpreter's value of its op and
/// replaces it by that value (rounded to float32).
class Bisector : public xfc::KernelOutputSink {
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
  Checker(ModuleOp xf, ModuleOp kernels, const xfc::CheckOptions &options, llvm::raw_ostream &out)
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
    return failure();
  }

  ModuleOp xf, kernels;
  const xfc::CheckOptions &options;
  llvm::raw_ostream &out;
  OwningOpRef<ModuleOp> built; // the module compiled (a copy of kernels, perhaps with a fault)
  HostProgram program;
  std::unique_ptr<xfc::CompiledModel> model;
  std::vector<Operation *> siteReference; // per site: the op of `kernels` it computes
  /// Parameter i as float32: a bfloat16 one widened exactly (its bits are a
  /// float32's top half), ggml blocks dequantized, once.
  const float *parameterFloats(size_t i);
  std::map<size_t, std::vector<float>> widened;
};

const float *Checker::parameterFloats(size_t i) {
  const xfrt::WeightSet &w = model->weights();
  const xfrt::ParameterSpec &p = model->manifest().parameters[i];
  if (p.blocks) { // dequantized as the kernels do: exactly, to float32
    std::vector<float> &floats = widened[i];
    if (floats.empty()) {
      floats.resize(size_t(p.numel));
      if (xfrt::Status s =
              xfrt::dequantizeToF32(p.blockType, reinterpret_cast<const uint8_t *>(w.params[i]),
                                    floats.size(), floats.data());
          !s)
        llvm::report_fatal_error(llvm::Twine("dequantizing random blocks: ") + s.message());
    }
    return floats.data();
  }
  if (!w.bf16[i])
    return w.params[i];
  std::vector<float> &floats = widened[i];
  if (floats.empty()) {
    const auto *halves = reinterpret_cast<const uint16_t *>(w.params[i]);
    floats.resize(size_t(model->manifest().parameters[i].numel));
    for (size_t j = 0; j < floats.size(); ++j)
      floats[j] = llvm::bit_cast<float>(uint32_t(halves[j]) << 16);
  }
  return floats.data();
}

interp::Inputs Checker::inputsFor(std::vector<std::vector<int32_t>> sequences) {
  interp::Inputs inputs;
  const xfrt::Manifest &m = model->manifest();
  for (size_t i = 0; i < m.parameters.size(); ++i)
    inputs.parameters[m.parameters[i].name] = {parameterFloats(i), m.parameters[i].shape};
  inputs.sequences = std::move(sequences);
  return inputs;
}

llvm::Expected<Tensor> Checker::interpret(ModuleOp module, const interp::Inputs &inputs) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  auto evaluation = interp::evaluate(forward, inputs);
  if (!evaluation)
    return evaluation.takeError();
  return std::move(evaluation->result);
}

LogicalResult Checker::build() {
  // Ops are matched between the module built and the one interpreted by this index.
  int64_t index = 0;
  auto forward = kernels.lookupSymbol<func::FuncOp>("forward");
  Builder b(kernels.getContext());
  for (Operation &op : forward.getBody().front())
    op.setAttr(kSiteAttr, b.getI64IntegerAttr(index++));
  if (options.fault == "fusion") {
    // A wrong fusion pass: the kernel-level module itself (built and interpreted) changed.
    std::string what;
    if (llvm::Error e = xfc::injectFault("epilogue", kernels, what))
      return fail(llvm::toString(std::move(e)));
    out << "xfc: check: injected fault: the fused module: " << what << "\n";
  }
  built = OwningOpRef<ModuleOp>(cast<ModuleOp>(kernels->clone()));
  if (!options.fault.empty() && options.fault != "fusion" && !xfc::isHostFault(options.fault)) {
    std::string what;
    if (llvm::Error e = xfc::injectFault(options.fault, *built, what))
      return fail(llvm::toString(std::move(e)));
    out << "xfc: check: injected fault: " << what << "\n";
  }
  HostOptions host;
  host.kernelOutputHook = true;
  host.bf16Weights = options.bf16Weights;
  host.weightBlocks = options.weightBlocks;
  FailureOr<HostProgram> lowered = lowerToHost(*built, host);
  if (failed(lowered))
    return failure();
  program = std::move(*lowered);
  if (xfc::isHostFault(options.fault)) {
    std::string what;
    if (llvm::Error e = xfc::injectHostFault(options.fault, *program.module, what))
      return fail(llvm::toString(std::move(e)));
    out << "xfc: check: injected fault: " << what << "\n";
  }
  std::vector<Operation *> byIndex(index);
  for (Operation &op : forward.getBody().front())
    byIndex[op.getAttrOfType<IntegerAttr>(kSiteAttr).getInt()] = &op;
  for (Operation *op : program.siteOps) {
    auto id = op->getAttrOfType<IntegerAttr>(kSiteAttr);
    siteReference.push_back(id ? byIndex[id.getInt()] : nullptr);
  }

  llvm::SmallString<128> dir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("xfc-check", dir))
    return fail("cannot create a directory for the build: " + ec.message());
  llvm::SmallString<128> library(dir);
  llvm::sys::path::append(library, "model.so");
  CodegenOptions codegen = options.codegen;
  codegen.sharedLibrary = true;
  llvm::Error err = buildExecutable(program, codegen, library);
  if (!err) {
    auto loaded = xfc::CompiledModel::load(std::string(library), options.seed);
    if (loaded)
      model = std::move(*loaded);
    else
      err = loaded.takeError();
  }
  llvm::sys::fs::remove_directories(dir);
  if (err)
    return fail(llvm::toString(std::move(err)));
  return success();
}

void Checker::describeSite(int32_t site, llvm::raw_ostream &os, std::string &schedule) {
  const xfrt::KernelSpec &k = model->manifest().kernels[site];
  Operation *op = program.siteOps[site];
  os << k.name << " (" << xfc::sourceLine(op->getLoc()) << ", ";
  MLIRContext *ctx = op->getContext();
  llvm::raw_string_ostream s(schedule);
  for (const GemmKernelSpec &spec : program.gemms)
    if (spec.name == k.name)
      os << kernelSignature(spec), s << Attribute(gemmScheduleAttr(ctx, spec.schedule));
  for (const AttentionKernelSpec &spec : program.attentions)
    if (spec.name == k.name)
      os << kernelSignature(spec), s << Attribute(attentionScheduleAttr(ctx, spec.schedule));
  if (k.kind == "loop")
    os << k.op << " loop kernel", s << "none (an scf loop nest in the host code)";
  os << ")";
}

LogicalResult Checker::reportThenBisect(Runs runs, const std::string &what,
                                        const std::string &measured, const char *rowsOf,
                                        Comparison worst,
                                        llvm::function_ref<llvm::Error(Bisector &)> rerun) {
  out << llvm::formatv("xfc: check {0}: {1}: max rel err {2:e1} at row {3}{4} (tolerance {5:e0})\n",
                       what, measured, worst.err, worst.row, rowsOf, kModelTolerance);
  bool mismatch = !(worst.err <= kModelTolerance);
  if (!mismatch && !options.verbose)
    return success();
  return bisect(runs, rerun, what.c_str(), mismatch ? std::optional(worst) : std::nullopt);
}

LogicalResult Checker::bisect(Runs runs, llvm::function_ref<llvm::Error(Bisector &)> calls,
                              const char *what, std::optional<Comparison> modelErr) {
  llvm::DenseSet<Operation *> wanted(siteReference.begin(), siteReference.end());
  llvm::DenseMap<Operation *, Tensor> kept;
  for (auto [inputs, xfResult] : runs) {
    auto evaluation = interp::evaluate(kernels.lookupSymbol<func::FuncOp>("forward"), *inputs,
                                       [&](Operation *op) { return wanted.contains(op); });
    if (!evaluation)
      return fail("interpreting the kernel-level module: " +
                  llvm::toString(evaluation.takeError()));
    Comparison fusion = compare(evaluation->result, *xfResult);
    if (fusion.err > kFusionTolerance)
      return fail(llvm::formatv("the fused kernel-level module differs from the xf module (a "
                                "fusion pass changed the semantics): max rel err {0:e1} at row "
                                "{1}",
                                fusion.err, fusion.row));
    for (auto &[op, value] : evaluation->kept) {
      auto [it, inserted] = kept.try_emplace(op, std::move(value));
      if (!inserted && it->second.shape.size() == 2 && value.shape.size() == 2) {
        it->second.data.insert(it->second.data.end(), value.data.begin(), value.data.end());
        it->second.shape[0] += value.shape[0];
      }
    }
  }
  Bisector bisector;
  for (Operation *op : siteReference) {
    auto it = op ? kept.find(op) : kept.end();
    bisector.reference.push_back(it == kept.end() ? nullptr : &it->second);
  }
  xfc::CompiledModel::setSink(&bisector);
  llvm::Error e = calls(bisector);
  xfc::CompiledModel::setSink(nullptr);
  if (e)
    return fail(llvm::toString(std::move(e)));
  const Bisector::Call *bad = nullptr;
  llvm::StringMap<double> worst;
  for (const Bisector::Call &call : bisector.calls) {
    const std::string &name = model->manifest().kernels[call.site].name;
    worst[name] = std::max(worst.lookup(name), call.c.err);
    if (!bad && call.c.err > kKernelTolerance)
      bad = &call;
  }
  if (options.verbose) {
    std::vector<std::pair<std::string, double>> rows;
    for (auto &entry : worst)
      rows.push_back({entry.getKey().str(), entry.getValue()});
    llvm::sort(rows);
    for (auto &[name, err] : rows)
      out << llvm::formatv("xfc: check {0}: kernel {1}: max rel err {2:e1}\n", what, name, err);
  }
  if (!modelErr) // -v on an agreeing build: the errors above are for information
    return success();
  if (!bad) {
    return fail(llvm::formatv("{0}: the build differs from the xf semantics (max rel err {1:e1} "
                              "at row {2}) but no kernel does on exact inputs (each within "
                              "{3:e0}): the error builds up across kernels",
                              what, modelErr->err, modelErr->row, kKernelTolerance));
  }
  out.flush();
  std::string description, schedule;
  llvm::raw_string_ostream os(description);
  describeSite(bad->site, os, schedule);
  size_t others = llvm::count_if(
      bisector.calls, [](const Bisector::Call &c) { return c.c.err > kKernelTolerance; });
  llvm::errs() << llvm::formatv("xfc: error: kernel {0} differs from the xf semantics: max rel "
                                "err {1:e1} at row {2} ({3})\n",
                                description, bad->c.err, bad->c.row, what);
  llvm::errs() << "xfc: note: schedule " << schedule << "\n";
  llvm::errs() << llvm::formatv("xfc: note: the first of {0} kernel call(s) above {1:e0} on the "
                                "interpreter's inputs; the {2} before it agree\n",
                                others, kKernelTolerance, bad - bisector.calls.data());
  return failure();
}

LogicalResult Checker::checkLength(int64_t l) {
  const xfrt::Manifest &m = model->manifest();
  std::vector<int32_t> x = randomTokens(options.seed, uint64_t(l), l, m.vocab), z;
  if (m.encoderDecoder) // another length, so ℓ and ℓ_z cannot be mixed up unseen
    z = randomTokens(options.seed, uint64_t(l) + (1u << 20), l / 2 + 3, m.vocab);
  std::vector<std::vector<int32_t>> sequences;
  if (m.encoderDecoder)
    sequences.push_back(z);
  sequences.push_back(x);
  interp::Inputs inputs = inputsFor(sequences);
  auto compiled = model->forward(x, z);
  if (!compiled)
    return fail(llvm::toString(compiled.takeError()));
  auto reference = interpret(xf, inputs);
  if (!reference)
    return fail("the interpreter: " + llvm::toString(reference.takeError()));
  Comparison c = compare(compiled->data(), l, m.dOut, *reference, 0);
  auto rerun = [&](Bisector &) -> llvm::Error { return model->forward(x, z).takeError(); };
  return reportThenBisect({{&inputs, &*reference}}, llvm::formatv("l={0}", l),
                          llvm::formatv("{0} [{1}, {2}]", m.outputName(), l, m.dOut), "", c, rerun);
}

/// A prefill of ℓ tokens then two one-token steps on one KV cache, each
/// returned row against the interpreter on the whole sequence.
LogicalResult Checker::checkCached(int64_t l) {
  const xfrt::Manifest &m = model->manifest();
  int64_t prompt = std::min(l, m.cachePositions - 2);
  if (prompt < 1)
    return success();
  std::vector<int32_t> all =
      randomTokens(options.seed, uint64_t(l) + (2u << 20), prompt + 2, m.vocab);
  interp::Inputs inputs = inputsFor({all});
  auto reference = interpret(xf, inputs);
  if (!reference)
    return fail("the interpreter: " + llvm::toString(reference.takeError()));
  auto steps = [&](Bisector *bisector, Comparison &worst) -> llvm::Error {
    if (llvm::Error e = model->startCache())
      return e;
    int64_t start = 0;
    for (int64_t n : {prompt, int64_t(1), int64_t(1)}) {
      std::vector<int32_t> tokens(all.begin() + start, all.begin() + start + n);
      if (bisector)
        bisector->endPosition = start + n;
      auto row = model->forwardCached(tokens, start);
      if (!row)
        return row.takeError();
      keepWorst(worst, compare(row->data(), 1, m.dOut, *reference, start + n - 1));
      start += n;
    }
    return llvm::Error::success();
  };
  Comparison worst;
  if (llvm::Error e = steps(nullptr, worst))
    return fail(llvm::toString(std::move(e)));
  auto rerun = [&](Bisector &b) -> llvm::Error {
    Comparison unused;
    return steps(&b, unused);
  };
  return reportThenBisect({{&inputs, &*reference}}, llvm::formatv("l={0} cached", prompt),
                          llvm::formatv("prefill of {0} and 2 steps, last rows", prompt), "", worst,
                          rerun);
}

FailureOr<Checker::Interpreted>
Checker::interpretEach(const std::vector<std::vector<std::vector<int32_t>>> &items) {
  Interpreted each;
  for (const std::vector<std::vector<int32_t>> &item : items) {
    each.inputs.push_back(inputsFor(item));
    auto reference = interpret(xf, each.inputs.back());
    if (!reference) {
      (void)fail("the interpreter: " + llvm::toString(reference.takeError()));
      return failure();
    }
    each.references.push_back(std::move(*reference));
  }
  return each;
}

/// Three sequences of different lengths in one xf_forward_packed call, each
/// sequence's rows against the interpreter on that sequence alone (an
/// encoder-decoder's with sources of other lengths, so pairs cannot be mixed
/// up unseen).
LogicalResult Checker::checkPacked(int64_t l) {
  const xfrt::Manifest &m = model->manifest();
  std::vector<int64_t> lengths = {l, std::max<int64_t>(1, l / 2), l / 3 + 1};
  std::vector<int64_t> sourceLengths = {l / 2 + 3, 1, l};
  std::vector<std::vector<int32_t>> sequences, sources;
  std::vector<std::vector<std::vector<int32_t>>> items;
  for (size_t i = 0; i < lengths.size(); ++i) {
    sequences.push_back(randomTokens(options.seed, uint64_t(l) + (3u << 20) + (uint64_t(i) << 16),
                                     lengths[i], m.vocab));
    if (m.encoderDecoder)
      sources.push_back(randomTokens(options.seed,
                                     uint64_t(l) + (5u << 20) + (uint64_t(i) << 16),
                                     sourceLengths[i], m.vocab));
    using Item = std::vector<std::vector<int32_t>>;
    items.push_back(m.encoderDecoder ? Item{sources.back(), sequences.back()}
                                     : Item{sequences.back()});
  }
  FailureOr<Interpreted> each = interpretEach(items);
  if (failed(each))
    return failure();
  const std::vector<Tensor> &references = each->references;
  auto compiled = model->forwardPacked(sequences, sources);
  if (!compiled)
    return fail(llvm::toString(compiled.takeError()));
  Comparison worst;
  int64_t offset = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    Comparison c =
        compare(compiled->data() + offset * m.dOut, lengths[i], m.dOut, references[i], 0);
    c.row += offset; // a row of the batch
    keepWorst(worst, c);
    offset += lengths[i];
  }
  std::string withSources =
      m.encoderDecoder ? llvm::formatv(" (sources of {0:$[, ]})",
                                       llvm::make_range(sourceLengths.begin(), sourceLengths.end()))
                             .str()
                       : "";
  auto rerun = [&](Bisector &) -> llvm::Error {
    return model->forwardPacked(sequences, sources).takeError();
  };
  return reportThenBisect(each->runs(), llvm::formatv("l={0} packed", l),
                          llvm::formatv("{0} sequences of {1:$[, ]} rows{2}", lengths.size(),
                                        llvm::make_range(lengths.begin(), lengths.end()),
                                        withSources),
                          " of the batch", worst, rerun);
}

/// Three sequences decoding together through xf_forward_cached_packed, each on
/// its own KV cache: call 1 prefills sequences 0 and 1, call 2 steps them and
/// prefills sequence 2 (a prefill and steps in one call), call 3 steps all
/// three. Each returned row against the interpreter on that sequence alone.
LogicalResult Checker::checkCachedPacked(int64_t l) {
  const xfrt::Manifest &m = model->manifest();
  const int64_t cap = m.cachePositions - 2;
  if (cap < 1)
    return success();
  std::vector<int64_t> prompts = {std::min(l, cap), std::min(std::max<int64_t>(1, l / 2), cap),
                                  std::min(l / 3 + 1, cap)};
  std::vector<std::vector<int32_t>> sequences;
  std::vector<std::vector<std::vector<int32_t>>> items;
  std::vector<int64_t> offsets; // each sequence's first row in the stacked references
  int64_t stacked = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    sequences.push_back(randomTokens(options.seed, uint64_t(l) + (4u << 20) + (uint64_t(i) << 16),
                                     prompts[i] + 2, m.vocab));
    items.push_back({sequences.back()});
    offsets.push_back(stacked);
    stacked += prompts[i] + 2;
  }
  FailureOr<Interpreted> each = interpretEach(items);
  if (failed(each))
    return failure();
  const std::vector<Tensor> &references = each->references;
  // Per call, per sequence in it: {sequence, start, tokens}.
  using Item = std::array<int64_t, 3>;
  std::vector<std::vector<Item>> calls = {
      {{0, 0, prompts[0]}, {1, 0, prompts[1]}},
      {{0, prompts[0], 1}, {1, prompts[1], 1}, {2, 0, prompts[2]}},
      {{0, prompts[0] + 1, 1}, {1, prompts[1] + 1, 1}, {2, prompts[2], 1}}};
  auto run = [&](Bisector *bisector, Comparison &worst) -> llvm::Error {
    if (llvm::Error e = model->startCaches(int64_t(sequences.size())))
      return e;
    for (const std::vector<Item> &call : calls) {
      std::vector<xfc::CompiledModel::CachedSequence> batch;
      if (bisector)
        bisector->batchRows.clear(), bisector->newestRows.clear();
      for (auto [seq, start, n] : call) {
        const std::vector<int32_t> &all = sequences[size_t(seq)];
        batch.push_back({seq, start, {all.begin() + start, all.begin() + start + n}});
        if (bisector) {
          for (int64_t p = start; p < start + n; ++p)
            bisector->batchRows.push_back(offsets[size_t(seq)] + p);
          bisector->newestRows.push_back(offsets[size_t(seq)] + start + n - 1);
        }
      }
      auto rows = model->forwardCachedPacked(batch);
      if (!rows)
        return rows.takeError();
      for (size_t k = 0; k < call.size(); ++k) {
        auto [seq, start, n] = call[k];
        Comparison c = compare(rows->data() + k * size_t(m.dOut), 1, m.dOut,
                               references[size_t(seq)], start + n - 1);
        c.row += offsets[size_t(seq)]; // a row of the stacked sequences
        keepWorst(worst, c);
      }
    }
    return llvm::Error::success();
  };
  Comparison worst;
  if (llvm::Error e = run(nullptr, worst))
    return fail(llvm::toString(std::move(e)));
  auto rerun = [&](Bisector &b) -> llvm::Error {
    Comparison unused;
    return run(&b, unused);
  };
  return reportThenBisect(
      each->runs(), llvm::formatv("l={0} cached packed", l),
      llvm::formatv("3 sequences (prompts of {0:$[, ]}) in 3 calls, newest rows",
                    llvm::make_range(prompts.begin(), prompts.end())),
      " of the sequences stacked", worst, rerun);
}

LogicalResult Checker::run() {
  if (failed(build()))
    return failure();
  const xfrt::Manifest &m = model->manifest();
  std::vector<int64_t> lengths = options.lengths;
  int64_t limit = m.maxPositions ? m.maxPositions : INT64_MAX;
  if (lengths.empty()) {
    for (int64_t l : {1, 37, 128})
      if (l <= limit)
        lengths.push_back(l);
    if (lengths.back() != std::min<int64_t>(limit, 128))
      lengths.push_back(std::min<int64_t>(limit, 128));
  }
  for (int64_t l : lengths)
    if (l > limit)
      return fail(llvm::formatv("--lengths: {0} is past the model's {1} positions", l, limit));
  out << llvm::formatv(
      "xfc: check: {0} ({1}), seed {2}, {3} kernel call sites in its entry points\n", m.model,
      m.kindName(), options.seed, program.siteOps.size());
  bool ok = true;
  for (int64_t l : lengths) {
    ok = succeeded(checkLength(l)) && (!m.cached || succeeded(checkCached(l))) &&
         (!m.packed || succeeded(checkPacked(l))) &&
         (!m.packed || !m.cached || succeeded(checkCachedPacked(l)));
    if (!ok)
      break;
  }
  if (ok)
    out << "xfc: check: the build agrees with the xf semantics\n";
  return success(ok);
}

} // namespace

mlir::LogicalResult xfc::checkModel(ModuleOp xf, ModuleOp kernels, const CheckOptions &options,
                                    llvm::raw_ostream &out) {
  Checker checker(xf, kernels, options, out);
  return checker.run();
}
