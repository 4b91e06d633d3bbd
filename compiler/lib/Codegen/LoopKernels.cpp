//===- LoopKernels.cpp - small kernels as scf loops over raw pointers -----===//

#include "xf/Codegen/LoopKernels.h"
#include "LoopEmitter.h"
#include "xf/Codegen/HalideCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <tuple>

using namespace mlir;
using namespace mlir::xf;

std::string LoopKernels::scheduleSuffix(const LoopSchedule &s) {
  std::string suffix;
  if (s.rowsPerTask > 0)
    suffix += "_r" + std::to_string(s.rowsPerTask);
  if (s.vectorBits > 0)
    suffix += "_v" + std::to_string(s.vectorBits);
  return suffix;
}

func::FuncOp LoopKernels::declare(llvm::StringRef name, llvm::StringRef signature,
                                  OpBuilder &body) {
  MLIRContext *ctx = module.getContext();
  SmallVector<Type> args;
  for (char kind : signature)
    args.push_back(kind == 'p' ? Type(LLVM::LLVMPointerType::get(ctx))
                               : Type(IntegerType::get(ctx, 64)));
  // The body computes rows [begin, end) of the call.
  args.append(2, IntegerType::get(ctx, 64));
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto fn = func::FuncOp::create(b, module.getLoc(), (name + kBodySuffix).str(),
                                 FunctionType::get(ctx, args, {}));
  fn.setPrivate();
  body.setInsertionPointToStart(fn.addEntryBlock());
  return fn;
}

func::FuncOp LoopKernels::rowKernel(const std::string &name, llvm::StringRef signature,
                                    const LoopSchedule &s, unsigned rowsArg,
                                    llvm::function_ref<void(Emitter &, ValueRange)> emit) {
  OpBuilder b(module.getContext());
  func::FuncOp body = declare(name, signature, b);
  Emitter e{b, body.getLoc()};
  emit(e, body.getArguments());
  func::ReturnOp::create(b, e.loc);
  return finish(body, s, rowsArg);
}

/// The kernel callers see takes the body's arguments without the row range:
/// it runs all rows in one loop, or splits them into tasks of
/// `rowsPerTask` rows for halide_do_par_for (the Halide runtime's thread
/// pool, already linked into every executable for the Halide kernels).
func::FuncOp LoopKernels::finish(func::FuncOp body, const LoopSchedule &s, unsigned rowsArg) {
  MLIRContext *ctx = module.getContext();
  Location loc = body.getLoc();
  if (s.vectorBits > 0) {
    Attribute width[] = {StringAttr::get(ctx, "prefer-vector-width"),
                         StringAttr::get(ctx, std::to_string(s.vectorBits))};
    body->setAttr("passthrough", ArrayAttr::get(ctx, {ArrayAttr::get(ctx, width)}));
  }
  auto inputs = body.getFunctionType().getInputs().drop_back(2);
  std::string name = body.getName().drop_back(std::strlen(kBodySuffix)).str();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto fn = func::FuncOp::create(b, loc, name, FunctionType::get(ctx, inputs, {}));
  fn.setPrivate();
  cache[name] = fn;
  b.setInsertionPointToStart(fn.addEntryBlock());
  Emitter e{b, loc};
  SmallVector<Value> args(fn.getArguments());
  Value rows = args[rowsArg];
  auto runRows = [&](OpBuilder &at, Value begin, Value end) {
    SmallVector<Value> withRange(args);
    withRange.append({begin, end});
    func::CallOp::create(at, loc, body, withRange);
  };
  if (s.rowsPerTask == 0) {
    runRows(b, e.i(0), rows);
    func::ReturnOp::create(b, loc);
    return fn;
  }
  // The closure: every argument widened to an i64 slot.
  Value closure = LLVM::AllocaOp::create(b, loc, e.ptr, e.i64, e.i(int64_t(args.size())));
  for (auto [index, arg] : llvm::enumerate(args)) {
    Value slot = isa<LLVM::LLVMPointerType>(arg.getType())
                     ? Value(LLVM::PtrToIntOp::create(b, loc, e.i64, arg))
                     : arg;
    LLVM::StoreOp::create(b, loc, slot,
                          LLVM::GEPOp::create(b, loc, e.ptr, e.i64, closure,
                                              ValueRange{e.i(int64_t(index))}));
  }
  Value perTask = e.i(s.rowsPerTask);
  Value oneTask = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, rows, perTask);
  auto branch = scf::IfOp::create(b, loc, oneTask, /*withElseRegion=*/true);
  {
    OpBuilder then = branch.getThenBodyBuilder();
    runRows(then, Emitter{then, loc}.i(0), rows);
  }
  OpBuilder orElse = branch.getElseBodyBuilder();
  Emitter p{orElse, loc};
  Value tasks = arith::DivSIOp::create(orElse, loc, p.addi(rows, p.i(s.rowsPerTask - 1)), perTask);
  Type i32 = orElse.getI32Type();
  func::FuncOp task = taskOf(body, fn, s, rowsArg);
  Value taskRef = func::ConstantOp::create(orElse, loc, task.getFunctionType(),
                                           SymbolRefAttr::get(task));
  Value taskPtr =
      UnrealizedConversionCastOp::create(orElse, loc, TypeRange{p.ptr}, ValueRange{taskRef})
          .getResult(0);
  Value noContext = LLVM::ZeroOp::create(orElse, loc, p.ptr);
  func::CallOp::create(orElse, loc, parallelFor(), ValueRange{noContext, taskPtr,
                       arith::ConstantIntOp::create(orElse, loc, i32, 0),
                       arith::TruncIOp::create(orElse, loc, i32, tasks), closure});
  b.setInsertionPointAfter(branch);
  func::ReturnOp::create(b, loc);
  return fn;
}

