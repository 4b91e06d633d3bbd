//===- CheckEntryPoints.cpp - xfc --check of each entry point -----------===//
//
// Each check runs one of the build's entry points on random tokens and
// compares every row it returns with the interpreter on the xf module:
// xf_forward at each length; xf_forward_cached, a prefill and two one-token
// steps; xf_forward_packed, three sequences of different lengths in one call;
// xf_forward_cached_packed, three sequences decoding together. A mismatch is
// bisected by running the same calls again (Checker::reportThenBisect).
//
//===----------------------------------------------------------------------===//

#include "Checker.h"

#include "xfrt/Random.h"

#include "llvm/Support/FormatVariadic.h"

#include <array>

using namespace mlir;
using namespace mlir::xf::check;

std::vector<int32_t> mlir::xf::check::randomTokens(uint64_t seed, uint64_t stream, int64_t count,
                                       int64_t vocab) {
  xfrt::Pcg32 rng(seed, stream);
  std::vector<int32_t> tokens;
  tokens.resize(size_t(count));
  for (int32_t &t : tokens)
    t = int32_t(rng.next() % uint64_t(vocab));
  return tokens;
}

LogicalResult Checker::checkLength(int64_t l) {
  const xfrt::Manifest &m = model->manifest();
  std::vector<int32_t> x = randomTokens(options.seed, uint64_t(l), l, m.vocab), z;
  if (m.encoderDecoder) // another length, so ℓ and ℓ_z cannot be mixed up unseen
    z = randomTokens(options.seed, uint64_t(l) + (1u << 20), l / 2 + 3, m.vocab);
  std::vector<std::vector<int32_t>> sequences;
  if (m.encoderDecoder)
    sequences.push_back(z);
  sequences.push_back(x);
  interp::Inputs inputs = inputsFor(sequences);
  auto compiled = model->forward(x, z);
  if (!compiled)
    return fail(llvm::toString(compiled.takeError()));
  auto reference = interpret(xf, inputs);
  if (!reference)
    return fail("the interpreter: " + llvm::toString(reference.takeError()));
  Comparison c = compare(compiled->data(), l, m.dOut, *reference, 0);
  auto rerun = [&](Bisector &) -> llvm::Error { return model->forward(x, z).takeError(); };
  return reportThenBisect({{&inputs, &*reference}}, llvm::formatv("l={0}", l),
                          llvm::formatv("{0} [{1}, {2}]", m.outputName(), l, m.dOut), "", c, rerun);
}

/// A prefill of ℓ tokens then two one-token steps on one KV cache, each
/// returned row against the interpreter on the whole sequence.
LogicalResult Checker::checkCached(int64_t l) {
  const xfrt::Manifest &m = model->manifest();
  int64_t prompt = std::min(l, m.cachePositions - 2);
  if (prompt < 1)
    return success();
  std::vector<int32_t> all =
      randomTokens(options.seed, uint64_t(l) + (2u << 20), prompt + 2, m.vocab);
  interp::Inputs inputs = inputsFor({all});
  auto reference = interpret(xf, inputs);
  if (!reference)
    return fail("the interpreter: " + llvm::toString(reference.takeError()));
  auto steps = [&](Bisector *bisector, Comparison &worst) -> llvm::Error {
    if (llvm::Error e = model->startCache())
      return e;
    int64_t start = 0;
    for (int64_t n : {prompt, int64_t(1), int64_t(1)}) {
      std::vector<int32_t> tokens(all.begin() + start, all.begin() + start + n);
      if (bisector)
        bisector->endPosition = start + n;
      auto row = model->forwardCached(tokens, start);
      if (!row)
        return row.takeError();
      keepWorst(worst, compare(row->data(), 1, m.dOut, *reference, start + n - 1));
      start += n;
    }
    return llvm::Error::success();
  };
  Comparison worst;
  if (llvm::Error e = steps(nullptr, worst))
    return fail(llvm::toString(std::move(e)));
  auto rerun = [&](Bisector &b) -> llvm::Error {
    Comparison unused;
    return steps(&b, unused);
  };
  return reportThenBisect({{&inputs, &*reference}}, llvm::formatv("l={0} cached", prompt),
                          llvm::formatv("prefill of {0} and 2 steps, last rows", prompt), "", worst,
                          rerun);
}

FailureOr<Checker::Interpreted>
Checker::interpretEach(const std::vector<std::vector<std::vector<int32_t>>> &items) {
  Interpreted each;
  for (const std::vector<std::vector<int32_t>> &item : items) {
    each.inputs.push_back(inputsFor(item));
    auto reference = interpret(xf, each.inputs.back());
    if (!reference) {
      (void)fail("the interpreter: " + llvm::toString(reference.takeError()));
      return failure();
    }
    each.references.push_back(std::move(*reference));
  }
  return each;
}

