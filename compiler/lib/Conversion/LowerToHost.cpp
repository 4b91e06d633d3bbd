//===- LowerToHost.cpp - fused xf IR → host code + kernel specs -----------===//
//
// Two walks over @forward. The first, the placement analysis (Placement.h),
// decides where every tensor lives; the cache plan (CachePlan.h) which entry
// points the model gets and its KV-cache layout. The second walk emits
// xf_prepare and xf_forward (and its cached and packed forms): one kernel
// call per op, Halide pipelines for GEMMs and attention, scf loop kernels
// for the rest.
//
//===----------------------------------------------------------------------===//

#include "xf/Conversion/LowerToHost.h"
#include "xf/Conversion/CachePlan.h"
#include "xf/Conversion/Placement.h"
#include "xf/Codegen/KernelSchedules.h"
#include "xf/Codegen/KernelSpecs.h"
#include "BlockGemvCall.h"
#include "xf/Codegen/HalideCalls.h"
#include "xf/Codegen/LoopKernels.h"
#include "Manifest.h"

#include "xf/IR/XfOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::xf;

namespace {

/// Emits the entry points from the placement analysis's result (Placement.h),
/// which every emitter reads.
class HostLowering : TensorPlacement {
public:
  HostLowering(func::FuncOp forward, HostProgram &program, const HostOptions &options)
      : forward(forward), program(program), options(options), ctx(forward.getContext()) {}

  LogicalResult run();
  /// After `forwardLowering` lowered @forward into the same program: this
  /// lowering's function, @loss_and_gradients, becomes xf_train_step,
  /// xf_train_prepare and xf_train_scratch_bytes (docs/training.md).
  LogicalResult runTraining(HostLowering &forwardLowering);

private:
  void emitPrepare(llvm::StringRef name = "xf_prepare");
  /// The kernel spec of a GEMM, named (layers share kernels), with
  /// packedWeight when its weight is a constant the kernel can take packed.
  GemmKernelSpec gemmSpecOf(GemmOp gemm);
  void planPackedWeights();
  HalideBufferArg packedWeightArg(int64_t index);
  LogicalResult emitForward(bool cached, bool packed);
  void emitCacheBytes();
  LogicalResult emitOp(Operation *op);
  /// xf.length and the arith ops on it: numbers xf_forward computes before
  /// the kernels that read them (`numbers` maps them to its values).
  LogicalResult emitNumber(Operation *op);
  IRMapping numbers;
  LogicalResult emitKernel(Operation *op, ManifestInfo::Kernel &site);
  void emitScratchBytes();

  // Emission helpers (valid while emitting one function).
  Value pointerOf(Value tensor);
  Value storagePointer(Value tensor);
  bool readsLastRowOnly(Value tensor);
  // xf_forward_cached: values computed after the last attention, and whether
  // the op being emitted is one of those.
  llvm::DenseSet<Value> tailValues;
  bool inTail = false;
  Value rowsOf(Value tensor);
  Value i64(int64_t v) { return arith::ConstantIntOp::create(*b, loc, b->getI64Type(), v); }
  Value offsetPtr(Value base, Value floats) {
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    return LLVM::GEPOp::create(*b, loc, ptr, b->getF32Type(), base, ValueRange{floats});
  }
  void call(func::FuncOp kernel, ValueRange args) {
    func::CallOp::create(*b, loc, kernel, args);
    lastLoopKernel = kernel.getName().str();
  }
  std::string lastLoopKernel;
  HalideBufferArg matrixArg(Value tensor);
  /// Position of the first row: 0, or `start` in xf_forward_cached.
  Value firstPosition() { return cachedMode ? startArg : i64(0); }
  /// In xf_forward_cached: appends `rows` new rows of `tensor` (read at
  /// `source`) to its slot of `cache` at position `start` and returns the
  /// whole cached matrix [start + rows, width].
  HalideBufferArg cachedMatrixArg(Value tensor, int64_t floatOffset, Value cache, Value start,
                                  Value source, Value rows);
  // Packed batches (docs/abi.md "Packed batches"): n sequences' rows in one
  // matrix; row-wise kernels run once over all Σℓ rows, attention and
  // positions once per sequence.
  bool packedMode = false;
  Value lengthsArg, startsArg, countArg, cachesArg;
  /// Attention's context rows per row, Σ ℓ_i·(start_i + ℓ_i) / Σ ℓ_i, for the profiler.
  Value packedContextRows;
  /// Emits `body(rowOffset, rows, firstPosition, index)` once per sequence of
  /// the packed batch; kernel status codes inside it are carried out.
  void forEachSequence(llvm::function_ref<void(Value, Value, Value, Value)> body);
  Value loadI64(Value array, Value index);
  Value loadPointer(Value array, Value index);
  /// Rows [offset, offset + rows) of a matrix.
  Value rowPointer(Value tensor, Value offset) {
    return offsetPtr(storagePointer(tensor),
                     arith::MulIOp::create(*b, loc, offset, i64(placements[tensor].stride)));
  }
  HalideBufferArg segmentArg(Value tensor, Value offset, Value rows) {
    Placement &p = placements[tensor];
    return HalideBufferArg{rowPointer(tensor, offset),
                           {{i64(p.cols), i64(1)}, {rows, i64(p.stride)}}};
  }
  /// Before the tail of xf_forward_cached_packed: moves the last row of each
  /// sequence of every full-length tensor the tail reads to row i (in place;
  /// row i is never a later sequence's last row), so the tail runs on n rows.
  void compactLastRows();
  /// ℓ_pad = roundup(max(ℓ, ℓ_z), 16): the arena's unit column (BufferPlan.h).
  Value paddedRowsOf(Value l, Value lz) {
    Value longest = arith::MaxSIOp::create(*b, loc, l, lz);
    Value blocks = arith::DivSIOp::create(*b, loc, arith::AddIOp::create(*b, loc, longest, i64(15)),
                                          i64(16));
    return arith::MulIOp::create(*b, loc, blocks, i64(16));
  }
  LogicalResult requireDense(Operation *op, Value tensor);

  // Training (the section "Training" below).
  Value targetsArg, lossArg, gradsArg;
  /// Floats of scratch before the arena: Static slots, then the two chunk
  /// buffers of the weight gradients.
  int64_t staticFloats = 0;
  /// The Static slots among them, zeroed on entry to xf_train_step.
  int64_t zeroedFloats = 0;
  /// Static gradients whose single user (a sum or slice_grad) they were
  /// accumulated into directly: that user has nothing left to do for them.
  llvm::DenseSet<Value> folded;
  /// Rows per weight-gradient chunk (a GEMM with K = chunkRows) and the
  /// chunk buffers' float offsets in scratch.
  int64_t chunkRows = 0, chunkLeftOffset = 0, chunkRightOffset = 0;
  GemmSchedule chunkSchedule;
  LogicalResult placeTraining();
  LogicalResult planAccumulation(func::ReturnOp ret);
  LogicalResult emitTrainStep();
  LogicalResult emitBackwardKernel(Operation *op);
  LogicalResult emitWeightGrad(WeightGradOp op);
  void emitTrainScratchBytes();
  /// out (a static placement) += in (any 2-D or vector placement).
  void accumulateInto(Value target, int64_t floatOffset, Value in);

  func::FuncOp forward;
  HostProgram &program;
  HostOptions options;
  MLIRContext *ctx;
  /// Parameter indices stored in bfloat16 (HostOptions::bf16Weights).
  llvm::DenseSet<int64_t> bf16Parameters;
  void chooseBf16Parameters();
  bool isBf16(Value tensor) {
    auto it = placements.find(tensor);
    return it != placements.end() && it->second.storage == Storage::Parameter &&
           bf16Parameters.contains(it->second.index);
  }
  /// Parameters kept in ggml blocks (HostOptions::weightBlocks, filtered by
  /// blockParameterTypes); a concatenation of such parameters is one too.
  llvm::StringMap<WeightBlocks> blockParameters;
  WeightBlocks blocksOf(Value tensor) {
    auto it = placements.find(tensor);
    if (it == placements.end() ||
        (it->second.storage != Storage::Parameter && it->second.storage != Storage::Derived))
      return WeightBlocks::None;
    return weightBlocksOf(tensor, blockParameters);
  }
  /// Bytes of one row of a block tensor [rows, cols].
  static int64_t blockRowBytes(WeightBlocks type, int64_t cols) {
    return cols / 32 * weightBlockBytes(type);
  }
  /// Weights packed at load (GemmKernelSpec::packedWeight): derived buffers
  /// after `derived`, one per weight and layout, filled by `<kernel>_pack`.
  struct PackedWeight {
    Value weight;
    GemmKernelSpec spec; // the first kernel taking it
  };
  std::vector<PackedWeight> packedWeights;
  llvm::DenseMap<Operation *, int64_t> packedWeightOfGemm;

  // Emission state.
  OpBuilder *b = nullptr;
  Location loc = UnknownLoc::get(forward.getContext());
  std::shared_ptr<LoopKernels> kernels;
  Value paramsArg, derivedArg, tokensArg, lArg, sourceArg, lzArg, outArg, scratchArg,
      paddedRows;
  Value status;
  // Cached decoding (docs/abi.md): while emitting xf_forward_cached, positions
  // start at `startArg` and attention reads keys/values from `cacheArg`.
  bool cachedMode = false;
  Value startArg, cacheArg;
  /// Which entry points run, and the K and V slots of each attention.
  CachePlan cachePlan;
  Value cacheRows; // ⌈positions⌉₁₆ in xf_forward_cached
  llvm::StringMap<std::string> kernelNames; // spec key → exported name
  std::vector<ManifestInfo::Kernel> sites;  // one per kernel call in xf_forward