/// int task(void *user_context, int index, uint8_t *closure): rows
/// [index·rowsPerTask, min(rows, (index+1)·rowsPerTask)) of the call whose
/// arguments the closure holds.
func::FuncOp LoopKernels::taskOf(func::FuncOp body, func::FuncOp kernel, const LoopSchedule &s,
                                 unsigned rowsArg) {
  MLIRContext *ctx = module.getContext();
  Location loc = body.getLoc();
  Type ptr = LLVM::LLVMPointerType::get(ctx), i32 = IntegerType::get(ctx, 32);
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto task = func::FuncOp::create(b, loc, (kernel.getName() + "_task").str(),
                                   FunctionType::get(ctx, {ptr, i32, ptr}, {i32}));
  task.setPrivate();
  b.setInsertionPointToStart(task.addEntryBlock());
  Emitter e{b, loc};
  SmallVector<Value> args;
  for (auto [index, type] : llvm::enumerate(kernel.getFunctionType().getInputs())) {
    Value slot = LLVM::LoadOp::create(
        b, loc, e.i64,
        LLVM::GEPOp::create(b, loc, ptr, e.i64, task.getArgument(2),
                            ValueRange{e.i(int64_t(index))}));
    args.push_back(isa<LLVM::LLVMPointerType>(type)
                       ? Value(LLVM::IntToPtrOp::create(b, loc, ptr, slot))
                       : slot);
  }
  Value index = arith::ExtSIOp::create(b, loc, e.i64, task.getArgument(1));
  Value begin = e.muli(index, e.i(s.rowsPerTask));
  Value end = arith::MinSIOp::create(b, loc, e.addi(begin, e.i(s.rowsPerTask)), args[rowsArg]);
  args.append({begin, end});
  func::CallOp::create(b, loc, body, args);
  func::ReturnOp::create(b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, i32, 0)});
  return task;
}

/// int halide_do_par_for(void *user_context, halide_task_t task, int min,
///                       int size, uint8_t *closure)
func::FuncOp LoopKernels::parallelFor() {
  constexpr llvm::StringLiteral name = "halide_do_par_for";
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  MLIRContext *ctx = module.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx), i32 = IntegerType::get(ctx, 32);
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto fn = func::FuncOp::create(b, module.getLoc(), name,
                                 FunctionType::get(ctx, {ptr, ptr, i32, i32, ptr}, {i32}));
  fn.setPrivate();
  return fn;
}

/// The arguments of a device kernel's pipeline call, built from the kernel's.
struct LoopKernels::DeviceCall {
  OpBuilder &b;
  Location loc;
  ValueRange args;
  SmallVector<HalideBufferArg> buffers; // inputs, then the outputs
  SmallVector<Value> scalars;           // int32, between them
  unsigned outputs = 1;                 // the last buffers that are outputs
  Value i(int64_t v) { return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v); }
  /// A [rows, cols] matrix with a row stride (all i64).
  HalideBufferArg &matrix(Value at, Value cols, Value rows, Value stride) {
    buffers.push_back(HalideBufferArg{at, {{cols, i(1)}, {rows, stride}}});
    return buffers.back();
  }
  HalideBufferArg &dense(Value at, int64_t width, Value rows) {
    return matrix(at, i(width), rows, i(width));
  }
  /// A table whose row count the kernel is not told: as many rows as a
  /// Halide buffer may hold (the ids and positions were checked against it).
  HalideBufferArg &table(Value at, int64_t width) {
    return dense(at, width, i(int64_t(INT32_MAX) / width));
  }
  HalideBufferArg &vector(Value at, int64_t width) {
    buffers.push_back(HalideBufferArg{at, {{i(width), i(1)}}});
    return buffers.back();
  }
  void scalar(Value v) { scalars.push_back(arith::TruncIOp::create(b, loc, b.getI32Type(), v)); }
  void scalarF32(Value v) { scalars.push_back(v); }
};

func::FuncOp LoopKernels::deviceKernel(const std::string &name, llvm::StringRef signature,
                                       DeviceLoopKernelSpec spec,
                                       llvm::function_ref<void(DeviceCall &)> describe) {
  MLIRContext *ctx = module.getContext();
  SmallVector<Type> types;
  for (char kind : signature)
    types.push_back(kind == 'p' ? Type(LLVM::LLVMPointerType::get(ctx))
                                : Type(IntegerType::get(ctx, 64)));
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = module.getLoc();
  auto fn = func::FuncOp::create(b, loc, name, FunctionType::get(ctx, types, {}));
  fn.setPrivate();
  cache[name] = fn;
  b.setInsertionPointToStart(fn.addEntryBlock());
  spec.name = name + "_gpu";
  DeviceCall call{b, loc, fn.getArguments(), {}, {}};
  describe(call);
  // A failing pipeline reports through Halide's error handler, which the
  // runtime checks after each forward pass (docs/gpu.md).
  callHalidePipeline(b, loc, module, spec.name, call.buffers, call.scalars, /*device=*/true,
                     call.outputs);
  func::ReturnOp::create(b, loc);
  deviceSpecs.push_back(spec);
  return fn;
}

