//===- BuildExecutable.cpp - objects linked with libxfrt ------------------===//
//
// One object for the host code, one per Halide pipeline, one Halide runtime,
// then the system linker (through the C++ compiler xf was built with) with
// the runtime archives. Intermediate files live in a ScratchDirectory.
//
//===----------------------------------------------------------------------===//

#include "ScratchDirectory.h"

#include "xf/Pipelines/Pipelines.h"
#include "xf/Target/EmitObject.h"

#include "xfrt/RuntimePaths.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

using namespace mlir;
using namespace mlir::xf;

namespace {

llvm::Error link(llvm::ArrayRef<std::string> objects, llvm::StringRef output) {
  auto driver = llvm::sys::findProgramByName(XF_LINKER_DRIVER);
  if (!driver)
    driver = llvm::sys::findProgramByName("c++");
  if (!driver)
    return llvm::createStringError("no C++ compiler driver found to link with");
  std::vector<std::string> args{*driver, "-o", output.str()};
  // Name the system linker explicitly: the driver may run with a minimal PATH.
  auto linker = llvm::sys::findProgramByName("ld");
  if (!linker)
    linker = llvm::sys::findProgramByName("ld", {"/usr/bin", "/bin", "/usr/local/bin"});
  if (linker && llvm::sys::path::filename(*driver).contains("clang"))
    args.push_back("--ld-path=" + *linker);
  args.insert(args.end(), objects.begin(), objects.end());
  args.push_back(XFRT_MAIN_ARCHIVE_PATH);
  args.push_back(XFRT_ARCHIVE_PATH);
  for (const char *flag : {"-lstdc++", "-lpthread", "-ldl", "-lm"})
    args.push_back(flag);
#ifdef XF_LINK_SANITIZERS
  args.push_back("-fsanitize=address,undefined");
#endif
  std::vector<llvm::StringRef> argv(args.begin(), args.end());
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*driver, argv, std::nullopt, {}, 0, 0, &message);
  if (rc != 0)
    return llvm::createStringError("linking " + output.str() + " failed (" + *driver +
                                   " exit " + std::to_string(rc) + ") " + message);
  return llvm::Error::success();
}

} // namespace

llvm::Error mlir::xf::buildExecutable(const HostProgram &program,
                                      const CodegenOptions &options,
                                      llvm::StringRef output) {
  llvm::Expected<ScratchDirectory> scratch =
      ScratchDirectory::create("xfc", options.keepIntermediates);
  if (!scratch)
    return scratch.takeError();
  ScratchDirectory &dir = *scratch;
  OwningOpRef<ModuleOp> llvmModule = lowerHostToLLVM(program);
  if (!llvmModule)
    return llvm::createStringError("lowering the host code to LLVM failed");
  std::vector<std::string> objects{dir.file("host.o")};
  if (llvm::Error e = emitObjectFile(*llvmModule, options.optLevel, objects.back()))
    return e;
  for (const GemmKernelSpec &spec : program.gemms) {
    objects.push_back(dir.file(spec.name + ".o"));
    if (llvm::Error e = compileGemmKernel(spec, options.target, objects.back()))
      return e;
  }
  for (const AttentionKernelSpec &spec : program.attentions) {
    objects.push_back(dir.file(spec.name + ".o"));
    if (llvm::Error e = compileAttentionKernel(spec, options.target, objects.back()))
      return e;
  }
  objects.push_back(dir.file("halide_runtime.o"));
  if (llvm::Error e = compileHalideRuntime(options.target, objects.back()))
    return e;
  return link(objects, output);
}

llvm::Expected<std::string> mlir::xf::describeKernels(const HostProgram &program,
                                                      const CodegenOptions &options) {
  std::string text;
  for (const GemmKernelSpec &spec : program.gemms) {
    auto stmt = describeGemmKernel(spec, options.target);
    if (!stmt)
      return stmt.takeError();
    text += "// ----- " + spec.name + "\n" + *stmt + "\n";
  }
  for (const AttentionKernelSpec &spec : program.attentions) {
    auto stmt = describeAttentionKernel(spec, options.target);
    if (!stmt)
      return stmt.takeError();
    text += "// ----- " + spec.name + "\n" + *stmt + "\n";
  }
  return text;
}