  /// Brackets the kernel call that `emit` produces with the profiling hooks
  /// of libxfrt (no-ops unless the executable runs with --profile).
  LogicalResult profiled(Operation *op, llvm::function_ref<LogicalResult(ManifestInfo::Kernel &)> emit);

  /// One Halide pipeline per distinct spec: layers share their kernels.
  template <typename Spec>
  std::string kernelName(const std::string &key, llvm::StringRef prefix,
                         std::vector<Spec> &specs, Spec &spec) {
    auto [it, inserted] = kernelNames.try_emplace(key, "");
    if (inserted) {
      it->second = (prefix + std::to_string(specs.size())).str();
      spec.name = it->second;
      specs.push_back(spec);
    }
    return it->second;
  }
};

std::string gemmKey(const GemmKernelSpec &s) {
  const GemmSchedule &c = s.schedule;
  return kernelSignature(s) + (s.packedWeight ? " packed" : "") +
         llvm::formatv(" | {0} {1} {2} {3} {4} {5} {6} {7} {8}", c.tileCols, c.tileRows, c.kBlock,
                       c.packWeights, c.rowsPerTask, c.panelCols, c.gemvRowsBelow,
                       c.gemvRowsPerPass, c.gemvTasks)
             .str();
}

std::string attentionKey(const AttentionKernelSpec &s) {
  const AttentionSchedule &c = s.schedule;
  return kernelSignature(s) + llvm::formatv(" | {0} {1} {2} {3}", c.queryBlock, c.keyBlock,
                                            c.rowTile, c.decodeKeyTile)
                                  .str();
}

//===----------------------------------------------------------------------===//
// Emission helpers
//===----------------------------------------------------------------------===//

/// In xf_forward_cached's tail (the ops after the last attention, all
/// row-wise) only the newest row matters: tail results hold one row, and
/// full-length inputs are read from their last row.
bool HostLowering::readsLastRowOnly(Value tensor) {
  return cachedMode && inTail && isActivation(tensor) && !tailValues.contains(tensor);
}

Value HostLowering::pointerOf(Value tensor) {
  Value base = storagePointer(tensor);
  if (!readsLastRowOnly(tensor) || packedMode) // packed: compacted to rows 0..n-1
    return base;
  Value lastRow = arith::SubIOp::create(*b, loc, lArg, i64(1));
  return offsetPtr(base, arith::MulIOp::create(*b, loc, lastRow,
                                               i64(placements[tensor].stride)));
}

Value HostLowering::storagePointer(Value tensor) {
  Placement &p = placements[tensor];
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  auto slot = [&](Value array, int64_t i) -> Value {
    Value at = LLVM::GEPOp::create(*b, loc, ptr, ptr, array, ValueRange{i64(i)});
    return LLVM::LoadOp::create(*b, loc, ptr, at);
  };
  switch (p.storage) {
  case Storage::Parameter:
    return slot(paramsArg, p.index);
  case Storage::Derived:
    return slot(derivedArg, p.index);
  case Storage::Tokens:
    if (training)
      return p.index == 1 ? targetsArg : tokensArg;
    return p.index == 0 && encoderDecoder ? sourceArg : tokensArg;
  case Storage::Gradient:
    return offsetPtr(slot(gradsArg, p.index), i64(p.colOffset));
  case Storage::Static:
    return offsetPtr(scratchArg, i64(p.index + p.colOffset));
  case Storage::Loss:
    return lossArg;
  case Storage::Output:
    return outArg;
  case Storage::Scratch: {
    Value floats = arith::MulIOp::create(*b, loc, paddedRows,
                                         i64(plan.columnOffset[p.index]));
    return offsetPtr(offsetPtr(scratchArg, i64(staticFloats)), floats);
  }
  case Storage::View:
    return offsetPtr(storagePointer(p.root), i64(p.colOffset));
  }
  llvm_unreachable("unknown storage");
}

Value HostLowering::rowsOf(Value tensor) {
  if (cachedMode && (tailValues.contains(tensor) || readsLastRowOnly(tensor)))
    return packedMode ? countArg : i64(1);
  Placement &p = placements[tensor];
  switch (p.rows) {
  case Rows::Target:
    return lArg;
  case Rows::Source:
    return lzArg;
  case Rows::Static:
    return i64(p.staticRows);
  }
  llvm_unreachable("unknown rows");
}

HalideBufferArg HostLowering::matrixArg(Value tensor) {
  Placement &p = placements[tensor];
  HalideBufferArg arg{pointerOf(tensor), {}};
  if (WeightBlocks blocks = blocksOf(tensor); blocks != WeightBlocks::None) {
    int64_t rowBytes = blockRowBytes(blocks, p.cols);
    arg.bytes = true;
    arg.dims.push_back({i64(rowBytes), i64(1)});
    arg.dims.push_back({rowsOf(tensor), i64(rowBytes)});
    return arg;
  }
  arg.bf16 = isBf16(tensor);
  arg.dims.push_back({i64(p.cols), i64(1)});
  if (cast<RankedTensorType>(tensor.getType()).getRank() == 2)
    arg.dims.push_back({rowsOf(tensor), i64(p.stride)});
  return arg;
}

HalideBufferArg HostLowering::cachedMatrixArg(Value tensor, int64_t column, Value cache,
                                              Value start, Value source, Value rows) {
  Placement &p = placements[tensor];
  Value slot = offsetPtr(cache, arith::MulIOp::create(*b, loc, cacheRows, i64(column)));
  Value at = offsetPtr(slot, arith::MulIOp::create(*b, loc, start, i64(p.cols)));
  call(kernels->copy2d(), {source, i64(p.stride), at, i64(p.cols), rows, i64(p.cols)});
  Value context = arith::AddIOp::create(*b, loc, start, rows);
  return HalideBufferArg{slot, {{i64(p.cols), i64(1)}, {context, i64(p.cols)}}};
}

Value HostLowering::loadI64(Value array, Value index) {
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Value at = LLVM::GEPOp::create(*b, loc, ptr, b->getI64Type(), array, ValueRange{index});
  return LLVM::LoadOp::create(*b, loc, b->getI64Type(), at);
}

Value HostLowering::loadPointer(Value array, Value index) {
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Value at = LLVM::GEPOp::create(*b, loc, ptr, ptr, array, ValueRange{index});
  return LLVM::LoadOp::create(*b, loc, ptr, at);
}

void HostLowering::forEachSequence(llvm::function_ref<void(Value, Value, Value, Value)> body) {
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  auto loop = scf::ForOp::create(
      *b, loc, i64(0), countArg, i64(1), ValueRange{i64(0), status},
      [&](OpBuilder &nested, Location, Value index, ValueRange carried) {
        OpBuilder::InsertionGuard guard(*b);
        b->setInsertionPointToStart(nested.getInsertionBlock());
        // Halide buffer descriptors are stack allocations: release them every
        // iteration, or a large batch would grow the stack without bound.
        Value stack = LLVM::StackSaveOp::create(*b, loc, ptr);
        Value offset = carried[0];
        status = carried[1];
        Value rows = loadI64(lengthsArg, index);
        Value position = cachedMode ? loadI64(startsArg, index) : i64(0);
        body(offset, rows, position, index);
        LLVM::StackRestoreOp::create(*b, loc, stack);
        scf::YieldOp::create(*b, loc,
                             ValueRange{arith::AddIOp::create(*b, loc, offset, rows), status});
      });
  status = loop.getResult(1);
}

void HostLowering::compactLastRows() {
  if (cachePlan.tailInputRoots.empty())
    return;
  forEachSequence([&](Value offset, Value rows, Value, Value index) {
    Value last = arith::SubIOp::create(*b, loc, arith::AddIOp::create(*b, loc, offset, rows),
                                       i64(1));
    for (Value root : cachePlan.tailInputRoots) {
      int64_t stride = placements[root].stride;
      call(kernels->copy2d(),
           {rowPointer(root, last), i64(stride), rowPointer(root, index), i64(stride), i64(1),
            i64(stride)});
    }
  });
}

LogicalResult HostLowering::requireDense(Operation *op, Value tensor) {
  if (placements[tensor].stride == placements[tensor].cols)
    return success();
  return op->emitError("this op reads a column slice of an activation, which "
                       "host lowering only passes to GEMM and attention kernels");
}

//===----------------------------------------------------------------------===//
// xf_prepare: derived weights, once
//===----------------------------------------------------------------------===//

void HostLowering::emitPrepare(llvm::StringRef name) {
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  OpBuilder top = OpBuilder::atBlockEnd(program.module->getBody());
  auto fn = func::FuncOp::create(top, forward.getLoc(), name,
                                 FunctionType::get(ctx, {ptr, ptr}, {IntegerType::get(ctx, 32)}));
  OpBuilder builder = OpBuilder::atBlockBegin(fn.addEntryBlock());
  b = &builder;
  paramsArg = fn.getArgument(0);
  derivedArg = fn.getArgument(1);
  func::FuncOp copy = kernels->copy2d();
  for (Value v : derived) {
    Operation *op = v.getDefiningOp();
    loc = op->getLoc();
    // Every tensor here is viewed as [rows, cols] (vectors: one row).
    auto shape = [](Value t) {
      auto type = cast<RankedTensorType>(t.getType());
      return type.getRank() == 1 ? std::pair<int64_t, int64_t>{1, type.getDimSize(0)}
                                 : std::pair<int64_t, int64_t>{type.getDimSize(0),
                                                               type.getDimSize(1)};
    };
    auto [rows, cols] = shape(v);
    Value out = pointerOf(v);
    auto copyBlock = [&](Value src, int64_t srcOffset, int64_t srcStride, int64_t dstOffset,
                         int64_t n, int64_t m) {
      call(copy, {offsetPtr(pointerOf(src), i64(srcOffset)), i64(srcStride),
                  offsetPtr(out, i64(dstOffset)), i64(cols), i64(n), i64(m)});
    };
    if (auto slice = dyn_cast<SliceOp>(op)) {
      int64_t inCols = shape(slice.getInput()).second;
      bool byRows = cast<RankedTensorType>(v.getType()).getRank() == 2 && slice.getAxis() == 0;
      copyBlock(slice.getInput(), slice.getOffset() * (byRows ? inCols : 1), inCols, 0, rows,
                cols);
    } else if (auto row = dyn_cast<RowOp>(op)) {
      copyBlock(row.getInput(), row.getIndex() * cols, cols, 0, 1, cols);
    } else if (auto concat = dyn_cast<ConcatOp>(op);
               concat && blocksOf(v) != WeightBlocks::None) {
      // Rows of blocks: the parts' bytes back to back.
      int64_t offset = 0;
      Type i8 = b->getI8Type();
      for (Value part : concat.getInputs()) {
        auto [pr, pc] = shape(part);
        int64_t bytes = pr * blockRowBytes(blocksOf(v), pc);
        Value dst = LLVM::GEPOp::create(*b, loc, ptr, i8, out, ValueRange{i64(offset)});
        LLVM::MemcpyOp::create(*b, loc, dst, pointerOf(part), i64(bytes), /*isVolatile=*/false);
        offset += bytes;
      }
    } else if (auto concat = dyn_cast<ConcatOp>(op)) {
      bool byRows = cast<RankedTensorType>(v.getType()).getRank() == 2 && concat.getAxis() == 0;
      int64_t offset = 0;
      for (Value part : concat.getInputs()) {
        auto [pr, pc] = shape(part);
        copyBlock(part, 0, pc, byRows ? offset * cols : offset, pr, pc);
        offset += byRows ? pr : pc;
      }
    } else if (auto transpose = dyn_cast<TransposeOp>(op)) {
      auto [inRows, inCols] = shape(transpose.getInput());
      call(kernels->transpose2d(),
           {pointerOf(transpose.getInput()), out, i64(inRows), i64(inCols)});
    }
  }
  // Then the packed weights, from parameters and the derived weights above.
  Value prepared = arith::ConstantIntOp::create(builder, forward.getLoc(), builder.getI32Type(), 0);
  for (auto [i, packed] : llvm::enumerate(packedWeights)) {
    loc = packed.weight.getLoc();
    Value rc = callHalidePipeline(*b, loc, *program.module, packed.spec.name + "_pack",
                                  {matrixArg(packed.weight), packedWeightArg(i)});
    prepared = arith::OrIOp::create(*b, loc, prepared, rc);
  }
  func::ReturnOp::create(builder, forward.getLoc(), prepared);
  b = nullptr;
}

GemmKernelSpec HostLowering::gemmSpecOf(GemmOp gemm) {
  Value weight = gemm.getWeight();
  GemmKernelSpec spec = gemmKernelSpecOf(gemm, isBf16(weight), options.bf16Activations,
                                         blocksOf(weight));
  Storage s = placements[weight].storage;
  // Training updates the parameters after every step: its kernels read them as stored.
  spec.packedWeight = options.packWeightsAtLoad && !training &&
                      (s == Storage::Parameter || s == Storage::Derived) &&
                      canPackWeightAtLoad(spec);
  spec.name = kernelName(gemmKey(spec), "xf_gemm_", program.gemms, spec);
  return spec;
}

/// One packed buffer per weight and layout (tile width; gated tiles
/// interleave): GEMMs that read a weight the same way share it.
void HostLowering::planPackedWeights() {
  std::map<std::tuple<Operation *, unsigned, int64_t, bool>, int64_t> index;
  forward.walk([&](GemmOp gemm) {
    GemmKernelSpec spec = gemmSpecOf(gemm);
    if (!spec.packedWeight)
      return;
    Value w = gemm.getWeight();
    auto key = std::make_tuple(w.getDefiningOp(), cast<OpResult>(w).getResultNumber(),
                               spec.schedule.tileCols, spec.epilogue == GemmEpilogue::SwiGlu);
    auto [it, inserted] = index.try_emplace(key, int64_t(packedWeights.size()));
    if (inserted)
      packedWeights.push_back({w, spec});
    packedWeightOfGemm[gemm] = it->second;
  });
}

HalideBufferArg HostLowering::packedWeightArg(int64_t index) {
  const GemmKernelSpec &spec = packedWeights[index].spec;
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Value at = LLVM::GEPOp::create(*b, loc, ptr, ptr, derivedArg,
                                 ValueRange{i64(int64_t(derived.size()) + index)});
  PackedWeightShape shape = packedWeightShape(spec);
  HalideBufferArg arg{LLVM::LoadOp::create(*b, loc, ptr, at),
                      {{i64(shape.lanes), i64(1)},
                       {i64(shape.rows), i64(shape.lanes)},
                       {i64(shape.tiles), i64(shape.rows * shape.lanes)}}};
  arg.bf16 = spec.bf16Weights;
  return arg;
}

//===----------------------------------------------------------------------===//
// xf_forward: one kernel per op
//===----------------------------------------------------------------------===//


/// What a loop kernel reads and writes per row, for the roofline: every
/// [ℓ, d] operand and the result (an embedding gather also reads a table row).
static int64_t loopKernelBytesPerRow(Operation *op) {
  auto rowWidth = [](Type t) -> int64_t {
    auto ranked = dyn_cast<RankedTensorType>(t);
    return ranked && ranked.getRank() == 2 && ranked.getElementType().isF32()
               ? ranked.getDimSize(1) : 0;
  };
  int64_t floats = rowWidth(op->getResult(0).getType());
  if (isa<TokenEmbedOp, PositionalEmbedOp>(op))
    floats *= 2;
  for (Value operand : op->getOperands())
    if (auto ranked = dyn_cast<RankedTensorType>(operand.getType());
        ranked && ranked.getRank() == 2 && ranked.isDynamicDim(0))
      floats += rowWidth(ranked);
  return 4 * floats;
}

LogicalResult HostLowering::profiled(
    Operation *op, llvm::function_ref<LogicalResult(ManifestInfo::Kernel &)> emit) {
  auto hook = [&](llvm::StringRef name, ArrayRef<Type> args) {
    auto fn = program.module->lookupSymbol<func::FuncOp>(name);
    if (!fn) {
      OpBuilder top = OpBuilder::atBlockEnd(program.module->getBody());
      fn = func::FuncOp::create(top, loc, name, FunctionType::get(ctx, args, {}));
      fn.setPrivate();
    }
    return fn;
  };
  Type i32 = IntegerType::get(ctx, 32), i64Type = IntegerType::get(ctx, 64);
  Value site = arith::ConstantIntOp::create(*b, loc, b->getI32Type(), sites.size());
  ManifestInfo::Kernel info;
  info.op = op->getName().getStringRef().str();
  std::string where;
  llvm::raw_string_ostream os(where);
  op->getLoc()->print(os);
  info.loc = where;
  func::CallOp::create(*b, loc, hook("xfrt_profile_enter", {i32}), ValueRange{site});
  if (failed(emit(info)))
    return failure();
  if (info.kind == "loop")
    info.bytesPerRow = loopKernelBytesPerRow(op);
  // The exit hook gets this call's rows and context rows, so FLOP counts are
  // right for prefill and decode steps alike.
  Value rows = rowsOf(op->getResult(0));
  Value context = i64(0);
  if (auto attn = dyn_cast<AttentionOp>(op))
    context = packedMode   ? packedContextRows
              : cachedMode ? Value(arith::AddIOp::create(*b, loc, startArg, rows))
                           : rowsOf(attn.getKey());
  func::CallOp::create(*b, loc, hook("xfrt_profile_exit", {i32, i64Type, i64Type}),
                       ValueRange{site, rows, context});
  if (options.kernelOutputHook) {
    Value v = op->getResult(0);
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    func::CallOp::create(*b, loc, hook("xf_check_kernel_output", {i32, ptr, i64Type, i64Type}),
                         ValueRange{site, pointerOf(v), rows, i64(placements[v].stride)});
  }
  sites.push_back(info);
  program.siteOps.push_back(op);
  return success();
}

LogicalResult HostLowering::emitNumber(Operation *op) {
  if (auto length = dyn_cast<LengthOp>(op)) {
    numbers.map(length.getResult(), arith::SIToFPOp::create(*b, loc, b->getF64Type(),
                                                            rowsOf(length.getTokens())));
    return success();
  }
  if (isa<arith::ConstantOp, arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp>(op)) {
    b->clone(*op, numbers);
    return success();
  }
  return op->emitError("no host code for this number");
}

LogicalResult HostLowering::emitOp(Operation *op) {
  loc = op->getLoc();
  if (training)
    return emitBackwardKernel(op);
  Value v = op->getResult(0);
  if (v.getType().isF64())
    return emitNumber(op);
  Placement &p = placements[v];
  if (p.storage != Storage::Scratch && p.storage != Storage::Output)
    return success(); // parameters, derived weights, views: nothing to run
  return profiled(op, [&](ManifestInfo::Kernel &site) { return emitKernel(op, site); });
}

LogicalResult HostLowering::emitKernel(Operation *op, ManifestInfo::Kernel &site) {
  Value v = op->getResult(0);
  Placement &p = placements[v];
  int64_t width = p.cols;
  Value out = pointerOf(v), rows = rowsOf(v);
  auto dense = [&](Value t) -> FailureOr<Value> {
    if (failed(requireDense(op, t)))
      return failure();
    return pointerOf(t);
  };
  auto orStatus = [&](Value rc) { status = arith::OrIOp::create(*b, loc, status, rc); };

  if (auto gemm = dyn_cast<GemmOp>(op)) {
    GemmKernelSpec spec = gemmSpecOf(gemm);
    SmallVector<HalideBufferArg> args{matrixArg(gemm.getInput()),
                                      spec.packedWeight
                                          ? packedWeightArg(packedWeightOfGemm.lookup(gemm))
                                          : matrixArg(gemm.getWeight())};
    if (spec.hasBias)
      args.push_back(matrixArg(gemm.getBias()));
    if (spec.hasResidual)
      args.push_back(matrixArg(gemm.getResidual()));
    args.push_back(matrixArg(v));
    auto halide = [&] {
      return callHalidePipeline(*b, loc, *program.module, spec.name, args, {}, options.cudaDevice);
    };
    if (spec.weightBlocks != WeightBlocks::None && options.q8GemmInputs) {
      auto stride = [&](Value t) { return i64(placements[t].stride); };
      BlockGemvCall q8{pointerOf(gemm.getInput()), stride(gemm.getInput()), rows,
                       pointerOf(gemm.getWeight())};
      if (spec.hasBias)
        q8.bias = pointerOf(gemm.getBias());
      if (spec.hasResidual)
        q8.residual = pointerOf(gemm.getResidual()), q8.residualStride = stride(gemm.getResidual());
      q8.out = out, q8.outStride = stride(v), q8.spec = &spec, q8.isaCeiling = options.blockDotIsa;
      orStatus(callBlockGemvOrPipeline(*b, loc, *program.module, q8, halide));
    } else {
      orStatus(halide());
    }
    site.name = spec.name, site.kind = "gemm";
    site.setWork(kernelWork(spec));
    site.tuned = op->hasAttr("xf.tuned");
    return success();
  }
  if (auto attn = dyn_cast<AttentionOp>(op)) {
    AttentionKernelSpec spec = attentionKernelSpecOf(attn);
    spec.name = kernelName(attentionKey(spec), "xf_attention_", program.attentions, spec);
    auto [keyOffset, valueOffset] = cachePlan.offsets.lookup(op);
    if (packedMode) {
      // Each sequence attends over its own rows (and its own cache).
      forEachSequence([&](Value offset, Value rows, Value start, Value index) {
        SmallVector<HalideBufferArg> args{segmentArg(attn.getQuery(), offset, rows)};
        if (cachedMode) {
          Value cache = loadPointer(cachesArg, index);
          args.push_back(cachedMatrixArg(attn.getKey(), keyOffset, cache, start,
                                         rowPointer(attn.getKey(), offset), rows));
          args.push_back(cachedMatrixArg(attn.getValue(), valueOffset, cache, start,
                                         rowPointer(attn.getValue(), offset), rows));
        } else {
          args.push_back(segmentArg(attn.getKey(), offset, rows));
          args.push_back(segmentArg(attn.getValue(), offset, rows));
        }
        args.push_back(segmentArg(v, offset, rows));
        orStatus(callHalidePipeline(*b, loc, *program.module, spec.name, args, {}, options.cudaDevice));
      });
    } else {
      SmallVector<HalideBufferArg> args{matrixArg(attn.getQuery())};
      if (cachedMode) {
        args.push_back(cachedMatrixArg(attn.getKey(), keyOffset, cacheArg, startArg,
                                       pointerOf(attn.getKey()), rowsOf(attn.getKey())));
        args.push_back(cachedMatrixArg(attn.getValue(), valueOffset, cacheArg, startArg,
                                       pointerOf(attn.getValue()), rowsOf(attn.getValue())));
      } else {
        args.push_back(matrixArg(attn.getKey()));
        args.push_back(matrixArg(attn.getValue()));
      }
      args.push_back(matrixArg(v));
      orStatus(callHalidePipeline(*b, loc, *program.module, spec.name, args, {}, options.cudaDevice));
    }
    // Q·Kᵀ and P·V: 2·H·(d_k + d_v) per (query, key) pair (causal masking halves the useful work).
    site.name = spec.name, site.kind = "attention";
    site.tuned = op->hasAttr("xf.tuned");
    site.setWork(kernelWork(spec));
    site.contextFromSource = placements[attn.getKey()].rows == Rows::Source;
    return success();
  }
  kernels->useSchedule(loopScheduleOf(loopScheduleAttrOf(op)));
  // Loop kernels that read column slices in place: (pointer, row stride).
  auto strided = [&](Value t) -> std::pair<Value, Value> {
    return {pointerOf(t), i64(placements[t].stride)};
  };
  if (isa<SiluOp>(op)) {
    auto [in, stride] = strided(op->getOperand(0));
    call(kernels->silu(width), {in, stride, out, rows});
    site.name = lastLoopKernel, site.kind = "loop";
    return success();
  }
  if (auto mul = dyn_cast<MulOp>(op)) {
    auto [lhs, lhsStride] = strided(mul.getLhs());
    auto [rhs, rhsStride] = strided(mul.getRhs());
    call(kernels->multiply(width), {lhs, lhsStride, rhs, rhsStride, out, rows});
    site.name = lastLoopKernel, site.kind = "loop";
    return success();
  }
  if (auto rope = dyn_cast<RopeOp>(op)) {
    if (rope.getOffset())
      return op->emitError("explicit positional offsets are not supported by the host lowering");
    auto [in, stride] = strided(rope.getInput());
    int64_t heads = rope.getHeads();
    auto pairs = rope.getPairing() == RopePairing::adjacent ? RotaryPairs::Adjacent
                                                            : RotaryPairs::Halves;
    func::FuncOp kernel =
        kernels->rotaryRows(heads, width / heads, pairs, rope.getBase().convertToDouble());
    if (packedMode)
      forEachSequence([&](Value offset, Value n, Value start, Value) {
        call(kernel, {rowPointer(rope.getInput(), offset), stride, rowPointer(v, offset), n,
                      start});
      });
    else
      call(kernel, {in, stride, out, rows, firstPosition()});
    site.name = lastLoopKernel, site.kind = "loop";
    return success();
  }
  // The other loop kernels read dense inputs.
  SmallVector<Value> inputs;
  for (Value operand : op->getOperands()) {
    if (!isa<RankedTensorType>(operand.getType())) // an index, a run-time number
      continue;
    if (placements[operand].storage == Storage::Tokens) {
      inputs.push_back(pointerOf(operand));
      continue;
    }
    FailureOr<Value> ptr = dense(operand);
    if (failed(ptr))
      return failure();
    inputs.push_back(*ptr);
  }
  if (auto embed = dyn_cast<TokenEmbedOp>(op);
      embed && blocksOf(embed.getTable()) != WeightBlocks::None) {
    // Rows of blocks: libxfrt dequantizes them (runtime/lib/BlockRows.cpp).
    auto gather = program.module->lookupSymbol<func::FuncOp>("xfrt_gather_block_rows");
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    if (!gather) {
      OpBuilder top = OpBuilder::atBlockEnd(program.module->getBody());
      gather = func::FuncOp::create(
          top, loc, "xfrt_gather_block_rows",
          FunctionType::get(ctx, {ptr, b->getI64Type(), ptr, ptr, b->getI64Type(), b->getI64Type()},
                            {}));
      gather.setPrivate();
    }
    func::CallOp::create(*b, loc, gather,
                         ValueRange{inputs[0], i64(ggmlTypeId(blocksOf(embed.getTable()))),
                                    inputs[1], out, rows, i64(width)});
    site.name = "xfrt_gather_block_rows", site.kind = "loop";
    return success();
  } else if (auto embed = dyn_cast<TokenEmbedOp>(op)) {
    call(kernels->gatherRows(width, isBf16(embed.getTable())),
         {inputs[0], inputs[1], out, rows});
  } else if (auto pos = dyn_cast<PositionalEmbedOp>(op)) {
    if (pos.getOffset())
      return op->emitError("explicit positional offsets are not supported by the host lowering");
    if (packedMode) // positions restart at each sequence's start
      forEachSequence([&](Value offset, Value n, Value start, Value) {
        call(kernels->positionRows(width), {inputs[0], rowPointer(v, offset), n, start});
      });
    else
      call(kernels->positionRows(width), {inputs[0], out, rows, firstPosition()});
  } else if (auto sin = dyn_cast<SinusoidalEmbedOp>(op)) {
    if (sin.getOffset())
      return op->emitError("explicit positional offsets are not supported by the host lowering");
    func::FuncOp kernel = kernels->sinusoidRows(width, sin.getBase().convertToDouble());
    if (packedMode)
      forEachSequence([&](Value offset, Value n, Value start, Value) {
        call(kernel, {rowPointer(v, offset), n, start});
      });
    else
      call(kernel, {out, rows, firstPosition()});
  } else if (auto add = dyn_cast<AddOp>(op)) {
    bool broadcast = add.getRhs().getType().getRank() == 1;
    call(kernels->add(width, broadcast), {inputs[0], inputs[1], out, rows});
  } else if (isa<ReluOp>(op)) {
    call(kernels->elementwise(width, ElementwiseKind::Relu), {inputs[0], out, rows});
  } else if (auto gelu = dyn_cast<GeluOp>(op)) {
    auto kind = gelu.getApproximation() == GeluApproximation::tanh ? ElementwiseKind::GeluTanh
                                                                   : ElementwiseKind::GeluErf;
    call(kernels->elementwise(width, kind), {inputs[0], out, rows});
  } else if (auto scale = dyn_cast<ScaleOp>(op); scale && scale.getMultiplier()) {
    Value factor = arith::MulFOp::create(
        *b, loc, numbers.lookup(scale.getMultiplier()),
        arith::ConstantFloatOp::create(*b, loc, b->getF64Type(), scale.getFactor()));
    call(kernels->scaleBy(width),
         {inputs[0], out, rows, arith::BitcastOp::create(*b, loc, b->getI64Type(), factor)});
  } else if (auto scale = dyn_cast<ScaleOp>(op)) {
    call(kernels->scale(width, scale.getFactor().convertToDouble()), {inputs[0], out, rows});
  } else if (isa<SoftmaxOp>(op)) {
    call(kernels->softmax(width), {inputs[0], out, rows});
  } else if (auto ln = dyn_cast<LayerNormOp>(op)) {
    bool affine = bool(ln.getGamma());
    SmallVector<Value> args(inputs);
    args.append({out, rows});
    call(kernels->layerNorm(width, ln.getEpsilon().convertToDouble(), affine), args);
  } else if (auto rms = dyn_cast<RmsNormOp>(op)) {
    SmallVector<Value> args(inputs);
    args.append({out, rows});
    call(kernels->rmsNorm(width, rms.getEpsilon().convertToDouble(), bool(rms.getGamma())),
         args);
  } else {
    return op->emitError("no kernel for this op in host lowering");
  }
  site.name = lastLoopKernel, site.kind = "loop";
  return success();
}

LogicalResult HostLowering::emitForward(bool cached, bool packed) {
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64Type = IntegerType::get(ctx, 64);
  Type i32Type = IntegerType::get(ctx, 32);
  OpBuilder top = OpBuilder::atBlockEnd(program.module->getBody());
  FunctionType type;
  if (packed && cached) // (params, derived, tokens, lengths, starts, n, out, scratch, caches, cache_positions)
    type = FunctionType::get(ctx, {ptr, ptr, ptr, ptr, ptr, i64Type, ptr, ptr, ptr, i64Type},
                             {i32Type});
  else if (packed) // (params, derived, tokens, lengths, n, out, scratch)
    type = FunctionType::get(ctx, {ptr, ptr, ptr, ptr, i64Type, ptr, ptr}, {i32Type});
  else if (cached) // (params, derived, tokens, l, start, out, scratch, cache, cache_positions)
    type = FunctionType::get(ctx, {ptr, ptr, ptr, i64Type, i64Type, ptr, ptr, ptr, i64Type},
                             {i32Type});
  else // (params, derived, tokens, l, source, l_z, out, scratch)
    type = FunctionType::get(ctx, {ptr, ptr, ptr, i64Type, ptr, i64Type, ptr, ptr}, {i32Type});
  const char *name = packed ? (cached ? "xf_forward_cached_packed" : "xf_forward_packed")
                            : (cached ? "xf_forward_cached" : "xf_forward");
  auto fn = func::FuncOp::create(top, forward.getLoc(), name, type);
  OpBuilder builder = OpBuilder::atBlockBegin(fn.addEntryBlock());
  b = &builder;
  loc = forward.getLoc();
  auto args = fn.getArguments();
  if ((cached && !cachePlan.cacheable) || (packed && !cachePlan.packable) ||
      (packed && cached && !cachePlan.packedCacheable)) {
    // Not runnable this way: the runtime re-runs xf_forward (or loops over
    // the sequences) instead.
    func::ReturnOp::create(builder, loc,
                           ValueRange{arith::ConstantIntOp::create(builder, loc,
                                                                   builder.getI32Type(), 1)
                                          .getResult()});
    b = nullptr;
    return success();
  }
  cachedMode = cached;
  packedMode = packed;
  numbers.clear();
  status = arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), 0);
  if (packed) {
    paramsArg = args[0], derivedArg = args[1], tokensArg = args[2], lengthsArg = args[3];
    startsArg = cached ? args[4] : Value();
    countArg = args[cached ? 5 : 4];
    outArg = args[cached ? 6 : 5], scratchArg = args[cached ? 7 : 6];
    cachesArg = cached ? args[8] : Value();
    sourceArg = Value(), lzArg = i64(0);
    if (cached)
      cacheRows = paddedRowsOf(args[9], i64(0));
    // ℓ = Σ ℓ_i rows; the profiler's attention context Σ ℓ_i·(start_i + ℓ_i) / ℓ.
    auto sums = scf::ForOp::create(
        builder, loc, i64(0), countArg, i64(1), ValueRange{i64(0), i64(0)},
        [&](OpBuilder &nested, Location, Value index, ValueRange acc) {
          OpBuilder::InsertionGuard guard(*b);
          b->setInsertionPointToStart(nested.getInsertionBlock());
          Value rows = loadI64(lengthsArg, index);
          Value context = cached ? Value(arith::AddIOp::create(
                                       *b, loc, loadI64(startsArg, index), rows))
                                 : rows;
          scf::YieldOp::create(
              *b, loc,
              ValueRange{arith::AddIOp::create(*b, loc, acc[0], rows),
                         arith::AddIOp::create(*b, loc, acc[1],
                                               arith::MulIOp::create(*b, loc, rows, context))});
        });
    lArg = sums.getResult(0);
    packedContextRows = arith::DivSIOp::create(
        builder, loc, sums.getResult(1), arith::MaxSIOp::create(builder, loc, lArg, i64(1)));
  } else if (cached) {
    paramsArg = args[0], derivedArg = args[1], tokensArg = args[2], lArg = args[3];
    startArg = args[4], outArg = args[5], scratchArg = args[6], cacheArg = args[7];
    sourceArg = Value(), lzArg = i64(0);
    cacheRows = paddedRowsOf(args[8], i64(0));
  } else {
    paramsArg = args[0], derivedArg = args[1], tokensArg = args[2], lArg = args[3];
    sourceArg = args[4], lzArg = args[5], outArg = args[6], scratchArg = args[7];
  }
  paddedRows = paddedRowsOf(lArg, lzArg);
  Operation *lastAttention = nullptr;
  forward.walk([&](AttentionOp op) { lastAttention = op; });
  tailValues.clear();
  inTail = false;
  bool compacted = false;
  for (Operation &op : forward.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      break;
    inTail = cached && lastAttention && lastAttention->isBeforeInBlock(&op) &&
             isActivation(op.getResult(0));
    if (inTail && packed && !compacted) {
      loc = op.getLoc();
      compactLastRows();
      compacted = true;
    }
    if (inTail) // before emitting: the op writes its one row at row 0
      tailValues.insert(op.getResult(0));
    if (failed(emitOp(&op)))
      return failure();
  }
  inTail = false;
  // A returned view (or a tensor that could not be written in place) is copied out.
  if (placements[result].storage != Storage::Output) {
    Placement &p = placements[result];
    loc = forward.getLoc();
    call(kernels->copy2d(), {pointerOf(result), i64(p.stride), outArg, i64(p.cols),
                             rowsOf(result), i64(p.cols)});
  }
  func::ReturnOp::create(builder, forward.getLoc(), status);
  b = nullptr;
  cachedMode = packedMode = false;
  return success();
}

