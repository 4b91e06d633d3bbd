//===- Gpt2Tokenizer.cpp - GPT-2 byte-level BPE ---------------------------===//
//
// Text → ids as Hugging Face tokenizers' ByteLevel(add_prefix_space=False) + BPE do it:
//  1. split the text with the GPT-2 pattern (hand-written matcher below)
//       's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//     where a byte that is not valid UTF-8 counts as one character of [^\s\p{L}\p{N}];
//  2. map each byte of a piece to its byte-level character (bytes_to_unicode);
//  3. merge adjacent symbols, lowest merge rank first (leftmost on ties), until none applies.
// Decoding concatenates the byte-level strings and maps them back to the exact bytes.
// The same tokenizer is built from a GGUF vocabulary (makeByteLevelBpe): there, special tokens
// are cut out of the text first and become single ids, and SmolLM's pre-tokenizer isolates
// every \p{N} character before step 1 (HF: Sequence[Digits(individual_digits), ByteLevel]).
//
//===----------------------------------------------------------------------===//
#include "TokenizerFiles.h"
#include "xfrt/Json.h"
#include "xfrt/SpecialTokens.h"
#include "xfrt/Tokenizer.h"
#include "xfrt/Unicode.h"

#include <algorithm>
#include <mutex>
#include <queue>
#include <unordered_map>