func::FuncOp LoopKernels::gatherRows(int64_t width, bool bf16Table) {
  XF_KERNEL_CACHED((bf16Table ? "xf_gather_bf16_rows_" : "xf_gather_rows_") +
                   std::to_string(width));
  if (device) // (table, ids, out, rows)
    return deviceKernel(name, "pppi", {"", DeviceLoopKind::Gather, width, 0, 0, 0, {}, bf16Table},
                        [&](DeviceCall &d) {
                          d.table(d.args[0], width).bf16 = bf16Table;
                          d.buffers.push_back(HalideBufferArg{d.args[1], {{d.args[3], d.i(1)}}});
                          d.buffers.back().int32 = true;
                          d.dense(d.args[2], width, d.args[3]);
                        });
  return rowKernel(name, "pppi", kernelSchedule, /*rowsArg=*/3,
                   [&](Emitter &e, ValueRange args) {
    OpBuilder &b = e.b;
    e.eachRow(args, [&](Value t) {
      Value id = LLVM::LoadOp::create(b, e.loc, b.getI32Type(),
                                      LLVM::GEPOp::create(b, e.loc, e.ptr, b.getI32Type(),
                                                          args[1], ValueRange{t}));
      Value row = arith::ExtSIOp::create(b, e.loc, e.i64, id);
      Value dst = e.row(args[2], t, width);
      if (!bf16Table) {
        Value src = e.row(args[0], row, width);
        e.loop(e.i(width), [&](Value c) { e.store(e.load(src, c), dst, c); });
        return;
      }
      Type i16 = b.getI16Type(), i32 = b.getI32Type();
      Value src = LLVM::GEPOp::create(b, e.loc, e.ptr, i16, args[0],
                                      ValueRange{e.muli(row, e.i(width))});
      e.loop(e.i(width), [&](Value c) {
        Value bits = LLVM::LoadOp::create(
            b, e.loc, i16, LLVM::GEPOp::create(b, e.loc, e.ptr, i16, src, ValueRange{c}));
        Value wide = arith::ShLIOp::create(b, e.loc, arith::ExtUIOp::create(b, e.loc, i32, bits),
                                           arith::ConstantIntOp::create(b, e.loc, i32, 16));
        e.store(arith::BitcastOp::create(b, e.loc, e.f32, wide), dst, c);
      });
    });
  });
}

func::FuncOp LoopKernels::positionRows(int64_t width) {
  XF_KERNEL_CACHED("xf_position_rows_" + std::to_string(width));
  if (device) // (table, out, rows, offset)
    return deviceKernel(name, "ppii", {"", DeviceLoopKind::Position, width}, [&](DeviceCall &d) {
      d.table(d.args[0], width);
      d.scalar(d.args[3]);
      d.dense(d.args[1], width, d.args[2]);
    });
  return rowKernel(name, "ppii", kernelSchedule, /*rowsArg=*/2,
                   [&](Emitter &e, ValueRange args) {
    e.eachRow(args, [&](Value t) {
      Value src = e.row(args[0], e.addi(t, args[3]), width);
      Value dst = e.row(args[1], t, width);
      e.loop(e.i(width), [&](Value c) { e.store(e.load(src, c), dst, c); });
    });
  });
}

func::FuncOp LoopKernels::gatherPositionRows(int64_t width, bool bf16Table) {
  XF_KERNEL_CACHED((bf16Table ? "xf_gather_bf16_position_rows_" : "xf_gather_position_rows_") +
                   std::to_string(width));
  (void)kernelSchedule; // a device kernel: no loop schedule
  assert(device && "the embedding sum is one kernel on the device only");
  return deviceKernel(name, "ppppii",
                      {"", DeviceLoopKind::GatherPositions, width, 0, 0, 0, {}, bf16Table},
                      [&](DeviceCall &d) {
                        d.table(d.args[0], width).bf16 = bf16Table;
                        d.buffers.push_back(HalideBufferArg{d.args[1], {{d.args[4], d.i(1)}}});
                        d.buffers.back().int32 = true;
                        d.table(d.args[2], width);
                        d.scalar(d.args[5]);
                        d.dense(d.args[3], width, d.args[4]);
                      });
}

func::FuncOp LoopKernels::positionRowsAt(int64_t width) {
  XF_KERNEL_CACHED("xf_position_rows_at_" + std::to_string(width));
  (void)kernelSchedule;
  assert(device && "row positions come from the device's step table");
  DeviceLoopKernelSpec spec{"", DeviceLoopKind::Position, width};
  spec.rowPositions = true;
  return deviceKernel(name, "pppi", spec, [&](DeviceCall &d) {
    d.table(d.args[0], width);
    d.buffers.push_back(HalideBufferArg{d.args[1], {{d.args[3], d.i(1)}}});
    d.buffers.back().int64 = true;
    d.dense(d.args[2], width, d.args[3]);
  });
}

func::FuncOp LoopKernels::gatherPositionRowsAt(int64_t width, bool bf16Table) {
  XF_KERNEL_CACHED((bf16Table ? "xf_gather_bf16_position_rows_at_"
                              : "xf_gather_position_rows_at_") +
                   std::to_string(width));
  (void)kernelSchedule;
  assert(device && "row positions come from the device's step table");
  DeviceLoopKernelSpec spec{"", DeviceLoopKind::GatherPositions, width, 0, 0, 0, {}, bf16Table};
  spec.rowPositions = true;
  return deviceKernel(name, "pppppi", spec, [&](DeviceCall &d) {
    d.table(d.args[0], width).bf16 = bf16Table;
    d.buffers.push_back(HalideBufferArg{d.args[1], {{d.args[5], d.i(1)}}});
    d.buffers.back().int32 = true;
    d.table(d.args[2], width);
    d.buffers.push_back(HalideBufferArg{d.args[3], {{d.args[5], d.i(1)}}});
    d.buffers.back().int64 = true;
    d.dense(d.args[4], width, d.args[5]);
  });
}