void HostLowering::emitCacheBytes() {
  Type i64Type = IntegerType::get(ctx, 64);
  OpBuilder top = OpBuilder::atBlockEnd(program.module->getBody());
  auto fn = func::FuncOp::create(top, forward.getLoc(), "xf_cache_bytes",
                                 FunctionType::get(ctx, {i64Type}, {i64Type}));
  OpBuilder builder = OpBuilder::atBlockBegin(fn.addEntryBlock());
  b = &builder;
  loc = forward.getLoc();
  // ⌈positions⌉₁₆ rows per column keep every slot 64-byte aligned.
  Value rows = paddedRowsOf(fn.getArgument(0), i64(0));
  Value bytes = arith::MulIOp::create(builder, loc, rows, i64(4 * cachePlan.columns));
  func::ReturnOp::create(builder, loc, ValueRange{bytes});
  b = nullptr;
}

void HostLowering::emitScratchBytes() {
  Type i64Type = IntegerType::get(ctx, 64);
  OpBuilder top = OpBuilder::atBlockEnd(program.module->getBody());
  auto fn = func::FuncOp::create(top, forward.getLoc(), "xf_scratch_bytes",
                                 FunctionType::get(ctx, {i64Type, i64Type}, {i64Type}));
  OpBuilder builder = OpBuilder::atBlockBegin(fn.addEntryBlock());
  b = &builder;
  loc = forward.getLoc();
  Value padded = paddedRowsOf(fn.getArgument(0), fn.getArgument(1));
  Value bytes = arith::MulIOp::create(builder, loc, padded, i64(4 * plan.totalColumns));
  func::ReturnOp::create(builder, loc, ValueRange{arith::MaxSIOp::create(builder, loc, bytes, i64(64)).getResult()});
  b = nullptr;
}