/// Three sequences of different lengths in one xf_forward_packed call, each
/// sequence's rows against the interpreter on that sequence alone (an
/// encoder-decoder's with sources of other lengths, so pairs cannot be mixed
/// up unseen).
LogicalResult Checker::checkPacked(int64_t l) {
  const xfrt::Manifest &m = model->manifest();
  std::vector<int64_t> lengths = {l, std::max<int64_t>(1, l / 2), l / 3 + 1};
  std::vector<int64_t> sourceLengths = {l / 2 + 3, 1, l};
  std::vector<std::vector<int32_t>> sequences, sources;
  std::vector<std::vector<std::vector<int32_t>>> items;
  for (size_t i = 0; i < lengths.size(); ++i) {
    sequences.push_back(randomTokens(options.seed, uint64_t(l) + (3u << 20) + (uint64_t(i) << 16),
                                     lengths[i], m.vocab));
    if (m.encoderDecoder)
      sources.push_back(randomTokens(options.seed, uint64_t(l) + (5u << 20) + (uint64_t(i) << 16),
                                     sourceLengths[i], m.vocab));
    using Item = std::vector<std::vector<int32_t>>;
    items.push_back(m.encoderDecoder ? Item{sources.back(), sequences.back()}
                                     : Item{sequences.back()});
  }
  FailureOr<Interpreted> each = interpretEach(items);
  if (failed(each))
    return failure();
  const std::vector<Tensor> &references = each->references;
  auto compiled = model->forwardPacked(sequences, sources);
  if (!compiled)
    return fail(llvm::toString(compiled.takeError()));
  Comparison worst;
  int64_t offset = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    Comparison c =
        compare(compiled->data() + offset * m.dOut, lengths[i], m.dOut, references[i], 0);
    c.row += offset; // a row of the batch
    keepWorst(worst, c);
    offset += lengths[i];
  }
  std::string withSources =
      m.encoderDecoder ? llvm::formatv(" (sources of {0:$[, ]})",
                                       llvm::make_range(sourceLengths.begin(), sourceLengths.end()))
                             .str()
                       : "";
  auto rerun = [&](Bisector &) -> llvm::Error {
    return model->forwardPacked(sequences, sources).takeError();
  };
  return reportThenBisect(each->runs(), llvm::formatv("l={0} packed", l),
                          llvm::formatv("{0} sequences of {1:$[, ]} rows{2}", lengths.size(),
                                        llvm::make_range(lengths.begin(), lengths.end()),
                                        withSources),
                          " of the batch", worst, rerun);
}

/// Three sequences decoding together through xf_forward_cached_packed, each on
/// its own KV cache: call 1 prefills sequences 0 and 1, call 2 steps them and
/// prefills sequence 2 (a prefill and steps in one call), call 3 steps all
/// three. Each returned row against the interpreter on that sequence alone.
LogicalResult Checker::checkCachedPacked(int64_t l) {
  const xfrt::Manifest &m = model->manifest();
  const int64_t cap = m.cachePositions - 2;
  if (cap < 1)
    return success();
  std::vector<int64_t> prompts = {std::min(l, cap), std::min(std::max<int64_t>(1, l / 2), cap),
                                  std::min(l / 3 + 1, cap)};
  std::vector<std::vector<int32_t>> sequences;
  std::vector<std::vector<std::vector<int32_t>>> items;
  std::vector<int64_t> offsets; // each sequence's first row in the stacked references
  int64_t stacked = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    sequences.push_back(randomTokens(options.seed, uint64_t(l) + (4u << 20) + (uint64_t(i) << 16),
                                     prompts[i] + 2, m.vocab));
    items.push_back({sequences.back()});
    offsets.push_back(stacked);
    stacked += prompts[i] + 2;
  }
  FailureOr<Interpreted> each = interpretEach(items);
  if (failed(each))
    return failure();
  const std::vector<Tensor> &references = each->references;
  // Per call, per sequence in it: {sequence, start, tokens}.
  using Item = std::array<int64_t, 3>;
  std::vector<std::vector<Item>> calls = {
      {{0, 0, prompts[0]}, {1, 0, prompts[1]}},
      {{0, prompts[0], 1}, {1, prompts[1], 1}, {2, 0, prompts[2]}},
      {{0, prompts[0] + 1, 1}, {1, prompts[1] + 1, 1}, {2, prompts[2], 1}}};
  auto run = [&](Bisector *bisector, Comparison &worst) -> llvm::Error {
    if (llvm::Error e = model->startCaches(int64_t(sequences.size())))
      return e;
    for (const std::vector<Item> &call : calls) {
      std::vector<CompiledModel::CachedSequence> batch;
      if (bisector)
        bisector->batchRows.clear(), bisector->newestRows.clear();
      for (auto [seq, start, n] : call) {
        const std::vector<int32_t> &all = sequences[size_t(seq)];
        batch.push_back({seq, start, {all.begin() + start, all.begin() + start + n}});
        if (bisector) {
          for (int64_t p = start; p < start + n; ++p)
            bisector->batchRows.push_back(offsets[size_t(seq)] + p);
          bisector->newestRows.push_back(offsets[size_t(seq)] + start + n - 1);
        }
      }
      auto rows = model->forwardCachedPacked(batch);
      if (!rows)
        return rows.takeError();
      for (size_t k = 0; k < call.size(); ++k) {
        auto [seq, start, n] = call[k];
        Comparison c = compare(rows->data() + k * size_t(m.dOut), 1, m.dOut,
                               references[size_t(seq)], start + n - 1);
        c.row += offsets[size_t(seq)]; // a row of the stacked sequences
        keepWorst(worst, c);
      }
    }
    return llvm::Error::success();
  };
  Comparison worst;
  if (llvm::Error e = run(nullptr, worst))
    return fail(llvm::toString(std::move(e)));
  auto rerun = [&](Bisector &b) -> llvm::Error {
    Comparison unused;
    return run(&b, unused);
  };
  return reportThenBisect(
      each->runs(), llvm::formatv("l={0} cached packed", l),
      llvm::formatv("3 sequences (prompts of {0:$[, ]}) in 3 calls, newest rows",
                    llvm::make_range(prompts.begin(), prompts.end())),
      " of the sequences stacked", worst, rerun);
}