func::FuncOp LoopKernels::sinusoidRows(int64_t width, double base) {
  XF_KERNEL_CACHED("xf_sinusoid_rows_" + std::to_string(width) + "_" + formatDouble(base));
  if (device) // (out, rows, offset)
    return deviceKernel(name, "pii", {"", DeviceLoopKind::Sinusoid, width, 0, 0, base},
                        [&](DeviceCall &d) {
                          d.scalar(d.args[2]);
                          d.dense(d.args[0], width, d.args[1]);
                        });
  return rowKernel(name, "pii", kernelSchedule, /*rowsArg=*/1,
                   [&](Emitter &e, ValueRange args) {
    OpBuilder &b = e.b;
    // Angles in f64: positions reach thousands of radians.
    e.eachRow(args, [&](Value t) {
      Value pos = arith::SIToFPOp::create(b, e.loc, e.f64, e.addi(t, args[2]));
      Value dst = e.row(args[0], t, width);
      e.loop(e.i(width / 2), [&](Value k) {
        Value k2 = e.muli(k, e.i(2));
        Value expo = arith::DivFOp::create(
            b, e.loc, arith::SIToFPOp::create(b, e.loc, e.f64, k2),
            arith::ConstantFloatOp::create(b, e.loc, b.getF64Type(), APFloat(double(width))));
        Value denom = math::PowFOp::create(
            b, e.loc, arith::ConstantFloatOp::create(b, e.loc, b.getF64Type(), APFloat(base)),
            expo);
        Value angle = arith::DivFOp::create(b, e.loc, pos, denom);
        auto toF32 = [&](Value v) { return arith::TruncFOp::create(b, e.loc, e.f32, v); };
        e.store(toF32(math::SinOp::create(b, e.loc, angle)), dst, k2);
        e.store(toF32(math::CosOp::create(b, e.loc, angle)), dst, e.addi(k2, e.i(1)));
      });
    });
  });
}

func::FuncOp LoopKernels::add(int64_t width, bool broadcastRhs) {
  XF_KERNEL_CACHED(std::string(broadcastRhs ? "xf_add_bias_" : "xf_add_") +
                   std::to_string(width));
  if (device) // (a, b, out, rows)
    return deviceKernel(name, "pppi", {"", DeviceLoopKind::Add, width, 0, 0, 0, {}, broadcastRhs},
                        [&](DeviceCall &d) {
                          d.dense(d.args[0], width, d.args[3]);
                          if (broadcastRhs)
                            d.vector(d.args[1], width);
                          else
                            d.dense(d.args[1], width, d.args[3]);
                          d.dense(d.args[2], width, d.args[3]);
                        });
  return rowKernel(name, "pppi", kernelSchedule, /*rowsArg=*/3,
                   [&](Emitter &e, ValueRange args) {
    e.eachRow(args, [&](Value t) {
      Value a = e.row(args[0], t, width), out = e.row(args[2], t, width);
      Value rhs = broadcastRhs ? args[1] : e.row(args[1], t, width);
      e.loop(e.i(width), [&](Value c) { e.store(e.add(e.load(a, c), e.load(rhs, c)), out, c); });
    });
  });
}

func::FuncOp LoopKernels::mapRows(const std::string &name, const LoopSchedule &kernelSchedule,
                                  int64_t width,
                                  llvm::function_ref<Value(OpBuilder &, Location, Value)> f) {
  return rowKernel(name, "ppi", kernelSchedule, /*rowsArg=*/2,
                   [&](Emitter &e, ValueRange args) {
    OpBuilder &b = e.b;
    e.eachRow(args, [&](Value t) {
      Value in = e.row(args[0], t, width), out = e.row(args[1], t, width);
      e.loop(e.i(width), [&](Value c) { e.store(f(b, e.loc, e.load(in, c)), out, c); });
    });
  });
}

func::FuncOp LoopKernels::elementwise(int64_t width, ElementwiseKind kind) {
  const char *names[] = {"relu", "gelu_tanh", "gelu_erf"};
  XF_KERNEL_CACHED(std::string("xf_") + names[int(kind)] + "_" + std::to_string(width));
  if (device) { // (in, out, rows)
    DeviceMap map = kind == ElementwiseKind::Relu       ? DeviceMap::Relu
                    : kind == ElementwiseKind::GeluTanh ? DeviceMap::GeluTanh
                                                        : DeviceMap::GeluErf;
    return deviceKernel(name, "ppi", {"", DeviceLoopKind::Map, width, 0, 0, 0, map},
                        [&](DeviceCall &d) {
                          d.dense(d.args[0], width, d.args[2]);
                          d.dense(d.args[1], width, d.args[2]);
                        });
  }
  return mapRows(name, kernelSchedule, width, [&](OpBuilder &b, Location loc, Value x) -> Value {
    Emitter e{b, loc};
    if (kind == ElementwiseKind::Relu)
      return arith::MaximumFOp::create(b, loc, x, e.f(0.0));
    return gelu(e, x, kind);
  });
}

