//===- GpuTimingArguments.cpp - what the timing program passes a kernel ---===//

#include "xf/Tuning/GpuTimingArguments.h"
#include "xf/Tuning/GpuScheduleSpace.h"

using namespace mlir::xf;
using namespace mlir::xf::tuning;

namespace {
using Dims = std::vector<std::pair<int64_t, int64_t>>;

/// [rows, cols] row-major; rows 0: a vector of cols.
Dims matrixDims(int64_t cols, int64_t rows) {
  if (rows == 0)
    return {{cols, 1}};
  return {{cols, 1}, {rows, cols}};
}
} // namespace

int64_t mlir::xf::tuning::timingKeys(int64_t rows, int64_t longest) {
  return rows <= kCudaDecodeRows ? longest : rows;
}

TimingCalls mlir::xf::tuning::gemmTimingCalls(const GemmKernelSpec &spec, int64_t longest) {
  // The pipeline's arguments in order (GemmKernel.cpp's gemmKernelPipeline, then out).
  const int64_t wide = spec.gates() * spec.N;
  struct Buffer {
    int64_t cols, rows; // rows: 0 for a vector, kTimingRows for M
    bool bf16;
  };
  std::vector<Buffer> buffers{{spec.K, kTimingRows, false},
                              spec.transposeWeight ? Buffer{spec.K, wide, spec.bf16Weights}
                                                   : Buffer{wide, spec.K, spec.bf16Weights}};
  if (spec.hasBias)
    buffers.push_back({wide, 0, false});
  if (spec.hasResidual)
    buffers.push_back({spec.N, kTimingRows, false});
  if (spec.normGamma)
    buffers.push_back({spec.K, 0, false});
  if (spec.normBeta)
    buffers.push_back({spec.K, 0, false});
  buffers.push_back({spec.N, kTimingRows, false});
  TimingCalls t;
  TimingCall call;
  for (const Buffer &b : buffers) {
    const int64_t rows = b.rows == kTimingRows ? longest : std::max<int64_t>(1, b.rows);
    call.arguments.push_back(int(t.arguments.size()));
    t.memories.push_back({b.cols * rows, b.bf16});
    t.arguments.push_back({int(t.memories.size()) - 1, 0, matrixDims(b.cols, b.rows), 0});
  }
  t.output = int(t.arguments.size()) - 1;
  t.calls.push_back(std::move(call));
  return t;
}

TimingCalls mlir::xf::tuning::attentionTimingCalls(const AttentionKernelSpec &spec, int64_t longest,
                                                   bool decode) {
  const CudaDecodePartials shape = cudaDecodePartialsOf(spec);
  const int64_t H = spec.heads, kvHeads = spec.keyValueHeads(), dK = spec.dK, dV = spec.dV;
  enum { Query, Keys, Values, Partials, Out, DummyRows };
  TimingCalls t;
  t.memories = {{longest * H * dK},
                {kvHeads * longest * dK},
                {kvHeads * longest * dV},
                {shape.floats()},
                {longest * H * dV}};
  // (column, key, K/V head) of a cache slot: each head's `longest` rows contiguous.
  auto cache = [&](int64_t d) { return Dims{{d, 1}, {kTimingKeys, d}, {kvHeads, d * longest}}; };
  Dims partials;
  int64_t stride = 1;
  for (int64_t extent : {shape.columns, shape.rows, shape.heads, shape.ranges})
    partials.push_back({extent, stride}), stride *= extent;
  t.arguments = {{Query, 0, matrixDims(H * dK, kTimingRows), 0},
                 {Keys, 0, cache(dK), 0},
                 {Values, 0, cache(dV), 0},
                 {Partials, 0, partials, 0},
                 {Out, 0, matrixDims(H * dV, kTimingRows), 0}};
  t.output = Out;
  if (decode && !cudaDecodeRangesAppend(spec)) {
    t.calls.push_back({"_decode_ranges", kCudaDecodeRows, {0, 1, 2, 3}});
  } else if (decode) {
    // Appending nothing: start = the keys, new_k / new_v = K and V, the rows' outputs the
    // dummy rows (CudaAttentionCall.cpp).
    t.memories.push_back({cudaDecodeAppendDummyFloats(shape)});
    TimingCall ranges{"_decode_ranges", kCudaDecodeRows, {0, 1, 2, 1, 2, 5}};
    t.arguments.push_back({-1, 0, {}, kTimingKeys});
    const std::array<CudaRangeOutputView, 5> views = cudaDecodeRangeOutputs(spec);
    for (size_t i = 0; i < views.size(); ++i) {
      TimingArgument view{i < 3 ? Partials : DummyRows, views[i].offset, {}, 0};
      for (auto [extent, s] : views[i].dims)
        view.dims.push_back(
            {extent == kCudaViewRows ? kTimingRows : extent, s == kCudaViewRowsHeadStride ? 0 : s});
      ranges.arguments.push_back(int(t.arguments.size()));
      t.arguments.push_back(std::move(view));
    }
    t.calls.push_back(std::move(ranges));
  }
  t.calls.push_back({"", 0, {0, 1, 2, 3, 4}});
  return t;
}

bool mlir::xf::tuning::timingViewsFit(const TimingCalls &calls, int64_t rows, int64_t keys) {
  for (const TimingCall &call : calls.calls) {
    if (call.mostRows && rows > call.mostRows)
      continue;
    for (int index : call.arguments) {
      if (index < 0 || size_t(index) >= calls.arguments.size())
        return false;
      const TimingArgument &a = calls.arguments[size_t(index)];
      if (a.memory < 0)
        continue;
      if (size_t(a.memory) >= calls.memories.size() || a.offset < 0)
        return false;
      int64_t last = a.offset;
      for (auto [extent, stride] : a.dims) {
        const int64_t e = extent == kTimingRows ? rows : extent == kTimingKeys ? keys : extent;
        if (e < 1 || stride < 0)
          return false;
        last += (e - 1) * stride;
      }
      if (last >= calls.memories[size_t(a.memory)].elements)
        return false;
    }
  }
  return true;
}
