//===- RuntimeTokenizerGpt2Test.cpp - libxfrt GPT-2 byte-level BPE --------===//
#include "xfrt/Tokenizer.h"
#include "xfrt/Unicode.h"

#include <gtest/gtest.h>

#include <fstream>

using namespace xfrt;

namespace {

using Ids = std::vector<int32_t>;

const std::string kDir = XF_GPT2_TOKENIZER_DIR;

std::unique_ptr<Tokenizer> &realGpt2() {
  static std::unique_ptr<Tokenizer> tok = [] {
    Expected<std::unique_ptr<Tokenizer>> t =
        loadGpt2Tokenizer(kDir + "/vocab.json", kDir + "/merges.txt");
    return t ? t.take() : nullptr;
  }();
  return tok;
}

#define REQUIRE_GPT2()                                                                             \
  if (!realGpt2())                                                                                 \
  GTEST_SKIP() << "GPT-2 tokenizer files not found in " << kDir

// A byte-level vocabulary: byte b's character has id b; then `extra` from id 256.
std::string byteVocab(const std::vector<std::string> &extra) {
  std::string json = "{";
  int id = 0;
  auto add = [&](const std::string &token) {
    json += (id ? ", " : "") + std::string("\"");
    for (char c : token)
      json += c == '"' ? "\\\"" : c == '\\' ? "\\\\" : std::string(1, c);
    json += "\": " + std::to_string(id++);
  };
  int unprintable = 0;            // bytes_to_unicode: printable Latin-1 bytes map to themselves,
  for (int b = 0; b < 256; ++b) { // the others to U+0100 + n in byte order
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    std::string s;
    unicode::appendUtf8(s, printable ? char32_t(b) : char32_t(0x100 + unprintable++));
    add(s);
  }
  for (const std::string &t : extra)
    add(t);
  return json + "}";
}

TEST(RuntimeTokenizerGpt2, KnownIds) {
  REQUIRE_GPT2();
  const Tokenizer &tok = *realGpt2();
  // Ids from Hugging Face tokenizers (BPE.from_file + ByteLevel(add_prefix_space=False)).
  EXPECT_EQ(*tok.encode("Hello world"), (Ids{15496, 995}));
  EXPECT_EQ(*tok.encode(" Hello  world\n\n"), (Ids{18435, 220, 995, 628}));
  EXPECT_EQ(*tok.encode("I'm don't they'll"), (Ids{40, 1101, 836, 470, 484, 1183}));
  EXPECT_EQ(*tok.encode("caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80"),
            (Ids{66, 1878, 2634, 220, 40792, 23877, 229, 30325, 222}));
  EXPECT_EQ(*tok.encode("<|endoftext|>"), (Ids{27, 91, 437, 1659, 5239, 91, 29}));
  EXPECT_EQ(*tok.encode("1234567 3.14"), (Ids{10163, 2231, 3134, 513, 13, 1415}));
  EXPECT_EQ(*tok.encode(""), Ids{});
  EXPECT_EQ(tok.vocabSize(), 50257);
  EXPECT_EQ(tok.endOfText(), std::optional<int32_t>(50256));
  EXPECT_EQ(tok.tokenToId("\xC4\xA0world"), std::optional<int32_t>(995));
}

TEST(RuntimeTokenizerGpt2, DecodeIsExactForAnyBytes) {
  REQUIRE_GPT2();
  const Tokenizer &tok = *realGpt2();
  EXPECT_EQ(*tok.decode({15496, 995}), "Hello world");
  EXPECT_EQ(*tok.decode({50256}), "<|endoftext|>");
  std::string all;
  for (int b = 0; b < 256; ++b)
    all += char(b);
  for (std::string text : {all, std::string("\xC3\x28 bad \xFF\xFE utf8 \xED\xA0\x80"),
                           std::string("a\0b", 3), std::string(3000, 'x')}) {
    Expected<Ids> ids = tok.encode(text);
    ASSERT_TRUE(ids) << ids.message();
    Expected<std::string> back = tok.decode(*ids);
    ASSERT_TRUE(back) << back.message();
    EXPECT_EQ(*back, text);
  }
  EXPECT_FALSE(tok.decode({50257}));
  EXPECT_FALSE(tok.decode({-1}));
}

TEST(RuntimeTokenizerGpt2, MergesByRank) {
  // "a b" (rank 0) before "b c" (rank 1): "abc" → "ab" "c"; with "ab c" → "abc".
  Expected<std::unique_ptr<Tokenizer>> tok =
      parseGpt2Tokenizer(byteVocab({"ab", "bc", "abc"}), "#version: 0.2\na b\nb c\nab c\n");
  ASSERT_TRUE(tok) << tok.message();
  EXPECT_EQ(*(*tok)->encode("abc"), (Ids{258}));
  EXPECT_EQ(*(*tok)->encode("abx"), (Ids{256, 'x'}));
  EXPECT_EQ(*(*tok)->encode("xbc"), (Ids{'x', 257}));
  EXPECT_EQ((*tok)->vocabSize(), 259);
  EXPECT_EQ((*tok)->endOfText(), std::nullopt);
}

std::string loadError(const std::string &vocab, const std::string &merges) {
  Expected<std::unique_ptr<Tokenizer>> tok = parseGpt2Tokenizer(vocab, merges);
  return tok ? "" : tok.message();
}

TEST(RuntimeTokenizerGpt2, MalformedFilesAreOneLineErrors) {
  std::string vocab = byteVocab({"ab"});
  EXPECT_EQ(loadError("[1, 2]", ""), "vocab.json: expected a JSON object mapping tokens to ids");
  EXPECT_EQ(loadError("{\"a\": 0,\n\"b\": }", ""),
            "vocab.json:2: invalid JSON at byte 14: unexpected character '}'");
  EXPECT_EQ(loadError("{\"a\": -1}", ""),
            "vocab.json: entry \"a\": id must be an integer in [0, 2097152), got -1");
  EXPECT_EQ(loadError("{\"a\": 1.5}", ""),
            "vocab.json: entry \"a\": id must be an integer in [0, 2097152), got 1.5");
  EXPECT_EQ(loadError("{\"a\": 0, \"b\": 0}", ""),
            "vocab.json: entry \"b\": id 0 is also used by \"a\"");
  EXPECT_EQ(loadError("{\"\": 0}", ""), "vocab.json: entry \"\": token must have 1 to 1024 bytes");
  EXPECT_EQ(loadError(vocab, "#version: 0.2\na b\nab\n"),
            "merges.txt:3: expected two tokens separated by one space");
  EXPECT_EQ(loadError(vocab, "a b c\n"),
            "merges.txt:1: expected two tokens separated by one space");
  EXPECT_EQ(loadError(vocab, "a b\r\nb c\n"), "merges.txt:2: \"bc\" is not in vocab.json");
  EXPECT_EQ(loadError(vocab, "a \xE4\xB8\xAD\n"),
            "merges.txt:1: \"\xE4\xB8\xAD\" is not in vocab.json");
  TokenizerLimits small;
  small.maxFileBytes = 10;
  Expected<std::unique_ptr<Tokenizer>> tok =
      parseGpt2Tokenizer(vocab, "", "v.json", "m.txt", small);
  ASSERT_FALSE(tok);
  EXPECT_EQ(tok.message(), "v.json: file exceeds the limit of 10 bytes");
  Expected<std::unique_ptr<Tokenizer>> missing = loadGpt2Tokenizer("/nonexistent/v.json", "m");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.message().find("/nonexistent/v.json"), std::string::npos);
}

TEST(RuntimeTokenizerGpt2, MissingByteTokenIsAnEncodeError) {
  Expected<std::unique_ptr<Tokenizer>> tok = parseGpt2Tokenizer("{\"a\": 0}", "");
  ASSERT_TRUE(tok) << tok.message();
  EXPECT_EQ(*(*tok)->encode("aaa"), (Ids{0, 0, 0}));
  Expected<Ids> ids = (*tok)->encode("ab");
  ASSERT_FALSE(ids);
  EXPECT_EQ(ids.message(), "byte 98 has no byte-level token in the vocabulary");
}

} // namespace
