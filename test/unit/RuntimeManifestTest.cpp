//===- RuntimeManifestTest.cpp - one manifest schema, written and read ----===//
//
// xfc fills an xfrt::Manifest and writes it with renderManifest; the
// executable reads it back with parseManifest (runtime/lib/Manifest.cpp).
// Every field survives the round trip, the text is stable (rendering what
// was read gives the same bytes), and its layout is the one xfc has always
// embedded (keys sorted, two-space indent).
//
//===----------------------------------------------------------------------===//

#include "xfrt/Manifest.h"

#include <gtest/gtest.h>

#include <string>

using namespace xfrt;

namespace {

/// Every field away from its default.
Manifest everyField() {
  Manifest m;
  m.model = "a \"quoted\" \\ model";
  m.outputIsLogits = false;
  m.encoderDecoder = true;
  m.vocab = 50257;
  m.maxPositions = 1024;
  m.dOut = 768;
  m.cached = true;
  m.cachePositions = 512;
  m.cacheHalf = true;
  m.cuda = true;
  m.packed = true;
  m.hyperparameters = {{"eps", "1e-05"}, {"L", "12"}, {"d_e", "768"}};
  ParameterSpec table{"wte", {64, 32}, 64 * 32, InitKind::Normal};
  table.blocks = true;
  table.blockType = GgmlType::Q4_1;
  table.forwardReads = ForwardReads::Rows;
  ParameterSpec gain{"ln.weight", {32}, 32, InitKind::Ones};
  gain.bf16 = true;
  ParameterSpec bias{"ln.bias", {32}, 32, InitKind::Zeros};
  ParameterSpec q8{"w", {32, 64}, 32 * 64, InitKind::Normal};
  q8.blocks = true;
  q8.blockType = GgmlType::Q8_0;
  q8.forwardReads = ForwardReads::None;
  ParameterSpec up{"up", {32, 64}, 32 * 64, InitKind::Normal};
  up.forwardReads = ForwardReads::None;
  m.parameters = {table, gain, bias, q8, up};
  m.derivedBytes = {3072, 0, 32 * 4 + 32 * 64 * 4};
  m.derivedPrepareOnly = {true, false, false};
  m.derivedParts = {{}, {}, {2, 4}}; // ln.bias then up
  KernelSpec gemm;
  gemm.name = "xf_gemm_0", gemm.kind = "gemm", gemm.op = "xf.gemm";
  gemm.loc = "loc(\"gpt2.xf\":51:15)";
  gemm.flopsPerRow = 4718592, gemm.bytesPerCall = 9437184, gemm.bytesPerRow = 12288;
  gemm.tuned = true;
  gemm.products = "int8";
  KernelSpec attention;
  attention.name = "xf_attention_0", attention.kind = "attention", attention.op = "xf.attention";
  attention.flopsPerRowPerContextRow = 3072, attention.bytesPerContextRow = 6144;
  attention.contextFromSource = true;
  m.kernels = {gemm, attention};
  return m;
}

TEST(RuntimeManifest, EveryFieldSurvivesTheRoundTrip) {
  Manifest m = everyField();
  std::string text = renderManifest(m);
  Expected<Manifest> read = parseManifest(text);
  ASSERT_TRUE(read) << read.message() << "\n" << text;
  EXPECT_EQ(read->model, m.model);
  EXPECT_EQ(read->outputIsLogits, m.outputIsLogits);
  EXPECT_EQ(read->encoderDecoder, m.encoderDecoder);
  EXPECT_EQ(read->vocab, m.vocab);
  EXPECT_EQ(read->maxPositions, m.maxPositions);
  EXPECT_EQ(read->dOut, m.dOut);
  EXPECT_EQ(read->cached, m.cached);
  EXPECT_EQ(read->cachePositions, m.cachePositions);
  EXPECT_EQ(read->cacheHalf, m.cacheHalf);
  EXPECT_EQ(read->cuda, m.cuda);
  EXPECT_EQ(read->packed, m.packed);
  // Written with sorted keys (byte order: upper case first).
  std::vector<std::pair<std::string, std::string>> sorted = {
      {"L", "12"}, {"d_e", "768"}, {"eps", "1e-05"}};
  EXPECT_EQ(read->hyperparameters, sorted);
  ASSERT_EQ(read->parameters.size(), m.parameters.size());
  for (size_t i = 0; i < m.parameters.size(); ++i) {
    SCOPED_TRACE(m.parameters[i].name);
    const ParameterSpec &a = read->parameters[i], &b = m.parameters[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.shape, b.shape);
    EXPECT_EQ(a.numel, b.numel);
    EXPECT_EQ(a.init, b.init);
    EXPECT_EQ(a.bf16, b.bf16);
    EXPECT_EQ(a.blocks, b.blocks);
    EXPECT_EQ(a.blockType, b.blockType);
    EXPECT_EQ(a.forwardReads, b.forwardReads);
  }
  EXPECT_EQ(read->derivedBytes, m.derivedBytes);
  EXPECT_EQ(read->derivedPrepareOnly, m.derivedPrepareOnly);
  EXPECT_EQ(read->derivedParts, m.derivedParts);
  ASSERT_EQ(read->kernels.size(), m.kernels.size());
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    SCOPED_TRACE(m.kernels[i].name);
    const KernelSpec &a = read->kernels[i], &b = m.kernels[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.op, b.op);
    EXPECT_EQ(a.loc, b.loc);
    EXPECT_EQ(a.flopsPerRow, b.flopsPerRow);
    EXPECT_EQ(a.flopsPerRowPerContextRow, b.flopsPerRowPerContextRow);
    EXPECT_EQ(a.bytesPerCall, b.bytesPerCall);
    EXPECT_EQ(a.bytesPerRow, b.bytesPerRow);
    EXPECT_EQ(a.bytesPerContextRow, b.bytesPerContextRow);
    EXPECT_EQ(a.contextFromSource, b.contextFromSource);
    EXPECT_EQ(a.tuned, b.tuned);
    EXPECT_EQ(a.products, b.products);
  }
  // What was read renders to the same bytes.
  EXPECT_EQ(renderManifest(*read), text);
}

