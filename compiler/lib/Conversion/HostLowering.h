//===- HostLowering.h - the emitter of the host entry points ---*- C++ -*-===//
//
// Internal to compiler/lib/Conversion: the state of one function's host
// lowering (lowerToHost, LowerToHost.h), whose methods are defined by concern
// in LowerToHost.cpp (the run, kernel names, packed weights), EntryPoints.cpp
// (the ABI's functions), KernelPatterns.cpp (the lowering of an entry
// point's body: one conversion pattern per op type), the kernel emitters the
// patterns call — one per op type, listed in KernelEmitters.cpp
// (GemmEmitter.cpp, AttentionEmitter.cpp, LoopKernelEmitters.cpp) and
// TrainingEmitters.cpp — LowerTraining.cpp (the training step's entry
// points), BufferArguments.cpp, ProfilingHooks.cpp and Manifest.cpp. The
// analyses it reads (Placement.h, CachePlan.h) are computed before it.
//
//===----------------------------------------------------------------------===//

#ifndef XF_LIB_CONVERSION_HOSTLOWERING_H
#define XF_LIB_CONVERSION_HOSTLOWERING_H

#include "Manifest.h"
#include "xf/Codegen/HalideCalls.h"
#include "xf/Codegen/KernelSchedules.h"
#include "xf/Codegen/KernelSpecs.h"
#include "xf/Codegen/LoopKernels.h"
#include "xf/Conversion/CachePlan.h"
#include "xf/Conversion/LowerToHost.h"
#include "xf/Conversion/Placement.h"
#include "xf/IR/XfOps.h"

#include "llvm/ADT/DenseSet.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/MapVector.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::xf {

struct CudaAttentionAppend; // CudaAttentionCall.h

/// What lowerToHost builds: the host module, the kernels its entry points
/// call (declared at its end once every function is emitted) and the op of
/// each kernel call site, by site index (the index the profiling hooks get):
/// xf_forward's calls, then xf_forward_cached's.
struct HostBuild {
  OwningOpRef<ModuleOp> module;
  std::vector<GemmKernelSpec> gemms;
  std::vector<AttentionKernelSpec> attentions;
  std::vector<DeviceLoopKernelSpec> deviceLoops;
  std::vector<Operation *> siteOps;
};

/// The conversion pattern of the kernel op type OpT (KernelPatterns.cpp).
template <typename OpT> struct KernelPattern;

/// Emits the entry points from the analyses (Placement.h, CachePlan.h),
/// computed once before (lowerToHost) and only read: every emitter and
/// pattern queries them.
class HostLowering {
  const TensorPlacement &placed;
  const CachePlan &cachePlan;
  /// placements[v]: v's placement (read-only).
  struct Placements {
    const TensorPlacement &placed;
    const Placement &operator[](Value tensor) const { return placed.placementOf(tensor); }
  } placements{placed};
  // What the emitters read of the placement, by the names they use.
  const llvm::StringMap<int64_t> &parameterIndex = placed.parameterIndex;
  const std::vector<std::pair<std::string, RankedTensorType>> &parameters = placed.parameters;
  const std::vector<Value> &derived = placed.derived;
  const BufferPlan &plan = placed.plan;
  const Value result = placed.result;
  const bool encoderDecoder = placed.encoderDecoder, training = placed.training;
  const llvm::DenseMap<Value, Placement> &accumulation = placed.accumulation;
  const llvm::DenseMap<Operation *, int64_t> &workRequests = placed.workRequests;
  const llvm::DenseSet<Value> &folded = placed.folded;
  const int64_t staticFloats = placed.staticFloats, zeroedFloats = placed.zeroedFloats;
  const int64_t chunkRows = placed.chunkRows, chunkLeftOffset = placed.chunkLeftOffset,
                chunkRightOffset = placed.chunkRightOffset;
  bool isActivation(Value tensor) const { return placed.isActivation(tensor); }
  Value rootOf(Value tensor) const { return placed.rootOf(tensor); }

public:
  /// The lowering of @forward (and, with `module`'s @forward_packed, of the
  /// packed entry points) or, by runTraining, of @loss_and_gradients.
  HostLowering(func::FuncOp forward, HostBuild &program, const HostOptions &options,
               const TensorPlacement &placed, const CachePlan &cachePlan,
               const ModulePlacement *module = nullptr)
      : placed(placed), cachePlan(cachePlan),
        forwardPacked(module ? module->forwardPacked : nullptr),
        packedSegments(module ? module->packedSegments : Value()),
        packedSourceSegments(module ? module->packedSourceSegments : Value()),
        forwardOpOf(module ? &module->forwardOpOf : nullptr), forward(forward),
        program(program), options(options), ctx(forward.getContext()) {}