func::FuncOp LoopKernels::scale(int64_t width, double factor) {
  // Named by the factor's bits: kernels are shared by name, so no two factors may share one.
  XF_KERNEL_CACHED(llvm::formatv("xf_scale_{0}_{1:x16}", width,
                                 llvm::bit_cast<uint64_t>(factor)).str());
  if (device) // (in, out, rows)
    return deviceKernel(name, "ppi",
                        {"", DeviceLoopKind::Map, width, 0, 0, factor, DeviceMap::Scale},
                        [&](DeviceCall &d) {
                          d.dense(d.args[0], width, d.args[2]);
                          d.dense(d.args[1], width, d.args[2]);
                        });
  return mapRows(name, kernelSchedule, width, [&](OpBuilder &b, Location loc, Value x) -> Value {
    return arith::MulFOp::create(b, loc, x, Emitter{b, loc}.f(factor));
  });
}

func::FuncOp LoopKernels::scaleBy(int64_t width) {
  XF_KERNEL_CACHED("xf_scale_by_" + std::to_string(width));
  if (device) // (in, out, rows, factor as the bits of an f64)
    return deviceKernel(name, "ppii", {"", DeviceLoopKind::Map, width, 0, 0, 0, DeviceMap::ScaleBy},
                        [&](DeviceCall &d) {
                          d.dense(d.args[0], width, d.args[2]);
                          Value f64 = arith::BitcastOp::create(d.b, d.loc, d.b.getF64Type(),
                                                               d.args[3]);
                          d.scalarF32(
                              arith::TruncFOp::create(d.b, d.loc, d.b.getF32Type(), f64));
                          d.dense(d.args[1], width, d.args[2]);
                        });
  return rowKernel(name, "ppii", kernelSchedule, /*rowsArg=*/2,
                   [&](Emitter &e, ValueRange args) {
    OpBuilder &b = e.b;
    // The factor travels as an i64 (task closures hold i64 slots); it is
    // computed in double and applied in float32, as a constant factor is.
    Value factor = arith::TruncFOp::create(
        b, e.loc, e.f32, arith::BitcastOp::create(b, e.loc, e.f64, args[3]));
    e.eachRow(args, [&](Value t) {
      Value in = e.row(args[0], t, width), out = e.row(args[1], t, width);
      e.loop(e.i(width), [&](Value c) { e.store(e.mul(e.load(in, c), factor), out, c); });
    });
  });
}

func::FuncOp LoopKernels::silu(int64_t width) {
  XF_KERNEL_CACHED("xf_silu_" + std::to_string(width));
  if (device) // (in, in_stride, out, rows)
    return deviceKernel(name, "pipi", {"", DeviceLoopKind::Silu, width}, [&](DeviceCall &d) {
      d.matrix(d.args[0], d.i(width), d.args[3], d.args[1]);
      d.dense(d.args[2], width, d.args[3]);
    });
  return rowKernel(name, "pipi", kernelSchedule, /*rowsArg=*/3,
                   [&](Emitter &e, ValueRange args) {
    OpBuilder &b = e.b;
    e.eachRow(args, [&](Value t) {
      Value in = e.at(args[0], e.muli(t, args[1])), out = e.row(args[2], t, width);
      e.loop(e.i(width), [&](Value c) {
        // x / (1 + e^(−x)): 0 when e^(−x) overflows, x when it underflows.
        Value x = e.load(in, c);
        Value decay = math::ExpOp::create(b, e.loc, arith::NegFOp::create(b, e.loc, x));
        e.store(e.div(x, e.add(e.f(1.0), decay)), out, c);
      });
    });
  });
}

func::FuncOp LoopKernels::multiply(int64_t width) {
  XF_KERNEL_CACHED("xf_mul_" + std::to_string(width));
  if (device) // (a, a_stride, b, b_stride, out, rows)
    return deviceKernel(name, "pipipi", {"", DeviceLoopKind::Multiply, width}, [&](DeviceCall &d) {
      d.matrix(d.args[0], d.i(width), d.args[5], d.args[1]);
      d.matrix(d.args[2], d.i(width), d.args[5], d.args[3]);
      d.dense(d.args[4], width, d.args[5]);
    });
  return rowKernel(name, "pipipi", kernelSchedule, /*rowsArg=*/5,
                   [&](Emitter &e, ValueRange args) {
    e.eachRow(args, [&](Value t) {
      Value lhs = e.at(args[0], e.muli(t, args[1])), rhs = e.at(args[2], e.muli(t, args[3]));
      Value out = e.row(args[4], t, width);
      e.loop(e.i(width), [&](Value c) { e.store(e.mul(e.load(lhs, c), e.load(rhs, c)), out, c); });
    });
  });
}