/// A parameter may live in bfloat16 when every use reads it as a GEMM weight
/// or an embedding table: both kernels widen it exactly on load.
void HostLowering::chooseBf16Parameters() {
  if (!options.bf16Weights)
    return;
  llvm::StringSet<> names = bf16ParameterNames(forward);
  for (auto &entry : names)
    bf16Parameters.insert(parameterIndex.lookup(entry.getKey()));
}

LogicalResult HostLowering::run() {
  auto output = forward->getAttrOfType<StringAttr>("xf.output");
  FailureOr<TensorPlacement> placed = placeForward(forward);
  if (failed(placed))
    return failure();
  static_cast<TensorPlacement &>(*this) = std::move(*placed);
  blockParameters = blockParameterTypes(forward, options.weightBlocks);
  chooseBf16Parameters();
  OpBuilder top(ctx);
  program.module = ModuleOp::create(forward.getLoc());
  kernels = std::make_shared<LoopKernels>(*program.module);
  kernels->setDevice(options.cudaDevice);
  planPackedWeights();
  emitPrepare();
  cachePlan = planCache(forward, *this);
  for (auto [cached, packed] : {std::pair{false, false}, {true, false}, {false, true},
                                {true, true}})
    if (failed(emitForward(cached, packed)))
      return failure();
  emitScratchBytes();
  emitCacheBytes();
  program.deviceLoops = kernels->deviceKernels();

  ManifestInfo info;
  auto module = forward->getParentOfType<ModuleOp>();
  if (auto name = module->getAttrOfType<StringAttr>("xf.model"))
    info.model = name.str();
  info.output = output ? output.str() : "logits";
  info.encoderDecoder = encoderDecoder;
  info.hyperparameters = module->getAttrOfType<DictionaryAttr>("xf.hyperparameters");
  info.dOut = colsOf(result);
  forward.walk([&](TokenEmbedOp op) {
    info.vocab = std::max(info.vocab, op.getTable().getType().getDimSize(0));
  });
  forward.walk([&](PositionalEmbedOp op) {
    int64_t n = op.getTable().getType().getDimSize(0);
    info.maxPositions = info.maxPositions ? std::min(info.maxPositions, n) : n;
  });
  if (int64_t limit = hyperparameterPositionLimit(forward))
    info.maxPositions = limit;
  for (auto [i, entry] : llvm::enumerate(parameters))
    info.parameters.push_back(
        {entry.first, llvm::to_vector(entry.second.getShape()), "normal",
         blockParameters.count(entry.first) ? weightBlocksName(blockParameters.lookup(entry.first))
         : bf16Parameters.contains(i)       ? "bf16"
                                            : "f32"});
  // Norm gains start near one; biases and shifts near zero.
  forward.walk([&](Operation *op) {
    auto mark = [&](Value v, const char *init) {
      if (!v)
        return;
      if (auto param = v.getDefiningOp<ParameterOp>())
        info.parameters[parameterIndex[param.getName()]].init = init;
    };
    if (auto ln = dyn_cast<LayerNormOp>(op))
      mark(ln.getGamma(), "ones"), mark(ln.getBeta(), "zeros");
    if (auto rms = dyn_cast<RmsNormOp>(op))
      mark(rms.getGamma(), "ones");
  });
  for (Value v : derived) {
    auto type = cast<RankedTensorType>(v.getType());
    WeightBlocks blocks = blocksOf(v);
    info.derivedBytes.push_back(blocks != WeightBlocks::None
                                    ? type.getDimSize(0) * blockRowBytes(blocks, type.getDimSize(1))
                                    : type.getNumElements() * 4);
  }
  for (const PackedWeight &packed : packedWeights)
    info.derivedBytes.push_back(packedWeightBytes(packed.spec));
  info.kernels = sites;
  info.cached = cachePlan.cacheable;
  info.packed = cachePlan.packable;
  info.cachePositions = cachePlan.cacheable ? cachePlan.positions : 0;
  if (options.cudaDevice)
    info.device = "cuda";
  program.manifest = renderManifest(info);
  emitManifestGlobal(*program.module, program.manifest);
  return success();
}