  LogicalResult run();
  /// After `forwardLowering` lowered @forward into the same program: this
  /// lowering's function, @loss_and_gradients, becomes xf_train_step,
  /// xf_train_prepare and xf_train_scratch_bytes (docs/training.md).
  LogicalResult runTraining(HostLowering &forwardLowering);

  // Kernel emitters: one per op family, each given the op's result and what
  // every kernel call writes (KernelEmitters.cpp lists them by op type).
  struct KernelResult {
    Value value; // the op's result
    Value out;   // where the kernel writes it
    Value rows;  // its rows in this entry point
    int64_t width;
  };
  struct KernelEmitter;
  struct BackwardEmitter;
  /// Adds the op type's conversion pattern (KernelPattern<OpT>), calling the
  /// forward or the training step's emitter of the op type.
  using PatternAdder = void (*)(RewritePatternSet &, HostLowering &, const KernelEmitter *,
                                const BackwardEmitter *, PatternBenefit);
  /// An op type's emitter.
  struct KernelEmitter {
    LogicalResult (*emit)(HostLowering &, Operation *, const KernelResult &, xfrt::KernelSpec &);
    /// An scf loop kernel: emitted under the op's loop schedule and noted as
    /// a "loop" site named after the kernel it called.
    bool loop;
    /// The pattern rooted at the op type (KernelPatterns.cpp).
    PatternAdder addPattern;
  };
  /// A training op type's emitter (TrainingEmitters.cpp).
  struct BackwardEmitter {
    LogicalResult (*emit)(HostLowering &, Operation *);
    /// A loop kernel: emitted under its loop schedule (or its width's default).
    bool loop;
    PatternAdder addPattern;
  };