// xfc writes float hyperparameters with 17 significant digits; they read back as the same
// double, in the shortest text that does.
TEST(RuntimeManifest, FloatHyperparametersKeepTheirValue) {
  Manifest m = everyField();
  m.hyperparameters = {{"eps", "1.0000000000000001e-05"}, {"base", "0.33333333333333331"}};
  Expected<Manifest> read = parseManifest(renderManifest(m));
  ASSERT_TRUE(read) << read.message();
  ASSERT_EQ(read->hyperparameters.size(), 2u);
  EXPECT_EQ(read->hyperparameters[0].second, "0.3333333333333333");
  EXPECT_EQ(std::stod(read->hyperparameters[0].second), 1.0 / 3.0);
  EXPECT_EQ(read->hyperparameters[1].second, "1e-05");
  EXPECT_EQ(std::stod(read->hyperparameters[1].second), 1e-5);
}

TEST(RuntimeManifest, TheEmbeddedLayout) {
  Manifest m;
  m.model = "tiny";
  m.vocab = 64;
  m.dOut = 64;
  m.hyperparameters = {{"H", "2"}};
  m.parameters = {ParameterSpec{"wte.weight", {64, 16}, 1024, InitKind::Normal}};
  EXPECT_EQ(renderManifest(m), R"({
  "cache_positions": 0,
  "cached": false,
  "d_out": 64,
  "derived": [],
  "encoder_decoder": false,
  "hyperparameters": {
    "H": 2
  },
  "kernels": [],
  "max_positions": 0,
  "model": "tiny",
  "output": "logits",
  "packed": false,
  "parameters": [
    {
      "dtype": "f32",
      "forward_reads": "all",
      "init": "normal",
      "name": "wte.weight",
      "shape": [
        64,
        16
      ]
    }
  ],
  "vocab": 64
})");
  // "device" appears only for a CUDA build.
  m.cuda = true;
  EXPECT_NE(renderManifest(m).find("\n  \"device\": \"cuda\",\n"), std::string::npos);
}

