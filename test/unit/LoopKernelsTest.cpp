//===- LoopKernelsTest.cpp - loop kernels split into parallel row tasks ---===//
//
// Every loop kernel (compiler/include/xf/Codegen/LoopKernels.h) is built under
// several #xf.loop_schedule values, JIT-compiled through the same lowering
// as the host code, and run on the same inputs. Rows are independent, so a
// kernel split into tasks must give the serial loop's result bit for bit,
// whatever the task size and the order tasks run in; a preferred vector
// width may only reassociate sums.
//
// halide_do_par_for is the Halide runtime's in an executable; here it is a
// stand-in that runs the tasks backwards on two threads and counts them.
//
//===----------------------------------------------------------------------===//

#include "xf/Codegen/LoopKernels.h"
#include "xf/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/TargetSelect.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

using namespace mlir;
using namespace mlir::xf;

namespace {

using Task = int (*)(void *, int, uint8_t *);
std::atomic<int> tasksRun{0}, parallelCalls{0};

extern "C" int testParallelFor(void *userContext, Task task, int min, int size, uint8_t *closure) {
  parallelCalls++;
  std::atomic<int> failed{0};
  auto run = [&](int parity) {
    for (int i = size - 1; i >= 0; --i)
      if (i % 2 == parity) {
        failed |= task(userContext, min + i, closure);
        tasksRun++;
      }
  };
  std::thread other(run, 1);
  run(0);
  other.join();
  return failed;
}

/// One argument of a kernel call.
struct Arg {
  enum Kind { Floats, Ids, Out, Rows, Int } kind;
  int64_t count = 0; // Floats/Out: floats per row (rowsFixed = 0) or in all; Int: its value
  int64_t rowsFixed = 0; // Floats: a table of this many rows, independent of the call's rows
};

struct KernelCase {
  std::string label;
  std::function<func::FuncOp(LoopKernels &)> make;
  std::vector<Arg> args;
};

constexpr int64_t kTableRows = 40;

std::vector<KernelCase> kernelCases() {
  const int64_t w = 24;
  Arg rows{Arg::Rows}, out{Arg::Out, w}, in{Arg::Floats, w}, vec{Arg::Floats, w, 1};
  Arg wide{Arg::Floats, 3 * w}; // read with a row stride of 3w
  return {
      {"gather", [=](LoopKernels &k) { return k.gatherRows(w); },
       {{Arg::Floats, w, kTableRows}, {Arg::Ids}, out, rows}},
      {"positions", [=](LoopKernels &k) { return k.positionRows(w); },
       {{Arg::Floats, w, kTableRows}, out, rows, {Arg::Int, 3}}},
      {"sinusoids", [=](LoopKernels &k) { return k.sinusoidRows(w, 10000.0); },
       {out, rows, {Arg::Int, 5}}},
      {"add", [=](LoopKernels &k) { return k.add(w, false); }, {in, in, out, rows}},
      {"add_bias", [=](LoopKernels &k) { return k.add(w, true); }, {in, vec, out, rows}},
      {"gelu", [=](LoopKernels &k) { return k.elementwise(w, ElementwiseKind::GeluTanh); },
       {in, out, rows}},
      {"layer_norm", [=](LoopKernels &k) { return k.layerNorm(w, 1e-5, true); },
       {in, vec, vec, out, rows}},
      {"rms_norm", [=](LoopKernels &k) { return k.rmsNorm(w, 1e-5, true); },
       {in, vec, out, rows}},
      {"softmax", [=](LoopKernels &k) { return k.softmax(w); }, {in, out, rows}},
      {"silu", [=](LoopKernels &k) { return k.silu(w); },
       {wide, {Arg::Int, 3 * w}, out, rows}},
      {"mul", [=](LoopKernels &k) { return k.multiply(w); },
       {wide, {Arg::Int, 3 * w}, in, {Arg::Int, w}, out, rows}},
      {"rope", [=](LoopKernels &k) { return k.rotaryRows(2, w / 2, RotaryPairs::Halves, 1e4); },
       {wide, {Arg::Int, 3 * w}, out, rows, {Arg::Int, 7}}},
  };
}

const LoopSchedule kSerial{0, 0};
const LoopSchedule kSchedules[] = {kSerial, {1, 0}, {3, 0}, {7, 0}, {64, 0}, {4, 256}, {4, 512}};
const int64_t kRowCounts[] = {1, 5, 22};

class LoopKernelsTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  }

  void SetUp() override {
    context.loadDialect<func::FuncDialect, arith::ArithDialect, scf::SCFDialect,
                        math::MathDialect, LLVM::LLVMDialect>();
    registerBuiltinDialectTranslation(context);
    registerLLVMDialectTranslation(context);
    module = ModuleOp::create(UnknownLoc::get(&context));
    LoopKernels kernels(*module);
    for (const LoopSchedule &s : kSchedules) {
      kernels.useSchedule(s);
      for (const KernelCase &c : kernelCases()) {
        func::FuncOp fn = c.make(kernels);
        fn.setPublic();
        names[{c.label, s.rowsPerTask, s.vectorBits}] = fn.getName().str();
      }
    }
    PassManager pm(&context);
    buildHostToLLVMPipeline(pm);
    ASSERT_TRUE(succeeded(pm.run(*module)));
    lowered = *module;
    auto created = ExecutionEngine::create(*module);
    ASSERT_TRUE(bool(created)) << llvm::toString(created.takeError());
    engine = std::move(*created);
    engine->registerSymbols([](llvm::orc::MangleAndInterner interner) {
      llvm::orc::SymbolMap map;
      map[interner("halide_do_par_for")] = {llvm::orc::ExecutorAddr::fromPtr(&testParallelFor),
                                            llvm::JITSymbolFlags::Exported};
      return map;
    });
  }

  /// Runs kernel `label` under `s` on `rows` rows of inputs drawn from
  /// `seed`; returns the output (NaN where the kernel wrote nothing).
  std::vector<float> run(const KernelCase &c, const LoopSchedule &s, int64_t rows, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
    std::vector<std::vector<float>> floats;
    std::vector<int32_t> ids(rows);
    for (int32_t &id : ids)
      id = int32_t(rng() % kTableRows);
    int64_t rowsValue = rows, outIndex = -1;
    std::vector<int64_t> ints;
    ints.reserve(c.args.size());
    std::vector<void *> slots; // what each argument's value is
    for (const Arg &a : c.args) {
      switch (a.kind) {
      case Arg::Floats:
      case Arg::Out: {
        int64_t n = a.count * (a.rowsFixed ? a.rowsFixed : rows);
        floats.emplace_back(n, std::nanf(""));
        if (a.kind == Arg::Floats)
          for (float &v : floats.back())
            v = uniform(rng);
        else
          outIndex = int64_t(floats.size()) - 1;
        slots.push_back(floats.back().data());
        break;
      }
      case Arg::Ids:
        slots.push_back(ids.data());
        break;
      case Arg::Rows:
        ints.push_back(rowsValue);
        slots.push_back(&ints.back());
        break;
      case Arg::Int:
        ints.push_back(a.count);
        slots.push_back(&ints.back());
        break;
      }
    }
    // invokePacked takes a pointer to each argument's value.
    std::vector<void *> packed;
    std::vector<void *> pointerValues(c.args.size());
    for (size_t i = 0; i < c.args.size(); ++i) {
      if (c.args[i].kind == Arg::Rows || c.args[i].kind == Arg::Int) {
        packed.push_back(slots[i]);
      } else {
        pointerValues[i] = slots[i];
        packed.push_back(&pointerValues[i]);
      }
    }
    std::string name = names.at({c.label, s.rowsPerTask, s.vectorBits});
    llvm::Error error = engine->invokePacked(name, packed);
    EXPECT_FALSE(bool(error)) << llvm::toString(std::move(error));
    return floats.at(outIndex);
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  ModuleOp lowered;
  std::unique_ptr<ExecutionEngine> engine;
  std::map<std::tuple<std::string, int64_t, int64_t>, std::string> names;
};