  /// What the pattern of `clone`'s op type does (KernelPatterns.cpp): the
  /// type's emitter (`forwardEmitter`, in the training step also
  /// `backwardEmitter`; none for an op type without one) emits the kernel
  /// call of the op `clone` repeats in its place, and the clone goes (an
  /// xf.length replaced by its number). An emitter's error is noted in
  /// `loweringFailed`, and the clones after it go without code, so that the
  /// emitter's message is the only one.
  LogicalResult rewriteClone(Operation *clone, ConversionPatternRewriter &rewriter,
                             const KernelEmitter *forwardEmitter,
                             const BackwardEmitter *backwardEmitter);

private:
  void emitPrepare(llvm::StringRef name = "xf_prepare");
  /// The kernel spec of a GEMM, named (layers share kernels), with
  /// packedWeight when its weight is a constant the kernel can take packed.
  GemmKernelSpec gemmSpecOf(GemmOp gemm);
  /// On the GPU, the attention whose flash-decoding merge `gemm` does at M <= 4 instead of a
  /// merge launch (CudaRangeMerge.cpp); null where it reads its input as it is.
  AttentionOp rangeMergeSource(GemmOp gemm);
  void planPackedWeights();
  HalideBufferArg packedWeightArg(int64_t index);
  LogicalResult emitForward(bool cached, bool packed);
  void bindPackedForwardArguments(ValueRange args, bool cached);
  void emitCacheBytes();
  /// An entry point's body (KernelPatterns.cpp): `source`'s ops (its return
  /// left out) cloned at the end of `body`, each clone then lowered by the
  /// conversion pattern of its op type, which emits its kernel call in its
  /// place (as MLIR's Toy lowers to affine loops). Fails when an op has no
  /// host code.
  LogicalResult lowerBody(func::FuncOp source, Block &body);
  /// The patterns of lowerBody: one per op type with an emitter (the
  /// training step's too when `training`), and one for the other ops.
  std::unique_ptr<FrozenRewritePatternSet> patterns;
  /// Each clone of the body being lowered → the op of `source` it repeats:
  /// the analyses (placement, cache plan) describe `source`'s values.
  llvm::DenseMap<Operation *, Operation *> originalOf;
  bool loweringFailed = false;
  /// The op's kernel call by `emitter` (none: an op without a kernel), or
  /// nothing when its result needs no code (a weight, a view).
  LogicalResult emitOp(Operation *op, const KernelEmitter *emitter);
  /// Before each op of xf_forward_cached: whether it is in the tail after
  /// the last attention (then a packed batch's last rows are compacted first).
  void enterTail(Operation *op);
  Operation *lastAttention = nullptr;
  bool compacted = false;
  /// xf.length: a number xf_forward computes before the kernels that read
  /// it; the arith ops on numbers stay as cloned (`numbers` maps each of the
  /// source's numbers to its value in the entry point).
  LogicalResult emitNumber(Operation *op);
  IRMapping numbers;
  /// The kernel call of one op in the entry point being emitted by `emitter`,
  /// its op type's (KernelEmitters.cpp; none: an error), noting the call in
  /// `site`.
  LogicalResult emitKernel(Operation *op, const KernelEmitter *emitter, xfrt::KernelSpec &site);

