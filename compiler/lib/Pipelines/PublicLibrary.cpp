//===- PublicLibrary.cpp - xfc --emit=lib's exports and archive ------------===//

#include "PublicLibrary.h"
#include "ScratchDirectory.h"

#include "xfrt/RuntimePaths.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

using namespace mlir::xf;

namespace {
/// xf.h's functions, as patterns (`*`) for the version script and objcopy --wildcard.
constexpr const char *kPublicApiSymbols[] = {
    "xf_api_version",       "xf_last_error", "xf_manifest_json", "xf_set_threads",
    "xf_set_cuda_graphs",   "xf_generate_defaults", "xf_session_*", "xf_tokenizer_*"};

llvm::Error run(llvm::StringRef program, std::vector<std::string> args) {
  auto path = llvm::sys::findProgramByName(program);
  if (!path)
    path = llvm::sys::findProgramByName(program, {"/usr/bin", "/bin", "/usr/local/bin"});
  if (!path)
    return llvm::createStringError("no '" + program.str() + "' found to build the archive with");
  args.insert(args.begin(), *path);
  std::vector<llvm::StringRef> argv(args.begin(), args.end());
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*path, argv, std::nullopt, {}, 0, 0, &message);
  if (rc != 0)
    return llvm::createStringError(program.str() + " failed (exit " + std::to_string(rc) + ") " +
                                   message);
  return llvm::Error::success();
}
} // namespace

std::string mlir::xf::publicApiVersionScript() {
  std::string text = "{\n  global:\n";
  for (const char *symbol : kPublicApiSymbols)
    text += std::string("    ") + symbol + ";\n";
  return text + "  local: *;\n};\n";
}

llvm::Error mlir::xf::archivePublicLibrary(llvm::StringRef driver,
                                           llvm::ArrayRef<std::string> objects,
                                           llvm::StringRef output, ScratchDirectory &dir) {
  std::string model = dir.file("model.o"), keep = dir.file("exports.txt");
  std::vector<std::string> link{"-r", "-nostdlib", "-o", model};
  link.insert(link.end(), objects.begin(), objects.end());
  link.insert(link.end(), {"-Wl,--whole-archive", XFRT_CAPI_ARCHIVE_PATH, "-Wl,--no-whole-archive",
                           XFRT_ARCHIVE_PATH});
  if (llvm::Error e = run(driver, link))
    return e;
  std::string symbols;
  for (const char *symbol : kPublicApiSymbols)
    symbols += std::string(symbol) + "\n";
  if (llvm::Error e = writeTextFile(keep, symbols))
    return e;
  if (llvm::Error e = run("objcopy", {"--wildcard", "--keep-global-symbols=" + keep, model}))
    return e;
  // The target exists (the temporary xfc renames); ar would read it as an archive.
  llvm::sys::fs::remove(output);
  return run("ar", {"rcsD", output.str(), model});
}

llvm::Error mlir::xf::copyPublicHeader(llvm::StringRef library) {
  llvm::SmallString<256> header(llvm::sys::path::parent_path(library));
  llvm::sys::path::append(header, "xf.h");
  if (std::error_code ec = llvm::sys::fs::copy_file(XFRT_PUBLIC_HEADER_PATH, header))
    return llvm::createStringError("copying " + std::string(XFRT_PUBLIC_HEADER_PATH) + " to " +
                                   header.str().str() + ": " + ec.message());
  return llvm::Error::success();
}

llvm::Error mlir::xf::writeTextFile(llvm::StringRef path, llvm::StringRef text) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (!ec) {
    os << text;
    os.close();
    ec = os.error();
  }
  if (ec)
    return llvm::createStringError("writing " + path.str() + ": " + ec.message());
  return llvm::Error::success();
}
