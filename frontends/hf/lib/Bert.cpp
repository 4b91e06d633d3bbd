//===- Bert.cpp - model_type bert as examples/bert.xf ---------------------===//
//
// BertModel's encoder (Alg. 9): word + position + token-type-0 embeddings,
// their LayerNorm, post-LN blocks, bidirectional attention; the output is the
// last hidden states (the pooler and any head are not part of it).
// sentence-transformers' MiniLM is this model at its sizes.
//
//===----------------------------------------------------------------------===//

#include "Families.h"

using namespace xf::hf;

SpecText xf::hf::importBert(Config &config, const Checkpoint &checkpoint,
                            const ImportOptions &options) {
  SpecText spec;
  spec.model = "bert";
  importedHeader(
      config, checkpoint, spec,
      "BERT (Alg. 9) as BertModel computes it: post-LN, bidirectional; returns "
      "the "
      "last hidden states (pool them for a sentence embedding). The layout of "
      "examples/bert.xf.");
  int64_t layers = config.size("num_hidden_layers");
  spec.layers = layers;
  spec.hyper("L", std::to_string(layers), "num_hidden_layers");
  spec.hyper("H", std::to_string(config.size("num_attention_heads")),
             "num_attention_heads");
  spec.hyper("d_e", std::to_string(config.size("hidden_size")), "hidden_size");
  spec.hyper("d_mlp", std::to_string(config.size("intermediate_size")),
             "intermediate_size");
  spec.hyper("N_V", std::to_string(config.size("vocab_size")), "vocab_size");
  spec.hyper("ℓ_max", std::to_string(config.size("max_position_embeddings")),
             "max_position_embeddings");
  spec.hyper("N_T", std::to_string(config.sizeOr("type_vocab_size", 2)),
             config.isAbsent("type_vocab_size") ? "type_vocab_size (absent: 2)"
                                                : "type_vocab_size");
  spec.hyper("ε", formatNumber(config.numberOr("layer_norm_eps", 1e-12)),
             config.isAbsent("layer_norm_eps")
                 ? "layer_norm_eps (absent: 1e-12)"
                 : "layer_norm_eps");
  if (options.maxPositions)
    config.refuse("--max-positions applies to rotary models; BERT's positions "
                  "are the rows of "
                  "its table (max_position_embeddings)");
  std::string positions = config.textOr("position_embedding_type", "absolute");
  if (positions != "absolute")
    config.refuse("position_embedding_type '" + positions +
                  "' is not supported (only absolute)");
  if (config.flagOr("is_decoder", false))
    config.refuse("is_decoder = true is not supported");
  if (config.flagOr("add_cross_attention", false))
    config.refuse("add_cross_attention = true is not supported");

  std::string p = checkpointPrefix(
      checkpoint, "embeddings.word_embeddings.weight", "", config, spec);
  std::string e = p + "embeddings.";
  spec.param(weight("W_e", "N_V, d_e", e + "word_embeddings.weight", false));
  spec.param(
      weight("W_p", "ℓ_max, d_e", e + "position_embeddings.weight", false));
  spec.param(
      weight("W_t", "N_T, d_e", e + "token_type_embeddings.weight", false));
  Parameter row;
  row.name = "w_t0", row.shape = "d_e", row.view = "W_t[0]";
  row.comment = "token type 0, added to every token";
  spec.param(row);
  spec.param(weight("γ", "d_e", e + "LayerNorm.weight", false));
  spec.param(weight("β", "d_e", e + "LayerNorm.bias", false));
  std::string b = p + "encoder.layer.{l}.";
  for (auto [w, bias, name] : {std::tuple{"W_q", "b_q", "attention.self.query"},
                               {"W_k", "b_k", "attention.self.key"},
                               {"W_v", "b_v", "attention.self.value"},
                               {"W_o", "b_o", "attention.output.dense"}}) {
    spec.param(weight(w, "d_e, d_e", b + name + ".weight", true, true));
    spec.param(weight(bias, "d_e", b + name + ".bias", true));
  }
  spec.param(
      weight("γ1", "d_e", b + "attention.output.LayerNorm.weight", true));
  spec.param(weight("β1", "d_e", b + "attention.output.LayerNorm.bias", true));
  spec.param(weight("W_mlp1", "d_e, d_mlp", b + "intermediate.dense.weight",
                    true, true));
  spec.param(weight("b_mlp1", "d_mlp", b + "intermediate.dense.bias", true));
  spec.param(
      weight("W_mlp2", "d_mlp, d_e", b + "output.dense.weight", true, true));
  spec.param(weight("b_mlp2", "d_e", b + "output.dense.bias", true));
  spec.param(weight("γ2", "d_e", b + "output.LayerNorm.weight", true));
  spec.param(weight("β2", "d_e", b + "output.LayerNorm.bias", true));

  std::string mlp =
      activation(config, "hidden_act", "gelu", "X · W_mlp1[l] + b_mlp1[l]");
  spec.algorithm = "ETransformer(x)";
  spec.body = {
      "X ← token_embed(x | W_e) + pos_embed(x | W_p) + w_t0",
      "X ← layer_norm(X | γ, β)",
      "for l in 1..L",
      "  X ← X + mhattention(X | W_q[l], b_q[l], W_k[l], b_k[l], W_v[l], "
      "b_v[l],",
      "                         W_o[l], b_o[l], mask = bidirectional)",
      "  X ← layer_norm(X | γ1[l], β1[l])",
      "  X ← X + " + mlp + " · W_mlp2[l] + b_mlp2[l]",
      "  X ← layer_norm(X | γ2[l], β2[l])",
      "end",
      "return X                          # hidden states [ℓ, d_e]",
  };
  return spec;
}
