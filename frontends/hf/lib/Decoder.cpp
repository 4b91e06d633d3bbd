//===- Decoder.cpp - llama, mistral, qwen2, gemma: one decoder -----------===//
//
// One decoder with four model_types: pre-RMSNorm blocks, grouped-query
// attention with rotary positions in Hugging Face's halves pairing, a gated
// MLP, a final RMSNorm and an unembedding tied or not. What differs is data
// (DecoderTraits): Qwen2's Q/K/V biases, Gemma's GeGLU, (1 + γ) norms and
// √d_e-scaled embeddings, Mistral's and Qwen2's sliding windows, the default of
// tie_word_embeddings.
//
//===----------------------------------------------------------------------===//

#include "Families.h"

#include <cmath>

using namespace xf::hf;

namespace {
struct DecoderTraits {
  const char *modelClass;
  bool tiedByDefault;
  bool qkvBias;            // always (Qwen2)
  bool readsAttentionBias; // config.attention_bias adds Q/K/V/O biases (Llama,
                           // Gemma)
  bool readsMlpBias;       // config.mlp_bias (Llama)
  bool gemmaNorm;          // x̂ ⊙ (1 + γ), embeddings × √d_e
  const char *defaultActivation; // of hidden_act
};

DecoderTraits traitsOf(llvm::StringRef type) {
  if (type == "mistral")
    return {"MistralForCausalLM", false, false, false, false, false, "silu"};
  if (type == "qwen2")
    return {"Qwen2ForCausalLM", false, true, false, false, false, "silu"};
  if (type == "gemma")
    return {"GemmaForCausalLM", true, false, true, false, true,
            "gelu_pytorch_tanh"};
  return {"LlamaForCausalLM", false, false, true, true, false, "silu"};
}

/// rope_theta, from `rope_theta` or transformers 5's `rope_parameters`; any
/// scaling refused.
double ropeBase(Config &config, std::string &key) {
  if (!config.isAbsent("rope_scaling")) {
    const llvm::json::Object *s = config.get("rope_scaling")->getAsObject();
    std::optional<llvm::StringRef> type =
        s ? (s->getString("rope_type") ? s->getString("rope_type")
                                       : s->getString("type"))
          : std::nullopt;
    if (!type || *type != "default")
      config.refuse("rope_scaling" +
                    (type ? " type '" + *type + "'" : llvm::Twine()) +
                    " is not supported (only unscaled rotary positions)");
  }
  if (!config.isAbsent("partial_rotary_factor") &&
      config.numberOr("partial_rotary_factor", 1) != 1)
    config.refuse("partial_rotary_factor below 1 is not supported");
  if (const llvm::json::Value *p = config.get("rope_parameters")) {
    const llvm::json::Object *o = p->getAsObject();
    std::optional<llvm::StringRef> type =
        o ? o->getString("rope_type") : std::nullopt;
    if (type && *type != "default")
      config.refuse("rope_parameters.rope_type '" + *type +
                    "' is not supported (only unscaled rotary positions)");
    std::optional<double> theta = o ? o->getNumber("rope_theta") : std::nullopt;
    if (theta && *theta > 0) {
      key = "rope_parameters.rope_theta";
      return *theta;
    }
  }
  key = config.isAbsent("rope_theta") ? "rope_theta (absent: 10000)"
                                      : "rope_theta";
  return config.numberOr("rope_theta", 10000);
}

/// The sliding window, when one would cut inside the ℓ_max positions the spec
/// accepts.
void checkSlidingWindow(Config &config, llvm::StringRef type, int64_t positions,
                        SpecText &spec) {
  bool used = type == "mistral" ||
              (type == "qwen2" && config.flagOr("use_sliding_window", false));
  if (const llvm::json::Value *layerTypes = config.get("layer_types"))
    if (const llvm::json::Array *a = layerTypes->getAsArray())
      for (const llvm::json::Value &t : *a)
        used |= t.getAsString() && *t.getAsString() == "sliding_attention";
  std::optional<int64_t> window = config.optionalSize("sliding_window");
  if (!used || !window)
    return;
  if (*window >= positions) {
    spec.header.push_back(
        "sliding_window " + std::to_string(*window) + " ≥ ℓ_max " +
        std::to_string(positions) +
        ": the window never cuts, so causal attention is exact.");
    return;
  }
  config.refuse("sliding_window " + llvm::Twine(*window) +
                " is narrower than the " + llvm::Twine(positions) +
                " positions, and xf's attention masks have no sliding window; "
                "import with "
                "--max-positions " +
                llvm::Twine(*window) +
                " (or less) to cap the context "
                "where the window never cuts");
}

void declareParameters(SpecText &spec, const DecoderTraits &traits,
                       bool attentionBias, bool mlpBias, bool tied,
                       const std::string &p) {
  std::string b = p + "layers.{l}.";
  spec.param(weight("W_e", "N_V, d_e", p + "embed_tokens.weight", false));
  spec.param(weight("γ1", "d_e", b + "input_layernorm.weight", true));
  struct Projection {
    const char *w, *bias, *name, *shape, *biasShape;
    bool hasBias;
  } projections[] = {
      {"W_q", "b_q", "q_proj", "d_e, H*d_k", "H*d_k",
       attentionBias || traits.qkvBias},
      {"W_k", "b_k", "k_proj", "d_e, H_kv*d_k", "H_kv*d_k",
       attentionBias || traits.qkvBias},
      {"W_v", "b_v", "v_proj", "d_e, H_kv*d_k", "H_kv*d_k",
       attentionBias || traits.qkvBias},
      {"W_o", "b_o", "o_proj", "H*d_k, d_e", "d_e", attentionBias},
  };
  for (const Projection &j : projections) {
    spec.param(weight(j.w, j.shape, b + "self_attn." + j.name + ".weight", true,
                      true));
    if (j.hasBias)
      spec.param(weight(j.bias, j.biasShape,
                        b + "self_attn." + j.name + ".bias", true));
  }
  spec.param(weight("γ2", "d_e", b + "post_attention_layernorm.weight", true));
  for (auto [w, bias, name, shape, biasShape] :
       {std::tuple{"W_gate", "b_gate", "gate_proj", "d_e, d_mlp", "d_mlp"},
        {"W_up", "b_up", "up_proj", "d_e, d_mlp", "d_mlp"},
        {"W_down", "b_down", "down_proj", "d_mlp, d_e", "d_e"}}) {
    spec.param(weight(w, shape, b + "mlp." + name + ".weight", true, true));
    if (mlpBias)
      spec.param(weight(bias, biasShape, b + "mlp." + name + ".bias", true));
  }
  spec.param(weight("γ", "d_e", p + "norm.weight", false));
  if (!tied)
    spec.param(weight("W_u", "d_e, N_V", "lm_head.weight", false, true,
                      "tie_word_embeddings = false: its own unembedding"));
}

void writeAlgorithm(SpecText &spec, const DecoderTraits &traits,
                    bool attentionBias, bool qkvBias, bool mlpBias, bool tied,
                    const std::string &mlpActivation, double embedScale,
                    int64_t width) {
  auto norm = [&](const char *gamma) {
    std::string n = std::string("rms_norm(X | ") + gamma + ")";
    return traits.gemmaNorm ? "rms_norm(X) + " + n : n;
  };
  auto biased = [](const char *w, const char *b, bool has) {
    return std::string(w) + "[l]" + (has ? std::string(", ") + b + "[l]" : "");
  };
  spec.algorithm = "DTransformer(x)";
  std::vector<std::string> &body = spec.body;
  if (traits.gemmaNorm)
    body.push_back("X ← token_embed(x | W_e) · " + formatNumber(embedScale) +
                   "   # × √hidden_size = √" + std::to_string(width) +
                   ": Gemma scales its embeddings");
  else
    body.push_back("X ← token_embed(x | W_e)");
  body.push_back("for l in 1..L");
  body.push_back("  X̃ ← " + norm("γ1[l]") +
                 (traits.gemmaNorm
                      ? "   # Gemma's RMSNorm: x̂ ⊙ (1 + γ) = x̂ + x̂ ⊙ γ"
                      : ""));
  bool qkv = attentionBias || qkvBias;
  body.push_back("  X ← X + mhattention(X̃ | " + biased("W_q", "b_q", qkv) +
                 ", " + biased("W_k", "b_k", qkv) + ", " +
                 biased("W_v", "b_v", qkv) + ",");
  body.push_back(
      "                         " + biased("W_o", "b_o", attentionBias) +
      ", mask = causal, kv_heads = H_kv, rope = halves, rope_base = θ)");
  body.push_back("  X̃ ← " + norm("γ2[l]"));
  auto project = [&](const char *w, const char *b) {
    return "X̃ · " + std::string(w) + "[l]" +
           (mlpBias ? std::string(" + ") + b + "[l]" : "");
  };
  std::string gate = mlpActivation.substr(0, mlpActivation.find('@')) +
                     project("W_gate", "b_gate") +
                     mlpActivation.substr(mlpActivation.find('@') + 1);
  body.push_back("  X ← X + (" + gate + " ⊙ (" + project("W_up", "b_up") +
                 ")) · W_down[l]" + (mlpBias ? " + b_down[l]" : ""));
  body.push_back("end");
  body.push_back("X ← " + norm("γ"));
  body.push_back(tied ? "return unembed(X | W_eᵀ)     # tie_word_embeddings: "
                        "logits = X·W_eᵀ"
                      : "return unembed(X | W_u)");
}
} // namespace