//===----------------------------------------------------------------------===//
// Training: @loss_and_gradients → xf_train_step (docs/training.md)
//===----------------------------------------------------------------------===//

/// An op whose static-shaped result is a parameter's gradient or a part of
/// one: it adds into its accumulation target.
static bool isGradientSum(Operation *op) {
  return op->getNumResults() == 1 &&
         isa<WeightGradOp, RowSumOp, LayerNormGammaGradOp, RmsNormGammaGradOp, TokenEmbedGradOp,
             PositionalEmbedGradOp, SliceGradOp, AddOp>(op) &&
         cast<RankedTensorType>(op->getResult(0).getType()).hasStaticShape();
}

/// The transpose of a gradient (the gradient of a weight stored the other way
/// round): written whole into a slot of its own.
static bool isGradientTranspose(Operation *op) {
  auto transpose = dyn_cast<TransposeOp>(op);
  Operation *def = transpose ? transpose.getInput().getDefiningOp() : nullptr;
  return def && isGradientSum(def);
}

/// A static slice of a gradient (the per-head parts of a concatenated
/// weight): returned, it adds its part of the gradient into its own output.
static bool isGradientSlice(Operation *op) {
  auto slice = dyn_cast<SliceOp>(op);
  Operation *def = slice ? slice.getInput().getDefiningOp() : nullptr;
  return def && (isGradientSum(def) || isGradientTranspose(def)) &&
         cast<RankedTensorType>(slice.getType()).hasStaticShape();
}

