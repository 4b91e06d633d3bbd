//===- Gpt2.cpp - model_type gpt2 as examples/gpt2.xf ---------------------===//
//
// Pre-LN, causal, learned positions, Conv1D weights stored [d_in, d_out]
// (nothing transposed), c_attn holding W_q | W_k | W_v side by side (sliced),
// unembedding tied to wte unless tie_word_embeddings says otherwise.
//
//===----------------------------------------------------------------------===//

#include "Families.h"

using namespace xf::hf;

SpecText xf::hf::importGpt2(Config &config, const Checkpoint &checkpoint,
                            const ImportOptions &options) {
  SpecText spec;
  spec.model = "gpt2";
  importedHeader(
      config, checkpoint, spec,
      "GPT-2 (Alg. 10) as GPT2LMHeadModel computes it: pre-LN, causal, learned "
      "positions; the layout of examples/gpt2.xf.");
  int64_t layers = config.size("n_layer");
  int64_t width = config.size("n_embd");
  spec.layers = layers;
  spec.hyper("L", std::to_string(layers), "n_layer");
  spec.hyper("H", std::to_string(config.size("n_head")), "n_head");
  spec.hyper("d_e", std::to_string(width), "n_embd");
  if (config.isAbsent("n_inner"))
    spec.hyper("d_mlp", "4*d_e", "n_inner is null: 4 × n_embd");
  else
    spec.hyper("d_mlp", std::to_string(config.size("n_inner")), "n_inner");
  spec.hyper("N_V", std::to_string(config.size("vocab_size")), "vocab_size");
  spec.hyper("ℓ_max", std::to_string(config.size("n_positions")),
             "n_positions (rows of wpe: the context length)");
  spec.hyper("ε", formatNumber(config.numberOr("layer_norm_epsilon", 1e-5)),
             config.isAbsent("layer_norm_epsilon")
                 ? "layer_norm_epsilon (absent: 1e-5)"
                 : "layer_norm_epsilon");
  if (options.maxPositions)
    config.refuse("--max-positions applies to rotary models; GPT-2's positions "
                  "are the rows of "
                  "its table wpe (n_positions)");
  if (config.flagOr("scale_attn_by_inverse_layer_idx", false))
    config.refuse("scale_attn_by_inverse_layer_idx = true is not supported");
  if (config.flagOr("add_cross_attention", false))
    config.refuse("add_cross_attention = true is not supported");
  bool scaled = config.flagOr("scale_attn_weights", true);
  bool tied = config.flagOr("tie_word_embeddings", true);

  std::string p = checkpointPrefix(checkpoint, "wte.weight", "", config, spec);
  spec.param(weight("W_e", "N_V, d_e", p + "wte.weight", false, false,
                    "token embedding"));
  spec.param(weight("W_p", "ℓ_max, d_e", p + "wpe.weight", false, false,
                    "positional embedding"));
  std::string h = p + "h.{l}.";
  auto view = [&](std::string name, std::string shape, std::string of) {
    Parameter v;
    v.name = std::move(name), v.shape = std::move(shape),
    v.view = std::move(of);
    v.perLayer = true;
    spec.param(v);
  };
  spec.param(weight("γ1", "d_e", h + "ln_1.weight", true));
  spec.param(weight("β1", "d_e", h + "ln_1.bias", true));
  spec.param(weight("W_qkv", "d_e, 3*d_e", h + "attn.c_attn.weight", true,
                    false, "W_q | W_k | W_v, sliced below"));
  spec.param(weight("b_qkv", "3*d_e", h + "attn.c_attn.bias", true));
  view("W_q", "d_e, d_e", "W_qkv[l][:, 0:d_e]");
  view("W_k", "d_e, d_e", "W_qkv[l][:, d_e:2*d_e]");
  view("W_v", "d_e, d_e", "W_qkv[l][:, 2*d_e:3*d_e]");
  view("b_q", "d_e", "b_qkv[l][0:d_e]");
  view("b_k", "d_e", "b_qkv[l][d_e:2*d_e]");
  view("b_v", "d_e", "b_qkv[l][2*d_e:3*d_e]");
  spec.param(weight("W_o", "d_e, d_e", h + "attn.c_proj.weight", true));
  spec.param(weight("b_o", "d_e", h + "attn.c_proj.bias", true));
  spec.param(weight("γ2", "d_e", h + "ln_2.weight", true));
  spec.param(weight("β2", "d_e", h + "ln_2.bias", true));
  spec.param(weight("W_mlp1", "d_e, d_mlp", h + "mlp.c_fc.weight", true));
  spec.param(weight("b_mlp1", "d_mlp", h + "mlp.c_fc.bias", true));
  spec.param(weight("W_mlp2", "d_mlp, d_e", h + "mlp.c_proj.weight", true));
  spec.param(weight("b_mlp2", "d_e", h + "mlp.c_proj.bias", true));
  spec.param(weight("γ", "d_e", p + "ln_f.weight", false));
  spec.param(weight("β", "d_e", p + "ln_f.bias", false));
  if (!tied)
    spec.param(weight("W_u", "d_e, N_V", "lm_head.weight", false, true,
                      "tie_word_embeddings = false: its own unembedding"));

  std::string mlp = activation(config, "activation_function", "gelu_new",
                               "X̃ · W_mlp1[l] + b_mlp1[l]");
  spec.algorithm = "DTransformer(x)";
  spec.body = {
      "X ← token_embed(x | W_e) + pos_embed(x | W_p)",
      "for l in 1..L",
      "  X̃ ← layer_norm(X | γ1[l], β1[l])",
      "  X ← X + mhattention(X̃ | W_q[l], b_q[l], W_k[l], b_k[l], W_v[l], "
      "b_v[l],",
      std::string("                         W_o[l], b_o[l], mask = causal") +
          (scaled ? ")" : ", scale = 1)   # scale_attn_weights = false"),
      "  X̃ ← layer_norm(X | γ2[l], β2[l])",
      "  X ← X + " + mlp + " · W_mlp2[l] + b_mlp2[l]",
      "end",
      "X ← layer_norm(X | γ, β)",
      tied ? "return unembed(X | W_eᵀ)     # tie_word_embeddings: logits = "
             "X·W_eᵀ"
           : "return unembed(X | W_u)",
  };
  return spec;
}
