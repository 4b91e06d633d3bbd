//===- TokenizerFuzzer.cpp - libFuzzer target for libxfrt's tokenizers ----===//
//
// The first input byte picks a target, the rest is its input:
//   0: vocab.json and merges.txt (split at the first NUL) → parseGpt2Tokenizer, then encode
//      and decode a few texts with whatever loaded;
//   1: vocab.txt → parseWordPieceTokenizer, then encode and decode a few texts;
//   2: text → encode with a small GPT-2 tokenizer (decode must give the text back exactly)
//      and with a small WordPiece tokenizer.
//
//===----------------------------------------------------------------------===//
#include "xfrt/Tokenizer.h"
#include "xfrt/Unicode.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

using namespace xfrt;

namespace {

const char *const kTexts[] = {"Hello world", "  a\tb\n\nc  ", "I'm \xC3\xA9t\xC3\xA9 \xE4\xB8\xAD!",
                              "\xFF\xC0\x80 bad", "unaffable, un-aff"};

void exercise(const Tokenizer &tok, std::string_view extra) {
  for (std::string_view text : kTexts) {
    Expected<std::vector<int32_t>> ids = tok.encode(text);
    if (ids)
      (void)tok.decode(*ids);
  }
  Expected<std::vector<int32_t>> ids = tok.encode(extra.substr(0, 256));
  if (ids)
    (void)tok.decode(*ids);
  (void)tok.decode({0, 1, 2, -1, int32_t(tok.vocabSize())});
}

std::string smallByteVocab() {
  std::string json = "{";
  int unprintable = 0;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    std::string s;
    unicode::appendUtf8(s, printable ? char32_t(b) : char32_t(0x100 + unprintable++));
    if (s == "\"" || s == "\\")
      s = "\\" + s;
    json += "\"" + s + "\": " + std::to_string(b) + ", ";
  }
  return json + "\"\xC4\xA0t\": 256, \"he\": 257, \"\xC4\xA0the\": 258, \"ll\": 259}";
}

const Tokenizer &smallGpt2() {
  static std::unique_ptr<Tokenizer> tok = [] {
    Expected<std::unique_ptr<Tokenizer>> t =
        parseGpt2Tokenizer(smallByteVocab(), "#version: 0.2\n\xC4\xA0 t\nh e\n\xC4\xA0t he\nl l\n");
    if (!t)
      std::abort();
    return t.take();
  }();
  return *tok;
}

const Tokenizer &smallWordPiece() {
  static std::unique_ptr<Tokenizer> tok = [] {
    Expected<std::unique_ptr<Tokenizer>> t = parseWordPieceTokenizer(
        "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n##s\nun\n##aff\n##able\n,\n.\n\xE4\xB8\xAD\n");
    if (!t)
      std::abort();
    return t.take();
  }();
  return *tok;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string_view input(reinterpret_cast<const char *>(data) + 1, size - 1);
  switch (data[0] % 3) {
  case 0: {
    size_t nul = input.find('\0');
    std::string_view vocab = input.substr(0, nul);
    std::string_view merges = nul == std::string_view::npos ? "" : input.substr(nul + 1);
    Expected<std::unique_ptr<Tokenizer>> tok = parseGpt2Tokenizer(vocab, merges);
    if (tok)
      exercise(**tok, merges);
    break;
  }
  case 1: {
    Expected<std::unique_ptr<Tokenizer>> tok = parseWordPieceTokenizer(input, data[0] & 4);
    if (tok)
      exercise(**tok, input);
    break;
  }
  default: {
    Expected<std::vector<int32_t>> ids = smallGpt2().encode(input);
    if (!ids)
      std::abort(); // every byte has a token
    Expected<std::string> back = smallGpt2().decode(*ids);
    if (!back || *back != input)
      std::abort(); // byte-level BPE must round-trip exactly
    Expected<std::vector<int32_t>> wp = smallWordPiece().encode(input);
    if (!wp || wp->size() < 2)
      std::abort();
    (void)smallWordPiece().decode(*wp);
    break;
  }
  }
  return 0;
}
