//===- Checkpoint.h - the tensor names of a model directory -*- C++ -*-===//
//
// The importer reads names only, never tensor data:
// model.safetensors.index.json's weight_map, else the header of
// model.safetensors (or of the directory's only .safetensors file). The names
// give the prefix a model class saved them under ("transformer.h.0..." from
// GPT2LMHeadModel, "h.0..." from GPT2Model) and confirm that the spec's tensors
// are all there.
//
//===----------------------------------------------------------------------===//

#ifndef XF_HF_CHECKPOINT_H
#define XF_HF_CHECKPOINT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <set>
#include <string>

namespace xf::hf {

struct Checkpoint {
  std::string
      file; // the file the names came from; empty when the directory has none
  std::set<std::string> names;

  bool present() const { return !file.empty(); }
  /// The prefix P of the name `P + suffix` (P empty or ending in '.'), the
  /// shortest if several; nothing when no name ends so.
  std::optional<std::string> prefixOf(llvm::StringRef suffix) const;
};

llvm::Expected<Checkpoint> readCheckpoint(const std::string &dir);

} // namespace xf::hf

#endif // XF_HF_CHECKPOINT_H