// "forward_reads" is optional (a hand-written manifest): absent, the forward reads all of it.
TEST(RuntimeManifest, ForwardReads) {
  const char *prefix = R"({"model":"x","vocab":2,"d_out":2,"parameters":[{"name":"a","shape":[1])";
  for (auto [field, reads] : {std::pair{"", ForwardReads::All},
                              {R"(,"forward_reads":"all")", ForwardReads::All},
                              {R"(,"forward_reads":"rows")", ForwardReads::Rows},
                              {R"(,"forward_reads":"none")", ForwardReads::None}}) {
    Expected<Manifest> m = parseManifest(std::string(prefix) + field + "}]}");
    ASSERT_TRUE(m) << field << ": " << m.message();
    EXPECT_EQ(m->parameters[0].forwardReads, reads) << field;
  }
  for (const char *field : {R"(,"forward_reads":"some")", R"(,"forward_reads":true)"}) {
    Expected<Manifest> m = parseManifest(std::string(prefix) + field + "}]}");
    ASSERT_FALSE(m) << field;
    EXPECT_EQ(m.message().rfind("manifest: parameter 'a': unknown forward_reads ", 0), 0u)
        << m.message();
    EXPECT_NE(m.message().find("(all, rows, none)"), std::string::npos) << m.message();
  }
}

// "cache_type" is optional: absent or "f32", a float32 KV cache; "f16", float16; else refused.
TEST(RuntimeManifest, CacheType) {
  const char *prefix =
      R"({"model":"x","vocab":2,"d_out":2,"parameters":[],"cached":true,"cache_positions":8)";
  for (auto [field, half] : {std::pair{"", false},
                             {R"(,"cache_type":"f32")", false},
                             {R"(,"cache_type":"f16")", true}}) {
    Expected<Manifest> m = parseManifest(std::string(prefix) + field + "}");
    ASSERT_TRUE(m) << field << ": " << m.message();
    EXPECT_EQ(m->cacheHalf, half) << field;
  }
  for (const char *field : {R"(,"cache_type":"bf16")", R"(,"cache_type":2)"}) {
    Expected<Manifest> m = parseManifest(std::string(prefix) + field + "}");
    ASSERT_FALSE(m) << field;
    EXPECT_NE(m.message().find("'cache_type' is not \"f16\" or \"f32\""), std::string::npos)
        << m.message();
  }
}

// A kernel's "products" (the peak --profile reads it against): fp32 when absent, and not
// written then; anything but the three names is refused.
TEST(RuntimeManifest, KernelProducts) {
  auto manifest = [](const char *kernel) {
    return std::string(R"({"model":"x","vocab":2,"d_out":2,"parameters":[],"kernels":[)") +
           kernel + "]}";
  };
  Expected<Manifest> plain = parseManifest(manifest(R"({"name":"k","kind":"gemm"})"));
  ASSERT_TRUE(plain) << plain.message();
  EXPECT_EQ(plain->kernels[0].products, "fp32");
  EXPECT_EQ(renderManifest(*plain).find("products"), std::string::npos);
  for (const char *products : {"bf16", "int8", "fp32"}) {
    Expected<Manifest> m = parseManifest(
        manifest((std::string(R"({"name":"k","kind":"gemm","products":")") + products + "\"}")
                     .c_str()));
    ASSERT_TRUE(m) << products << ": " << m.message();
    EXPECT_EQ(m->kernels[0].products, products);
  }
  for (const char *bad : {R"("fp16")", "8", R"("")"}) {
    Expected<Manifest> m = parseManifest(
        manifest((std::string(R"({"name":"k","kind":"gemm","products":)") + bad + "}").c_str()));
    ASSERT_FALSE(m) << bad;
    EXPECT_NE(m.message().find("kernel 'k': 'products' is not \"fp32\", \"bf16\" or \"int8\""),
              std::string::npos)
        << m.message();
  }
}