/// Pair i of every head turns by θ_i = p · base^(−2i/d): (a, b) ↦
/// (a·cos θ − b·sin θ, a·sin θ + b·cos θ), in f64 (positions reach thousands of radians,
/// where an f32 angle would be off by ~1e-4), shared by all heads. Position p = 16k + j turns
/// by 16k·θ_i, whose cosine and sine libm gives once per pair and 16 positions, then by j·θ_i,
/// whose cosine and sine are constants of the kernel (the f64 angle-sum formulas: within a few
/// f64 ulps of the direct cos(p·θ_i), far below the f32 result's rounding). Every position's
/// value depends on p alone — not on which rows a call or task holds — so a decode step turns
/// a key as the prefill did. With a KV cache every K/V head's new keys go through here in
/// every layer: a libm cosine and sine per (row, pair) took ~5 ms of SmolLM2's 128-token
/// prefill on one thread.
func::FuncOp LoopKernels::rotaryRows(int64_t heads, int64_t headWidth, RotaryPairs pairs,
                                     double base, bool inverse, bool halfOut) {
  XF_KERNEL_CACHED(llvm::formatv("xf_rope{4}{5}_{0}_{1}x{2}_{3}",
                                 pairs == RotaryPairs::Adjacent ? "adjacent" : "halves", heads,
                                 headWidth, formatDouble(base), inverse ? "_grad" : "",
                                 halfOut ? "_f16" : "")
                       .str());
  if (device && !inverse &&
      !halfOut) // (in, in_stride, out, rows, offset); no training on the GPU yet
    return deviceKernel(name, "pipii",
                        {"", DeviceLoopKind::Rotary, heads * headWidth, heads, headWidth, base,
                         DeviceMap::Relu, pairs == RotaryPairs::Halves},
                        [&](DeviceCall &d) {
                          d.matrix(d.args[0], d.i(heads * headWidth), d.args[3], d.args[1]);
                          d.scalar(d.args[4]);
                          d.dense(d.args[2], heads * headWidth, d.args[3]);
                        });
  constexpr int64_t kFine = 16;
  const int64_t half = headWidth / 2, width = heads * headWidth;
  const double exponent = -2.0 * std::log(base) / double(headWidth);
  // [pair][j][cos, sin] of j·θ_i, j < kFine; θ_i as the kernel computes it (exp in f64).
  const std::string tableName = name + "_fine_turns";
  if (!module.lookupSymbol(tableName)) {
    std::vector<double> turns;
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < kFine; ++j) {
        const double angle = double(j) * std::exp(double(i) * exponent);
        turns.push_back(std::cos(angle));
        turns.push_back(std::sin(angle));
      }
    OpBuilder g = OpBuilder::atBlockBegin(module.getBody());
    auto tensor = RankedTensorType::get({int64_t(turns.size())}, g.getF64Type());
    LLVM::GlobalOp::create(g, module.getLoc(),
                           LLVM::LLVMArrayType::get(g.getF64Type(), turns.size()),
                           /*isConstant=*/true, LLVM::Linkage::Internal, tableName,
                           DenseElementsAttr::get(tensor, llvm::ArrayRef<double>(turns)));
  }
  return rowKernel(name, "pipii", kernelSchedule, /*rowsArg=*/3,
                   [&](Emitter &e, ValueRange args) {
    OpBuilder &b = e.b;
    const Location loc = e.loc;
    auto f64 = [&](double v) {
      return arith::ConstantFloatOp::create(b, loc, b.getF64Type(), APFloat(v));
    };
    auto mul64 = [&](Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); };
    auto toF32 = [&](Value v) { return arith::TruncFOp::create(b, loc, e.f32, v); };
    Value fineTurns = LLVM::AddressOfOp::create(b, loc, e.ptr, tableName);
    auto fineTurn = [&](Value index) {
      Value at = LLVM::GEPOp::create(b, loc, e.ptr, e.f64, fineTurns, ValueRange{index});
      return LLVM::LoadOp::create(b, loc, e.f64, at).getResult();
    };
    const Value begin = args[args.size() - 2], end = args[args.size() - 1], offset = args[4];
    auto minI = [&](Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); };
    auto maxI = [&](Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); };
    auto subI = [&](Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); };
    auto divI = [&](Value x, Value y) { return arith::FloorDivSIOp::create(b, loc, x, y); };
    // The 16-position blocks the rows [begin, end) touch, each: per pair one libm cosine and
    // sine, then its rows.
    Value firstBlock = divI(e.addi(begin, offset), e.i(kFine)),
          endBlock = e.addi(divI(e.addi(subI(end, e.i(1)), offset), e.i(kFine)), e.i(1));
    e.loop(firstBlock, endBlock, [&](Value block) {
      Value blockStart = e.muli(block, e.i(kFine)); // its first position
      Value rowBegin = maxI(begin, subI(blockStart, offset)),
            rowEnd = minI(end, subI(e.addi(blockStart, e.i(kFine)), offset));
      e.loop(e.i(half), [&](Value i) {
        Value theta = math::ExpOp::create(
            b, loc, mul64(arith::SIToFPOp::create(b, loc, e.f64, i), f64(exponent)));
        Value angle = mul64(arith::SIToFPOp::create(b, loc, e.f64, blockStart), theta);
        Value cosA = math::CosOp::create(b, loc, angle), sinA = math::SinOp::create(b, loc, angle);
        Value first = pairs == RotaryPairs::Adjacent ? e.muli(i, e.i(2)) : i;
        Value second = e.addi(first, e.i(pairs == RotaryPairs::Adjacent ? 1 : half));
        e.loop(rowBegin, rowEnd, [&](Value t) {
          Value j = subI(e.addi(t, offset), blockStart);
          Value turn = e.muli(e.addi(e.muli(i, e.i(kFine)), j), e.i(2));
          Value cosB = fineTurn(turn), sinB = fineTurn(e.addi(turn, e.i(1)));
          Value cos = toF32(arith::SubFOp::create(b, loc, mul64(cosA, cosB), mul64(sinA, sinB)));
          Value sin = toF32(arith::AddFOp::create(b, loc, mul64(sinA, cosB), mul64(cosA, sinB)));
          if (inverse) // the rotation by −θ (xf.rope_grad)
            sin = arith::NegFOp::create(b, loc, sin);
          Value in = e.at(args[0], e.muli(t, args[1]));
          Value out = args[2], outRow = e.muli(t, e.i(width)); // element offset of row t
          e.loop(e.i(heads), [&](Value h) {
            Value headStart = e.muli(h, e.i(headWidth));
            Value ia = e.addi(headStart, first), ib = e.addi(headStart, second);
            Value a = e.load(in, ia), bb = e.load(in, ib);
            auto put = [&](Value v, Value index) {
              if (halfOut)
                e.storeHalf(v, out, e.addi(outRow, index));
              else
                e.store(v, out, e.addi(outRow, index));
            };
            put(e.sub(e.mul(a, cos), e.mul(bb, sin)), ia);
            put(e.add(e.mul(a, sin), e.mul(bb, cos)), ib);
          });
        });
      });
    });
  });
}

