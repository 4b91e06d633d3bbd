//===- RuntimeCliTest.cpp - libxfrt manifest and command-line parsing -----===//
#include "RuntimeUnitTest.h"
#include "RuntimeTestSupport.h"

#include "xfrt/Cli.h"
#include "xfrt/Driver.h"
#include "xfrt/Manifest.h"
#include "xfrt/MessageText.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace xfrt;
using namespace xfrt::test;

namespace {

Manifest manifest() { return *parseManifest(testManifestJson()); }

TEST(RuntimeManifest, Parses) {
  Expected<Manifest> m = parseManifest(testManifestJson());
  ASSERT_TRUE(m) << m.message();
  EXPECT_EQ(m->model, "tiny");
  EXPECT_TRUE(m->outputIsLogits);
  EXPECT_EQ(m->vocab, 5);
  EXPECT_EQ(m->maxPositions, 4);
  ASSERT_EQ(m->parameters.size(), 2u);
  EXPECT_EQ(m->parameters[0].numel, 6);
  EXPECT_EQ(m->parameters[1].init, InitKind::Ones);
  EXPECT_EQ(m->derivedBytes, (std::vector<int64_t>{64}));
  EXPECT_EQ(m->kernels[0].flopsPerRow, 10);
  EXPECT_EQ(m->kindName(), "decoder");
}

TEST(RuntimeManifest, Rejects) {
  const char *bad[] = {
      "",
      "[]",
      R"({"vocab":2,"d_out":2,"parameters":[]})",
      R"({"model":"x","d_out":2,"parameters":[]})",
      R"({"model":"x","vocab":0,"d_out":2,"parameters":[]})",
      R"({"model":"x","vocab":2,"d_out":2})",
      R"({"model":"x","vocab":2,"d_out":2,"output":"probs","parameters":[]})",
      R"({"model":"x","vocab":2,"d_out":2,"parameters":[{"name":"a","shape":[-1]}]})",
      R"({"model":"x","vocab":2,"d_out":2,"parameters":[{"name":"a","shape":[1],"init":"x"}]})",
      R"({"model":"x","vocab":2,"d_out":2,"parameters":[{"name":"a","shape":[1]},{"name":"a","shape":[1]}]})",
      R"({"model":"x","vocab":2,"d_out":2,"parameters":[{"name":"a","shape":[1099511627776,2]}]})",
      R"({"model":"x","vocab":2,"d_out":2,"parameters":[],"derived":[{"bytes":-1}]})"};
  for (const char *text : bad) {
    Expected<Manifest> m = parseManifest(text);
    EXPECT_FALSE(m) << text;
    if (!m)
      EXPECT_EQ(m.message().rfind("manifest: ", 0), 0u) << m.message();
  }
}

TEST(RuntimeCli, ParsesEveryFlag) {
  Expected<Options> o =
      parse({"--weights", "w.safetensors", "--save-weights=s.safetensors", "--tokens", "1,2",
             "--logits-out", "l.npy", "--threads", "4", "--repeat=3", "--print"});
  ASSERT_TRUE(o) << o.message();
  EXPECT_EQ(o->weights, "w.safetensors");
  EXPECT_EQ(o->saveWeights, "s.safetensors");
  EXPECT_EQ(o->tokens, (std::vector<std::string>{"1,2"}));
  EXPECT_EQ(o->logitsOut, "l.npy");
  EXPECT_EQ(o->threads, 4);
  EXPECT_EQ(o->repeat, 3);
  EXPECT_TRUE(o->print);
  EXPECT_TRUE(checkOptions(*o, manifest()));
  o = parse({"--random-weights", "18446744073709551615", "--tokens", "0"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->seed, UINT64_MAX);
  EXPECT_TRUE(parse({"-h"})->help);
}

// Every row of the flag table stores its value where Options keeps it.
TEST(RuntimeCli, StoresEveryFlag) {
  Expected<Options> o = parse(
      {"--weights", "w.gguf", "--print-memory", "--text", "a", "--text=b", "--prompt", "p",
       "--source-tokens", "1", "--source-prompt", "s", "--batch-file", "in.txt", "--batch", "7",
       "--tokenizer", "tok", "--vocab", "v.txt", "--merges", "m.txt", "--hidden-out", "h.npy",
       "--embeddings-out", "e.npy", "--pool", "cls", "--normalize", "--profile", "--profile-out",
       "p.json", "--peak", "180,30", "--trace-out", "t.json", "--max-new-tokens", "9",
       "--temperature", "0.5", "--top-k", "4", "--top-p", "0.9", "--seed", "12", "--eos", "none",
       "--bos", "2", "--no-cache", "--chat", "--interactive", "--chat-template", "chatml",
       "--system", "be brief", "--serve", "--host", "0.0.0.0", "--port", "0"});
  ASSERT_TRUE(o) << o.message();
  EXPECT_EQ(o->weights, "w.gguf");
  EXPECT_TRUE(o->printMemory);
  EXPECT_EQ(o->texts, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(o->prompts, (std::vector<std::string>{"p"}));
  EXPECT_EQ(o->sourceTokens, (std::vector<std::string>{"1"}));
  EXPECT_EQ(o->sourcePrompts, (std::vector<std::string>{"s"}));
  EXPECT_EQ(o->batchFile, "in.txt");
  EXPECT_EQ(o->batchSize, 7);
  EXPECT_EQ(o->tokenizer, "tok");
  EXPECT_EQ(o->vocab, "v.txt");
  EXPECT_EQ(o->merges, "m.txt");
  EXPECT_EQ(o->hiddenOut, "h.npy");
  EXPECT_EQ(o->embeddingsOut, "e.npy");
  EXPECT_EQ(o->pool, Pooling::Cls);
  EXPECT_TRUE(o->poolGiven);
  EXPECT_TRUE(o->normalize);
  EXPECT_TRUE(o->profile);
  EXPECT_EQ(o->profileOut, "p.json");
  EXPECT_EQ(o->peakGflops, 180);
  EXPECT_EQ(o->peakGBs, 30);
  EXPECT_EQ(o->traceOut, "t.json");
  EXPECT_EQ(o->maxNewTokens, 9);
  EXPECT_EQ(o->sampling.temperature, 0.5);
  EXPECT_EQ(o->sampling.topK, 4);
  EXPECT_EQ(o->sampling.topP, 0.9);
  EXPECT_TRUE(o->samplingGiven);
  EXPECT_EQ(o->samplingSeed, 12u);
  EXPECT_TRUE(o->seedGiven);
  EXPECT_TRUE(o->noEos);
  EXPECT_FALSE(o->eos);
  EXPECT_EQ(o->bos, 2);
  EXPECT_TRUE(o->noCache);
  EXPECT_TRUE(o->chat);
  EXPECT_TRUE(o->interactive);
  EXPECT_EQ(o->chatTemplate, "chatml");
  EXPECT_EQ(o->system, "be brief");
  EXPECT_TRUE(o->serve);
  EXPECT_EQ(o->host, "0.0.0.0");
  EXPECT_TRUE(o->hostGiven);
  EXPECT_EQ(o->port, 0);
  EXPECT_TRUE(o->portGiven);
  o = parse({"--eos", "3"});
  ASSERT_TRUE(o) << o.message();
  EXPECT_EQ(o->eos, 3);
  EXPECT_FALSE(o->noEos);
}

// Issue 33: an error quotes at most 80 bytes of what the user gave, escaped, so a 20 MB value
// or an escape sequence never goes to the terminal whole.
TEST(RuntimeCli, ErrorsQuoteInputCutShortAndEscaped) {
  std::string huge(20 << 20, 'x');
  std::string message = parse({"--pool", huge.c_str()}).message();
  EXPECT_LT(message.size(), 160u) << message.substr(0, 200);
  EXPECT_CONTAINS(message, "--pool: '" + std::string(80, 'x') + "…' is not 'mean' or 'cls'");
  message = parse({"--\x1b]0;owned\x07\x1b[2J"}).message();
  EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
  EXPECT_EQ(message.find('\x07'), std::string::npos) << message;
  EXPECT_CONTAINS(message, "unknown option '--\\x1b]0;owned\\x07\\x1b[2J'");
  message = parse({"--threads", "1\n2"}).message();
  EXPECT_CONTAINS(message, "--threads: '1\\n2' is not an integer");
}

TEST(RuntimeCli, MessageTextEscapesAndCuts) {
  EXPECT_EQ(quoteInput("plain"), "'plain'");
  EXPECT_EQ(quoteInput("tab\there"), "'tab\\there'");
  EXPECT_EQ(quoteInput("\xc3\xa9t\xc3\xa9"), "'\xc3\xa9t\xc3\xa9'"); // UTF-8 kept
  EXPECT_EQ(quoteInput("\xff\xc2\x9b"), "'\\xff\\xc2\\x9b'");  // invalid, and a C1 control
  EXPECT_EQ(quoteInput("\x7f"), "'\\x7f'");
  // Cut on a character boundary: "é" would end past the 3 bytes allowed.
  EXPECT_EQ(quoteInput("ab\xc3\xa9", 3), "'ab…'");
  EXPECT_EQ(quoteInput(std::string(100, 'a')), "'" + std::string(80, 'a') + "…'");
  EXPECT_EQ(quoteInput("a\\b"), "'a\\\\b'");
  EXPECT_EQ(printableMessage("a\x1b[31mb"), "a\\x1b[31mb");
  // A quote inside a message is not escaped twice.
  EXPECT_EQ(printableMessage("x " + quoteInput("\x1b\\")), "x '\\x1b\\\\'");
  EXPECT_EQ(printableMessage(std::string(5000, 'z'), 4096), std::string(4096, 'z') +
                                                               "… (904 more bytes)");
}

TEST(RuntimeCli, RejectsBadFlags) {
  EXPECT_CONTAINS(parse({"--frobnicate"}).message(), "unknown option '--frobnicate'");
  EXPECT_CONTAINS(parse({"stray"}).message(), "unexpected argument 'stray'");
  EXPECT_CONTAINS(parse({"--weights"}).message(), "needs a value (FILE)");
  EXPECT_CONTAINS(parse({"--weights="}).message(), "non-empty value");
  EXPECT_CONTAINS(parse({"--print=1"}).message(), "takes no value");
  EXPECT_CONTAINS(parse({"--weights", "a", "--weights", "b"}).message(), "given twice");
  EXPECT_CONTAINS(parse({"--temperature", "0.5", "--temperature=1"}).message(), "given twice");
  EXPECT_CONTAINS(parse({"--random-weights", "-1"}).message(), "not an unsigned 64-bit");
  EXPECT_CONTAINS(parse({"--random-weights", "18446744073709551616"}).message(), "not an unsigned");
  EXPECT_CONTAINS(parse({"--threads", "0"}).message(), "not an integer in [1, 1000000]");
  EXPECT_CONTAINS(parse({"--threads", "99999"}).message(), "more than 256");
  EXPECT_CONTAINS(parse({"--threads", "257"}).message(), "more than 256");
  EXPECT_TRUE(parse({"--threads", "256"}).ok());
  EXPECT_CONTAINS(parse({"--repeat", "x"}).message(), "not an integer");
}

TEST(RuntimeCli, ChecksAgainstManifest) {
  Manifest m = manifest();
  auto check = [&](std::vector<const char *> args) {
    Expected<Options> o = parse(args);
    EXPECT_TRUE(o) << o.message();
    return checkOptions(*o, m).message();
  };
  EXPECT_CONTAINS(check({"--tokens", "1"}), "give --weights FILE or --random-weights SEED");
  EXPECT_CONTAINS(check({"--weights", "w", "--random-weights", "1", "--tokens", "1"}), "not both");
  EXPECT_CONTAINS(check({"--weights", "w", "--tokens", "1", "--hidden-out", "h.npy"}),
                  "outputs logits; use --logits-out");
  EXPECT_CONTAINS(check({"--weights", "w", "--tokens", "1", "--source-tokens", "1"}),
                  "not an encoder-decoder");
  EXPECT_CONTAINS(check({"--weights", "w", "--logits-out", "l.npy"}),
                  "--logits-out needs --tokens");
  EXPECT_CONTAINS(check({"--weights", "w"}), "nothing to do");
  EXPECT_EQ(check({"--weights", "w", "--save-weights", "s"}), "");

  Manifest hidden = *parseManifest(
      R"({"model":"ed","output":"hidden","encoder_decoder":true,"vocab":9,"d_out":3,"parameters":[]})");
  Expected<Options> o = parse({"--random-weights", "1", "--tokens", "1", "--logits-out", "x"});
  EXPECT_CONTAINS(checkOptions(*o, hidden).message(), "outputs hidden states; use --hidden-out");
  o = parse({"--random-weights", "1", "--tokens", "1"});
  EXPECT_CONTAINS(checkOptions(*o, hidden).message(), "--source-tokens is required");
}

TEST(RuntimeCli, BatchFlags) {
  Manifest m = manifest();
  auto check = [&](std::vector<const char *> args, const Manifest &model) {
    Expected<Options> o = parse(args);
    EXPECT_TRUE(o) << o.message();
    return checkOptions(*o, model).message();
  };
  EXPECT_CONTAINS(parse({"--batch", "0"}).message(), "not an integer in [1, 1000000]");
  EXPECT_CONTAINS(parse({"--batch", "2", "--batch", "3"}).message(), "given twice");
  EXPECT_CONTAINS(parse({"--batch-file", "a", "--batch-file", "b"}).message(), "given twice");
  Expected<Options> o = parse({"--batch-file", "in.txt", "--batch", "7"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->batchFile, "in.txt");
  EXPECT_EQ(o->batchSize, 7);
  EXPECT_CONTAINS(check({"--random-weights", "1", "--batch-file", "f", "--tokens", "1"}, m),
                  "give one kind of input");
  EXPECT_CONTAINS(check({"--random-weights", "1", "--batch-file", "f"}, m),
                  "--batch-file on decoder 'tiny' generates: give --max-new-tokens N");
  EXPECT_EQ(check({"--random-weights", "1", "--batch-file", "f", "--max-new-tokens", "2"}, m),
            "");
  Manifest encoder = *parseManifest(
      R"({"model":"enc","output":"hidden","vocab":9,"d_out":3,"parameters":[]})");
  EXPECT_EQ(check({"--random-weights", "1", "--batch-file", "f", "--pool", "cls", "--normalize"},
                  encoder),
            "");
  EXPECT_CONTAINS(check({"--random-weights", "1", "--tokens", "1", "--normalize"}, encoder),
                  "--normalize needs --embeddings-out or --batch-file");
  Manifest seq2seq = *parseManifest(
      R"({"model":"ed","output":"logits","encoder_decoder":true,"vocab":9,"d_out":3,"parameters":[]})");
  // An encoder-decoder's batch file holds SOURCE<TAB>TARGET lines (or sources with --bos).
  EXPECT_CONTAINS(check({"--random-weights", "1", "--batch-file", "f"}, seq2seq),
                  "--batch-file on encoder-decoder 'ed' generates: give --max-new-tokens N");
  EXPECT_EQ(check({"--random-weights", "1", "--batch-file", "f", "--max-new-tokens", "2"},
                  seq2seq),
            "");
  EXPECT_EQ(check({"--random-weights", "1", "--batch-file", "f", "--max-new-tokens", "2", "--bos",
                   "1"},
                  seq2seq),
            "");
  EXPECT_CONTAINS(check({"--random-weights", "1", "--batch-file", "f", "--max-new-tokens", "2",
                         "--source-tokens", "1"},
                        seq2seq),
                  "--batch-file holds the sources of encoder-decoder 'ed' (SOURCE<TAB>TARGET "
                  "lines): give no --source-tokens");
}

// --decode-steps runs forward passes through xf_forward_cached: a model needs one.
TEST(RuntimeCli, DecodeSteps) {
  Manifest plain = manifest(), cached = manifest();
  cached.cached = true;
  cached.cachePositions = 4;
  auto check = [&](const Manifest &m, std::vector<const char *> args) {
    Expected<Options> o = parse(args);
    EXPECT_TRUE(o) << o.message();
    return o ? checkOptions(*o, m).message() : "";
  };
  std::vector<const char *> forward = {"--weights",    "w",    "--tokens", "1,2", "--decode-steps",
                                       "--logits-out", "l.npy"};
  EXPECT_EQ(check(cached, forward), "");
  EXPECT_EQ(check(plain, forward),
            "--decode-steps: model 'tiny' has no KV-cache entry point (xf_forward_cached)");
  EXPECT_CONTAINS(
      check(cached, {"--weights", "w", "--tokens", "1", "--max-new-tokens", "2", "--decode-steps"}),
      "--decode-steps is for forward passes, not generation");
  EXPECT_CONTAINS(check(cached, {"--weights", "w", "--tokens", "1", "--decode-steps", "--profile"}),
                  "--decode-steps: --profile/--profile-out/--trace-out");
  EXPECT_CONTAINS(check(cached, {"--weights", "w", "--serve", "--decode-steps"}),
                  "--decode-steps is not for --serve");
}

TEST(RuntimeCli, ChatFlags) {
  Manifest m = manifest();
  auto check = [&](std::vector<const char *> args) {
    Expected<Options> o = parse(args);
    EXPECT_TRUE(o) << o.message();
    return o ? checkOptions(*o, m).message() : "";
  };
  Expected<Options> o = parse({"--weights", "m.gguf", "--chat", "--prompt", "hi",
                               "--chat-template=llama3"});
  ASSERT_TRUE(o) << o.message();
  EXPECT_TRUE(o->chat && !o->interactive && o->chatTemplate == "llama3");
  EXPECT_TRUE(o->haveTokenizer()) << "a .gguf checkpoint brings its tokenizer";
  EXPECT_EQ(checkOptions(*o, m).message(), "");
  o = parse({"--weights", "m.gguf", "--interactive"});
  ASSERT_TRUE(o) << o.message();
  EXPECT_TRUE(o->generating()) << "--interactive generates without --prompt";
  EXPECT_EQ(checkOptions(*o, m).message(), "");

  EXPECT_CONTAINS(parse({"--chat-template", "alpaca"}).message(),
                  "--chat-template: 'alpaca' is not one of chatml|llama2|llama3|zephyr");
  EXPECT_CONTAINS(parse({"--chat=1"}).message(), "'--chat' takes no value");
  EXPECT_CONTAINS(check({"--weights", "m.gguf", "--interactive", "--tokens", "1"}),
                  "--interactive takes text turns, not --tokens");
  EXPECT_CONTAINS(check({"--weights", "m.gguf", "--interactive", "--prompt", "x"}),
                  "--interactive reads the user turns from stdin");
  EXPECT_CONTAINS(check({"--weights", "m.gguf", "--chat", "--text", "x"}),
                  "--chat takes text turns, not --text");
  EXPECT_CONTAINS(check({"--weights", "m.gguf", "--chat"}), "--chat needs --prompt TEXT");
  EXPECT_CONTAINS(check({"--weights", "m.gguf", "--chat-template", "chatml", "--prompt", "x"}),
                  "--chat-template needs --chat or --interactive");
  EXPECT_CONTAINS(check({"--weights", "m.gguf", "--system", "Be brief.", "--prompt", "x"}),
                  "--system needs --chat or --interactive");
  EXPECT_CONTAINS(check({"--weights", "m.safetensors", "--chat", "--prompt", "x"}),
                  "--prompt needs a tokenizer: --tokenizer PATH, --vocab FILE or --weights X.gguf");
  EXPECT_CONTAINS(check({"--weights", "m.safetensors", "--interactive"}),
                  "--interactive needs a tokenizer");
  Manifest hidden = *parseManifest(
      R"({"model":"enc","output":"hidden","encoder_decoder":false,"vocab":9,"d_out":3,"parameters":[]})");
  o = parse({"--weights", "m.gguf", "--interactive"});
  EXPECT_CONTAINS(checkOptions(*o, hidden).message(),
                  "--interactive: model 'enc' is not a decoder that outputs logits");
}

TEST(RuntimeCli, TokenLists) {
  Manifest m = manifest(); // vocab 5, max_positions 4
  Expected<std::vector<int32_t>> t = parseTokenList("0,4, 2 ,3", "--tokens", m);
  ASSERT_TRUE(t) << t.message();
  EXPECT_EQ(*t, (std::vector<int32_t>{0, 4, 2, 3}));
  EXPECT_CONTAINS(parseTokenList("5", "--tokens", m).message(),
                  "--tokens: token id 5 at position 0 is out of range [0, 5)");
  EXPECT_CONTAINS(parseTokenList("1,-1", "--tokens", m).message(), "token id -1 at position 1");
  EXPECT_CONTAINS(parseTokenList("1,,2", "--tokens", m).message(), "empty token id at position 1");
  EXPECT_CONTAINS(parseTokenList("", "--tokens", m).message(), "empty token id");
  EXPECT_CONTAINS(parseTokenList("1,", "--tokens", m).message(), "empty token id");
  EXPECT_CONTAINS(parseTokenList("1x", "--tokens", m).message(), "'1x' is not a token id");
  EXPECT_CONTAINS(parseTokenList("99999999999999999999999", "--tokens", m).message(),
                  "is not a token id");
  EXPECT_CONTAINS(parseTokenList("1,1,1,1,1", "--tokens", m).message(),
                  "more than 4 tokens (the model's max_positions)");
  m.maxPositions = 0;
  EXPECT_TRUE(parseTokenList("1,1,1,1,1", "--tokens", m));
}

TEST(RuntimeCli, UsageListsEverything) {
  Manifest m = manifest();
  std::string u = usageText("./tiny", &m);
  for (const char *flag :
       {"--help", "--weights", "--random-weights", "--save-weights", "--tokens", "--source-tokens",
        "--logits-out", "--hidden-out", "--threads", "--repeat", "--print", "--chat",
        "--interactive", "--chat-template"})
    EXPECT_CONTAINS(u, flag);
  EXPECT_CONTAINS(u, "model: tiny (decoder, output logits [l, 5]");
  EXPECT_CONTAINS(u, "L=1");
}

// --help marks the flags of other kinds of models, from each row's audience.
TEST(RuntimeCli, UsageMarksFlagsForOtherModels) {
  auto marked = [](const Manifest &m, const std::string &flag) {
    std::string u = usageText("./m", &m);
    size_t at = u.find("\n  " + flag + " ");
    EXPECT_NE(at, std::string::npos) << flag;
    std::string line = u.substr(at + 1, u.find('\n', at + 1) - at - 1);
    return line.find("[not for this model]") != std::string::npos;
  };
  Manifest decoder = manifest();
  EXPECT_FALSE(marked(decoder, "--max-new-tokens"));
  EXPECT_FALSE(marked(decoder, "--chat"));
  EXPECT_FALSE(marked(decoder, "--tokens"));
  EXPECT_TRUE(marked(decoder, "--source-tokens"));
  EXPECT_TRUE(marked(decoder, "--hidden-out"));
  EXPECT_TRUE(marked(decoder, "--pool"));
  Manifest encoder = manifest();
  encoder.outputIsLogits = false;
  EXPECT_TRUE(marked(encoder, "--max-new-tokens"));
  EXPECT_TRUE(marked(encoder, "--logits-out"));
  EXPECT_TRUE(marked(encoder, "--chat"));
  EXPECT_FALSE(marked(encoder, "--embeddings-out"));
  Manifest encoderDecoder = manifest();
  encoderDecoder.encoderDecoder = true;
  EXPECT_FALSE(marked(encoderDecoder, "--source-prompt"));
  EXPECT_FALSE(marked(encoderDecoder, "--bos"));
  EXPECT_FALSE(marked(encoderDecoder, "--temperature"));
  EXPECT_TRUE(marked(encoderDecoder, "--system"));
}

TEST(RuntimeCli, TopIndices) {
  float row[] = {0.5f, 3, NAN, 3, -1, 7, 2};
  EXPECT_EQ(topIndices(row, 7, 5), (std::vector<int64_t>{5, 1, 3, 6, 0}));
  EXPECT_EQ(topIndices(row, 2, 5), (std::vector<int64_t>{1, 0}));
}

} // namespace