/// Returned gradients accumulate into grads[i]. Going backwards, a static
/// gradient whose only user is a sum or a slice_grad with a target shares
/// that target (at the slice's offset), so tied tables, fused-weight slices
/// and the c_attn bias parts add into the output in place; any other gets
/// a Static slot of its own, zeroed at entry.
LogicalResult HostLowering::planAccumulation(func::ReturnOp ret) {
  auto shapeOf = [](Placement &t, Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    t.cols = colsOf(v);
    t.staticRows = type.getRank() == 2 ? type.getDimSize(0) : 1;
  };
  for (auto [i, g] : llvm::enumerate(ret.getOperands().drop_front())) {
    Operation *def = g.getDefiningOp();
    if (!def || !(isGradientSum(def) || isGradientSlice(def)))
      return ret.emitError("training: gradient ") << i << " is not computed by a gradient op";
    if (accumulation.count(g))
      return ret.emitError("training: one value is returned as two gradients");
    Placement t{Storage::Gradient, int64_t(i)};
    shapeOf(t, g);
    t.stride = t.cols;
    accumulation[g] = t;
  }
  for (Operation &op : llvm::reverse(forward.getBody().front().getOperations())) {
    bool transpose = isGradientTranspose(&op);
    if (!(isGradientSum(&op) || transpose) || accumulation.count(op.getResult(0))) {
      if (transpose)
        return op.emitError("training: a transposed gradient is returned directly");
      continue;
    }
    Value v = op.getResult(0);
    auto type = cast<RankedTensorType>(v.getType());
    Placement t;
    Operation *user = v.hasOneUse() && !transpose ? *v.getUsers().begin() : nullptr;
    auto target = user && isa<AddOp, SliceGradOp>(user) ? accumulation.find(user->getResult(0))
                                                        : accumulation.end();
    if (target != accumulation.end()) {
      t = target->second;
      if (auto slice = dyn_cast<SliceGradOp>(user)) {
        bool rowsOfMatrix = type.getRank() == 2 && slice.getAxis() == 0;
        t.colOffset += slice.getOffset() * (rowsOfMatrix ? t.stride : 1);
      }
      folded.insert(v);
    } else {
      t = Placement{Storage::Static, staticFloats};
      t.stride = colsOf(v);
      staticFloats += (type.getNumElements() + 15) / 16 * 16;
    }
    shapeOf(t, v);
    accumulation[v] = t;
  }
  return success();
}

LogicalResult HostLowering::placeTraining() {
  for (BlockArgument arg : forward.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() != 1 || !type.getElementType().isInteger(32) ||
        arg.getArgNumber() > 1)
      return forward.emitError("@loss_and_gradients takes token ids and target ids, "
                               "tensor<?xi32> each");
    Placement p{Storage::Tokens, arg.getArgNumber()};
    p.rows = Rows::Target;
    placements[arg] = p;
  }
  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  if (ret.getNumOperands() < 1 || !ret.getOperand(0).getDefiningOp<CrossEntropyOp>())
    return ret.emitError("@loss_and_gradients must return the loss (xf.cross_entropy) first");
  if (failed(planAccumulation(ret)))
    return failure();
  int64_t staticSlots = staticFloats;

  // Weight gradients run in chunks of chunkRows positions: a GEMM with
  // K = chunkRows over the chunk's rows, transposed and zero-padded, that adds
  // into the gradient (its residual). The chunk follows the longest sequence
  // the model takes, so short sequences do not pay for a long chunk.
  int64_t limit = hyperparameterPositionLimit(forward);
  forward.walk([&](PositionalEmbedOp op) { limit = op.getTable().getType().getDimSize(0); });
  chunkRows = limit > 0 ? std::clamp<int64_t>((limit + 15) / 16 * 16, 16, 256) : 256;
  forward.walk([&](GemmOp gemm) {
    if (auto attr = gemm.getScheduleAttr())
      chunkSchedule = gemmScheduleOf(attr);
  });
  chunkSchedule.kBlock = chunkRows;
  int64_t leftFloats = 0, rightFloats = 0;
  int64_t index = 0;
  for (Operation &op : forward.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      continue;
    if (failed(placeOp(&op, index++)))
      return failure();
    if (auto grad = dyn_cast<WeightGradOp>(op)) {
      bool t = grad.getTransposeResult();
      leftFloats = std::max(leftFloats, chunkRows * colsOf(t ? grad.getGrad() : grad.getInput()));
      rightFloats = std::max(rightFloats, chunkRows * colsOf(t ? grad.getInput() : grad.getGrad()));
    }
  }
  chunkLeftOffset = staticFloats;
  staticFloats += (leftFloats + 15) / 16 * 16;
  chunkRightOffset = staticFloats;
  staticFloats += (rightFloats + 15) / 16 * 16;
  zeroedFloats = staticSlots;
  plan = planBuffers(requests);
  return success();
}