TEST_F(LoopKernelsTest, TasksGiveTheSerialResultBitForBit) {
  for (const KernelCase &c : kernelCases()) {
    for (int64_t rows : kRowCounts) {
      std::vector<float> serial = run(c, kSerial, rows, 42);
      for (float v : serial)
        ASSERT_FALSE(std::isnan(v)) << c.label << ": the serial loop left a row unwritten";
      for (const LoopSchedule &s : kSchedules) {
        int before = tasksRun, callsBefore = parallelCalls;
        std::vector<float> got = run(c, s, rows, 42);
        int64_t tasks = s.rowsPerTask ? (rows + s.rowsPerTask - 1) / s.rowsPerTask : 1;
        // One task runs inline, without the thread pool.
        EXPECT_EQ(parallelCalls - callsBefore, tasks > 1 ? 1 : 0) << c.label;
        EXPECT_EQ(tasksRun - before, tasks > 1 ? tasks : 0) << c.label;
        ASSERT_EQ(got.size(), serial.size());
        if (s.vectorBits == 0) {
          EXPECT_EQ(std::memcmp(got.data(), serial.data(), got.size() * sizeof(float)), 0)
              << c.label << " rows=" << rows << " rows_per_task=" << s.rowsPerTask;
          continue;
        }
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], serial[i], 1e-5f * std::max(1.0f, std::fabs(serial[i])))
              << c.label << " vector_bits=" << s.vectorBits << " at " << i;
      }
    }
  }
}

