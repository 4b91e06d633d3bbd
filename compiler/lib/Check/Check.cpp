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

#include "xf/Check/CheckFaults.h"
#include "Checker.h"

#include "xf/Codegen/KernelSchedules.h"
#include "xf/Codegen/KernelSpecs.h"
#include "xf/IR/XfOps.h"
#include "xf/Interpreter/Interpreter.h"
#include "xfrt/GgmlType.h"

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
using namespace mlir::xf::check;

/// Rows [0, rows) of `out` against rows first.. of `ref`.
Comparison mlir::xf::check::compare(const float *out, int64_t rows, int64_t stride,
                                    const Tensor &ref, int64_t first) {
  return compareRows(out, rows, stride, ref, [first](int64_t r) { return first + r; });
}

/// The larger of two errors; a NaN counts as larger.
void mlir::xf::check::keepWorst(Comparison &worst, const Comparison &c) {
  if (!(c.err <= worst.err))
    worst = c;
}

Comparison mlir::xf::check::compare(const Tensor &a, const Tensor &b) {
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

std::string mlir::xf::check::sourceLine(Location loc) {
  std::string text;
  loc->walk([&](Location l) {
    if (auto file = dyn_cast<FileLineColLoc>(l); file && text.empty())
      text = llvm::formatv("{0}:{1}:{2}", file.getFilename().getValue(), file.getLine(),
                           file.getColumn());
    return WalkResult::advance();
  });
  return text.empty() ? "unknown location" : text;
}

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
    if (llvm::Error e = injectFault("epilogue", kernels, what))
      return fail(llvm::toString(std::move(e)));
    out << "xfc: check: injected fault: the fused module: " << what << "\n";
  }
  built = OwningOpRef<ModuleOp>(cast<ModuleOp>(kernels->clone()));
  if (!options.fault.empty() && options.fault != "fusion" && !isHostFault(options.fault)) {
    std::string what;
    if (llvm::Error e = injectFault(options.fault, *built, what))
      return fail(llvm::toString(std::move(e)));
    out << "xfc: check: injected fault: " << what << "\n";
  }
  HostOptions hostOptions;
  hostOptions.kernelOutputHook = true;
  FailureOr<OwningOpRef<ModuleOp>> lowered = lowerToHost(*built, hostOptions);
  if (failed(lowered))
    return failure();
  host = std::move(*lowered);
  if (isHostFault(options.fault)) {
    std::string what;
    if (llvm::Error e = injectHostFault(options.fault, *host, what))
      return fail(llvm::toString(std::move(e)));
    out << "xfc: check: injected fault: " << what << "\n";
  }
  hostKernels = hostKernelsOf(*host);
  FailureOr<std::vector<Operation *>> sites =
      siteOpsOf(*host, built->lookupSymbol<func::FuncOp>("forward"));
  if (failed(sites))
    return failure();
  siteOps = std::move(*sites);
  std::vector<Operation *> byIndex(index);
  for (Operation &op : forward.getBody().front())
    byIndex[op.getAttrOfType<IntegerAttr>(kSiteAttr).getInt()] = &op;
  for (Operation *op : siteOps) {
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
  llvm::Error err = buildExecutable(*host, codegen, library);
  if (!err) {
    auto loaded = CompiledModel::load(std::string(library), options.seed);
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
  Operation *op = siteOps[site];
  os << k.name << " (" << sourceLine(op->getLoc()) << ", ";
  MLIRContext *ctx = op->getContext();
  llvm::raw_string_ostream s(schedule);
  for (const GemmKernelSpec &spec : hostKernels.gemms)
    if (spec.name == k.name)
      os << kernelSignature(gemmKernelAttr(ctx, spec)),
          s << Attribute(gemmScheduleAttr(ctx, spec.schedule));
  for (const AttentionKernelSpec &spec : hostKernels.attentions)
    if (spec.name == k.name)
      os << kernelSignature(attentionKernelAttr(ctx, spec)),
          s << Attribute(attentionScheduleAttr(ctx, spec.schedule));
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
  CompiledModel::setSink(&bisector);
  llvm::Error e = calls(bisector);
  CompiledModel::setSink(nullptr);
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
      m.kindName(), options.seed, siteOps.size());
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

mlir::LogicalResult mlir::xf::check::checkModel(ModuleOp xf, ModuleOp kernels,
                                                const CheckOptions &options,
                                                llvm::raw_ostream &out) {
  Checker checker(xf, kernels, options, out);
  return checker.run();
}
