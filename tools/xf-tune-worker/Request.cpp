//===- Request.cpp - Parse and bound-check a measurement request ----------===//
//
// Every field is type-checked and bounded before anything is allocated or
// compiled: the sizes bound the memory of the inputs and the cost of the
// float64 reference, the schedule fields bound what Halide is asked to unroll.
//
//===----------------------------------------------------------------------===//

#include "Request.h"
#include "xf/Codegen/KernelSpecs.h"
#include "xf/IR/XfDialect.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <thread>

using namespace mlir::xf;
using llvm::json::Object;
using llvm::json::Value;
using mlir::Attribute;

namespace xftune {
namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Reads the fields of one JSON object, remembering which were read so that
/// unknown (misspelt) fields are reported instead of silently ignored.
class Fields {
public:
  Fields(const Object &object, std::string where) : object(object), where(std::move(where)) {}

  /// An integer in [lo, hi]; `value` is left alone when the field is absent
  /// and not required.
  llvm::Error integer(llvm::StringRef key, int64_t &value, int64_t lo, int64_t hi,
                      bool required = false) {
    const Value *v = find(key);
    if (!v)
      return required ? fail(where + ": missing \"" + key + "\"") : llvm::Error::success();
    std::optional<int64_t> i = v->getAsInteger();
    if (!i)
      return fail(where + ": \"" + key + "\" must be an integer");
    if (*i < lo || *i > hi)
      return fail(
          llvm::formatv("{0}: \"{1}\"={2} out of range [{3}, {4}]", where, key, *i, lo, hi).str());
    value = *i;
    return llvm::Error::success();
  }

  llvm::Error number(llvm::StringRef key, double &value, bool required = false) {
    const Value *v = find(key);
    if (!v)
      return required ? fail(where + ": missing \"" + key + "\"") : llvm::Error::success();
    std::optional<double> d = v->getAsNumber();
    if (!d || !std::isfinite(*d))
      return fail(where + ": \"" + key + "\" must be a finite number");
    value = *d;
    return llvm::Error::success();
  }

  llvm::Error boolean(llvm::StringRef key, bool &value) {
    const Value *v = find(key);
    if (!v)
      return llvm::Error::success();
    std::optional<bool> b = v->getAsBoolean();
    if (!b)
      return fail(where + ": \"" + key + "\" must be true or false");
    value = *b;
    return llvm::Error::success();
  }

  llvm::Error string(llvm::StringRef key, std::string &value, bool required = false) {
    const Value *v = find(key);
    if (!v)
      return required ? fail(where + ": missing \"" + key + "\"") : llvm::Error::success();
    std::optional<llvm::StringRef> s = v->getAsString();
    if (!s)
      return fail(where + ": \"" + key + "\" must be a string");
    value = s->str();
    return llvm::Error::success();
  }

  const Value *find(llvm::StringRef key) {
    read.insert(key);
    return object.get(key);
  }