TEST_F(LoopKernelsTest, NamesCarryTheSchedule) {
  EXPECT_EQ(names.at({"softmax", 0, 0}), "xf_softmax_24");
  EXPECT_EQ(names.at({"softmax", 7, 0}), "xf_softmax_24_r7");
  EXPECT_EQ(names.at({"softmax", 4, 512}), "xf_softmax_24_r4_v512");
}

TEST(LoopKernelNames, ConstantsThatDifferNameDifferentKernels) {
  MLIRContext context;
  context.loadDialect<func::FuncDialect, arith::ArithDialect, scf::SCFDialect,
                      math::MathDialect, LLVM::LLVMDialect>();
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
  LoopKernels kernels(*module);
  // Equal to 6 digits: a name printed with %g alone would share one kernel.
  EXPECT_NE(kernels.layerNorm(8, 1e-5, true).getName(),
            kernels.layerNorm(8, 1.0000001e-5, true).getName());
  EXPECT_NE(kernels.rmsNorm(8, 1e-6, true).getName(), kernels.rmsNorm(8, 1.0000004e-6, true).getName());
  EXPECT_NE(kernels.rotaryRows(2, 4, RotaryPairs::Halves, 10000.0).getName(),
            kernels.rotaryRows(2, 4, RotaryPairs::Halves, 10000.5).getName());
  EXPECT_NE(kernels.sinusoidRows(8, 10000.0).getName(), kernels.sinusoidRows(8, 10000.5).getName());
  // The usual constants keep their short names.
  EXPECT_EQ(kernels.layerNorm(8, 1e-5, true).getName(), "xf_layer_norm_8_affine_1e-05");
  EXPECT_EQ(kernels.sinusoidRows(8, 10000.0).getName(), "xf_sinusoid_rows_8_10000");
}

TEST_F(LoopKernelsTest, VectorBitsBecomeTheLlvmFunctionAttribute) {
  auto body = lowered.lookupSymbol<LLVM::LLVMFuncOp>("xf_softmax_24_r4_v512_rows");
  ASSERT_TRUE(body);
  ASSERT_TRUE(body.getPassthrough());
  std::string text;
  llvm::raw_string_ostream os(text);
  os << *body.getPassthrough();
  EXPECT_NE(text.find("\"prefer-vector-width\", \"512\""), std::string::npos) << text;
  auto serialBody = lowered.lookupSymbol<LLVM::LLVMFuncOp>("xf_softmax_24_rows");
  ASSERT_TRUE(serialBody);
  EXPECT_FALSE(serialBody.getPassthrough());
}

} // namespace
