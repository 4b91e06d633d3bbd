//===- BatchRun.h - Generation for a batch of prompts, decoding together -*- C++ -*-===//
//
// The command line's generation over several prompts (repeated --tokens/--prompt, or
// --batch-file) when the model has xf_forward_cached_packed, or an encoder-decoder's pairs
// when it has xf_forward_packed (re-running each prefix): a BatchDecoder with --batch N
// places (default 32). Stdout is what one run per sequence prints, in input order (each
// sequence's line once it and those before it are done; JSON Lines for --batch-file); stderr
// gets one line per sequence and the batch's aggregate decode rate.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_BATCHRUN_H
#define XFRT_BATCHRUN_H

#include "xfrt/Cli.h"
#include "xfrt/Generate.h"
#include "xfrt/Inputs.h"
#include "xfrt/Manifest.h"
#include "xfrt/Session.h"
#include "xfrt/Tokenizer.h"

namespace xfrt {

// Whether runBatchedGeneration applies: a packed cached entry point and the cache not
// disabled (or an encoder-decoder with a packed entry point), no chat, more than one sequence
// and --batch not 1.
bool canDecodeTogether(const Options &o, const Session &session, const Batch &batch,
                       bool chat);

// Returns the exit code (0, or 1 after an "error: ..." line).
int runBatchedGeneration(const Options &o, const Manifest &m, Session &session,
                         const Batch &batch, const Tokenizer *tok, const GenerateOptions &g);

} // namespace xfrt

#endif // XFRT_BATCHRUN_H
