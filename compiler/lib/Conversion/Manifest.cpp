//===- Manifest.cpp - the model description inside the executable --------===//

#include "Manifest.h"
#include "HostLowering.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::xf;

std::string mlir::xf::renderManifest(const ManifestInfo &info) {
  llvm::json::Object hyper;
  if (info.hyperparameters)
    for (NamedAttribute entry : info.hyperparameters) {
      if (auto i = dyn_cast<IntegerAttr>(entry.getValue()))
        hyper[entry.getName().str()] = i.getInt();
      else if (auto f = dyn_cast<FloatAttr>(entry.getValue()))
        hyper[entry.getName().str()] = f.getValueAsDouble();
    }
  llvm::json::Array parameters, derived, kernels;
  for (auto &p : info.parameters)
    parameters.push_back(llvm::json::Object{{"name", p.name},
                                            {"shape", llvm::json::Array(p.shape)},
                                            {"init", p.init},
                                            {"dtype", p.dtype}});
  for (int64_t bytes : info.derivedBytes)
    derived.push_back(llvm::json::Object{{"bytes", bytes}});
  for (auto &k : info.kernels)
    kernels.push_back(
        llvm::json::Object{{"name", k.name},
                           {"kind", k.kind},
                           {"op", k.op},
                           {"loc", k.loc},
                           {"flops_per_row", k.flopsPerRow},
                           {"flops_per_row_per_context_row", k.flopsPerRowPerContextRow},
                           {"bytes_per_call", k.bytesPerCall},
                           {"bytes_per_row", k.bytesPerRow},
                           {"bytes_per_context_row", k.bytesPerContextRow},
                           {"context", k.contextFromSource ? "source" : "target"},
                           {"tuned", k.tuned}});
  llvm::json::Object root{{"model", info.model},
                          {"output", info.output},
                          {"encoder_decoder", info.encoderDecoder},
                          {"vocab", info.vocab},
                          {"max_positions", info.maxPositions},
                          {"d_out", info.dOut},
                          {"cached", info.cached},
                          {"cache_positions", info.cachePositions},
                          {"packed", info.packed},
                          {"hyperparameters", std::move(hyper)},
                          {"parameters", std::move(parameters)},
                          {"derived", std::move(derived)},
                          {"kernels", std::move(kernels)}};
  if (!info.device.empty())
    root["device"] = info.device;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root)));
  return text;
}

void mlir::xf::emitManifestGlobal(ModuleOp module, llvm::StringRef json, llvm::StringRef symbol) {
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  std::string data = json.str();
  data.push_back('\0');
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), data.size());
  LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/true, LLVM::Linkage::External,
                         symbol, b.getStringAttr(data));
}

ManifestInfo HostLowering::describeModel() {
  auto output = forward->getAttrOfType<StringAttr>("xf.output");
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
    info.parameters.push_back({entry.first, llvm::to_vector(entry.second.getShape()), "normal",
                               blockParameters.count(entry.first)
                                   ? weightBlocksName(blockParameters.lookup(entry.first))
                               : bf16Parameters.contains(i) ? "bf16"
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
  return info;
}
