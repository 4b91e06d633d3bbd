//===- Manifest.cpp - the model description inside the executable --------===//

#include "Manifest.h"
#include "HostLowering.h"
#include "xf/Codegen/WeightBlocksGgml.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

#include <cstdio>
#include <optional>

using namespace mlir;
using namespace mlir::xf;

void mlir::xf::setKernelWork(xfrt::KernelSpec &site, const KernelWork &work) {
  site.flopsPerRow = int64_t(work.flopsPerRow);
  site.flopsPerRowPerContextRow = int64_t(work.flopsPerRowPerContextRow);
  site.bytesPerCall = int64_t(work.weightBytes);
  site.bytesPerRow = int64_t(work.bytesPerRow);
  site.bytesPerContextRow = int64_t(work.bytesPerContextRow);
}

/// A hyperparameter's value as JSON text: integers as such, floats with the
/// 17 significant digits that read back to the same double.
static std::optional<std::string> jsonNumber(Attribute value) {
  if (auto i = dyn_cast<IntegerAttr>(value))
    return std::to_string(i.getInt());
  if (auto f = dyn_cast<FloatAttr>(value)) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", f.getValueAsDouble());
    return std::string(text);
  }
  return std::nullopt;
}

void mlir::xf::emitManifestGlobal(ModuleOp module, llvm::StringRef json, llvm::StringRef symbol) {
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  std::string data = json.str();
  data.push_back('\0');
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), data.size());
  LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/true, LLVM::Linkage::External,
                         symbol, b.getStringAttr(data));
}

xfrt::Manifest HostLowering::describeModel() {
  auto output = forward->getAttrOfType<StringAttr>("xf.output");
  xfrt::Manifest info;
  auto module = forward->getParentOfType<ModuleOp>();
  auto name = module->getAttrOfType<StringAttr>("xf.model");
  info.model = name ? name.str() : "model";
  info.outputIsLogits = !output || output.getValue() == "logits";
  info.encoderDecoder = encoderDecoder;
  if (auto hyperparameters = module->getAttrOfType<DictionaryAttr>("xf.hyperparameters"))
    for (NamedAttribute entry : hyperparameters)
      if (std::optional<std::string> value = jsonNumber(entry.getValue()))
        info.hyperparameters.emplace_back(entry.getName().str(), *value);
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
  for (auto [i, entry] : llvm::enumerate(parameters)) {
    xfrt::ParameterSpec p;
    p.name = entry.first;
    p.shape.assign(entry.second.getShape().begin(), entry.second.getShape().end());
    p.numel = entry.second.getNumElements();
    if (blockParameters.count(entry.first)) {
      p.blocks = true;
      p.blockType = ggmlTypeOf(blockParameters.lookup(entry.first));
    }
    p.bf16 = !p.blocks && bf16Parameters.contains(i);
    p.forwardReads = forwardReads.lookup_or(int64_t(i), xfrt::ForwardReads::None);
    info.parameters.push_back(std::move(p));
  }
  // Norm gains start near one; biases and shifts near zero.
  forward.walk([&](Operation *op) {
    auto mark = [&](Value v, xfrt::InitKind init) {
      if (!v)
        return;
      if (auto param = v.getDefiningOp<ParameterOp>())
        info.parameters[parameterIndex.lookup(param.getName())].init = init;
    };
    if (auto ln = dyn_cast<LayerNormOp>(op))
      mark(ln.getGamma(), xfrt::InitKind::Ones), mark(ln.getBeta(), xfrt::InitKind::Zeros);
    if (auto rms = dyn_cast<RmsNormOp>(op))
      mark(rms.getGamma(), xfrt::InitKind::Ones);
  });
  for (Value v : derived) {
    auto type = cast<RankedTensorType>(v.getType());
    WeightBlocks blocks = blocksOf(v);
    info.derivedBytes.push_back(blocks != WeightBlocks::None
                                    ? type.getDimSize(0) * blockRowBytes(blocks, type.getDimSize(1))
                                    : type.getNumElements() * (isBf16(v) ? 2 : 4));
  }
  for (const PackedWeight &packed : packedWeights)
    info.derivedBytes.push_back(packedWeightBytes(packed.spec));
  for (size_t i = 0; i < info.derivedBytes.size(); ++i)
    info.derivedPrepareOnly.push_back(!derivedForwardReads.contains(int64_t(i)));
  // Row-wise concatenations of float32 parameters: their parts lie back to back, so a loader
  // can write them there and xf_prepare's copies of them change nothing.
  for (auto [i, v] : llvm::enumerate(derived)) {
    auto concat = v.getDefiningOp<ConcatOp>();
    if (!concat || blocksOf(v) != WeightBlocks::None ||
        (cast<RankedTensorType>(v.getType()).getRank() == 2 && concat.getAxis() != 0))
      continue;
    std::vector<int64_t> parts;
    for (Value part : concat.getInputs()) {
      auto param = part.getDefiningOp<ParameterOp>();
      if (!param || !parameterIndex.count(param.getName()))
        break;
      int64_t index = int64_t(parameterIndex.lookup(param.getName()));
      const xfrt::ParameterSpec &spec = info.parameters[size_t(index)];
      if (spec.bf16 || spec.blocks || llvm::is_contained(parts, index))
        break;
      parts.push_back(index);
    }
    if (parts.size() != concat.getInputs().size())
      continue;
    info.derivedParts.resize(info.derivedBytes.size());
    info.derivedParts[i] = std::move(parts);
  }
  info.kernels = sites;
  info.cached = cachePlan.cacheable;
  info.packed = cachePlan.packable;
  info.cachePositions = cachePlan.cacheable ? cachePlan.positions : 0;
  info.cacheHalf = cachePlan.cacheable && cachePlan.half();
  info.cuda = options.cudaDevice;
  return info;
}