func::FuncOp LoopKernels::layerNorm(int64_t width, double eps, bool affine) {
  XF_KERNEL_CACHED("xf_layer_norm_" + std::to_string(width) + (affine ? "_affine_" : "_") +
                   formatDouble(eps));
  return normalizeRows(name, kernelSchedule, width, eps, /*center=*/true, affine ? 2 : 0);
}

func::FuncOp LoopKernels::rmsNorm(int64_t width, double eps, bool scaled) {
  XF_KERNEL_CACHED("xf_rms_norm_" + std::to_string(width) + (scaled ? "_scaled_" : "_") +
                   formatDouble(eps));
  return normalizeRows(name, kernelSchedule, width, eps, /*center=*/false, scaled ? 1 : 0);
}

/// y = (x − μ) / sqrt(mean((x − μ)²) + ε) [· γ [+ β]], μ = mean(x) or 0.
func::FuncOp LoopKernels::normalizeRows(const std::string &name, const LoopSchedule &kernelSchedule,
                                        int64_t width, double eps, bool center,
                                        unsigned affineParams) {
  const std::string signature = "p" + std::string(affineParams, 'p') + "pi";
  if (device) // (in, [γ, [β]], out, rows)
    return deviceKernel(name, signature,
                        {"", DeviceLoopKind::Normalize, width, 0, 0, eps, DeviceMap::Relu, center,
                         int(affineParams)},
                        [&](DeviceCall &d) {
                          Value rows = d.args[2 + affineParams];
                          d.dense(d.args[0], width, rows);
                          for (unsigned p = 0; p < affineParams; ++p)
                            d.vector(d.args[1 + p], width);
                          d.dense(d.args[1 + affineParams], width, rows);
                        });
  return rowKernel(name, signature, kernelSchedule, /*rowsArg=*/2 + affineParams,
                   [&](Emitter &e, ValueRange args) {
                     Value in = args[0], out = args[1 + affineParams];
                     e.eachRow(args, [&](Value t) {
                       Value x = e.row(in, t, width), y = e.row(out, t, width);
                       Value mean, rstd;
                       std::tie(mean, rstd) = rowStatistics(e, x, width, eps, center);
                       e.loop(e.i(width), [&](Value c) {
                         Value v = e.mul(e.sub(e.load(x, c), mean), rstd);
                         if (affineParams >= 1)
                           v = e.mul(v, e.load(args[1], c));
                         if (affineParams == 2)
                           v = e.add(v, e.load(args[2], c));
                         e.store(v, y, c);
                       });
                     });
                   });
}

func::FuncOp LoopKernels::softmax(int64_t width) {
  XF_KERNEL_CACHED("xf_softmax_" + std::to_string(width));
  if (device) // (in, out, rows)
    return deviceKernel(name, "ppi", {"", DeviceLoopKind::Softmax, width}, [&](DeviceCall &d) {
      d.dense(d.args[0], width, d.args[2]);
      d.dense(d.args[1], width, d.args[2]);
    });
  return rowKernel(name, "ppi", kernelSchedule, /*rowsArg=*/2,
                   [&](Emitter &e, ValueRange args) {
    OpBuilder &b = e.b;
    e.eachRow(args, [&](Value t) {
      Value x = e.row(args[0], t, width), y = e.row(args[1], t, width);
      Value top = e.maximum(e.i(width), [&](Value c) { return e.load(x, c); });
      Value total = e.sum(e.i(width), [&](Value c) {
        Value p = math::ExpOp::create(b, e.loc, e.sub(e.load(x, c), top));
        e.store(p, y, c);
        return p;
      });
      Value inv = e.div(e.f(1.0), total);
      e.loop(e.i(width), [&](Value c) { e.store(e.mul(e.load(y, c), inv), y, c); });
    });
  });
}

func::FuncOp LoopKernels::copy2d() {
  XF_KERNEL_CACHED_WITH("xf_copy2d", LoopSchedule{});
  if (device) // (in, in_stride, out, out_stride, rows, cols)
    return deviceKernel(name, "pipiii", {"", DeviceLoopKind::Copy}, [&](DeviceCall &d) {
      d.matrix(d.args[0], d.args[5], d.args[4], d.args[1]);
      d.matrix(d.args[2], d.args[5], d.args[4], d.args[3]);
    });
  return rowKernel(name, "pipiii", kernelSchedule, /*rowsArg=*/4,
                   [&](Emitter &e, ValueRange args) {
    e.eachRow(args, [&](Value r) {
      Value src = e.at(args[0], e.muli(r, args[1]));
      Value dst = e.at(args[2], e.muli(r, args[3]));
      e.loop(args[5], [&](Value c) { e.store(e.load(src, c), dst, c); });
    });
  });
}

