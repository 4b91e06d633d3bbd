//===- Import.h - a Hugging Face model directory as an xf spec --*- C++ -*-===//
//
// `xfc import DIR` (docs/import.md): config.json's model_type picks a family
// (gpt2, bert, llama, mistral, qwen2, gemma), its keys give the
// hyperparameters, and the checkpoint's tensor names (model.safetensors or
// model.safetensors.index.json, when DIR has one) give the prefix and confirm
// that every tensor the spec binds is there. The result is spec text with
// Hugging Face tensor names, one comment per hyperparameter naming its config
// key. An unknown model_type, or an option of a known one that the spec would
// not honour, is an error naming it: never a model that computes something
// else.
//
//===----------------------------------------------------------------------===//

#ifndef XF_HF_IMPORT_H
#define XF_HF_IMPORT_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <string>

namespace xf::hf {

struct ImportOptions {
  /// Caps ℓ_max (positions, KV-cache capacity) below config.json's; 0 keeps it.
  /// A sliding window at least this wide then never cuts, so Mistral imports
  /// exactly.
  int64_t maxPositions = 0;
  /// Receives one-line warnings (unused checkpoint tensors, no checkpoint in
  /// DIR).
  std::function<void(const std::string &)> warn;
};

/// The spec of the model in `dir`, or a one-line error ("DIR/config.json:
/// ...").
llvm::Expected<std::string> importDirectory(const std::string &dir,
                                            const ImportOptions &options);

/// The model_type values importDirectory knows, comma-separated.
const char *knownModelTypes();

} // namespace xf::hf

#endif // XF_HF_IMPORT_H