void HostLowering::accumulateInto(Value target, int64_t floatOffset, Value in) {
  Placement &t = placements[target], &s = placements[in];
  call(kernels->accumulate2d(),
       {pointerOf(in), i64(s.stride), offsetPtr(pointerOf(target), i64(floatOffset)),
        i64(t.stride), i64(s.staticRows), i64(s.cols)});
}

/// Full chunks of chunkRows positions, then the rest in chunks of a quarter
/// of that (at least 16 rows), so a short sequence pays for at most
/// chunkRows/4 − 1 padded rows rather than chunkRows − 1.
LogicalResult HostLowering::emitWeightGrad(WeightGradOp op) {
  Value v = op.getResult();
  bool transposed = op.getTransposeResult();
  Value left = transposed ? op.getGrad() : op.getInput();
  Value right = transposed ? op.getInput() : op.getGrad();
  const int64_t m = colsOf(left), n = colsOf(right);
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Value target = pointerOf(v), rows = rowsOf(left);
  int64_t stride = placements[v].stride;
  Value leftChunk = offsetPtr(scratchArg, i64(chunkLeftOffset));
  Value rightChunk = offsetPtr(scratchArg, i64(chunkRightOffset));
  // The copies run in tasks over their rows (each writes rows of its own).
  kernels->useSchedule(defaultLoopSchedule(chunkRows));
  auto chunks = [&](Value begin, Value end, int64_t c) {
    GemmKernelSpec spec;
    spec.K = c, spec.N = n, spec.hasResidual = true, spec.schedule = chunkSchedule;
    spec.schedule.kBlock = c;
    spec.name = kernelName(gemmKey(spec), "xf_gemm_", program.gemms, spec);
    auto loop = scf::ForOp::create(
        *b, loc, begin, end, i64(c), ValueRange{status},
        [&](OpBuilder &nested, Location, Value first, ValueRange carried) {
          OpBuilder::InsertionGuard guard(*b);
          b->setInsertionPointToStart(nested.getInsertionBlock());
          Value stack = LLVM::StackSaveOp::create(*b, loc, ptr);
          status = carried[0];
          Value valid = arith::MinSIOp::create(*b, loc, i64(c),
                                               arith::SubIOp::create(*b, loc, rows, first));
          call(kernels->transposeChunk(), {rowPointer(left, first), i64(placements[left].stride),
                                           leftChunk, valid, i64(c), i64(m)});
          call(kernels->padChunk(), {rowPointer(right, first), i64(placements[right].stride),
                                     rightChunk, valid, i64(c), i64(n)});
          HalideBufferArg gradient{target, {{i64(n), i64(1)}, {i64(m), i64(stride)}}};
          SmallVector<HalideBufferArg> args{
              {leftChunk, {{i64(c), i64(1)}, {i64(m), i64(c)}}},
              {rightChunk, {{i64(n), i64(1)}, {i64(c), i64(n)}}},
              gradient, gradient};
          status = arith::OrIOp::create(
              *b, loc, status, callHalidePipeline(*b, loc, *program.module, spec.name, args));
          LLVM::StackRestoreOp::create(*b, loc, stack);
          scf::YieldOp::create(*b, loc, ValueRange{status});
        });
    status = loop.getResult(0);
  };
  const int64_t small = std::max<int64_t>(16, chunkRows / 4);
  if (small >= chunkRows) {
    chunks(i64(0), rows, chunkRows);
    return success();
  }
  Value full = arith::MulIOp::create(
      *b, loc, arith::DivSIOp::create(*b, loc, rows, i64(chunkRows)), i64(chunkRows));
  chunks(i64(0), full, chunkRows);
  chunks(full, rows, small);
  return success();
}

LogicalResult HostLowering::emitBackwardKernel(Operation *op) {
  Value v = op->getResult(0);
  Storage storage = placements[v].storage;
  if (storage == Storage::Parameter || storage == Storage::Derived || storage == Storage::View)
    return success();
  if (auto grad = dyn_cast<WeightGradOp>(op))
    return emitWeightGrad(grad);
  auto dense = [&](Value t) -> FailureOr<Value> {
    if (failed(requireDense(op, t)))
      return failure();
    return pointerOf(t);
  };
  auto strided = [&](Value t) -> std::pair<Value, Value> {
    return {pointerOf(t), i64(placements[t].stride)};
  };
  auto type = cast<RankedTensorType>(v.getType());
  int64_t width = type.getRank() ? type.getShape().back() : 0;
  LoopScheduleAttr attr = loopScheduleAttrOf(op);
  kernels->useSchedule(attr ? loopScheduleOf(attr) : defaultLoopSchedule(std::max<int64_t>(width, 1)));

  if (auto transpose = dyn_cast<TransposeOp>(op); transpose && accumulation.count(v)) {
    FailureOr<Value> in = dense(transpose.getInput());
    if (failed(in))
      return failure();
    Placement &from = placements[transpose.getInput()];
    call(kernels->transpose2d(), {*in, pointerOf(v), i64(from.staticRows), i64(from.cols)});
    return success();
  }
  if (auto slice = dyn_cast<SliceOp>(op); slice && accumulation.count(v)) {
    Placement &in = placements[slice.getInput()];
    bool rowsOfMatrix = type.getRank() == 2 && slice.getAxis() == 0;
    Value from = offsetPtr(pointerOf(slice.getInput()),
                           i64(slice.getOffset() * (rowsOfMatrix ? in.stride : 1)));
    Placement &out = placements[v];
    call(kernels->accumulate2d(), {from, i64(in.stride), pointerOf(v), i64(out.stride),
                                   i64(out.staticRows), i64(out.cols)});
    return success();
  }
  if (auto add = dyn_cast<AddOp>(op); add && type.hasStaticShape()) {
    for (Value operand : {add.getLhs(), add.getRhs()})
      if (!folded.contains(operand))
        accumulateInto(v, 0, operand);
    return success();
  }
  if (auto slice = dyn_cast<SliceGradOp>(op)) {
    Value in = slice.getGrad();
    if (type.hasStaticShape()) {
      if (!folded.contains(in)) {
        bool rowsOfMatrix = type.getRank() == 2 && slice.getAxis() == 0;
        accumulateInto(v, slice.getOffset() * (rowsOfMatrix ? placements[v].stride : 1), in);
      }
      return success();
    }
    if (slice.getAxis() != 1)
      return op->emitError("training: slice_grad of activations along rows is not lowered");
    FailureOr<Value> src = dense(in);
    if (failed(src))
      return failure();
    call(kernels->sliceGrad(colsOf(in), width, slice.getOffset()),
         {*src, pointerOf(v), rowsOf(in)});
    return success();
  }
  if (auto ce = dyn_cast<CrossEntropyOp>(op)) {
    FailureOr<Value> z = dense(ce.getLogits());
    if (failed(z))
      return failure();
    call(kernels->crossEntropy(colsOf(ce.getLogits())),
         {*z, pointerOf(ce.getTargets()), lossArg, rowsOf(ce.getLogits())});
    return success();
  }
  if (auto ce = dyn_cast<CrossEntropyGradOp>(op)) {
    FailureOr<Value> z = dense(ce.getLogits());
    if (failed(z))
      return failure();
    call(kernels->crossEntropyGrad(width),
         {*z, pointerOf(ce.getTargets()), pointerOf(v), rowsOf(v)});
    return success();
  }
  // Norms: (x, dy, [γ]) → dx, or the gain's gradient.
  auto norm = [&](Value x, Value dy, Value gamma, func::FuncOp kernel) -> LogicalResult {
    FailureOr<Value> xp = dense(x), dyp = dense(dy);
    if (failed(xp) || failed(dyp))
      return failure();
    SmallVector<Value> args{*xp, *dyp};
    if (gamma)
      args.push_back(pointerOf(gamma));
    args.append({pointerOf(v), rowsOf(x)});
    call(kernel, args);
    return success();
  };
  if (auto ln = dyn_cast<LayerNormGradOp>(op))
    return norm(ln.getInput(), ln.getGrad(), ln.getGamma(),
                kernels->normalizeGrad(width, ln.getEpsilon().convertToDouble(), true,
                                       bool(ln.getGamma())));
  if (auto rms = dyn_cast<RmsNormGradOp>(op))
    return norm(rms.getInput(), rms.getGrad(), rms.getGamma(),
                kernels->normalizeGrad(width, rms.getEpsilon().convertToDouble(), false,
                                       bool(rms.getGamma())));
  if (auto ln = dyn_cast<LayerNormGammaGradOp>(op))
    return norm(ln.getInput(), ln.getGrad(), Value(),
                kernels->normalizeGammaGrad(width, ln.getEpsilon().convertToDouble(), true));
  if (auto rms = dyn_cast<RmsNormGammaGradOp>(op))
    return norm(rms.getInput(), rms.getGrad(), Value(),
                kernels->normalizeGammaGrad(width, rms.getEpsilon().convertToDouble(), false));
  if (auto sum = dyn_cast<RowSumOp>(op)) {
    FailureOr<Value> in = dense(sum.getInput());
    if (failed(in))
      return failure();
    call(kernels->rowSum(width), {*in, pointerOf(v), rowsOf(sum.getInput())});
    return success();
  }
  auto activation = [&](Value x, Value dy, ActivationGradKind kind) -> LogicalResult {
    auto [xp, xs] = strided(x);
    FailureOr<Value> dyp = dense(dy);
    if (failed(dyp))
      return failure();
    call(kernels->activationGrad(width, kind), {xp, xs, *dyp, pointerOf(v), rowsOf(v)});
    return success();
  };
  if (auto g = dyn_cast<ReluGradOp>(op))
    return activation(g.getInput(), g.getGrad(), ActivationGradKind::Relu);
  if (auto g = dyn_cast<SiluGradOp>(op))
    return activation(g.getInput(), g.getGrad(), ActivationGradKind::Silu);
  if (auto g = dyn_cast<GeluGradOp>(op))
    return activation(g.getInput(), g.getGrad(),
                      g.getApproximation() == GeluApproximation::tanh
                          ? ActivationGradKind::GeluTanh
                          : ActivationGradKind::GeluErf);
  if (auto rope = dyn_cast<RopeGradOp>(op)) {
    auto [in, stride] = strided(rope.getGrad());
    int64_t heads = rope.getHeads();
    auto pairs = rope.getPairing() == RopePairing::adjacent ? RotaryPairs::Adjacent
                                                            : RotaryPairs::Halves;
    call(kernels->rotaryRows(heads, width / heads, pairs, rope.getBase().convertToDouble(),
                             /*inverse=*/true),
         {in, stride, pointerOf(v), rowsOf(v), i64(0)});
    return success();
  }
  if (auto embed = dyn_cast<TokenEmbedGradOp>(op)) {
    FailureOr<Value> dy = dense(embed.getGrad());
    if (failed(dy))
      return failure();
    call(kernels->tokenEmbedGrad(width), {pointerOf(embed.getTokens()), *dy, pointerOf(v),
                                          i64(placements[v].stride), rowsOf(embed.getGrad())});
    return success();
  }
  if (auto pos = dyn_cast<PositionalEmbedGradOp>(op)) {
    FailureOr<Value> dy = dense(pos.getGrad());
    if (failed(dy))
      return failure();
    call(kernels->positionGrad(width),
         {*dy, pointerOf(v), i64(placements[v].stride), rowsOf(pos.getGrad())});
    return success();
  }
  if (auto attn = dyn_cast<AttentionGradOp>(op)) {
    if (attn.getMask() == MaskKind::cross)
      return op->emitError("training: cross-attention's backward is not lowered");
    int64_t heads = attn.getHeads(), kvHeads = attn.getKeyValueHeads();
    int64_t dK = colsOf(attn.getQuery()) / heads, dV = colsOf(attn.getValue()) / kvHeads;
    double scale = attn.getScale() ? attn.getScale()->convertToDouble()
                                   : 1.0 / std::sqrt(double(dK));
    auto [q, qs] = strided(attn.getQuery());
    auto [k, ks] = strided(attn.getKey());
    auto [val, vs] = strided(attn.getValue());
    auto [dy, dys] = strided(attn.getGrad());
    Value work = offsetPtr(offsetPtr(scratchArg, i64(staticFloats)),
                           arith::MulIOp::create(*b, loc, paddedRows,
                                                 i64(plan.columnOffset[workRequests[op]])));
    call(kernels->attentionGrad(heads, kvHeads, dK, dV, attn.getMask() == MaskKind::causal,
                                scale),
         {q, qs, k, ks, val, vs, dy, dys, pointerOf(attn.getQueryGrad()),
          pointerOf(attn.getKeyGrad()), pointerOf(attn.getValueGrad()), work,
          rowsOf(attn.getQuery()), i64(kvHeads)});
    return success();
  }
  // A forward op.
  ManifestInfo::Kernel site;
  return emitKernel(op, site);
}

