//===- EmitObject.cpp - LLVM dialect → object file for the host CPU -------===//
//
// The host function and loop kernels are compiled for the exact CPU xfc runs
// on (its name and feature list, e.g. avx512f), like Halide's `host` target.
//
//===----------------------------------------------------------------------===//

#include "xf/Target/EmitObject.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

namespace {

llvm::Expected<std::unique_ptr<llvm::TargetMachine>> hostMachine(int optLevel) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("no LLVM target for " + triple.str() + ": " + error);
  std::string features;
  for (auto &[name, enabled] : llvm::sys::getHostCPUFeatures())
    features += (enabled ? "+" : "-") + name.str() + ",";
  auto level = optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
               : optLevel == 0 ? llvm::CodeGenOptLevel::None
                               : llvm::CodeGenOptLevel::Default;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features, llvm::TargetOptions(),
      llvm::Reloc::PIC_, std::nullopt, level));
  if (!machine)
    return llvm::createStringError("cannot create a target machine for " + triple.str());
  return machine;
}

/// The optimized LLVM module, ready for the given machine.
llvm::Expected<std::unique_ptr<llvm::Module>>
optimizedModule(ModuleOp module, llvm::LLVMContext &context, llvm::TargetMachine &machine,
                int optLevel) {
  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(module, context);
  if (!llvmModule)
    return llvm::createStringError("translation to LLVM IR failed");
  llvmModule->setTargetTriple(machine.getTargetTriple());
  llvmModule->setDataLayout(machine.createDataLayout());
  if (optLevel == 0)
    return llvmModule;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = optLevel == 1   ? llvm::OptimizationLevel::O1
                                  : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                  : llvm::OptimizationLevel::O3;
  builder.buildPerModuleDefaultPipeline(level).run(*llvmModule, mam);
  return llvmModule;
}

/// Optimizes `module` for the host and hands the result to `use`.
llvm::Error withOptimizedModule(
    ModuleOp module, int optLevel,
    llvm::function_ref<llvm::Error(llvm::TargetMachine &, llvm::Module &)> use) {
  auto machine = hostMachine(optLevel);
  if (!machine)
    return machine.takeError();
  llvm::LLVMContext context;
  auto llvmModule = optimizedModule(module, context, **machine, optLevel);
  if (!llvmModule)
    return llvmModule.takeError();
  return use(**machine, **llvmModule);
}

llvm::Error emitMachineCode(ModuleOp module, int optLevel, llvm::raw_pwrite_stream &os,
                            llvm::CodeGenFileType kind) {
  return withOptimizedModule(module, optLevel, [&](llvm::TargetMachine &machine,
                                                   llvm::Module &llvmModule) -> llvm::Error {
    llvm::legacy::PassManager passes;
    if (machine.addPassesToEmitFile(passes, os, nullptr, kind))
      return llvm::createStringError("the target cannot emit this file type");
    passes.run(llvmModule);
    return llvm::Error::success();
  });
}

} // namespace

llvm::Expected<std::string> mlir::xf::emitLLVMIR(ModuleOp module, int optLevel) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (llvm::Error e = withOptimizedModule(
          module, optLevel, [&](llvm::TargetMachine &, llvm::Module &llvmModule) {
            llvmModule.print(os, nullptr);
            return llvm::Error::success();
          }))
    return std::move(e);
  return text;
}

llvm::Expected<std::string> mlir::xf::emitAssembly(ModuleOp module, int optLevel) {
  llvm::SmallString<0> text;
  llvm::raw_svector_ostream os(text);
  if (llvm::Error e = emitMachineCode(module, optLevel, os, llvm::CodeGenFileType::AssemblyFile))
    return std::move(e);
  return std::string(text);
}

llvm::Error mlir::xf::emitObjectFile(ModuleOp module, int optLevel, llvm::StringRef path) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError("cannot write " + path.str() + ": " + ec.message());
  if (llvm::Error e = emitMachineCode(module, optLevel, os, llvm::CodeGenFileType::ObjectFile))
    return e;
  // A full disk is an error to report, not LLVM's fatal "IO failure" when `os` is destroyed.
  os.close();
  if (os.has_error()) {
    std::error_code error = os.error();
    os.clear_error();
    return llvm::createStringError("cannot write " + path.str() + ": " + error.message());
  }
  return llvm::Error::success();
}