SpecText xf::hf::importDecoder(Config &config, const Checkpoint &checkpoint,
                               const ImportOptions &options) {
  std::string type = config.modelType();
  DecoderTraits traits = traitsOf(type);
  SpecText spec;
  spec.model = type;
  importedHeader(
      config, checkpoint, spec,
      std::string("A decoder of the Llama family as ") + traits.modelClass +
          " computes it: RMSNorm, grouped-query attention, rotary positions "
          "(Hugging Face's halves pairing), a gated MLP. The layout of "
          "examples/llama-hf.xf.");
  int64_t layers = config.size("num_hidden_layers");
  int64_t heads = config.size("num_attention_heads");
  int64_t width = config.size("hidden_size");
  spec.layers = layers;
  spec.hyper("L", std::to_string(layers), "num_hidden_layers");
  spec.hyper("H", std::to_string(heads), "num_attention_heads");
  spec.hyper("H_kv",
             std::to_string(config.sizeOr("num_key_value_heads", heads)),
             config.isAbsent("num_key_value_heads")
                 ? "num_key_value_heads (absent: = num_attention_heads)"
                 : "num_key_value_heads");
  spec.hyper("d_e", std::to_string(width), "hidden_size");
  spec.hyper("d_mlp", std::to_string(config.size("intermediate_size")),
             "intermediate_size");
  spec.hyper("N_V", std::to_string(config.size("vocab_size")), "vocab_size");
  int64_t positions = config.size("max_position_embeddings");
  if (options.maxPositions > positions)
    config.refuse("--max-positions " + llvm::Twine(options.maxPositions) +
                  " exceeds max_position_embeddings " + llvm::Twine(positions));
  if (options.maxPositions && options.maxPositions < positions)
    spec.hyper("ℓ_max", std::to_string(options.maxPositions),
               "--max-positions (max_position_embeddings = " +
                   std::to_string(positions) +
                   "): bounds positions and the KV cache");
  else
    spec.hyper("ℓ_max", std::to_string(positions),
               "max_position_embeddings: bounds positions and the KV cache");
  checkSlidingWindow(config, type,
                     options.maxPositions ? options.maxPositions : positions,
                     spec);
  std::string thetaKey;
  double theta = ropeBase(config, thetaKey);
  spec.hyper("θ", formatNumber(theta), thetaKey);
  spec.hyper("ε", formatNumber(config.numberOr("rms_norm_eps", 1e-6)),
             config.isAbsent("rms_norm_eps") ? "rms_norm_eps (absent: 1e-6)"
                                             : "rms_norm_eps");
  if (std::optional<int64_t> headDim = config.optionalSize("head_dim");
      headDim && *headDim * heads != width)
    spec.hyper("d_k", std::to_string(*headDim),
               "head_dim (not hidden_size / heads)");
  else
    spec.hyper("d_k", "d_e / H",
               "head width: hidden_size / num_attention_heads");

  bool attentionBias =
      traits.readsAttentionBias && config.flagOr("attention_bias", false);
  bool mlpBias = traits.readsMlpBias && config.flagOr("mlp_bias", false);
  bool tied = config.flagOr("tie_word_embeddings", traits.tiedByDefault);
  std::string mlp = activation(config, "hidden_act", traits.defaultActivation,
                               "@", traits.gemmaNorm);
  std::string p = checkpointPrefix(checkpoint, "embed_tokens.weight", "model.",
                                   config, spec);
  declareParameters(spec, traits, attentionBias, mlpBias, tied, p);
  writeAlgorithm(spec, traits, attentionBias, traits.qkvBias, mlpBias, tied,
                 mlp, double(float(std::sqrt(double(width)))), width);
  return spec;
}