func::FuncOp LoopKernels::copy2dToHalf() {
  XF_KERNEL_CACHED_WITH("xf_copy2d_to_f16", LoopSchedule{});
  // (in, in_stride, out, out_stride, rows, cols); strides in elements of each
  return rowKernel(name, "pipiii", kernelSchedule, /*rowsArg=*/4, [&](Emitter &e, ValueRange args) {
    e.eachRow(args, [&](Value r) {
      Value src = e.at(args[0], e.muli(r, args[1]));
      Value dst = e.muli(r, args[3]);
      e.loop(args[5], [&](Value c) { e.storeHalf(e.load(src, c), args[2], e.addi(dst, c)); });
    });
  });
}

namespace {

/// The name of a KV-append kernel `xf_append[_rotated]_key_values<suffix>`: one kernel per
/// rotation (pairing, head width, base).
std::string appendKeyValuesName(llvm::StringRef suffix,
                                const std::optional<KeyRotation> &rotation) {
  if (!rotation)
    return ("xf_append_key_values" + suffix).str();
  return llvm::formatv("xf_append_rotated_key_values{0}_{1}_{2}_{3}", suffix,
                       rotation->pairs == RotaryPairs::Adjacent ? "adjacent" : "halves",
                       rotation->headWidth, formatDouble(rotation->base))
      .str();
}

/// A KV-append kernel's device spec, rotating the new keys where `rotation` is given.
DeviceLoopKernelSpec appendKeyValuesSpec(const std::optional<KeyRotation> &rotation) {
  DeviceLoopKernelSpec spec{"", DeviceLoopKind::AppendKeyValues};
  if (rotation)
    spec.headWidth = rotation->headWidth, spec.constant = rotation->base,
    spec.flag = rotation->pairs == RotaryPairs::Halves;
  return spec;
}

} // namespace

func::FuncOp LoopKernels::appendKeyValues(std::optional<KeyRotation> rotation) {
  XF_KERNEL_CACHED_WITH(appendKeyValuesName("", rotation), LoopSchedule{});
  assert(device && "the CPU build appends with copy2d");
  DeviceLoopKernelSpec spec = appendKeyValuesSpec(rotation);
  return deviceKernel(name, rotation ? "pipippiiiii" : "pipippiiii", spec, [&](DeviceCall &d) {
    Value rows = d.args[7], width = d.args[8], heads = d.args[9];
    auto heads3d = [&](Value at, Value rowStride, Value headStride) {
      d.buffers.push_back(
          HalideBufferArg{at, {{width, d.i(1)}, {rows, rowStride}, {heads, headStride}}});
    };
    heads3d(d.args[0], d.args[1], width);
    heads3d(d.args[2], d.args[3], width);
    heads3d(d.args[4], width, d.args[6]);
    heads3d(d.args[5], width, d.args[6]);
    d.outputs = 2;
    if (rotation) // the position of the first new row
      d.scalar(d.args[10]);
  });
}

func::FuncOp LoopKernels::appendKeyValuesAt(std::optional<KeyRotation> rotation) {
  XF_KERNEL_CACHED_WITH(appendKeyValuesName("_at", rotation), LoopSchedule{});
  assert(device && "row positions come from the device's step table");
  DeviceLoopKernelSpec spec = appendKeyValuesSpec(rotation);
  spec.rowPositions = true;
  return deviceKernel(name, "pipippiiiiiiipp", spec, [&](DeviceCall &d) {
    Value rows = d.args[10], width = d.args[11], heads = d.args[12];
    for (int source : {0, 2})
      d.buffers.push_back(HalideBufferArg{
          d.args[source], {{width, d.i(1)}, {rows, d.args[source + 1]}, {heads, width}}});
    for (int table : {13, 14}) {
      d.buffers.push_back(HalideBufferArg{d.args[table], {{rows, d.i(1)}}});
      d.buffers.back().int64 = true;
    }
    for (int cache : {4, 5}) { // scattered into: HalideBufferArg::hostAlias
      d.buffers.push_back(HalideBufferArg{d.args[cache],
                                          {{width, d.i(1)},
                                           {d.args[8], width},
                                           {heads, d.args[6]},
                                           {d.args[9], d.args[7]}}});
      d.buffers.back().hostAlias = true;
    }
    d.outputs = 2;
  });
}

func::FuncOp LoopKernels::transpose2d() {
  XF_KERNEL_CACHED_WITH("xf_transpose2d", LoopSchedule{});
  if (device) // (in, out, rows, cols)
    return deviceKernel(name, "ppii", {"", DeviceLoopKind::Transpose}, [&](DeviceCall &d) {
      d.matrix(d.args[0], d.args[3], d.args[2], d.args[3]);
      d.matrix(d.args[1], d.args[2], d.args[3], d.args[2]);
    });
  return rowKernel(name, "ppii", kernelSchedule, /*rowsArg=*/2,
                   [&](Emitter &e, ValueRange args) {
    e.eachRow(args, [&](Value r) {
      e.loop(args[3], [&](Value c) {
        Value v = e.load(args[0], e.addi(e.muli(r, args[3]), c));
        e.store(v, args[1], e.addi(e.muli(c, args[2]), r));
      });
    });
  });
}