  template <typename OpT>
  static void addKernelPattern(RewritePatternSet &set, HostLowering &lowering,
                               const KernelEmitter *forward, const BackwardEmitter *backward,
                               PatternBenefit benefit) {
    set.add<KernelPattern<OpT>>(set.getContext(), lowering, forward, backward, benefit);
  }
  template <typename OpT,
            LogicalResult (HostLowering::*Method)(OpT, const KernelResult &, xfrt::KernelSpec &)>
  static void addEmitter(llvm::DenseMap<TypeID, KernelEmitter> &table, bool loop = true) {
    table[TypeID::get<OpT>()] = {[](HostLowering &lowering, Operation *op, const KernelResult &r,
                                    xfrt::KernelSpec &site) {
                                   return (lowering.*Method)(cast<OpT>(op), r, site);
                                 },
                                 loop, &addKernelPattern<OpT>};
  }
public:
  static const llvm::DenseMap<TypeID, KernelEmitter> &forwardEmitters();
  static const llvm::DenseMap<TypeID, BackwardEmitter> &backwardEmitters();
private:
  // GemmEmitter.cpp
  LogicalResult emitGemm(GemmOp op, const KernelResult &r, xfrt::KernelSpec &site);
  // AttentionEmitter.cpp
  struct AttentionCall;
  LogicalResult emitAttention(AttentionOp op, const KernelResult &r, xfrt::KernelSpec &site);
  void emitBatchedDecodeStep(const AttentionCall &call);
  void emitCudaBatchedDecodeStep(const AttentionCall &call);
  Value emitCachedAttention(const AttentionCall &call, HalideBufferArg query, Value cache,
                            Value position, Value newKeys, Value newValues, Value rows,
                            HalideBufferArg out);
  void emitSegmentedAttention(AttentionCall &call);
  void emitPerSequenceAttention(const AttentionCall &call);
  void emitWholeAttention(const AttentionCall &call);
  /// The attention kernel `spec.name`'s call with (q, k, v, out); on the GPU with
  /// flash-decoding's buffer after the scratch arena, and `append`, a cached attention's new
  /// K/V rows (CudaAttentionCall.h).
  Value callAttentionPipeline(const AttentionKernelSpec &spec, ArrayRef<HalideBufferArg> args,
                              const CudaAttentionAppend *append = nullptr,
                              bool mergeInConsumer = false);
  /// Floats after the scratch arena for the GPU attentions' partial results (the largest).
  int64_t deviceAttentionFloats = 0;
  /// Floats there for the tensor-core GEMMs' split-K partials (the largest; CudaGemmCall.h).
  /// One kernel's partials at a time (the kernels run in order on one stream): the region is
  /// the larger of the two.
  int64_t deviceGemmFloats = 0;
  /// The device address after the scratch arena: the partial results of the call at hand.
  Value devicePartials() {
    Value arena = arith::MulIOp::create(*b, loc, paddedRows, i64(plan.totalColumns));
    return offsetPtr(offsetPtr(scratchArg, i64(staticFloats)), arena);
  }
  // LoopKernelEmitters.cpp: scf loop kernels (LoopKernels.h).
  LogicalResult emitSilu(SiluOp op, const KernelResult &r, xfrt::KernelSpec &site);
  LogicalResult emitMul(MulOp op, const KernelResult &r, xfrt::KernelSpec &site);
  LogicalResult emitRope(RopeOp op, const KernelResult &r, xfrt::KernelSpec &site);
  LogicalResult emitTokenEmbed(TokenEmbedOp op, const KernelResult &r, xfrt::KernelSpec &site);
  LogicalResult emitPositionalEmbed(PositionalEmbedOp op, const KernelResult &r,
                                    xfrt::KernelSpec &site);
  LogicalResult emitSinusoidalEmbed(SinusoidalEmbedOp op, const KernelResult &r,
                                    xfrt::KernelSpec &site);
  LogicalResult emitAdd(AddOp op, const KernelResult &r, xfrt::KernelSpec &site);
  /// On the GPU, token_embed(W_e, x) + pos_embed(W_p, x) (GPT-2's e_t + W_p[t]) is one
  /// kernel: the gather, the positions and their sum, two launches fewer a step. The
  /// embeddings, used only by the sum, emit nothing of their own. Not for offsets, block tables
  /// or bf16 positions; packed segments only where the step table gives each row's position.
  struct EmbeddingSum {
    TokenEmbedOp tokens;
    PositionalEmbedOp positions;
  };
  std::optional<EmbeddingSum> fusedEmbeddingSum(AddOp add);
  /// Whether `op` is an embedding whose sum's fused kernel computes it.
  bool inFusedEmbeddingSum(Operation *op);
  LogicalResult emitEmbeddingSum(AddOp add, EmbeddingSum sum, const KernelResult &r);
  LogicalResult emitRelu(ReluOp op, const KernelResult &r, xfrt::KernelSpec &site);
  LogicalResult emitGelu(GeluOp op, const KernelResult &r, xfrt::KernelSpec &site);
  LogicalResult emitScale(ScaleOp op, const KernelResult &r, xfrt::KernelSpec &site);
  LogicalResult emitSoftmax(SoftmaxOp op, const KernelResult &r, xfrt::KernelSpec &site);
  LogicalResult emitLayerNorm(LayerNormOp op, const KernelResult &r, xfrt::KernelSpec &site);
  LogicalResult emitRmsNorm(RmsNormOp op, const KernelResult &r, xfrt::KernelSpec &site);
  /// The tensor operands of a loop kernel that reads them densely (index
  /// operands and a packed batch's lengths left out): an error where one is a
  /// column slice.
  FailureOr<SmallVector<Value>> denseInputs(Operation *op);
  /// A column slice read in place: (pointer, row stride).
  std::pair<Value, Value> stridedPointer(Value tensor) {
    return {pointerOf(tensor), i64(placements[tensor].stride)};
  }
  FailureOr<Value> densePointer(Operation *op, Value tensor) {
    if (failed(requireDense(op, tensor)))
      return failure();
    return pointerOf(tensor);
  }
  /// Adds a kernel's status code to the entry point's.
  void orStatus(Value rc) { status = arith::OrIOp::create(*b, loc, status, rc); }
  void emitScratchBytes();
  /// The manifest (docs/abi.md) of what run() emitted.
  xfrt::Manifest describeModel();

