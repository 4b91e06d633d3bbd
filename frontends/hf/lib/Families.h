//===- Families.h - one importer per model family ----------*- C++ -*-===//
//
// Each reads config.json through Config (which keeps the first refusal) and
// fills a SpecText whose tensor names carry the checkpoint's prefix. Import.cpp
// picks one by model_type and then checks the names against the checkpoint.
//
//===----------------------------------------------------------------------===//

#ifndef XF_HF_FAMILIES_H
#define XF_HF_FAMILIES_H

#include "Checkpoint.h"
#include "Config.h"
#include "SpecText.h"

#include "xf/Hf/Import.h"

namespace xf::hf {

/// GPT2LMHeadModel / GPT2Model (model_type gpt2).
SpecText importGpt2(Config &config, const Checkpoint &checkpoint,
                    const ImportOptions &options);
/// BertModel, and sentence-transformers' MiniLM (model_type bert).
SpecText importBert(Config &config, const Checkpoint &checkpoint,
                    const ImportOptions &options);
/// The RMSNorm + RoPE + gated-MLP decoders: llama, mistral, qwen2, gemma.
SpecText importDecoder(Config &config, const Checkpoint &checkpoint,
                       const ImportOptions &options);

/// The prefix of the checkpoint's tensor `anchor` ("transformer." for
/// "transformer.wte.weight"), or `fallback` when the directory has no
/// checkpoint; a header line says which.
std::string checkpointPrefix(const Checkpoint &checkpoint,
                             llvm::StringRef anchor, llvm::StringRef fallback,
                             Config &config, SpecText &spec);

/// The activation named by config key `key` as the spec writes it applied to
/// `x`: gelu (erf), gelu with approx = tanh, relu or silu; anything else is
/// refused. `geluIsTanh`: "gelu" means the tanh form (Gemma's legacy value, as
/// transformers reads it).
std::string activation(Config &config, llvm::StringRef key,
                       llvm::StringRef fallback, llvm::StringRef x,
                       bool geluIsTanh = false);

/// The header lines every imported spec starts with.
void importedHeader(const Config &config, const Checkpoint &checkpoint,
                    SpecText &spec, llvm::StringRef description);

} // namespace xf::hf

#endif // XF_HF_FAMILIES_H
