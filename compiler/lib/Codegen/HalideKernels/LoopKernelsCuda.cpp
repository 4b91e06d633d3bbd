//===- LoopKernelsCuda.cpp - the loop kernels as Halide CUDA pipelines ----===//
//
// Under a CUDA target the kernels LoopKernels.cpp writes as scf loops for
// the CPU (norms, softmax, embedding gathers, positions, elementwise ops,
// rotary embeddings, layout copies) are Halide pipelines on the device, so
// that activations never leave it. The arithmetic is the loop kernels'
// (the same formulas, f64 angles for sinusoids and rotary positions); only
// summation order differs.
//
// Schedules: row-wise maps are 2-D thread blocks of 256 threads, kMapCols ×
// kMapRows elements (narrower and taller when a row is shorter). Reductions over a row (LayerNorm,
// RMSNorm, softmax) take one block per row: kRowThreads threads each reduce a strided part of the
// row into shared memory, one thread adds those partials, then all threads write the row.
//
//===----------------------------------------------------------------------===//

#include "KernelPipelines.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>

using namespace Halide;

namespace mlir::xf {
namespace {

constexpr int kMapCols = 64, kMapRows = 4; // a thread block of a row-wise map
constexpr int kRowThreads = 128;           // threads reducing one row

llvm::Error invalid(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

Expr gelu(Expr x, DeviceMap map) {
  Expr half = 0.5f * x;
  if (map == DeviceMap::GeluTanh)
    return half * (1.f + tanh(float(std::sqrt(2.0 / M_PI)) * (x + 0.044715f * (x * x * x))));
  return half * (1.f + erf(x * float(M_SQRT1_2)));
}

struct Built {
  std::vector<Argument> arguments;
  Func out;
};

// One row-wise loop kernel's Halide definition and schedule: the kinds grouped by what they
// read (tables, elementwise operands, rotary pairs, whole rows, layouts), then the output's
// bounds and the GPU schedule they share.
class LoopBuilder {
public:
  explicit LoopBuilder(const DeviceLoopKernelSpec &spec)
      : spec(spec), width(int(spec.width)), out(kernelFunc("out")) {}

  llvm::Expected<Built> build(bool gpuSchedule) {
    if (spec.name.empty())
      return invalid("loop kernel: empty function name");
    if (fixedWidth() && spec.width <= 0)
      return invalid("loop kernel '" + spec.name + "': width must be positive");
    if (llvm::Error err = define())
      return std::move(err);
    boundOutput();
    if (gpuSchedule)
      schedule();
    return Built{args, out};
  }

private:
  const DeviceLoopKernelSpec &spec;
  const int width;
  Var c{"c"}, t{"t"}, u{"u"};
  Func out;
  std::vector<Argument> args;
  ImageParam in{Float(32), 2, "in"};
  Param<int32_t> offset{"offset"};
  ImageParam rowPositions{Int(64), 1, "row_positions"}; // spec.rowPositions
  Param<float> factor{"factor"}; // DeviceMap::ScaleBy
  bool rowReduction = false;
  // LayerNorm/RMSNorm/softmax: the row statistics, for the schedule.
  std::vector<std::pair<Func, Func>> rowStats; // (partials(u, t), total(t))

  bool fixedWidth() const {
    return spec.kind != DeviceLoopKind::Copy && spec.kind != DeviceLoopKind::Transpose;
  }

  llvm::Error define() {
    switch (spec.kind) {
    case DeviceLoopKind::Gather:
    case DeviceLoopKind::Position:
    case DeviceLoopKind::GatherPositions:
    case DeviceLoopKind::Sinusoid:
      defineTableRows();
      return llvm::Error::success();
    case DeviceLoopKind::Add:
    case DeviceLoopKind::Map:
    case DeviceLoopKind::Silu:
    case DeviceLoopKind::Multiply:
      defineElementwise();
      return llvm::Error::success();
    case DeviceLoopKind::Rotary:
      return defineRotary();
    case DeviceLoopKind::Normalize:
      defineNormalize();
      return llvm::Error::success();
    case DeviceLoopKind::Softmax:
      defineSoftmax();
      return llvm::Error::success();
    case DeviceLoopKind::Copy:
    case DeviceLoopKind::Transpose:
      defineLayout();
      return llvm::Error::success();
    case DeviceLoopKind::AppendKeyValues: // 3-D: buildAppendKeyValues
      break;
    }
    return invalid("loop kernel '" + spec.name + "': not a row-wise kernel");
  }

  // Σ or max of f(c) over the row, as kRowThreads strided partials, then their total.
  Func reduceRow(const std::string &name, const std::function<Expr(Expr)> &term, bool maximum) {
    const int perThread = (width + kRowThreads - 1) / kRowThreads;
    RDom j(0, perThread, name + "_j");
    Expr column = j * kRowThreads + u;
    Expr identity = maximum ? Expr(-INFINITY) : Expr(0.f);
    Expr value = select(column < width, term(min(column, width - 1)), identity);
    Func partial = kernelFunc(name + "_partial"), total = kernelFunc(name);
    partial(u, t) = identity;
    partial(u, t) = maximum ? max(partial(u, t), value) : partial(u, t) + value;
    RDom ru(0, kRowThreads, name + "_u");
    total(t) = identity;
    total(t) = maximum ? max(total(t), partial(ru, t)) : total(t) + partial(ru, t);
    rowStats.push_back({partial, total});
    return total;
  }

  // Row t's position: offset + t, or with rowPositions its entry of the int64 buffer (the
  // step table's positions, which the runtime wrote within the table; clamped for bounds).
  Expr positionOf(const ImageParam &table) {
    if (!spec.rowPositions)
      return offset + t;
    return clamp(cast<int>(rowPositions(t)), 0, table.dim(1).extent() - 1);
  }
  void pushPositionArg() {
    if (spec.rowPositions) {
      rowPositions.dim(0).set_stride(1);
      args.push_back(rowPositions);
    } else {
      args.push_back(offset);
    }
  }

  // Rows of a table: gathered by token id (and the learned positions added), at positions
  // offset + t (or each row's own), or sinusoids.
  void defineTableRows() {
    if (spec.kind == DeviceLoopKind::Gather || spec.kind == DeviceLoopKind::GatherPositions) {
      ImageParam table(spec.flag ? BFloat(16) : Float(32), 2, "table");
      ImageParam ids(Int(32), 1, "ids");
      // Ids were validated against the vocabulary; the clamp bounds the access.
      Expr stored = table(c, clamp(ids(t), 0, table.dim(1).extent() - 1));
      Expr row = spec.flag
                     ? reinterpret<float>(cast<uint32_t>(reinterpret<uint16_t>(stored)) << 16)
                     : stored;
      table.dim(0).set_bounds(0, width).set_stride(1);
      ids.dim(0).set_stride(1);
      args = {table, ids};
      if (spec.kind == DeviceLoopKind::GatherPositions) {
        ImageParam positions(Float(32), 2, "positions");
        row = row + positions(c, positionOf(positions));
        positions.dim(0).set_bounds(0, width).set_stride(1);
        args.push_back(positions);
        pushPositionArg();
      }
      out(c, t) = row;
    } else if (spec.kind == DeviceLoopKind::Position) {
      ImageParam table(Float(32), 2, "table");
      out(c, t) = table(c, positionOf(table));
      table.dim(0).set_bounds(0, width).set_stride(1);
      args = {table};
      pushPositionArg();
    } else {
      // Angles in f64, as the CPU kernel: positions reach thousands of radians.
      Expr pair = c / 2;
      Expr angle = cast<double>(t + offset) /
                   pow(Expr(spec.constant), cast<double>(2 * pair) / Expr(double(width)));
      Expr value = select(c % 2 == 0, sin(angle), cos(angle));
      // An odd width's last column is 0 (the CPU kernel writes pairs only).
      out(c, t) = select(c < 2 * (width / 2), cast<float>(value), 0.f);
      args = {offset};
    }
  }

  void defineElementwise() {
    switch (spec.kind) {
    case DeviceLoopKind::Add: {
      ImageParam a(Float(32), 2, "a");
      ImageParam b(Float(32), spec.flag ? 1 : 2, "b");
      out(c, t) = a(c, t) + (spec.flag ? b(c) : b(c, t));
      a.dim(0).set_bounds(0, width).set_stride(1);
      b.dim(0).set_bounds(0, width).set_stride(1);
      args = {a, b};
      return;
    }
    case DeviceLoopKind::Map:
      defineMap();
      return;
    case DeviceLoopKind::Silu: {
      Expr x = in(c, t);
      out(c, t) = x / (1.f + exp(-x)); // 0 when e^(−x) overflows, x when it underflows
      in.dim(0).set_min(0).set_stride(1);
      args = {in};
      return;
    }
    default: { // Multiply
      ImageParam a(Float(32), 2, "a"), b(Float(32), 2, "b");
      out(c, t) = a(c, t) * b(c, t);
      a.dim(0).set_min(0).set_stride(1);
      b.dim(0).set_min(0).set_stride(1);
      args = {a, b};
    }
    }
  }

  void defineMap() {
    Expr x = in(c, t);
    switch (spec.map) {
    case DeviceMap::Relu:
      out(c, t) = max(x, 0.f);
      break;
    case DeviceMap::Scale:
      out(c, t) = x * float(spec.constant);
      break;
    case DeviceMap::ScaleBy:
      out(c, t) = x * factor;
      break;
    default:
      out(c, t) = gelu(x, spec.map);
    }
    in.dim(0).set_bounds(0, width).set_stride(1);
    args = {in};
    if (spec.map == DeviceMap::ScaleBy)
      args.push_back(factor);
  }

  llvm::Error defineRotary() {
    const int headWidth = int(spec.headWidth), half = headWidth / 2;
    if (spec.heads <= 0 || headWidth <= 0 || spec.heads * headWidth != width)
      return invalid("loop kernel '" + spec.name + "': rotary heads × headWidth must be width");
    Expr head = c / headWidth, i = c % headWidth;
    Expr pair = spec.flag ? i % half : i / 2;
    Expr isFirst = spec.flag ? i < half : i % 2 == 0;
    Expr first = head * headWidth + (spec.flag ? pair : 2 * pair);
    Expr second = first + (spec.flag ? half : 1);
    // θ = p · base^(−2i/d) = p · exp(−(2i/d) ln base), in f64 as on the CPU.
    Expr angle = cast<double>(t + offset) *
                 exp(cast<double>(pair) * Expr(-2.0 * std::log(spec.constant) / double(headWidth)));
    Expr cosine = cast<float>(cos(angle)), sine = cast<float>(sin(angle));
    Expr a = in(clamp(first, 0, width - 1), t), b = in(clamp(second, 0, width - 1), t);
    Expr rotated = select(isFirst, a * cosine - b * sine, a * sine + b * cosine);
    // An odd head width leaves its last feature as it is (the CPU kernel does not write it).
    out(c, t) = select(i < 2 * half, rotated, in(c, t));
    in.dim(0).set_min(0).set_stride(1);
    args = {in, offset};
    return llvm::Error::success();
  }

  // LayerNorm (flag: centred) or RMSNorm, with 0, 1 (γ) or 2 (γ, β) affine parameters.
  void defineNormalize() {
    rowReduction = true;
    const bool center = spec.flag;
    Func mean = center ? reduceRow(
                             "row_sum", [&](Expr col) { return in(col, t); }, false)
                       : Func();
    auto meanOf = [&](Expr row) { return center ? mean(row) / float(width) : Expr(0.f); };
    Func squares = reduceRow(
        "row_squares",
        [&](Expr col) {
          Expr d = in(col, t) - meanOf(t);
          return d * d;
        },
        false);
    Expr rstd = 1.f / sqrt(squares(t) / float(width) + float(spec.constant));
    Expr y = (in(c, t) - meanOf(t)) * rstd;
    ImageParam gamma(Float(32), 1, "gamma"), beta(Float(32), 1, "beta");
    args = {in};
    if (spec.affineParams >= 1) {
      y = y * gamma(c);
      gamma.dim(0).set_bounds(0, width).set_stride(1);
      args.push_back(gamma);
    }
    if (spec.affineParams == 2) {
      y = y + beta(c);
      beta.dim(0).set_bounds(0, width).set_stride(1);
      args.push_back(beta);
    }
    out(c, t) = y;
    in.dim(0).set_bounds(0, width).set_stride(1);
  }

  void defineSoftmax() {
    rowReduction = true;
    Func top = reduceRow(
        "row_max", [&](Expr col) { return in(col, t); }, true);
    Func total = reduceRow(
        "row_exp_sum", [&](Expr col) { return exp(in(col, t) - top(t)); }, false);
    out(c, t) = exp(in(c, t) - top(t)) * (1.f / total(t));
    in.dim(0).set_bounds(0, width).set_stride(1);
    args = {in};
  }

  void defineLayout() {
    // Transpose: out [cols, rows]: (r, c) ← in (c, r).
    out(c, t) = spec.kind == DeviceLoopKind::Copy ? in(c, t) : in(t, c);
    in.dim(0).set_min(0).set_stride(1);
    args = {in};
  }

  void boundOutput() {
    if (fixedWidth())
      out.output_buffer().dim(0).set_bounds(0, width).set_stride(1);
    else
      out.output_buffer().dim(0).set_min(0).set_stride(1);
    out.output_buffer().dim(1).set_min(0);
  }

  void schedule() {
    Var co("co"), to("to"), ci("ci"), ti("ti");
    if (rowReduction) {
      // One block per row, kRowThreads threads along it.
      out.split(c, co, ci, kRowThreads, TailStrategy::GuardWithIf)
          .reorder(co, ci, t)
          .gpu_blocks(t)
          .gpu_threads(ci);
      for (auto &[partial, total] : rowStats) {
        partial.compute_at(out, t).store_in(MemoryType::GPUShared).gpu_threads(u);
        partial.update().gpu_threads(u);
        total.compute_at(out, t).store_in(MemoryType::GPUShared).gpu_threads(t);
        total.update().gpu_threads(t);
      }
      return;
    }
    // kMapCols × kMapRows threads, narrower and taller for rows of fewer columns.
    int cols = kMapCols;
    while (fixedWidth() && cols / 2 >= width && cols > 8)
      cols /= 2;
    out.gpu_tile(c, t, co, to, ci, ti, cols, kMapCols * kMapRows / cols, TailStrategy::GuardWithIf);
  }
};

llvm::Expected<Built> buildLoop(const DeviceLoopKernelSpec &spec, bool gpuSchedule) {
  return LoopBuilder(spec).build(gpuSchedule);
}

// A cached attention's new K and V rows, every head, into the cache: one Func of a Tuple,
// so one loop nest and one launch per layer (a decode step appended head by head before:
// 2 × heads one-block launches a layer). Thread blocks as the row-wise maps', one grid
// layer per head. With spec.headWidth (rotary positions fused into the attention), keys
// turn as the rotary kernel turns them (defineRotary), row t at position `offset` + t, so
// the cache holds rotated keys without a rotary launch of its own.
Built buildAppendKeyValues(const DeviceLoopKernelSpec &spec, bool gpuSchedule) {
  Var c("c"), t("t"), g("g"), s("s"), slot("slot");
  ImageParam keys(Float(32), 3, "keys"), values(Float(32), 3, "values");
  Param<int32_t> offset{"offset"};
  // rowPositions (a batched decode step): row t goes to position row_positions[t] of slot
  // row_slots[t] of the caches of every slot (4-D: column, position, head, slot).
  ImageParam rowPositions{Int(64), 1, "row_positions"}, rowSlots{Int(64), 1, "row_slots"};
  Func out = kernelFunc("out");
  const int headWidth = int(spec.headWidth), half = headWidth / 2;
  // Row t's key element c at `position`, rotated with a head width.
  auto keyAt = [&](Expr c, Expr t, Expr g, Expr position) -> Expr {
    if (headWidth <= 0)
      return keys(c, t, g);
    Expr pair = spec.flag ? c % half : c / 2;
    Expr isFirst = spec.flag ? c < half : c % 2 == 0;
    Expr first = spec.flag ? pair : 2 * pair, second = first + (spec.flag ? half : 1);
    Expr angle = cast<double>(position) *
                 exp(cast<double>(pair) * Expr(-2.0 * std::log(spec.constant) / double(headWidth)));
    Expr cosine = cast<float>(cos(angle)), sine = cast<float>(sin(angle));
    Expr a = keys(clamp(first, 0, headWidth - 1), t, g);
    Expr b = keys(clamp(second, 0, headWidth - 1), t, g);
    // An odd head width leaves its last feature as it is (as the rotary kernel).
    return select(c < 2 * half, select(isFirst, a * cosine - b * sine, a * sine + b * cosine),
                  keys(c, t, g));
  };
  if (headWidth > 0)
    keys.dim(0).set_bounds(0, headWidth);
  for (ImageParam in : {keys, values})
    in.dim(0).set_min(0).set_stride(1);
  std::vector<OutputImageParam> outs;
  RDom r(0, keys.dim(0).extent(), 0, keys.dim(1).extent(), 0, keys.dim(2).extent(), "r");
  if (spec.rowPositions) {
    out(c, s, g, slot) = Tuple(undef<float>(), undef<float>());
    outs = out.output_buffers();
    Expr position = clamp(cast<int>(rowPositions(r.y)), 0, outs[0].dim(1).extent() - 1);
    Expr at = clamp(cast<int>(rowSlots(r.y)), 0, outs[0].dim(3).extent() - 1);
    out(r.x, position, r.z, at) = Tuple(keyAt(r.x, r.y, r.z, position), values(r.x, r.y, r.z));
    outs[0].dim(0).set_min(0).dim(1).set_min(0).dim(2).set_min(0).dim(3).set_min(0);
    for (ImageParam table : {rowPositions, rowSlots})
      table.dim(0).set_bounds(0, keys.dim(1).extent()).set_stride(1);
  } else {
    out(c, t, g) = Tuple(keyAt(c, t, g, t + offset), values(c, t, g));
    outs = out.output_buffers();
    // Halide gives the second output the first one's mins and extents.
    outs[0].dim(0).set_min(0).dim(1).set_min(0).dim(2).set_min(0);
  }
  for (OutputImageParam o : outs)
    o.dim(0).set_stride(1);
  if (gpuSchedule && spec.rowPositions) {
    // A block per (row, head, kMapCols columns): rows go to different slots, so Halide cannot
    // prove the stores apart; the caller's rows are distinct (position, slot) pairs.
    RVar rxo("rxo"), rxi("rxi");
    out.update()
        .allow_race_conditions()
        .split(r.x, rxo, rxi, kMapCols, TailStrategy::GuardWithIf)
        .reorder(rxi, rxo, r.y, r.z)
        .gpu_blocks(rxo, r.y, r.z)
        .gpu_threads(rxi);
  } else if (gpuSchedule) {
    Var co("co"), to("to"), ci("ci"), ti("ti");
    out.gpu_tile(c, t, co, to, ci, ti, kMapCols, kMapRows, TailStrategy::GuardWithIf).gpu_blocks(g);
  }
  if (spec.rowPositions)
    return Built{{keys, values, rowPositions, rowSlots}, out};
  if (headWidth > 0)
    return Built{{keys, values, offset}, out};
  return Built{{keys, values}, out};
}

} // namespace

std::string kernelSignature(const DeviceLoopKernelSpec &s) {
  std::string w = " w=" + std::to_string(s.width);
  auto number = [](double v) { // short when it reads back exactly, else all digits
    char text[40];
    std::snprintf(text, sizeof(text), "%g", v);
    if (std::strtod(text, nullptr) != v)
      std::snprintf(text, sizeof(text), "%.17g", v);
    return std::string(text);
  };
  switch (s.kind) {
  case DeviceLoopKind::Gather:
    return "gather" + w + (s.flag ? " table=bf16" : "");
  case DeviceLoopKind::Position:
    return "position" + w + (s.rowPositions ? " positions=rows" : "");
  case DeviceLoopKind::GatherPositions:
    return "gather_positions" + w + (s.flag ? " table=bf16" : "") +
           (s.rowPositions ? " positions=rows" : "");
  case DeviceLoopKind::Sinusoid:
    return "sinusoid" + w + " base=" + number(s.constant);
  case DeviceLoopKind::Add:
    return (s.flag ? "add_bias" : "add") + w;
  case DeviceLoopKind::Map: {
    static const char *maps[] = {"relu", "gelu_tanh", "gelu_erf", "scale", "scale_by"};
    return maps[int(s.map)] + w +
           (s.map == DeviceMap::Scale ? " factor=" + number(s.constant) : "");
  }
  case DeviceLoopKind::Silu:
    return "silu" + w;
  case DeviceLoopKind::Multiply:
    return "multiply" + w;
  case DeviceLoopKind::Rotary:
    return llvm::formatv("rotary {0}x{1} {2} base={3}", s.heads, s.headWidth,
                         s.flag ? "halves" : "adjacent", number(s.constant))
        .str();
  case DeviceLoopKind::Normalize:
    return (s.flag ? "layer_norm" : "rms_norm") + w + " eps=" + number(s.constant) +
           " affine=" + std::to_string(s.affineParams);
  case DeviceLoopKind::Softmax:
    return "softmax" + w;
  case DeviceLoopKind::Copy:
    return "copy";
  case DeviceLoopKind::Transpose:
    return "transpose";
  case DeviceLoopKind::AppendKeyValues: {
    std::string at = s.rowPositions ? " positions=rows" : "";
    if (s.headWidth > 0)
      return llvm::formatv("append_key_values rotary {0} {1} base={2}", s.headWidth,
                           s.flag ? "halves" : "adjacent", number(s.constant))
                 .str() +
             at;
    return "append_key_values" + at;
  }
  }
  return "loop";
}

llvm::Expected<KernelPipeline> buildDeviceLoopPipeline(const DeviceLoopKernelSpec &spec,
                                                       bool gpuSchedule,
                                                       std::vector<Argument> &arguments) {
  KernelFuncScope names(spec.name);
  std::optional<llvm::Expected<Built>> built;
  if (llvm::Error err = catchHalideErrors("scheduling CUDA loop kernel '" + spec.name + "'", [&] {
        if (spec.kind == DeviceLoopKind::AppendKeyValues)
          built.emplace(buildAppendKeyValues(spec, gpuSchedule));
        else
          built.emplace(buildLoop(spec, gpuSchedule));
      }))
    return std::move(err);
  if (!*built)
    return built->takeError();
  arguments = (*built)->arguments;
  return KernelPipeline::of({}, (*built)->out);
}

} // namespace mlir::xf
