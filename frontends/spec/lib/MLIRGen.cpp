//===- MLIRGen.cpp - from the checked Graph to the xf dialect -------------===//
//
// Walks the graph once, in order, skipping nodes the output does not need.
// Transposes and matrix products are emitted on demand, at their consumer,
// so that the consumer can absorb them into its attributes.
//
//===----------------------------------------------------------------------===//

#include "xf/Spec/MLIRGen.h"

#include "xf/IR/XfOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace xf::spec;
namespace xfir = mlir::xf;

namespace {
class Generator {
public:
  Generator(mlir::MLIRContext &context, const Graph &graph)
      : graph(graph), builder(&context), values(graph.nodes.size()),
        uses(graph.nodes.size(), 0), live(graph.nodes.size(), false) {}

  mlir::OwningOpRef<mlir::ModuleOp> generate();

private:
  void markLive();
  mlir::DictionaryAttr hyperparameterAttr();
  mlir::Value get(int id);
  mlir::Value emit(int id);
  mlir::Value emitLinear(const Node &n, int product, int bias);
  mlir::Value emitMha(const Node &n);
  /// The stored tensor behind a transposed view, or null.
  mlir::Value storedOfTranspose(int id);
  mlir::RankedTensorType typeOf(const TensorType &type);
  mlir::Location loc(const Location &l);
  bool isWeight(int id) const { return graph.nodes[id].type.isStatic(); }

  const Graph &graph;
  mlir::OpBuilder builder;
  std::vector<mlir::Value> values;
  std::vector<unsigned> uses;
  std::vector<bool> live;
};
} // namespace

mlir::Location Generator::loc(const Location &l) {
  return mlir::FileLineColLoc::get(builder.getContext(),
                                   l.file ? *l.file : std::string("<input>"),
                                   l.line, l.col);
}

mlir::RankedTensorType Generator::typeOf(const TensorType &type) {
  llvm::SmallVector<int64_t> shape;
  for (const Dim &d : type.dims)
    shape.push_back(d.isSequence() ? mlir::ShapedType::kDynamic : d.size);
  mlir::Type element = type.isTokens ? mlir::Type(builder.getI32Type())
                                     : mlir::Type(builder.getF32Type());
  return mlir::RankedTensorType::get(shape, element);
}

void Generator::markLive() {
  std::vector<int> work = {graph.output};
  live[graph.output] = true;
  while (!work.empty()) {
    int id = work.back();
    work.pop_back();
    for (int operand : graph.nodes[id].operands) {
      if (operand < 0)
        continue;
      ++uses[operand];
      if (!live[operand]) {
        live[operand] = true;
        work.push_back(operand);
      }
    }
  }
}

mlir::DictionaryAttr Generator::hyperparameterAttr() {
  llvm::SmallVector<mlir::NamedAttribute> attrs;
  for (const auto &[name, value] : graph.hyperparameters) {
    mlir::Attribute attr =
        value.isFloat ? mlir::Attribute(builder.getF64FloatAttr(value.f))
                      : mlir::Attribute(builder.getI64IntegerAttr(value.i));
    attrs.push_back(builder.getNamedAttr(name, attr));
  }
  return builder.getDictionaryAttr(attrs);
}

mlir::OwningOpRef<mlir::ModuleOp> Generator::generate() {
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(loc(graph.loc));
  (*module)->setAttr("xf.model", builder.getStringAttr(graph.modelName));
  (*module)->setAttr("xf.hyperparameters", hyperparameterAttr());
  markLive();

  llvm::SmallVector<mlir::Type> inputs;
  for (const Node &n : graph.nodes)
    if (n.kind == OpKind::Input)
      inputs.push_back(typeOf(n.type));
  mlir::Type result = typeOf(graph.nodes[graph.output].type);
  builder.setInsertionPointToEnd(module->getBody());
  auto func =
      mlir::func::FuncOp::create(builder, loc(graph.loc), "forward",
                                 builder.getFunctionType(inputs, result));
  func->setAttr("xf.output", builder.getStringAttr(
                                 graph.outputIsLogits() ? "logits" : "hidden"));
  mlir::Block *entry = func.addEntryBlock();
  builder.setInsertionPointToEnd(entry);

  unsigned argument = 0;
  for (auto [id, n] : llvm::enumerate(graph.nodes))
    if (n.kind == OpKind::Input)
      values[id] = entry->getArgument(argument++);
  // Parameters first, in the order the algorithm first uses them.
  for (auto [id, n] : llvm::enumerate(graph.nodes))
    if (live[id] && n.kind == OpKind::Parameter)
      get(id);
  for (auto [id, n] : llvm::enumerate(graph.nodes)) {
    bool onDemand = n.kind == OpKind::Transpose || n.kind == OpKind::MatMul;
    if (live[id] && !onDemand)
      get(id);
  }
  mlir::func::ReturnOp::create(builder, loc(graph.loc), get(graph.output));
  return module;
}