LogicalResult HostLowering::emitTrainStep() {
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64Type = IntegerType::get(ctx, 64);
  OpBuilder top = OpBuilder::atBlockEnd(program.module->getBody());
  // (params, derived, tokens, targets, l, loss, grads, scratch)
  auto fn = func::FuncOp::create(
      top, forward.getLoc(), "xf_train_step",
      FunctionType::get(ctx, {ptr, ptr, ptr, ptr, i64Type, ptr, ptr, ptr},
                        {IntegerType::get(ctx, 32)}));
  OpBuilder builder = OpBuilder::atBlockBegin(fn.addEntryBlock());
  b = &builder;
  loc = forward.getLoc();
  auto args = fn.getArguments();
  paramsArg = args[0], derivedArg = args[1], tokensArg = args[2], targetsArg = args[3];
  lArg = args[4], lossArg = args[5], gradsArg = args[6], scratchArg = args[7];
  sourceArg = Value(), lzArg = i64(0);
  paddedRows = paddedRowsOf(lArg, lzArg);
  status = arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), 0);
  if (zeroedFloats)
    LLVM::MemsetOp::create(builder, loc, scratchArg,
                           arith::ConstantIntOp::create(builder, loc, builder.getI8Type(), 0),
                           i64(4 * zeroedFloats), /*isVolatile=*/false);
  for (Operation &op : forward.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      break;
    if (failed(emitOp(&op)))
      return failure();
  }
  func::ReturnOp::create(builder, loc, status);
  b = nullptr;
  return success();
}

void HostLowering::emitTrainScratchBytes() {
  Type i64Type = IntegerType::get(ctx, 64);
  OpBuilder top = OpBuilder::atBlockEnd(program.module->getBody());
  auto fn = func::FuncOp::create(top, forward.getLoc(), "xf_train_scratch_bytes",
                                 FunctionType::get(ctx, {i64Type}, {i64Type}));
  OpBuilder builder = OpBuilder::atBlockBegin(fn.addEntryBlock());
  b = &builder;
  loc = forward.getLoc();
  Value arena = arith::MulIOp::create(builder, loc, paddedRowsOf(fn.getArgument(0), i64(0)),
                                      i64(plan.totalColumns));
  Value bytes = arith::MulIOp::create(
      builder, loc, arith::AddIOp::create(builder, loc, arena, i64(staticFloats)), i64(4));
  func::ReturnOp::create(builder, loc,
                         ValueRange{arith::MaxSIOp::create(builder, loc, bytes, i64(64)).getResult()});
  b = nullptr;
}

LogicalResult HostLowering::runTraining(HostLowering &forwardLowering) {
  training = true;
  kernels = forwardLowering.kernels;
  kernelNames = forwardLowering.kernelNames;
  parameterIndex = forwardLowering.parameterIndex;
  parameters = forwardLowering.parameters;
  size_t known = parameters.size();
  if (failed(placeTraining()))
    return failure();
  if (parameters.size() != known)
    return forward.emitError("@loss_and_gradients reads a parameter that @forward does not");
  auto names = forward->getAttrOfType<ArrayAttr>("xf.gradients");
  if (!names || names.size() + 1 != forward.getFunctionType().getNumResults())
    return forward.emitError("@loss_and_gradients needs xf.gradients naming each gradient");
  llvm::json::Array gradients;
  for (Attribute name : names) {
    auto text = dyn_cast<StringAttr>(name);
    if (!text || !parameterIndex.count(text.getValue()))
      return forward.emitError("xf.gradients names a tensor that is not a parameter");
    gradients.push_back(llvm::json::Object{{"name", text.getValue()},
                                           {"parameter", parameterIndex.lookup(text.getValue())}});
  }
  emitPrepare("xf_train_prepare");
  if (failed(emitTrainStep()))
    return failure();
  emitTrainScratchBytes();
  llvm::json::Array derivedBytes;
  for (Value v : derived)
    derivedBytes.push_back(cast<RankedTensorType>(v.getType()).getNumElements() * 4);
  llvm::json::Object manifest{{"gradients", std::move(gradients)},
                              {"derived", std::move(derivedBytes)},
                              {"chunk_rows", chunkRows}};
  std::string json;
  llvm::raw_string_ostream os(json);
  os << llvm::json::Value(std::move(manifest));
  emitManifestGlobal(*program.module, json, "xf_training_manifest");
  return success();
}

} // namespace

FailureOr<HostProgram> mlir::xf::lowerToHost(ModuleOp fused, const HostOptions &options) {
  auto forward = fused.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return fused.emitError("no func.func @forward to lower");
  fused.getContext()->loadDialect<arith::ArithDialect, func::FuncDialect, LLVM::LLVMDialect,
                                  math::MathDialect, scf::SCFDialect>();
  HostProgram program;
  HostLowering lowering(forward, program, options);
  if (failed(lowering.run()))
    return failure();
  if (auto train = fused.lookupSymbol<func::FuncOp>("loss_and_gradients")) {
    HostLowering training(train, program, options);
    if (failed(training.runTraining(lowering)))
      return failure();
  }
  return program;
}