// A kernel's "amx" (its bf16 / int8 call runs on AMX tiles where the process may use them):
// false when absent, written only when true; refused when not a boolean or on fp32 products.
TEST(RuntimeManifest, KernelAmx) {
  auto manifest = [](const std::string &kernel) {
    return std::string(R"({"model":"x","vocab":2,"d_out":2,"parameters":[],"kernels":[)") +
           kernel + "]}";
  };
  Expected<Manifest> plain = parseManifest(manifest(R"({"name":"k","kind":"gemm"})"));
  ASSERT_TRUE(plain) << plain.message();
  EXPECT_FALSE(plain->kernels[0].amx);
  EXPECT_EQ(renderManifest(*plain).find("amx"), std::string::npos);
  for (const char *products : {"bf16", "int8"}) {
    Expected<Manifest> m = parseManifest(manifest(
        std::string(R"({"name":"k","kind":"gemm","amx":true,"products":")") + products + "\"}"));
    ASSERT_TRUE(m) << products << ": " << m.message();
    EXPECT_TRUE(m->kernels[0].amx);
    Expected<Manifest> again = parseManifest(renderManifest(*m));
    ASSERT_TRUE(again) << again.message();
    EXPECT_TRUE(again->kernels[0].amx) << products;
  }
  for (const char *bad : {R"("amx":1,"products":"bf16")", R"("amx":true)",
                          R"("amx":true,"products":"fp32")"}) {
    Expected<Manifest> m =
        parseManifest(manifest(std::string(R"({"name":"k","kind":"gemm",)") + bad + "}"));
    ASSERT_FALSE(m) << bad;
    EXPECT_NE(m.message().find("kernel 'k': 'amx' is not a boolean, or true on fp32 products"),
              std::string::npos)
        << m.message();
  }
}

// A derived buffer's "parts" (a row-wise concatenation of parameters): float32 parameters,
// each in one buffer's parts at most, adding up to the buffer's bytes.
TEST(RuntimeManifest, DerivedParts) {
  auto manifest = [](const std::string &derived) {
    return parseManifest(R"({"model":"x","vocab":2,"d_out":2,"parameters":[)"
                         R"({"name":"a","shape":[2,4]},{"name":"b","shape":[4]},)"
                         R"({"name":"h","shape":[4],"dtype":"bf16"}],"derived":[)" +
                         derived + "]}");
  };
  Expected<Manifest> m = manifest(R"({"bytes":16},{"bytes":48,"parts":[0,1]})");
  ASSERT_TRUE(m) << m.message();
  EXPECT_EQ(m->derivedParts, (std::vector<std::vector<int64_t>>{{}, {0, 1}}));
  m = manifest(R"({"bytes":16})");
  ASSERT_TRUE(m) << m.message();
  EXPECT_TRUE(m->derivedParts.empty());
  for (auto [derived, error] :
       {std::pair<const char *, const char *>{R"({"bytes":48,"parts":{}})",
                                              "derived[0]: 'parts' is not a list"},
        {R"({"bytes":48,"parts":[0,3]})", "derived[0]: part 3 is not a parameter index"},
        {R"({"bytes":48,"parts":[0,-1]})", "derived[0]: part -1 is not a parameter index"},
        {R"({"bytes":48,"parts":[0,"b"]})", "derived[0]: part \"b\" is not a parameter index"},
        {R"({"bytes":48,"parts":[0,2]})", "derived[0]: part 'h' is not float32"},
        {R"({"bytes":64,"parts":[0,0]})", "derived[0]: parameter 'a' is a part twice"},
        {R"({"bytes":32,"parts":[0]},{"bytes":32,"parts":[0]})",
         "derived[1]: parameter 'a' is a part twice"},
        {R"({"bytes":40,"parts":[0,1]})", "derived[0]: its parts are 48 bytes, not 40"}}) {
    m = manifest(derived);
    ASSERT_FALSE(m) << derived;
    EXPECT_EQ(m.message(), std::string("manifest: ") + error) << derived;
  }
}

} // namespace