mlir::Value Generator::get(int id) {
  if (!values[id])
    values[id] = emit(id);
  return values[id];
}

mlir::Value Generator::storedOfTranspose(int id) {
  const Node &n = graph.nodes[id];
  return n.kind == OpKind::Transpose ? get(n.operands[0]) : mlir::Value();
}

mlir::Value Generator::emitLinear(const Node &n, int product, int bias) {
  const Node &p = graph.nodes[product];
  mlir::Value stored = storedOfTranspose(p.operands[1]);
  mlir::Value weight = stored ? stored : get(p.operands[1]);
  mlir::Value b = bias >= 0 ? get(bias) : mlir::Value();
  return xfir::LinearOp::create(builder, loc(n.loc), typeOf(n.type),
                                get(p.operands[0]), weight, b, bool(stored));
}

mlir::Value Generator::emitMha(const Node &n) {
  auto operand = [&](int slot) {
    int id = n.operands[slot];
    return id < 0 ? mlir::Value() : get(id);
  };
  // Fold transposes only when all four weights are stored transposed.
  bool transposed = true;
  for (int slot : {MhaWq, MhaWk, MhaWv, MhaWo})
    transposed &= graph.nodes[n.operands[slot]].kind == OpKind::Transpose;
  auto weight = [&](int slot) {
    return transposed ? storedOfTranspose(n.operands[slot]) : operand(slot);
  };
  mlir::FloatAttr scale =
      n.hasScale ? builder.getF64FloatAttr(n.scale) : mlir::FloatAttr();
  auto mask = n.mask == MaskKind::Causal  ? xfir::MaskKind::causal
              : n.mask == MaskKind::Cross ? xfir::MaskKind::cross
                                          : xfir::MaskKind::bidirectional;
  mlir::IntegerAttr kvHeads =
      n.kvHeads ? builder.getI64IntegerAttr(n.kvHeads) : mlir::IntegerAttr();
  xfir::RopePairingAttr rope;
  mlir::FloatAttr ropeBase;
  if (n.rope != RopePairing::None) {
    rope = xfir::RopePairingAttr::get(builder.getContext(),
                                      n.rope == RopePairing::Adjacent
                                          ? xfir::RopePairing::adjacent
                                          : xfir::RopePairing::halves);
    ropeBase = builder.getF64FloatAttr(n.base);
  }
  return xfir::MultiHeadAttentionOp::create(
      builder, loc(n.loc), typeOf(n.type), operand(MhaX), operand(MhaZ),
      weight(MhaWq), operand(MhaBq), weight(MhaWk), operand(MhaBk),
      weight(MhaWv), operand(MhaBv), weight(MhaWo), operand(MhaBo),
      /*segments=*/mlir::Value(), /*key_segments=*/mlir::Value(),
      xfir::MaskKindAttr::get(builder.getContext(), mask),
      builder.getI64IntegerAttr(n.heads), kvHeads, rope, ropeBase, scale,
      transposed ? builder.getUnitAttr() : mlir::UnitAttr());
}