  /// An error naming the first field that no reader asked for.
  llvm::Error noOthers() const {
    for (const auto &entry : object)
      if (!read.contains(entry.first.str()))
        return fail(where + ": unknown field \"" + entry.first.str() + "\"");
    return llvm::Error::success();
  }

private:
  const Object &object;
  std::string where;
  llvm::StringSet<> read;
};

/// Runs `steps` in order, stopping at the first error.
llvm::Error all(std::initializer_list<std::function<llvm::Error()>> steps) {
  for (const auto &step : steps)
    if (llvm::Error err = step())
      return err;
  return llvm::Error::success();
}

// Features a target may only ask for when this CPU has them.
bool isCpuFeature(Halide::Target::Feature f) {
  using T = Halide::Target;
  // clang-format off
  static const T::Feature isa[] = {
      T::SSE41, T::AVX, T::AVX2, T::AVXVNNI, T::FMA, T::FMA4, T::F16C, T::AVX512,
      T::AVX512_KNL, T::AVX512_Skylake, T::AVX512_Cannonlake, T::AVX512_SapphireRapids,
      T::AVX512_Zen4, T::AVX512_Zen5, T::AVX10_1, T::X86APX, T::ARMv7s, T::VSX,
      T::POWER_ARCH_2_07, T::SVE, T::SVE2, T::ARMDotProd, T::ARMFp16, T::ARMv8a, T::ARMv81a,
      T::ARMv82a, T::ARMv83a, T::ARMv84a, T::ARMv85a, T::ARMv86a, T::ARMv87a, T::ARMv88a,
      T::ARMv89a, T::RVV};
  // clang-format on
  return std::find(std::begin(isa), std::end(isa), f) != std::end(isa);
}

/// `name` as a JIT target: "host", or a target string this CPU can run
/// (same arch, bits and OS, no ISA feature the host lacks, no GPU).
llvm::Expected<Halide::Target> runnableTarget(const std::string &name) {
  llvm::Expected<Halide::Target> parsed = parseHalideTarget(name);
  if (!parsed)
    return parsed.takeError();
  const Halide::Target host = hostHalideTarget();
  if (parsed->arch != host.arch || parsed->bits != host.bits || parsed->os != host.os)
    return fail("target '" + name + "' cannot run on this machine (" + host.to_string() + ")");
  if (parsed->has_gpu_feature())
    return fail("target '" + name + "': GPU targets are not measured by this worker");
  if (parsed->has_feature(Halide::Target::NoRuntime))
    return fail("target '" + name + "': no_runtime cannot be JIT-compiled");
  for (int f = 0; f < Halide::Target::FeatureEnd; ++f) {
    auto feature = Halide::Target::Feature(f);
    if (parsed->has_feature(feature) && isCpuFeature(feature) && !host.has_feature(feature))
      return fail("target '" + name + "' needs " + Halide::Target::feature_to_name(feature) +
                  ", which this CPU lacks (" + host.to_string() + ")");
  }
  return *parsed;
}

/// The kernel's description (#xf.gemm_kernel<...> / #xf.attention_kernel<...>), parsed and
/// verified by the dialect; its schedule is what a candidate's missing fields take.
llvm::Expected<Attribute> parseDescription(mlir::MLIRContext &ctx, const Value &json) {
  std::optional<llvm::StringRef> text = json.getAsString();
  if (!text)
    return fail("\"kernel\" must be a kernel description, #xf.gemm_kernel<...> or "
                "#xf.attention_kernel<...>");
  std::string diagnostic;
  mlir::ScopedDiagnosticHandler capture(&ctx, [&](mlir::Diagnostic &d) {
    if (diagnostic.empty())
      diagnostic = d.str();
    return mlir::success();
  });
  size_t read = 0;
  Attribute kernel = mlir::parseAttribute(*text, &ctx, mlir::Type(), &read);
  if (!kernel)
    return fail("kernel: " + (diagnostic.empty() ? std::string("not an attribute") : diagnostic));
  if (read != text->size())
    return fail("kernel: unexpected text after the description: '" + text->substr(read) + "'");
  return kernel;
}

llvm::Error checkGemm(const GemmKernelSpec &g) {
  if (g.K > (1 << 20) || g.N > (1 << 20) || g.K * g.N > (int64_t(1) << 28))
    return fail(llvm::formatv("kernel: K = {0}, N = {1} exceed 2^20 or K·N 2^28", g.K, g.N).str());
  if (g.packedWeight)
    return fail("kernel: packed = true: the worker packs the weight per candidate");
  return llvm::Error::success();
}

llvm::Error checkAttention(const AttentionKernelSpec &a) {
  if (a.heads > 4096 || a.dK > 65536 || a.dV > 65536 || a.heads * a.dK > 65536 ||
      a.heads * a.dV > 65536)
    return fail("kernel: heads must be at most 4096, dk, dv, heads·dk and heads·dv 65536");
  if (a.batchedDecode || a.halfKeyValues || a.segmented)
    return fail("kernel: batched_decode, half_key_values and segmented kernels are not timed");
  return llvm::Error::success();
}

llvm::Error parseKernel(const Value &json, KernelDesc &kernel) {
  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  ctx.loadDialect<XfDialect>();
  llvm::Expected<Attribute> description = parseDescription(ctx, json);
  if (!description)
    return description.takeError();
  if (auto gemm = llvm::dyn_cast<GemmKernelAttr>(*description)) {
    kernel.kind = KernelKind::Gemm;
    kernel.gemm = gemmKernelSpecOf(gemm, "xf_tune_gemm");
    return checkGemm(kernel.gemm);
  }
  if (auto attention = llvm::dyn_cast<AttentionKernelAttr>(*description)) {
    kernel.kind = KernelKind::Attention;
    kernel.attention = attentionKernelSpecOf(attention, "xf_tune_attention");
    return checkAttention(kernel.attention);
  }
  return fail("kernel: not a kernel description (#xf.gemm_kernel<...> or "
              "#xf.attention_kernel<...>)");
}

llvm::Error parseCase(const Value &json, size_t index, const KernelDesc &kernel, Case &c) {
  const Object *object = json.getAsObject();
  std::string where = "cases[" + std::to_string(index) + "]";
  if (!object)
    return fail(where + " must be an object");
  Fields f(*object, where);
  if (llvm::Error err = f.integer("rows", c.rows, 1, 8192, true))
    return err;
  if (kernel.kind == KernelKind::Gemm) {
    if (llvm::Error err = f.noOthers())
      return err;
    const GemmKernelSpec &g = kernel.gemm;
    if (c.rows * std::max(g.K, g.N) > (int64_t(1) << 27))
      return fail(where + ": rows·max(K, N) exceeds 2^27");
    return llvm::Error::success();
  }
  c.keys = c.rows;
  if (llvm::Error err =
          all({[&] { return f.integer("keys", c.keys, 1, 8192); }, [&] { return f.noOthers(); }}))
    return err;
  const AttentionKernelSpec &a = kernel.attention;
  if (c.rows * a.heads * std::max(a.dK, a.dV) > (int64_t(1) << 26) ||
      c.keys * a.heads * (a.dK + a.dV) > (int64_t(1) << 27))
    return fail(where + ": rows·heads·max(dk, dv) exceeds 2^26 or keys·heads·(dk+dv) 2^27");
  return llvm::Error::success();
}

/// Fills `c` from one candidate; the error is the reason it is invalid.
llvm::Error parseCandidate(const Value &json, size_t index, const KernelDesc &kernel,
                           Candidate &c) {
  const Object *object = json.getAsObject();
  std::string where = "candidates[" + std::to_string(index) + "]";
  if (!object)
    return fail(where + " must be an object");
  Fields f(*object, where);
  if (object->get("autoscheduler")) {
    if (llvm::Error err = all({[&] { return f.string("autoscheduler", c.autoscheduler); },
                               [&] { return f.noOthers(); }}))
      return err;
    if (!autoschedulerLibrary(c.autoscheduler))
      return fail(where + ": unknown autoscheduler '" + c.autoscheduler +
                  "' (Adams2019, Li2018 or Mullapudi2016)");
    return llvm::Error::success();
  }
  // Bounds well beyond any useful schedule; they keep Halide from being asked
  // to unroll thousands of registers. Signs are left to the kernel's own check.
  constexpr int64_t big = 1 << 20;
  if (kernel.kind == KernelKind::Gemm) {
    GemmSchedule &s = c.gemm = kernel.gemm.schedule;
    if (llvm::Error err =
            all({[&] { return f.integer("tile_cols", s.tileCols, -big, 1024); },
                 [&] { return f.integer("tile_rows", s.tileRows, -big, 64); },
                 [&] { return f.integer("k_block", s.kBlock, -big, big); },
                 [&] { return f.boolean("pack_weights", s.packWeights); },
                 [&] { return f.integer("rows_per_task", s.rowsPerTask, -big, big); },
                 [&] { return f.integer("panel_cols", s.panelCols, -big, big); },
                 [&] { return f.integer("gemv_rows_below", s.gemvRowsBelow, -big, big); },
                 [&] { return f.integer("gemv_rows_per_pass", s.gemvRowsPerPass, -big, 256); },
                 [&] { return f.integer("gemv_tasks", s.gemvTasks, -big, 65536); },
                 [&] { return f.noOthers(); }}))
      return err;
    return llvm::Error::success();
  }
  AttentionSchedule &s = c.attention = kernel.attention.schedule;
  return all({[&] { return f.integer("query_block", s.queryBlock, -big, 8192); },
              [&] { return f.integer("key_block", s.keyBlock, -big, 1024); },
              [&] { return f.integer("row_tile", s.rowTile, -big, 64); },
              [&] { return f.integer("decode_key_tile", s.decodeKeyTile, -big, 64); },
              [&] { return f.noOthers(); }});
}

} // namespace