  // Emission helpers (valid while emitting one function).
  Value pointerOf(Value tensor);
  /// What the forward entry points read of each parameter index (the
  /// manifest's "forward_reads"; absent: none, only xf_prepare reads it),
  /// noted by storagePointer while emitForward runs: `emittingOp`'s kernel
  /// reads rows of an embedding table, anything else the whole tensor.
  llvm::DenseMap<int64_t, xfrt::ForwardReads> forwardReads;
  /// Derived buffers (packed weights included) the forward entry points read;
  /// the others only feed xf_prepare's packing (the manifest's derived
  /// "forward_reads": "none").
  llvm::DenseSet<int64_t> derivedForwardReads;
  bool emittingForward = false;
  Operation *emittingOp = nullptr;
  void noteForwardRead(Value tensor, int64_t index);
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
  /// The slot of `tensor` (at column `column` of the cache rows, in elements) in `cache`, and the
  /// elements between its heads: [heads][cache rows][width / heads].
  std::pair<Value, Value> cacheSlot(Value tensor, int64_t column, int64_t heads, Value cache);
  /// In xf_forward_cached: appends `rows` new rows of `tensor` (read at
  /// `source`), `heads` heads side by side, to its slot of `cache` at
  /// position `start` — each head's rows contiguous in the slot,
  /// [heads][cache rows][width / heads] (CachePlan.h) — and returns the
  /// cached heads as the attention kernel's 3-D (column, position, head)
  /// buffer of start + rows positions. `rotate` (a one-head rotaryRows
  /// kernel) turns the new rows as they are copied: the cache holds rotated
  /// keys (xf.attention `rope`). Without `appendRows` the caller appends them
  /// (appendKeyValues).
  HalideBufferArg cachedMatrixArg(Value tensor, int64_t column, int64_t heads, Value cache,
                                  Value start, Value source, Value rows, func::FuncOp rotate = {},
                                  bool appendRows = true);
  /// On the GPU: the new rows of `key` and `value` (at `keySource`, `valueSource`; K and V
  /// of one width) into their cache slots as cachedMatrixArg returned them (`keyCache`,
  /// `valueCache`, made without appendRows) at `start`, every head in one launch, by
  /// `append` (LoopKernels::appendKeyValues, rotating or not).
  void appendKeyValues(func::FuncOp append, Value key, Value value,
                       const HalideBufferArg &keyCache,
                       const HalideBufferArg &valueCache, Value keySource, Value valueSource,
                       Value start, Value rows);
  /// `rows` rows of `tensor` from `at`, `heads` heads side by side, as the
  /// attention kernel's 3-D (column, row, head) buffer.
  HalideBufferArg headsArg(Value tensor, int64_t heads, Value at, Value rows) {
    const Placement &p = placements[tensor];
    int64_t width = p.cols / heads;
    return HalideBufferArg{at,
                           {{i64(width), i64(1)}, {rows, i64(p.stride)}, {i64(heads), i64(width)}}};
  }
  // Packed batches (docs/abi.md "Packed batches"): n sequences' rows in one
  // matrix; row-wise kernels run once over all Σℓ rows, attention and
  // positions once per sequence.
  bool packedMode = false;
  Value lengthsArg, startsArg, countArg, cachesArg, slotsArg;
  /// On the GPU, xf_forward_cached_packed's step table (docs/abi.md): device int64 arrays
  /// after the token ids, row t's position and its sequence's cache slot; null elsewhere.
  Value rowPositions, rowSlots;
  /// xf_forward_cached_packed: sequence i's cache, slot slots[i] of `caches`.
  Value sequenceCache(Value index) {
    Value elements = arith::MulIOp::create(*b, loc, cacheRows, i64(cachePlan.columns));
    return cacheElementPtr(cachesArg,
                           arith::MulIOp::create(*b, loc, loadI64(slotsArg, index), elements));
  }
  /// `base` advanced by `elements` elements of the KV cache (float32 or float16).
  Value cacheElementPtr(Value base, Value elements) {
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    Type element = cachePlan.half() ? Type(b->getF16Type()) : Type(b->getF32Type());
    return LLVM::GEPOp::create(*b, loc, ptr, element, base, ValueRange{elements});
  }
  /// xf_forward_cached_packed: whether this call is one decode step of every
  /// sequence (one row each) whose cache slots one Halide buffer can span, so
  /// that each attention runs once over all sequences (`<kernel>_batched`).
  Value batchedDecodeStep, slotCount;
  /// A cache slot of every sequence as `<kernel>_batched` reads it:
  /// (column within a head, position, head, slot), from the K or V slot of
  /// `tensor` at column `column` of the cache rows (in elements).
  HalideBufferArg cacheSlotsArg(Value tensor, int64_t column, int64_t heads);
  /// An encoder-decoder's packed batch: the n sources' lengths (their ids
  /// are sourceArg, Σℓ_z = lzArg rows).
  Value sourceLengthsArg;
  /// @forward_packed (xf-pack-sequences), whose ops the packed entry points
  /// are emitted from, and its `segments` arguments: the targets' (bound to
  /// lengthsArg) and an encoder-decoder's sources' (bound to sourceLengthsArg).
  func::FuncOp forwardPacked;
  Value packedSegments, packedSourceSegments;
  /// Each @forward_packed op → the @forward op it repeats (profiling sites
  /// name @forward's ops; --check matches them): ModulePlacement's.
  const llvm::DenseMap<Operation *, Operation *> *forwardOpOf;
  /// The lengths array a `segments` operand of @forward_packed is bound to.
  Value lengthsOf(Value segments) {
    return segments && segments == packedSourceSegments ? sourceLengthsArg : lengthsArg;
  }
  /// Whether `op` runs once per sequence: it has the packed batch's
  /// `segments` (an error when a packed op lacks them or has others).
  FailureOr<bool> perSequence(Operation *op, Value segments);
  /// Attention's context rows per row, for the profiler: Σ ℓ_i·(start_i + ℓ_i) / Σ ℓ_i over
  /// the targets; an encoder-decoder's source self-attention Σ ℓ_z,i² / Σ ℓ_z,i and cross
  /// attention Σ ℓ_i·ℓ_z,i / Σ ℓ_i.
  Value packedContextRows, packedSourceContextRows, packedCrossContextRows;
  /// One sequence of a packed batch: its rows [offset, offset + rows), the
  /// position of its first row, its index; for cross attention also its
  /// source's rows [keyOffset, keyOffset + keyRows).
  struct SequenceSpan {
    Value offset, rows, position, index, keyOffset, keyRows;
  };
  /// Emits `body` once per sequence of the packed batch, whose lengths are
  /// `lengths` (lengthsArg or sourceLengthsArg) and, with `keyLengths`, its
  /// keys' (cross attention); kernel status codes inside it are carried out.
  void forEachSequence(Value lengths, Value keyLengths,
                       llvm::function_ref<void(const SequenceSpan &)> body);
  Value loadI64(Value array, Value index);
  Value loadPointer(Value array, Value index);
  /// Rows [offset, offset + rows) of a matrix.
  Value rowPointer(Value tensor, Value offset) {
    return offsetPtr(storagePointer(tensor),
                     arith::MulIOp::create(*b, loc, offset, i64(placements[tensor].stride)));
  }
  /// What the segmented attention (one call per packed batch) reads besides
  /// Q, K and V (SegmentedAttentionKernel.cpp): every sequence of `lengths`
  /// (lengthsArg or sourceLengthsArg) cut into blocks of queryBlock rows,
  /// int32 [count, 5], with its keys' rows from `keyLengths` (cross attention)
  /// or its own; built on the entry point's stack at first use.
  struct QueryBlockTable {
    Value lengths, keyLengths;
    int64_t queryBlock = 0;
    Value entries, count;
  };
  QueryBlockTable queryBlockTable(Value lengths, Value keyLengths, int64_t queryBlock);
  SmallVector<QueryBlockTable> queryBlockTables;
  AttentionKernelSpec segmentedSpecOf(AttentionOp attn);
  HalideBufferArg segmentArg(Value tensor, Value offset, Value rows) {
    const Placement &p = placements[tensor];
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
    Value blocks =
        arith::DivSIOp::create(*b, loc, arith::AddIOp::create(*b, loc, longest, i64(15)), i64(16));
    return arith::MulIOp::create(*b, loc, blocks, i64(16));
  }
  LogicalResult requireDense(Operation *op, Value tensor);

