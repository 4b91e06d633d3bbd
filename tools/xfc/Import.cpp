//===- Import.cpp - `xfc import DIR [-o FILE.xf]` -------------------------===//
//
// The command line of the Hugging Face importer (frontends/hf, docs/import.md). It is parsed
// here, not by xfc's cl::opt flags: none of the compiler's options apply, and `-o` means the
// spec. The python package's xf.import_hf runs this command line; keep it stable.
//
//===----------------------------------------------------------------------===//

#include "Import.h"

#include "Files.h"

#include "xf/Hf/Import.h"

#include "xfrt/MessageText.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

static const char *kUsage =
    "usage: xfc import DIR [-o FILE.xf] [--max-positions N]\n"
    "\n"
    "Writes a spec in the xf language (docs/language.md) for the Hugging Face model in DIR:\n"
    "its config.json (model_type bert, gemma, gpt2, llama, mistral or qwen2) gives the\n"
    "hyperparameters, the tensor names of its model.safetensors (or\n"
    "model.safetensors.index.json) the prefix, and every name the spec binds is checked to\n"
    "be there. An unknown model_type or an option the spec would not honour is an error.\n"
    "Then: xfc FILE.xf -o EXE && ./EXE --weights DIR/model.safetensors ...\n"
    "\n"
    "  -o FILE.xf           where to write the spec (default: stdout)\n"
    "  --max-positions N    cap the context (ℓ_max: positions and the KV cache) of a rotary\n"
    "                       model at N; a sliding window of at least N then never cuts\n"
    "  -h, --help           this text\n";

/// One line to stderr, its control characters escaped and cut short (xfrt/MessageText.h): a
/// message may quote a directory name, an argument or a config.json value.
static void say(const char *what, const std::string &message, const char *tail = "") {
  llvm::errs() << "xfc import: " << what << ": " << xfrt::printableMessage(message) << tail
               << "\n";
}

static int usageError(const std::string &message) {
  say("error", message, " (xfc import --help)");
  return 2;
}

int xfc::runImport(int argc, char **argv) {
  std::string dir, output = "-";
  xf::hf::ImportOptions options;
  bool haveOutput = false, haveMax = false;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    auto value = [&](llvm::StringRef flag) -> std::optional<std::string> {
      if (arg.consume_front(flag) && arg.consume_front("="))
        return arg.str();
      if (i + 1 < argc)
        return std::string(argv[++i]);
      return std::nullopt;
    };
    if (arg == "-h" || arg == "--help") {
      llvm::outs() << kUsage;
      return 0;
    }
    if (arg == "-o" || arg.starts_with("-o=")) {
      std::optional<std::string> v = value("-o");
      if (!v || v->empty() || haveOutput)
        return usageError(haveOutput ? "-o given twice" : "-o needs a file");
      output = *v, haveOutput = true;
    } else if (arg == "--max-positions" || arg.starts_with("--max-positions=")) {
      std::optional<std::string> v = value("--max-positions");
      unsigned long long n = 0;
      if (!v || llvm::StringRef(*v).getAsInteger(10, n) || n < 1 || n > (1ull << 31) - 1 || haveMax)
        return usageError(haveMax ? "--max-positions given twice"
                                  : "--max-positions needs an integer in 1 .. 2^31-1");
      options.maxPositions = int64_t(n), haveMax = true;
    } else if (arg.starts_with("-") && arg != "-") {
      return usageError("unknown option " + xfrt::quoteInput(arg));
    } else if (!dir.empty()) {
      return usageError("one model directory, not " + xfrt::quoteInput(dir) + " and " +
                        xfrt::quoteInput(arg));
    } else {
      dir = arg.str();
    }
  }
  if (dir.empty())
    return usageError("give the model directory: xfc import DIR [-o FILE.xf]");
  if (output != "-")
    if (llvm::Error e = checkOutput(output, /*streamable=*/true)) {
      say("error", llvm::toString(std::move(e)));
      return 1;
    }
  options.warn = [](const std::string &message) {
    say("warning", message);
  };
  llvm::Expected<std::string> spec = xf::hf::importDirectory(dir, options);
  if (!spec) {
    say("error", llvm::toString(spec.takeError()));
    return 1;
  }
  if (llvm::Error e = writeText(output, *spec)) {
    say("error", llvm::toString(std::move(e)));
    return 1;
  }
  return 0;
}