namespace xfrt {
namespace {

using unicode::decodeUtf8;

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes map to themselves, the other 68 bytes
// to U+0100 + n in byte order. Returns the code point of byte `b`.
char32_t byteToCodepoint(uint8_t b) {
  auto printable = [](int c) {
    return (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
  };
  if (printable(b))
    return b;
  int n = 0;
  for (int c = 0; c < b; ++c)
    n += !printable(c);
  return 0x100 + n;
}

// The byte whose byte-level character is `c`, or -1.
int codepointToByte(char32_t c) {
  static const std::vector<int16_t> table = [] {
    std::vector<int16_t> t(0x144, int16_t(-1));
    for (int b = 0; b < 256; ++b)
      t[byteToCodepoint(uint8_t(b))] = int16_t(b);
    return t;
  }();
  return c < table.size() ? table[c] : -1;
}

enum class CharClass { Letter, Number, Space, Other };

struct PieceChar {
  CharClass cls;
  uint32_t length;
};

PieceChar classify(std::string_view text, size_t i) {
  unicode::Utf8Char ch = decodeUtf8(text, i);
  if (!ch.valid)
    return {CharClass::Other, 1};
  CharClass cls = unicode::isWhitespace(ch.codepoint) ? CharClass::Space
                  : unicode::isLetter(ch.codepoint)   ? CharClass::Letter
                  : unicode::isNumber(ch.codepoint)   ? CharClass::Number
                                                      : CharClass::Other;
  return {cls, ch.length};
}

// End of the piece the GPT-2 pattern matches at `start` (< text.size()).
size_t matchPiece(std::string_view text, size_t start) {
  size_t n = text.size();
  if (text[start] == '\'' && start + 1 < n) {
    std::string_view rest = text.substr(start + 1);
    for (std::string_view c : {"s", "t", "re", "ve", "m", "ll", "d"})
      if (rest.substr(0, c.size()) == c)
        return start + 1 + c.size();
  }
  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional space, then a run of one class.
  size_t k = text[start] == ' ' ? start + 1 : start;
  if (k < n) {
    CharClass cls = classify(text, k).cls;
    if (cls != CharClass::Space) {
      size_t end = k;
      while (end < n) {
        PieceChar c = classify(text, end);
        if (c.cls != cls)
          break;
        end += c.length;
      }
      return end;
    }
  }
  // `\s+(?!\S)|\s+`: a whitespace run; before a non-space it gives up its last character
  // unless that is its only one.
  size_t end = start, last = start;
  int count = 0;
  while (end < n) {
    PieceChar c = classify(text, end);
    if (c.cls != CharClass::Space)
      break;
    last = end;
    end += c.length;
    ++count;
  }
  if (end < n && count >= 2)
    return last;
  return end;
}

// The bytes a byte-level string stands for, appended to `out`.
void appendBytes(std::string_view token, std::string &out) {
  for (size_t k = 0; k < token.size();) {
    unicode::Utf8Char ch = decodeUtf8(token, k);
    int b = ch.valid ? codepointToByte(ch.codepoint) : -1;
    if (b >= 0)
      out += char(b);
    else
      out.append(token.substr(k, ch.length)); // not a byte-level character: kept as is
    k += ch.length;
  }
}

uint64_t mix(uint64_t x) { // splitmix64's finalizer
  x ^= x >> 30, x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27, x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hashBytes(std::string_view s) { // FNV-1a, then mixed
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s)
    h = (h ^ uint8_t(c)) * 0x100000001b3ull;
  return mix(h);
}

// Slots for open addressing (linear probing), a power of two kept at most 3/4 full.
size_t slotsFor(size_t entries) {
  size_t slots = 16;
  while (slots / 4 * 3 < entries)
    slots *= 2;
  return slots;
}

class Gpt2Tokenizer final : public Tokenizer {
public:
  // Compact tables (a tokenizer of 50k tokens and merges lives as long as the model, so its
  // resident memory counts): every token string in one arena, token → id and merge pair →
  // (rank, id) as open-addressing arrays of plain integers. Decoded bytes are derived from the
  // token when decoding.
  struct Span {
    uint32_t offset = 0, size = 0;
  };
  std::string arena_;           // the byte-level strings of all tokens
  std::vector<Span> idToToken_; // size 0 for unused ids
  std::vector<bool> idUsed_;
  std::vector<int32_t> tokenSlots_; // ids, −1 empty; keyed by the token's string
  size_t tokenCount_ = 0;
  struct Merge {
    uint64_t pair = kNoPair; // pairKey(left, right)
    int32_t rank = 0, id = 0;
  };
  static constexpr uint64_t kNoPair = ~uint64_t(0); // ids are ≥ 0: no real pair has it
  std::vector<Merge> mergeSlots_;
  size_t mergeCount_ = 0;
  int32_t byteIds_[256];
  std::optional<int32_t> endOfText_;
  mutable std::mutex cacheMutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;

  SpecialTokenTrie specials_;
  bool isolateDigits_ = false;
  // A byte without a byte-level token stays a symbol that merges with nothing and is left
  // out of the ids, as llama.cpp does (and HF's BPE without an unknown token); otherwise it
  // is an error.
  bool dropUnknownBytes_ = false;

  Expected<std::vector<int32_t>> encode(std::string_view text) const override {
    return encodeMarkup(text, {TextSpan{0, text.size()}});
  }

  Expected<std::vector<int32_t>> encodeMarkup(std::string_view text,
                                              const std::vector<TextSpan> &markup) const override {
    std::vector<int32_t> ids;
    // Special tokens first: the leftmost match, the longest at one position, wholly inside a
    // span of markup. The plain text between them is split and merged as one.
    size_t plain = 0;
    SpecialTokenTrie::Match match;
    for (TextSpan span : markup) {
      std::string_view upToSpanEnd = text.substr(0, std::min(span.end, text.size()));
      for (size_t from = std::max(span.begin, plain);
           specials_.findNext(upToSpanEnd, from, match); from = plain) {
        if (Status s = encodeText(text.substr(plain, match.position - plain), ids); !s)
          return s;
        ids.push_back(match.id);
        plain = match.position + match.length;
      }
    }
    if (Status s = encodeText(text.substr(plain), ids); !s)
      return s;
    return ids;
  }

  Expected<std::string> decode(const std::vector<int32_t> &ids) const override {
    std::string out;
    for (int32_t id : ids) {
      if (id < 0 || size_t(id) >= idUsed_.size() || !idUsed_[size_t(id)])
        return makeError("token id " + std::to_string(id) + " is not in the vocabulary");
      appendBytes(token(id), out);
    }
    return out;
  }

  int64_t vocabSize() const override { return int64_t(idUsed_.size()); }
  std::optional<int32_t> endOfText() const override { return endOfText_; }
  std::optional<int32_t> tokenToId(std::string_view token) const override {
    int32_t id = tokenSlots_[findTokenSlot(token)];
    if (id < 0)
      return std::nullopt;
    return id;
  }

  std::string_view token(int32_t id) const {
    Span span = idToToken_[size_t(id)];
    return std::string_view(arena_).substr(span.offset, span.size);
  }

  // The slot holding `token`, or the empty slot where it would go.
  size_t findTokenSlot(std::string_view key) const {
    size_t mask = tokenSlots_.size() - 1;
    for (size_t i = hashBytes(key) & mask;; i = (i + 1) & mask)
      if (tokenSlots_[i] < 0 || token(tokenSlots_[i]) == key)
        return i;
  }

  // The slot holding pair (a, b), or the empty slot where it would go.
  size_t findMergeSlot(uint64_t pair) const {
    size_t mask = mergeSlots_.size() - 1;
    for (size_t i = mix(pair) & mask;; i = (i + 1) & mask)
      if (mergeSlots_[i].pair == kNoPair || mergeSlots_[i].pair == pair)
        return i;
  }

  const Merge *findMerge(int32_t a, int32_t b) const {
    const Merge &m = mergeSlots_[findMergeSlot(pairKey(a, b))];
    return m.pair == kNoPair ? nullptr : &m;
  }

private:
  static constexpr size_t kMaxCachedPiece = 256;
  static constexpr size_t kMaxCacheEntries = size_t(1) << 16;

  // Text without special tokens: with isolateDigits_, every \p{N} character is a piece of its
  // own and the text between them is split on its own, as if it were the whole text.
  Status encodeText(std::string_view text, std::vector<int32_t> &ids) const {
    if (!isolateDigits_)
      return encodeSplit(text, ids);
    size_t plain = 0;
    for (size_t i = 0; i < text.size();) {
      unicode::Utf8Char ch = decodeUtf8(text, i);
      if (ch.valid && unicode::isNumber(ch.codepoint)) {
        if (Status s = encodeSplit(text.substr(plain, i - plain), ids); !s)
          return s;
        if (Status s = encodePiece(text.substr(i, ch.length), ids); !s)
          return s;
        plain = i + ch.length;
      }
      i += ch.length;
    }
    return encodeSplit(text.substr(plain), ids);
  }

  Status encodeSplit(std::string_view text, std::vector<int32_t> &ids) const {
    for (size_t start = 0; start < text.size();) {
      size_t end = matchPiece(text, start);
      if (Status s = encodePiece(text.substr(start, end - start), ids); !s)
        return s;
      start = end;
    }
    return Status::success();
  }

  Status encodePiece(std::string_view piece, std::vector<int32_t> &ids) const {
    bool cacheable = piece.size() <= kMaxCachedPiece;
    if (cacheable) {
      std::lock_guard<std::mutex> lock(cacheMutex_);
      auto it = cache_.find(std::string(piece));
      if (it != cache_.end()) {
        ids.insert(ids.end(), it->second.begin(), it->second.end());
        return Status::success();
      }
    }
    std::vector<int32_t> pieceIds;
    if (Status s = mergePiece(piece, pieceIds); !s)
      return s;
    ids.insert(ids.end(), pieceIds.begin(), pieceIds.end());
    if (cacheable) {
      std::lock_guard<std::mutex> lock(cacheMutex_);
      if (cache_.size() >= kMaxCacheEntries)
        cache_.clear();
      cache_.emplace(std::string(piece), std::move(pieceIds));
    }
    return Status::success();
  }

  // The BPE merge loop over one piece: symbols in a linked list, candidate merges in a heap
  // ordered by (rank, position); a popped candidate whose symbols changed is skipped.
  Status mergePiece(std::string_view piece, std::vector<int32_t> &out) const {
    struct Symbol {
      int32_t id;
      int32_t prev, next; // -1 at the ends
      bool alive;
    };
    struct Candidate {
      int32_t rank, pos, newId;
      bool operator>(const Candidate &o) const {
        return rank != o.rank ? rank > o.rank : pos > o.pos;
      }
    };
    std::vector<Symbol> symbols(piece.size());
    for (size_t i = 0; i < piece.size(); ++i) {
      int32_t id = byteIds_[uint8_t(piece[i])];
      if (id < 0 && !dropUnknownBytes_)
        return makeError("byte " + std::to_string(int(uint8_t(piece[i]))) +
                         " has no byte-level token in the vocabulary");
      symbols[i] = {id, int32_t(i) - 1, i + 1 < piece.size() ? int32_t(i + 1) : -1, true};
    }
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    auto consider = [&](int32_t pos) {
      if (pos < 0 || symbols[size_t(pos)].next < 0)
        return;
      if (const Merge *m =
              findMerge(symbols[size_t(pos)].id, symbols[size_t(symbols[size_t(pos)].next)].id))
        heap.push({m->rank, pos, m->id});
    };
    for (size_t i = 0; i + 1 < piece.size(); ++i)
      consider(int32_t(i));
    while (!heap.empty()) {
      Candidate c = heap.top();
      heap.pop();
      Symbol &left = symbols[size_t(c.pos)];
      if (!left.alive || left.next < 0)
        continue;
      Symbol &right = symbols[size_t(left.next)];
      const Merge *m = findMerge(left.id, right.id);
      if (!m || m->rank != c.rank || m->id != c.newId)
        continue;
      left.id = c.newId;
      right.alive = false;
      left.next = right.next;
      if (right.next >= 0)
        symbols[size_t(right.next)].prev = c.pos;
      consider(left.prev);
      consider(c.pos);
    }
    for (int32_t i = piece.empty() ? -1 : 0; i >= 0; i = symbols[size_t(i)].next)
      if (symbols[size_t(i)].id >= 0)
        out.push_back(symbols[size_t(i)].id);
    return Status::success();
  }

public:
  static uint64_t pairKey(int32_t a, int32_t b) {
    return (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
  }

  // `size` ids, `tokens` of them set, their strings `arenaBytes` long in all; `merges`
  // expected (a hint: the merge table grows past it).
  void resizeVocabulary(size_t size, size_t tokens, size_t arenaBytes, size_t merges) {
    idToToken_.assign(size, Span());
    idUsed_.assign(size, false);
    arena_.clear();
    arena_.reserve(arenaBytes);
    tokenSlots_.assign(slotsFor(tokens), -1);
    tokenCount_ = 0;
    mergeSlots_.assign(slotsFor(merges), Merge());
    mergeCount_ = 0;
  }

  // Stores byte-level `token` at `id` (< the vocabulary size, not yet used); a string stored
  // twice maps to its last id. The caller keeps the arena under 4 GiB (TokenizerLimits).
  void setToken(size_t id, std::string_view token) {
    idUsed_[id] = true;
    idToToken_[id] = {uint32_t(arena_.size()), uint32_t(token.size())};
    arena_.append(token);
    size_t slot = findTokenSlot(token);
    if (tokenSlots_[slot] < 0) {
      if ((tokenCount_ + 1) > tokenSlots_.size() / 4 * 3) {
        growTokenSlots();
        slot = findTokenSlot(token);
      }
      ++tokenCount_;
    }
    tokenSlots_[slot] = int32_t(id);
  }

  void growTokenSlots() {
    std::vector<int32_t> old = std::move(tokenSlots_);
    tokenSlots_.assign(old.size() * 2, -1);
    for (int32_t id : old)
      if (id >= 0)
        tokenSlots_[findTokenSlot(token(id))] = id;
  }

  // After the last setToken: the ids of the 256 single-byte tokens.
  void finishVocabulary() {
    for (int b = 0; b < 256; ++b) {
      std::string byteToken;
      unicode::appendUtf8(byteToken, byteToCodepoint(uint8_t(b)));
      byteIds_[b] = tokenToId(byteToken).value_or(-1);
    }
  }

  // The first occurrence of a pair keeps its rank.
  void addMergeEntry(uint64_t pair, int32_t rank, int32_t id) {
    size_t slot = findMergeSlot(pair);
    if (mergeSlots_[slot].pair != kNoPair)
      return;
    if (mergeCount_ + 1 > mergeSlots_.size() / 4 * 3) {
      std::vector<Merge> old = std::move(mergeSlots_);
      mergeSlots_.assign(old.size() * 2, Merge());
      for (const Merge &m : old)
        if (m.pair != kNoPair)
          mergeSlots_[findMergeSlot(m.pair)] = m;
      slot = findMergeSlot(pair);
    }
    mergeSlots_[slot] = {pair, rank, id};
    ++mergeCount_;
  }

  // Merge `line` ("left right") with `rank`; `where` prefixes errors, `vocabName` names the
  // vocabulary a token is missing from.
  Status addMerge(std::string_view line, int32_t rank, const std::string &where,
                  const std::string &vocabName, const TokenizerLimits &limits) {
    size_t space = line.find(' ');
    if (space == 0 || space == std::string_view::npos || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos)
      return makeError(where + "expected two tokens separated by one space");
    std::string_view left = line.substr(0, space), right = line.substr(space + 1);
    std::string joined = std::string(left) + std::string(right);
    std::optional<int32_t> l = tokenToId(left), r = tokenToId(right), m = tokenToId(joined);
    if (!l || !r || !m)
      return makeError(where +
                       quoteJson(!l   ? std::string(left)
                                 : !r ? std::string(right)
                                      : joined) +
                       " is not in " + vocabName);
    if (size_t(rank) >= limits.maxVocab)
      return makeError(where + "more than " + std::to_string(limits.maxVocab) + " merges");
    addMergeEntry(pairKey(*l, *r), rank, *m);
    return Status::success();
  }
};

} // namespace

Expected<std::unique_ptr<Tokenizer>> parseGpt2Tokenizer(std::string_view vocabText,
                                                        std::string_view mergesText,
                                                        const std::string &vocabName,
                                                        const std::string &mergesName,
                                                        const TokenizerLimits &limits) {
  auto tok = std::make_unique<Gpt2Tokenizer>();
  if (vocabText.size() > limits.maxFileBytes)
    return makeError(vocabName + ": file exceeds the limit of " +
                     std::to_string(limits.maxFileBytes) + " bytes");
  if (mergesText.size() > limits.maxFileBytes)
    return makeError(mergesName + ": file exceeds the limit of " +
                     std::to_string(limits.maxFileBytes) + " bytes");

  // vocab.json: one object mapping byte-level token strings to distinct ids.
  JsonLimits jsonLimits;
  jsonLimits.maxBytes = limits.maxFileBytes;
  jsonLimits.maxDepth = 2;
  jsonLimits.maxValues = limits.maxVocab + 1;
  Expected<JsonValue> json = parseJson(vocabText, jsonLimits);
  if (!json)
    return makeError(fileError(vocabName, vocabText, json.message()));
  if (!json->isObject())
    return makeError(vocabName + ": expected a JSON object mapping tokens to ids");
  size_t maxId = 0, arenaBytes = 0;
  for (size_t i = 0; i < json->keys.size(); ++i) {
    const std::string &key = json->keys[i];
    const JsonValue &v = json->items[i];
    std::string where = vocabName + ": entry " + quoteJson(key.substr(0, 64)) + ": ";
    if (key.empty() || key.size() > limits.maxTokenBytes)
      return makeError(where + "token must have 1 to " + std::to_string(limits.maxTokenBytes) +
                       " bytes");
    if (!v.isNumber() || !v.isInteger || v.integer < 0 || size_t(v.integer) >= limits.maxVocab)
      return makeError(where + "id must be an integer in [0, " + std::to_string(limits.maxVocab) +
                       "), got " + describeJson(v));
    maxId = std::max(maxId, size_t(v.integer));
    arenaBytes += key.size();
  }
  tok->resizeVocabulary(json->keys.empty() ? 0 : maxId + 1, json->keys.size(), arenaBytes,
                        /*merges=*/0); // grown as lines are read
  for (size_t i = 0; i < json->keys.size(); ++i) {
    const std::string &key = json->keys[i];
    size_t id = size_t(json->items[i].integer);
    if (tok->idUsed_[id])
      return makeError(vocabName + ": entry " + quoteJson(key.substr(0, 64)) + ": id " +
                       std::to_string(id) + " is also used by " +
                       quoteJson(std::string(tok->token(int32_t(id)).substr(0, 64))));
    tok->setToken(id, key);
  }
  tok->finishVocabulary();
  tok->endOfText_ = tok->tokenToId("<|endoftext|>");

  // merges.txt: an optional "#version" line, then "left right" per line, rank = order.
  int32_t rank = 0;
  size_t lineNo = 0;
  for (std::string_view rest = mergesText; !rest.empty();) {
    std::string_view line = takeLine(rest);
    ++lineNo;
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.empty() || (lineNo == 1 && line.substr(0, 8) == "#version"))
      continue;
    std::string where = mergesName + ":" + std::to_string(lineNo) + ": ";
    if (Status s = tok->addMerge(line, rank++, where, vocabName, limits); !s)
      return s;
  }
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

Expected<std::unique_ptr<Tokenizer>> makeByteLevelBpe(const ByteLevelBpeVocab &vocab,
                                                      const std::string &sourceName,
                                                      const TokenizerLimits &limits) {
  auto tok = std::make_unique<Gpt2Tokenizer>();
  if (vocab.tokens.size() > limits.maxVocab)
    return makeError(sourceName + ": " + std::to_string(vocab.tokens.size()) +
                     " tokens exceed the limit of " + std::to_string(limits.maxVocab));
  size_t arenaBytes = 0;
  for (size_t id = 0; id < vocab.tokens.size(); ++id) {
    std::string_view token = vocab.tokens[id];
    if (token.empty() || token.size() > limits.maxTokenBytes)
      return makeError(sourceName + ": token " + std::to_string(id) + " must have 1 to " +
                       std::to_string(limits.maxTokenBytes) + " bytes");
    arenaBytes += token.size();
  }
  tok->resizeVocabulary(vocab.tokens.size(), vocab.tokens.size(), arenaBytes,
                        std::min(vocab.merges.size(), limits.maxVocab));
  for (size_t id = 0; id < vocab.tokens.size(); ++id)
    tok->setToken(id, vocab.tokens[id]);
  tok->finishVocabulary();
  auto checkId = [&](int32_t id, const char *what) {
    return id >= 0 && size_t(id) < vocab.tokens.size()
               ? Status::success()
               : makeError(sourceName + ": " + what + " id " + std::to_string(id) +
                           " is not in the " + std::to_string(vocab.tokens.size()) +
                           "-token vocabulary");
  };
  for (int32_t id : vocab.specialIds) {
    if (Status s = checkId(id, "special token"); !s)
      return s;
    tok->specials_.add(vocab.tokens[size_t(id)], id);
  }
  if (vocab.endOfText) {
    if (Status s = checkId(*vocab.endOfText, "end-of-text"); !s)
      return s;
    tok->endOfText_ = vocab.endOfText;
  }
  tok->isolateDigits_ = vocab.preTokenizer == ByteLevelPreTokenizer::DigitsThenGpt2;
  tok->dropUnknownBytes_ = true;
  for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
    std::string where = sourceName + ": merge " + std::to_string(rank) + ": ";
    if (Status s =
            tok->addMerge(vocab.merges[rank], int32_t(rank), where, "the vocabulary", limits);
        !s)
      return s;
  }
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

Expected<std::unique_ptr<Tokenizer>> loadGpt2Tokenizer(const std::string &vocabJson,
                                                       const std::string &merges) {
  TokenizerLimits limits;
  Expected<std::string> vocabText = readTextFile(vocabJson, limits.maxFileBytes);
  if (!vocabText)
    return vocabText.status();
  Expected<std::string> mergesText = readTextFile(merges, limits.maxFileBytes);
  if (!mergesText)
    return mergesText.status();
  return parseGpt2Tokenizer(*vocabText, *mergesText, vocabJson, merges, limits);
}

} // namespace xfrt