const char *autoschedulerLibrary(llvm::StringRef name) {
  if (name == "Adams2019")
    return "libautoschedule_adams2019.so";
  if (name == "Li2018")
    return "libautoschedule_li2018.so";
  if (name == "Mullapudi2016")
    return "libautoschedule_mullapudi2016.so";
  return nullptr;
}

llvm::Expected<Request> parseRequest(const Value &json) {
  const Object *object = json.getAsObject();
  if (!object)
    return fail("the request must be a JSON object");
  Request request;
  Fields f(*object, "request");
  request.targetName = "host";
  int64_t threads = std::max(1u, std::thread::hardware_concurrency());
  int64_t repeats = 7;
  if (llvm::Error err = all({[&] { return f.string("target", request.targetName); },
                             [&] { return f.integer("threads", threads, 1, 256); },
                             [&] { return f.integer("repeats", repeats, 1, 1000); },
                             [&] { return f.number("max_seconds", request.maxSeconds); }}))
    return std::move(err);
  request.threads = int(threads), request.repeats = int(repeats);
  if (!(request.maxSeconds > 0 && request.maxSeconds <= 86400))
    return fail("request: \"max_seconds\" must be in (0, 86400]");

  llvm::Expected<Halide::Target> target = runnableTarget(request.targetName);
  if (!target)
    return target.takeError();
  request.target = *target;
  const Value *kernel = f.find("kernel");
  if (!kernel)
    return fail("request: missing \"kernel\"");
  if (llvm::Error err = parseKernel(*kernel, request.kernel))
    return std::move(err);

  const Value *cases = f.find("cases");
  const llvm::json::Array *caseList = cases ? cases->getAsArray() : nullptr;
  if (!caseList || caseList->empty() || caseList->size() > 64)
    return fail("request: \"cases\" must be an array of 1 to 64 cases");
  for (size_t i = 0; i < caseList->size(); ++i) {
    Case c;
    if (llvm::Error err = parseCase((*caseList)[i], i, request.kernel, c))
      return std::move(err);
    request.cases.push_back(c);
  }

  const Value *candidates = f.find("candidates");
  const llvm::json::Array *candidateList = candidates ? candidates->getAsArray() : nullptr;
  if (!candidateList || candidateList->empty() || candidateList->size() > 1024)
    return fail("request: \"candidates\" must be an array of 1 to 1024 candidates");
  for (size_t i = 0; i < candidateList->size(); ++i) {
    Candidate c;
    if (llvm::Error err = parseCandidate((*candidateList)[i], i, request.kernel, c))
      c.invalid = llvm::toString(std::move(err));
    request.candidates.push_back(c);
  }
  if (llvm::Error err = f.noOthers())
    return std::move(err);
  return request;
}

} // namespace xftune
