//===- HalideCalls.cpp - calling AOT Halide pipelines from host code ------===//

#include "xf/Codegen/HalideCalls.h"
#include "xf/Codegen/FunctionDeclarations.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::xf;

namespace {

// struct halide_buffer_t { u64 device; ptr device_interface; ptr host;
//   u64 flags; {u8 code, u8 bits, u16 lanes} type; i32 dimensions;
//   halide_dimension_t *dim; ptr padding; }
enum BufferField { Device, Interface, Host, Flags, Code, Bits, Lanes, Rank, Dims, Padding };
// struct halide_dimension_t { i32 min, extent, stride; u32 flags; }
enum DimField { Min, Extent, Stride, DimFlags };
constexpr int64_t kHalideTypeInt = 0, kHalideTypeUInt = 1, kHalideTypeFloat = 2, kHalideTypeBFloat = 4;

LLVM::LLVMStructType bufferType(MLIRContext *ctx) {
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  auto i = [&](unsigned w) { return IntegerType::get(ctx, w); };
  return LLVM::LLVMStructType::getLiteral(
      ctx, {i(64), ptr, ptr, i(64), i(8), i(8), i(16), i(32), ptr, ptr});
}

LLVM::LLVMStructType dimensionType(MLIRContext *ctx) {
  Type i32 = IntegerType::get(ctx, 32);
  return LLVM::LLVMStructType::getLiteral(ctx, {i32, i32, i32, i32});
}

struct Fields {
  OpBuilder &b;
  Location loc;
  Value integer(unsigned width, int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getIntegerType(width), v);
  }
  void store(Value v, Type aggregate, Value base, ArrayRef<LLVM::GEPArg> path) {
    Type ptr = LLVM::LLVMPointerType::get(b.getContext());
    Value at = LLVM::GEPOp::create(b, loc, ptr, aggregate, base, path);
    LLVM::StoreOp::create(b, loc, v, at);
  }
  Value allocate(Type type, int64_t count) {
    Type ptr = LLVM::LLVMPointerType::get(b.getContext());
    return LLVM::AllocaOp::create(b, loc, ptr, type, integer(64, count), /*alignment=*/16);
  }
};

/// `const halide_device_interface_t *halide_cuda_device_interface()` of the
/// CUDA Halide runtime linked into GPU executables.
Value cudaDeviceInterface(OpBuilder &b, Location loc, ModuleOp module) {
  constexpr llvm::StringLiteral name = "halide_cuda_device_interface";
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  auto fn = declareFunction(module, loc, name, FunctionType::get(b.getContext(), {}, {ptr}));
  return func::CallOp::create(b, loc, fn, ValueRange{}).getResult(0);
}

Value buildBuffer(Fields &f, const HalideBufferArg &arg, Value deviceInterface) {
  MLIRContext *ctx = f.b.getContext();
  Type dimType = dimensionType(ctx), bufType = bufferType(ctx);
  int32_t rank = arg.dims.size();
  Value dims = f.allocate(dimType, rank);
  Type i32 = f.b.getI32Type();
  for (int32_t d = 0; d < rank; ++d) {
    auto [extent, stride] = arg.dims[d];
    f.store(f.integer(32, 0), dimType, dims, {d, Min});
    f.store(arith::TruncIOp::create(f.b, f.loc, i32, extent), dimType, dims, {d, Extent});
    f.store(arith::TruncIOp::create(f.b, f.loc, i32, stride), dimType, dims, {d, Stride});
    f.store(f.integer(32, 0), dimType, dims, {d, DimFlags});
  }
  Value buffer = f.allocate(bufType, 1);
  Value null = LLVM::ZeroOp::create(f.b, f.loc, LLVM::LLVMPointerType::get(ctx));
  if (deviceInterface) {
    f.store(LLVM::PtrToIntOp::create(f.b, f.loc, f.b.getI64Type(), arg.host), bufType, buffer,
            {0, Device});
    f.store(deviceInterface, bufType, buffer, {0, Interface});
    f.store(arg.hostAlias ? arg.host : null, bufType, buffer, {0, Host});
  } else {
    f.store(f.integer(64, 0), bufType, buffer, {0, Device});
    f.store(null, bufType, buffer, {0, Interface});
    f.store(arg.host, bufType, buffer, {0, Host});
  }
  f.store(f.integer(64, 0), bufType, buffer, {0, Flags});
  f.store(f.integer(8, arg.bytes   ? kHalideTypeUInt
                      : arg.int32 || arg.int64 ? kHalideTypeInt
                      : arg.bf16  ? kHalideTypeBFloat
                                  : kHalideTypeFloat),
          bufType, buffer, {0, Code});
  f.store(f.integer(8, arg.bytes             ? 8
                       : arg.bf16 || arg.f16 ? 16
                       : arg.int64           ? 64
                                             : 32),
          bufType, buffer, {0, Bits});
  f.store(f.integer(16, 1), bufType, buffer, {0, Lanes});
  f.store(f.integer(32, rank), bufType, buffer, {0, Rank});
  f.store(dims, bufType, buffer, {0, Dims});
  f.store(null, bufType, buffer, {0, Padding});
  return buffer;
}

} // namespace

Value mlir::xf::callHalidePipeline(OpBuilder &b, Location loc, ModuleOp module,
                                   llvm::StringRef name,
                                   ArrayRef<HalideBufferArg> args,
                                   ArrayRef<Value> scalars, bool device, unsigned outputs) {
  MLIRContext *ctx = b.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  SmallVector<Type> inputs(args.size(), ptr);
  for (Value scalar : scalars)
    inputs.insert(inputs.end() - outputs, scalar.getType());
  auto fn = declareFunction(module, loc, name, FunctionType::get(ctx, inputs, {b.getI32Type()}));
  Fields f{b, loc};
  Value deviceInterface = device ? cudaDeviceInterface(b, loc, module) : Value();
  SmallVector<Value> operands;
  for (const HalideBufferArg &arg : args)
    operands.push_back(buildBuffer(f, arg, deviceInterface));
  operands.insert(operands.end() - outputs, scalars.begin(), scalars.end());
  return func::CallOp::create(b, loc, fn, operands).getResult(0);
}