  // Training (the section "Training" below).
  Value targetsArg, lossArg, gradsArg;
  /// The weight-gradient chunks' GEMM schedule (runTraining).
  GemmSchedule chunkSchedule;
  LogicalResult emitTrainStep();
  void emitTrainScratchBytes();
  /// The kernel call of one op of @loss_and_gradients: by `backward`, its
  /// op type's emitter (TrainingEmitters.cpp), else by the forward's.
  LogicalResult emitBackwardKernel(Operation *op, const BackwardEmitter *backward,
                                   const KernelEmitter *forward);
  /// By `emitter`, or the forward emitter its op type registered.
  LogicalResult emitForwardKernel(Operation *op, const KernelEmitter *emitter);
  LogicalResult emitForwardKernel(Operation *op);
  template <typename OpT, LogicalResult (HostLowering::*Method)(OpT)>
  static void addBackwardEmitter(llvm::DenseMap<TypeID, BackwardEmitter> &table,
                                 bool loop = true) {
    table[TypeID::get<OpT>()] = {
        [](HostLowering &lowering, Operation *op) { return (lowering.*Method)(cast<OpT>(op)); },
        loop, &addKernelPattern<OpT>};
  }
  LogicalResult emitWeightGrad(WeightGradOp op);
  LogicalResult emitGradientTranspose(TransposeOp op);
  LogicalResult emitGradientSlice(SliceOp op);
  LogicalResult emitGradientSum(AddOp op);
  LogicalResult emitRowGrad(RowGradOp op);
  LogicalResult emitSliceGrad(SliceGradOp op);
  LogicalResult emitCrossEntropy(CrossEntropyOp op);
  LogicalResult emitCrossEntropyGrad(CrossEntropyGradOp op);
  LogicalResult emitNormGrad(Operation *op, Value x, Value dy, Value gamma, func::FuncOp kernel);
  LogicalResult emitLayerNormGrad(LayerNormGradOp op);
  LogicalResult emitRmsNormGrad(RmsNormGradOp op);
  LogicalResult emitLayerNormGammaGrad(LayerNormGammaGradOp op);
  LogicalResult emitRmsNormGammaGrad(RmsNormGammaGradOp op);
  LogicalResult emitRowSum(RowSumOp op);
  LogicalResult emitActivationGrad(Operation *op, Value x, Value dy, ActivationGradKind kind);
  LogicalResult emitReluGrad(ReluGradOp op);
  LogicalResult emitSiluGrad(SiluGradOp op);
  LogicalResult emitGeluGrad(GeluGradOp op);
  LogicalResult emitRopeGrad(RopeGradOp op);
  LogicalResult emitTokenEmbedGrad(TokenEmbedGradOp op);
  LogicalResult emitPositionalEmbedGrad(PositionalEmbedGradOp op);
  LogicalResult emitAttentionGrad(AttentionGradOp op);
  /// out (a static placement) += in (any 2-D or vector placement).
  void accumulateInto(Value target, int64_t floatOffset, Value in);