mlir::Value Generator::emit(int id) {
  const Node &n = graph.nodes[id];
  mlir::Location at = loc(n.loc);
  mlir::RankedTensorType type = typeOf(n.type);
  auto operand = [&](unsigned i) {
    return n.operands[i] < 0 ? mlir::Value() : get(n.operands[i]);
  };
  switch (n.kind) {
  case OpKind::Input:
    return values[id];
  case OpKind::Parameter:
    return xfir::ParameterOp::create(builder, at, type, n.name);
  case OpKind::Transpose:
    return xfir::TransposeOp::create(builder, at, type, operand(0));
  case OpKind::Slice:
    return xfir::SliceOp::create(builder, at, type, operand(0), n.axis,
                                 n.offset);
  case OpKind::Row:
    return xfir::RowOp::create(builder, at, type, operand(0), n.offset);
  case OpKind::Concat: {
    llvm::SmallVector<mlir::Value> parts;
    for (unsigned i = 0; i < n.operands.size(); ++i)
      parts.push_back(operand(i));
    return xfir::ConcatOp::create(builder, at, type, parts, n.axis);
  }
  case OpKind::TokenEmbed:
    return xfir::TokenEmbedOp::create(builder, at, type, operand(1),
                                      operand(0));
  case OpKind::PosEmbed:
    return xfir::PositionalEmbedOp::create(builder, at, type, operand(1),
                                           operand(0), mlir::Value(),
                                           /*segments=*/mlir::Value());
  case OpKind::Sinusoidal:
    return xfir::SinusoidalEmbedOp::create(
        builder, at, type, operand(0), mlir::Value(), /*segments=*/mlir::Value(),
        llvm::APFloat(n.base));
  case OpKind::MatMul: {
    if (isWeight(n.operands[1]))
      return emitLinear(n, id, -1);
    mlir::Value stored = storedOfTranspose(n.operands[1]);
    return xfir::MatmulOp::create(builder, at, type, operand(0),
                                  stored ? stored : operand(1), bool(stored));
  }
  case OpKind::Add: {
    int lhs = n.operands[0];
    const Node &l = graph.nodes[lhs];
    bool isLinear =
        n.type.rank() == 2 && graph.nodes[n.operands[1]].type.rank() == 1 &&
        l.kind == OpKind::MatMul && isWeight(l.operands[1]) && uses[lhs] == 1;
    if (isLinear)
      return emitLinear(n, lhs, n.operands[1]);
    return xfir::AddOp::create(builder, at, type, operand(0), operand(1));
  }
  case OpKind::LayerNorm:
    return xfir::LayerNormOp::create(builder, at, type, operand(0), operand(1),
                                     operand(2), llvm::APFloat(n.epsilon));
  case OpKind::RmsNorm:
    return xfir::RmsNormOp::create(builder, at, type, operand(0), operand(1),
                                   llvm::APFloat(n.epsilon));
  case OpKind::Relu:
    return xfir::ReluOp::create(builder, at, type, operand(0));
  case OpKind::Gelu:
    return xfir::GeluOp::create(builder, at, type, operand(0),
                                n.geluTanh ? xfir::GeluApproximation::tanh
                                           : xfir::GeluApproximation::erf);
  case OpKind::Silu:
    return xfir::SiluOp::create(builder, at, type, operand(0));
  case OpKind::Hadamard:
    return xfir::MulOp::create(builder, at, type, operand(0), operand(1));
  case OpKind::Scale:
    return xfir::ScaleOp::create(
        builder, at, type, operand(0), builder.getF64FloatAttr(n.scale),
        n.operands.size() > 1 ? operand(1) : mlir::Value());
  case OpKind::Length:
    return xfir::LengthOp::create(builder, at, builder.getF64Type(),
                                  operand(0));
  case OpKind::Constant:
    return mlir::arith::ConstantOp::create(builder, at,
                                           builder.getF64FloatAttr(n.scale));
  case OpKind::Arithmetic:
    switch (n.arithmetic) {
    case '+':
      return mlir::arith::AddFOp::create(builder, at, operand(0), operand(1));
    case '-':
      return mlir::arith::SubFOp::create(builder, at, operand(0), operand(1));
    case '*':
      return mlir::arith::MulFOp::create(builder, at, operand(0), operand(1));
    default:
      return mlir::arith::DivFOp::create(builder, at, operand(0), operand(1));
    }
  case OpKind::Softmax:
    return xfir::SoftmaxOp::create(builder, at, type, operand(0));
  case OpKind::Attention: {
    auto mask = n.mask == MaskKind::Causal  ? xfir::MaskKind::causal
                : n.mask == MaskKind::Cross ? xfir::MaskKind::cross
                                            : xfir::MaskKind::bidirectional;
    mlir::FloatAttr scale =
        n.hasScale ? builder.getF64FloatAttr(n.scale) : mlir::FloatAttr();
    mlir::IntegerAttr kvHeads =
        n.kvHeads ? builder.getI64IntegerAttr(n.kvHeads) : mlir::IntegerAttr();
    return xfir::AttentionOp::create(
        builder, at, type, operand(0), operand(1), operand(2),
        /*segments=*/mlir::Value(), /*key_segments=*/mlir::Value(),
        xfir::MaskKindAttr::get(builder.getContext(), mask),
        builder.getI64IntegerAttr(n.heads), kvHeads,
        /*rope=*/xfir::RopePairingAttr(),
        /*rope_base=*/mlir::FloatAttr(), scale, xfir::AttentionScheduleAttr(),
        /*gpu_schedule=*/xfir::GpuAttentionScheduleAttr());
  }
  case OpKind::MultiHeadAttention:
    return emitMha(n);
  case OpKind::Unembed: {
    mlir::Value stored = storedOfTranspose(n.operands[1]);
    return xfir::UnembedOp::create(builder, at, type, operand(0),
                                   stored ? stored : operand(1), bool(stored));
  }
  }
  return {};
}

mlir::OwningOpRef<mlir::ModuleOp> xf::spec::mlirGen(mlir::MLIRContext &context,
                                                    const Graph &graph) {
  return Generator(context, graph).generate();
}