  func::FuncOp forward;
  HostBuild &program;
  HostOptions options;
  MLIRContext *ctx;
  /// Parameter indices stored in bfloat16 (`xf.weight_storage`).
  llvm::DenseSet<int64_t> bf16Parameters;
  void readWeightStorage();
  /// A parameter stored in bfloat16, or a concatenation of such (a derived weight marked so).
  bool isBf16(Value tensor) {
    auto it = placed.placements.find(tensor);
    if (it == placed.placements.end())
      return false;
    if (it->second.storage == Storage::Derived)
      return weightStorageOf(tensor) == WeightStorage::bf16;
    return it->second.storage == Storage::Parameter && bf16Parameters.contains(it->second.index);
  }
  /// Parameters kept in ggml blocks, by name (`xf.weight_storage`); a
  /// concatenation of such parameters is one too (marked the same way).
  llvm::StringMap<WeightBlocks> blockParameters;
  WeightBlocks blocksOf(Value tensor) {
    auto it = placed.placements.find(tensor);
    if (it == placed.placements.end() ||
        (it->second.storage != Storage::Parameter && it->second.storage != Storage::Derived))
      return WeightBlocks::None;
    return weightBlocksOf(weightStorageOf(tensor));
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
  Value paramsArg, derivedArg, tokensArg, lArg, sourceArg, lzArg, outArg, scratchArg, paddedRows;
  Value status;
  // Cached decoding (docs/abi.md): while emitting xf_forward_cached, positions
  // start at `startArg` and attention reads keys/values from `cacheArg`.
  bool cachedMode = false;
  Value startArg, cacheArg;
  Value cacheRows;                          // ⌈positions⌉₁₆ in xf_forward_cached
  llvm::StringMap<std::string> kernelNames; // spec key → exported name
  std::vector<xfrt::KernelSpec> sites;  // one per kernel call in xf_forward

  /// Brackets the kernel call that `emit` produces with the profiling hooks
  /// of libxfrt (no-ops unless the executable runs with --profile).
  LogicalResult profiled(Operation *op,
                         llvm::function_ref<LogicalResult(xfrt::KernelSpec &)> emit);

  /// One Halide pipeline per distinct spec: layers share their kernels.
  template <typename Spec>
  std::string kernelName(const std::string &key, llvm::StringRef prefix, std::vector<Spec> &specs,
                         Spec &spec) {
    auto [it, inserted] = kernelNames.try_emplace(key, "");
    if (inserted) {
      it->second = (prefix + std::to_string(specs.size())).str();
      spec.name = it->second;
      specs.push_back(spec);
    }
    return it->second;
  }
  /// The exported name of `spec`'s pipeline: specs with one signature and
  /// schedule share it (LowerToHost.cpp keys them).
  std::string nameKernel(GemmKernelSpec &spec);
  std::string nameKernel(AttentionKernelSpec &spec);
};

/// The lowering of a clone of an OpT (a kernel op type with an emitter) in an
/// entry point's body: the emitter writes the kernel call of the op the clone
/// repeats in its place (HostLowering::rewriteClone). The analyses describe
/// the source function's values, which the emitters read, so the adaptor's
/// operands (the clones') are not what they need.
template <typename OpT> struct KernelPattern : OpConversionPattern<OpT> {
  KernelPattern(MLIRContext *ctx, HostLowering &lowering,
                const HostLowering::KernelEmitter *forward,
                const HostLowering::BackwardEmitter *backward, PatternBenefit benefit)
      : OpConversionPattern<OpT>(ctx, benefit), lowering(lowering), forward(forward),
        backward(backward) {}

  LogicalResult matchAndRewrite(OpT clone, typename OpT::Adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    return lowering.rewriteClone(clone, rewriter, forward, backward);
  }

  HostLowering &lowering;
  const HostLowering::KernelEmitter *forward;
  const HostLowering::BackwardEmitter *backward;
};

} // namespace mlir::xf

#endif // XF_LIB_CONVERSION_HOSTLOWERING_H
