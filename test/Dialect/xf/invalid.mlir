// RUN: xf-opt %s -split-input-file -verify-diagnostics

// One case per shape rule of every xf verifier.

func.func @parameter_dynamic() {
  // expected-error @+1 {{'w' must have a static shape, got [?, 4]}}
  %w = xf.parameter "w" : tensor<?x4xf32>
  return
}

// -----

func.func @parameter_unnamed() {
  // expected-error @+1 {{needs a non-empty checkpoint tensor name}}
  %w = xf.parameter "" : tensor<4xf32>
  return
}

// -----

func.func @transpose_shape(%w: tensor<4x8xf32>) {
  // expected-error @+1 {{transpose: result [4, 8] has 4 on axis 0 but input [4, 8] has 8 on axis 1}}
  %t = xf.transpose %w : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{axis 2 is out of range for result [4, 16]}}
  %c = xf.concat %a, %a axis 2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{input #1 [8] has rank 1 but the result [4, 16] has rank 2}}
  %c = xf.concat %a, %b axis 1 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @concat_other_axis(%a: tensor<4x8xf32>, %b: tensor<5x8xf32>) {
  // expected-error @+1 {{concat: input #1 [5, 8] has 5 on axis 0 but result [4, 16] has 4 on axis 0}}
  %c = xf.concat %a, %b axis 1 : tensor<4x8xf32>, tensor<5x8xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @concat_total(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{inputs add up to 16 on axis 1 but the result [4, 12] has 12}}
  %c = xf.concat %a, %a axis 1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x12xf32>
  return
}

// -----

func.func @concat_element_types(%a: tensor<4x8xf32>, %b: tensor<4x8xf16>) {
  // expected-error @+1 {{mixes element types 'f32' and 'f16'}}
  %c = xf.concat %a, %b axis 1 : tensor<4x8xf32>, tensor<4x8xf16> -> tensor<4x16xf32>
  return
}

// -----

func.func @slice_bounds(%w: tensor<8x16xf32>) {
  // expected-error @+1 {{slice [16, 24) on axis 1 is outside input [8, 16]}}
  %s = xf.slice %w axis 1 offset 16 : tensor<8x16xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @slice_axis(%w: tensor<8x16xf32>) {
  // expected-error @+1 {{axis 2 is out of range for input [8, 16]}}
  %s = xf.slice %w axis 2 offset 0 : tensor<8x16xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @slice_rank(%w: tensor<8x16xf32>) {
  // expected-error @+1 {{result [8] must have the rank of input [8, 16]}}
  %s = xf.slice %w axis 0 offset 0 : tensor<8x16xf32> -> tensor<8xf32>
  return
}

// -----

func.func @slice_other_axis(%w: tensor<8x16xf32>) {
  // expected-error @+1 {{slice: result [4, 8] has 4 on axis 0 but input [8, 16] has 8 on axis 0}}
  %s = xf.slice %w axis 1 offset 0 : tensor<8x16xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @row_index(%w: tensor<2x16xf32>) {
  // expected-error @+1 {{row 2 is outside input [2, 16]}}
  %r = xf.row %w[2] : tensor<2x16xf32> -> tensor<16xf32>
  return
}

// -----

func.func @row_width(%w: tensor<2x16xf32>) {
  // expected-error @+1 {{row width: result [8] has 8 on axis 0 but input [2, 16] has 16 on axis 1}}
  %r = xf.row %w[0] : tensor<2x16xf32> -> tensor<8xf32>
  return
}

// -----

func.func @token_embed_width(%x: tensor<?xi32>, %we: tensor<256x64xf32>) {
  // expected-error @+1 {{d_e: result [?, 32] has 32 on axis 1 but table [256, 64] has 64 on axis 1}}
  %e = xf.token_embed %we[%x] : tensor<256x64xf32>, tensor<?xi32> -> tensor<?x32xf32>
  return
}

// -----

func.func @token_embed_rows(%x: tensor<5xi32>, %we: tensor<256x64xf32>) {
  // expected-error @+1 {{sequence length: result [4, 64] has 4 on axis 0 but tokens [5] has 5 on axis 0}}
  %e = xf.token_embed %we[%x] : tensor<256x64xf32>, tensor<5xi32> -> tensor<4x64xf32>
  return
}

// -----

func.func @pos_embed_too_long(%x: tensor<40xi32>, %wp: tensor<32x64xf32>) {
  // expected-error @+1 {{40 tokens do not fit the positional table [32, 64] (ℓ_max = 32)}}
  %p = xf.pos_embed %wp for %x : tensor<32x64xf32>, tensor<40xi32> -> tensor<40x64xf32>
  return
}

// -----

func.func @pos_embed_width(%x: tensor<?xi32>, %wp: tensor<32x64xf32>) {
  // expected-error @+1 {{d_e: result [?, 48] has 48 on axis 1 but table [32, 64] has 64 on axis 1}}
  %p = xf.pos_embed %wp for %x : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x48xf32>
  return
}

// -----

func.func @sinusoidal_odd(%x: tensor<?xi32>) {
  // expected-error @+1 {{needs a static, even d_e, got result [?, 63]}}
  %p = xf.sinusoidal_embed for %x base 1.0e4 : tensor<?xi32> -> tensor<?x63xf32>
  return
}

// -----

func.func @sinusoidal_base(%x: tensor<?xi32>) {
  // expected-error @+1 {{base must be greater than 1, got 1}}
  %p = xf.sinusoidal_embed for %x base 1.0 : tensor<?xi32> -> tensor<?x64xf32>
  return
}

// -----

func.func @linear_d_in(%x: tensor<?x64xf32>, %w: tensor<32x16xf32>) {
  // expected-error @+1 {{d_in: input [?, 64] has 64 on axis 1 but weight [32, 16] has 32 on axis 0}}
  %y = xf.linear %x, %w : tensor<?x64xf32>, tensor<32x16xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @linear_d_in_transposed(%x: tensor<?x64xf32>, %w: tensor<64x16xf32>) {
  // expected-error @+1 {{d_in: input [?, 64] has 64 on axis 1 but weight [64, 16] has 16 on axis 1}}
  %y = xf.linear %x, %w transpose_weight : tensor<?x64xf32>, tensor<64x16xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @linear_d_out(%x: tensor<?x64xf32>, %w: tensor<64x16xf32>) {
  // expected-error @+1 {{d_out: result [?, 8] has 8 on axis 1 but weight [64, 16] has 16 on axis 1}}
  %y = xf.linear %x, %w : tensor<?x64xf32>, tensor<64x16xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @linear_bias(%x: tensor<?x64xf32>, %w: tensor<64x16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{bias width: bias [8] has 8 on axis 0 but weight [64, 16] has 16 on axis 1}}
  %y = xf.linear %x, %w, %b : tensor<?x64xf32>, tensor<64x16xf32>, tensor<8xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @linear_rows(%x: tensor<3x64xf32>, %w: tensor<64x16xf32>) {
  // expected-error @+1 {{sequence length: result [4, 16] has 4 on axis 0 but input [3, 64] has 3 on axis 0}}
  %y = xf.linear %x, %w : tensor<3x64xf32>, tensor<64x16xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @linear_element_types(%x: tensor<?x64xf32>, %w: tensor<64x16xf16>) {
  // expected-error @+1 {{mixes element types 'f32' and 'f16'}}
  %y = xf.linear %x, %w : tensor<?x64xf32>, tensor<64x16xf16> -> tensor<?x16xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<?x64xf32>, %b: tensor<16x64xf32>) {
  // expected-error @+1 {{contraction: lhs [?, 64] has 64 on axis 1 but rhs [16, 64] has 16 on axis 0}}
  %y = xf.matmul %a, %b : tensor<?x64xf32>, tensor<16x64xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @matmul_columns(%a: tensor<?x64xf32>, %b: tensor<16x64xf32>) {
  // expected-error @+1 {{columns: result [?, 64] has 64 on axis 1 but rhs [16, 64] has 16 on axis 0}}
  %y = xf.matmul %a, %b transpose_rhs : tensor<?x64xf32>, tensor<16x64xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @add_shapes(%a: tensor<?x64xf32>, %b: tensor<?x32xf32>) {
  // expected-error @+1 {{sum: rhs [?, 32] has 32 on axis 1 but lhs [?, 64] has 64 on axis 1}}
  %y = xf.add %a, %b : tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @add_bias(%a: tensor<?x64xf32>, %b: tensor<32xf32>) {
  // expected-error @+1 {{broadcast bias: rhs [32] has 32 on axis 0 but lhs [?, 64] has 64 on axis 1}}
  %y = xf.add %a, %b : tensor<?x64xf32>, tensor<32xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @add_rank(%a: tensor<?x64xf32>, %b: tensor<2x3x64xf32>) {
  // expected-error @+1 {{rhs [2, 3, 64] is neither the shape of lhs [?, 64] nor a vector broadcast over its rows}}
  %y = xf.add %a, %b : tensor<?x64xf32>, tensor<2x3x64xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @add_result(%a: tensor<?x64xf32>) {
  // expected-error @+1 {{result [64] must have the shape of lhs [?, 64]}}
  %y = xf.add %a, %a : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<64xf32>
  return
}

// -----

func.func @layer_norm_gamma_only(%x: tensor<?x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{takes gamma and beta together or neither}}
  %y = "xf.layer_norm"(%x, %g) <{epsilon = 1.0e-5 : f64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @layer_norm_gamma_width(%x: tensor<?x64xf32>, %g: tensor<32xf32>) {
  // expected-error @+1 {{gamma width: gamma [32] has 32 on axis 0 but input [?, 64] has 64 on axis 1}}
  %y = xf.layer_norm %x gamma %g beta %g eps 1.0e-5 : tensor<?x64xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @layer_norm_beta_width(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %b: tensor<32xf32>) {
  // expected-error @+1 {{beta width: beta [32] has 32 on axis 0 but input [?, 64] has 64 on axis 1}}
  %y = xf.layer_norm %x gamma %g beta %b eps 1.0e-5 : tensor<?x64xf32>, tensor<64xf32>, tensor<32xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{epsilon must be non-negative, got -1}}
  %y = xf.layer_norm %x eps -1.0 : tensor<?x64xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @layer_norm_result(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{result [?, 32] must have the type of input [?, 64]}}
  %y = xf.layer_norm %x eps 1.0e-5 : tensor<?x64xf32> -> tensor<?x32xf32>
  return
}

// -----

func.func @rms_norm_gamma_width(%x: tensor<?x64xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{gamma width: gamma [16] has 16 on axis 0 but input [?, 64] has 64 on axis 1}}
  %y = xf.rms_norm %x gamma %g eps 1.0e-5 : tensor<?x64xf32>, tensor<16xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @attention_qk_width(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{H·d_k: query [?, 64] has 64 on axis 1 but key [?, 32] has 32 on axis 1}}
  %a = xf.attention causal heads 4 %q, %k, %v : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x32xf32>
  return
}

// -----

func.func @attention_context_rows(%q: tensor<?x64xf32>, %k: tensor<10x64xf32>, %v: tensor<12x32xf32>) {
  // expected-error @+1 {{ℓ_z: key [10, 64] has 10 on axis 0 but value [12, 32] has 12 on axis 0}}
  %a = xf.attention cross heads 4 %q, %k, %v : tensor<?x64xf32>, tensor<10x64xf32>, tensor<12x32xf32> -> tensor<?x32xf32>
  return
}

// -----

func.func @attention_result(%q: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{H·d_v: result [?, 64] has 64 on axis 1 but value [?, 32] has 32 on axis 1}}
  %a = xf.attention causal heads 4 %q, %q, %v : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @attention_heads(%q: tensor<?x64xf32>) {
  // expected-error @+1 {{heads must be at least 1, got 0}}
  %a = xf.attention causal heads 0 %q, %q, %q : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @attention_heads_divide(%q: tensor<?x64xf32>, %v: tensor<?x30xf32>) {
  // expected-error @+1 {{H·d_v: value [?, 30] has 30 on axis 1, which is not divisible by heads = 4}}
  %a = xf.attention causal heads 4 %q, %q, %v : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x30xf32> -> tensor<?x30xf32>
  return
}

// -----

func.func @attention_heads_divide_qk(%q: tensor<?x60xf32>, %v: tensor<?x64xf32>) {
  // expected-error @+1 {{H·d_k: query [?, 60] has 60 on axis 1, which is not divisible by heads = 8}}
  %a = xf.attention causal heads 8 %q, %q, %v : tensor<?x60xf32>, tensor<?x60xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @attention_bidirectional_lengths(%q: tensor<4x64xf32>, %k: tensor<6x64xf32>) {
  // expected-error @+1 {{bidirectional self-attention needs as many context rows as query rows: query [4, 64] vs key [6, 64] (use mask cross for another sequence)}}
  %a = xf.attention bidirectional heads 4 %q, %k, %k : tensor<4x64xf32>, tensor<6x64xf32>, tensor<6x64xf32> -> tensor<4x64xf32>
  return
}

// -----

func.func @attention_causal_lengths(%q: tensor<6x64xf32>, %k: tensor<4x64xf32>) {
  // expected-error @+1 {{causal attention needs at least as many context rows as query rows: query [6, 64] vs key [4, 64]}}
  %a = xf.attention causal heads 4 %q, %k, %k : tensor<6x64xf32>, tensor<4x64xf32>, tensor<4x64xf32> -> tensor<6x64xf32>
  return
}

// -----

func.func @attention_scale(%q: tensor<?x64xf32>) {
  // expected-error @+1 {{scale must be positive, got -1}}
  %a = xf.attention causal heads 4 %q, %q, %q scale -1.0 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @mha_cross_without_context(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>) {
  // expected-error @+1 {{mask cross needs a context sequence}}
  %y = xf.mha cross heads 4 %x q %w k %w v %w o %w : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @mha_context_with_self_mask(%x: tensor<?x64xf32>, %z: tensor<?x64xf32>, %w: tensor<64x64xf32>) {
  // expected-error @+1 {{a context sequence needs mask cross, not causal}}
  %y = xf.mha causal heads 4 %x context %z q %w k %w v %w o %w : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @mha_d_x(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>, %wq: tensor<32x64xf32>) {
  // expected-error @+1 {{d_x: input [?, 64] has 64 on axis 1 but W_q [32, 64] has 32 on axis 0}}
  %y = xf.mha causal heads 4 %x q %wq k %w v %w o %w : (tensor<?x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @mha_d_z(%x: tensor<?x64xf32>, %z: tensor<?x32xf32>, %w: tensor<64x64xf32>) {
  // expected-error @+1 {{d_z: context [?, 32] has 32 on axis 1 but W_k [64, 64] has 64 on axis 0}}
  %y = xf.mha cross heads 4 %x context %z q %w k %w v %w o %w : (tensor<?x64xf32>, tensor<?x32xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @mha_qk_width(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>, %wk: tensor<64x32xf32>) {
  // expected-error @+1 {{H·d_k: W_q [64, 64] has 64 on axis 1 but W_k [64, 32] has 32 on axis 1}}
  %y = xf.mha causal heads 4 %x q %w k %wk v %w o %w : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @mha_v_width(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>, %wo: tensor<32x64xf32>) {
  // expected-error @+1 {{H·d_v: W_v [64, 64] has 64 on axis 1 but W_o [32, 64] has 32 on axis 0}}
  %y = xf.mha causal heads 4 %x q %w k %w v %w o %wo : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @mha_d_out(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>) {
  // expected-error @+1 {{d_out: result [?, 32] has 32 on axis 1 but W_o [64, 64] has 64 on axis 1}}
  %y = xf.mha causal heads 4 %x q %w k %w v %w o %w : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<?x32xf32>
  return
}

// -----

func.func @mha_bias(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>, %b: tensor<32xf32>) {
  // expected-error @+1 {{b_v width: b_v [32] has 32 on axis 0 but W_v [64, 64] has 64 on axis 1}}
  %y = xf.mha causal heads 4 %x q %w k %w v %w, %b o %w : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<32xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @mha_heads(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>) {
  // expected-error @+1 {{H·d_k: W_q [64, 64] has 64 on axis 1, which is not divisible by heads = 5}}
  %y = xf.mha causal heads 5 %x q %w k %w v %w o %w : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @mha_transposed_d_x(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>, %wq: tensor<64x32xf32>) {
  // expected-error @+1 {{d_x: input [?, 64] has 64 on axis 1 but W_q [64, 32] has 32 on axis 1}}
  %y = xf.mha bidirectional heads 4 %x q %wq k %w v %w o %w transpose_weights : (tensor<?x64xf32>, tensor<64x32xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @mha_bidirectional_lengths(%x: tensor<4x64xf32>, %w: tensor<64x64xf32>) {
  // expected-error @+1 {{sequence length: result [5, 64] has 5 on axis 0 but input [4, 64] has 4 on axis 0}}
  %y = xf.mha bidirectional heads 4 %x q %w k %w v %w o %w : (tensor<4x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<5x64xf32>
  return
}

// -----

func.func @unembed_tied_layout(%x: tensor<?x64xf32>, %we: tensor<64x256xf32>) {
  // expected-error @+1 {{d_e: input [?, 64] has 64 on axis 1 but tied W_e [64, 256] has 256 on axis 1}}
  %l = xf.unembed %x, tied %we : tensor<?x64xf32>, tensor<64x256xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @unembed_vocabulary(%x: tensor<?x64xf32>, %wu: tensor<64x256xf32>) {
  // expected-error @+1 {{N_V: result [?, 128] has 128 on axis 1 but W_u [64, 256] has 256 on axis 1}}
  %l = xf.unembed %x, %wu : tensor<?x64xf32>, tensor<64x256xf32> -> tensor<?x128xf32>
  return
}

// -----

func.func @gelu_type(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %y = "xf.gelu"(%x) <{approximation = 1 : i32}> : (tensor<?x64xf32>) -> tensor<?x32xf32>
  return
}

// -----

func.func @gemm_k(%x: tensor<?x64xf32>, %w: tensor<32x256xf32>) {
  // expected-error @+1 {{K: input [?, 64] has 64 on axis 1 but weight [32, 256] has 32 on axis 0}}
  %y = xf.gemm %x, %w activation none : (tensor<?x64xf32>, tensor<32x256xf32>) -> tensor<?x256xf32>
  return
}

// -----

func.func @gemm_residual(%x: tensor<?x64xf32>, %w: tensor<64x256xf32>, %r: tensor<?x128xf32>) {
  // expected-error @+1 {{residual: residual [?, 128] has 128 on axis 1 but weight [64, 256] has 256 on axis 1}}
  %y = xf.gemm %x, %w residual %r activation none : (tensor<?x64xf32>, tensor<64x256xf32>, tensor<?x128xf32>) -> tensor<?x256xf32>
  return
}

// -----

func.func @gemm_bias(%x: tensor<?x64xf32>, %w: tensor<256x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{bias width: bias [64] has 64 on axis 0 but weight [256, 64] has 256 on axis 0}}
  %y = xf.gemm %x, %w bias %b activation none transpose_weight : (tensor<?x64xf32>, tensor<256x64xf32>, tensor<64xf32>) -> tensor<?x256xf32>
  return
}

// -----

func.func @rope_odd_heads(%q: tensor<?x12xf32>) {
  // expected-error @+1 {{input [?, 12] must split into heads = 4 heads of a static, even width (rotations act on pairs)}}
  %r = xf.rope adjacent heads 4 %q base 1.0e4 : tensor<?x12xf32> -> tensor<?x12xf32>
  return
}

// -----

func.func @rope_base(%q: tensor<?x16xf32>) {
  // expected-error @+1 {{base must be greater than 1, got 1}}
  %r = xf.rope halves heads 2 %q base 1.0 : tensor<?x16xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_result(%q: tensor<?x16xf32>) {
  // expected-error @+1 {{result [?, 8] must have the type of input [?, 16]}}
  %r = xf.rope halves heads 2 %q base 1.0e4 : tensor<?x16xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @kv_heads_divide(%q: tensor<?x64xf32>, %kv: tensor<?x48xf32>) {
  // expected-error @+1 {{kv_heads = 3 must be at least 1 and divide heads = 4}}
  %a = xf.attention causal heads 4 kv_heads 3 %q, %kv, %kv : tensor<?x64xf32>, tensor<?x48xf32>, tensor<?x48xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @kv_heads_key_width(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) {
  // expected-error @+1 {{H_kv·d_k: key [?, 64] has 64 on axis 1 but query [?, 64] has 64 on axis 1, so with heads = 4 and kv_heads = 2 it needs 32}}
  %a = xf.attention causal heads 4 kv_heads 2 %q, %k, %v : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @kv_heads_value_width(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %v: tensor<?x16xf32>) {
  // expected-error @+1 {{H_kv·d_v: value [?, 16] has 16 on axis 1 but result [?, 64] has 64 on axis 1, so with heads = 4 and kv_heads = 2 it needs 32}}
  %a = xf.attention causal heads 4 kv_heads 2 %q, %k, %v : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x16xf32> -> tensor<?x64xf32>
  return
}

// -----

func.func @mha_rope_odd(%x: tensor<?x24xf32>, %w: tensor<24x24xf32>) {
  // expected-error @+1 {{rope rotates pairs of features, but W_q's H·d_k = 24 does not split into 8 heads of even width}}
  %y = xf.mha causal heads 8 rope halves base 1.0e4 %x q %w k %w v %w o %w : (tensor<?x24xf32>, tensor<24x24xf32>, tensor<24x24xf32>, tensor<24x24xf32>, tensor<24x24xf32>) -> tensor<?x24xf32>
  return
}

// -----

func.func @mha_kv_width(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>) {
  // expected-error @+1 {{H_kv·d_k: W_k [64, 64] has 64 on axis 1 but W_q [64, 64] has 64 on axis 1, so with heads = 4 and kv_heads = 2 it needs 32}}
  %y = xf.mha causal heads 4 kv_heads 2 %x q %w k %w v %w o %w : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @length_of_activations(%x: tensor<?x8xf32>) -> f64 {
  // expected-error @+1 {{operand #0 must be 1D tensor of signless integer values}}
  %n = xf.length %x : tensor<?x8xf32>
  return %n : f64
}

// -----

func.func @scale_type_changes(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{all of {input, result} have same type}}
  %y = "xf.scale"(%x) {factor = 2.0 : f64} : (tensor<?x8xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

func.func @attention_rope_odd_heads(%q: tensor<?x12xf32>) {
  // expected-error @+1 {{rope rotates pairs of features, but the query's H·d_k = 12 does not split into 4 heads of even width}}
  %r = xf.attention causal heads 4 rope adjacent base 1.0e4 %q, %q, %q : tensor<?x12xf32>, tensor<?x12xf32>, tensor<?x12xf32> -> tensor<?x12xf32>
  return
}

// -----

func.func @attention_rope_base(%q: tensor<?x16xf32>) {
  // expected-error @+1 {{rope base must be greater than 1, got 5.000000e-01}}
  %r = xf.attention causal heads 2 rope halves base 0.5 %q, %q, %q : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @attention_rope_without_base(%q: tensor<?x16xf32>) {
  // expected-error @+1 {{takes rope and its base together}}
  %r = "xf.attention"(%q, %q, %q) <{heads = 2 : i64, mask = 1 : i32, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>, rope = 1 : i32}> : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  return
}

// -----

// A norm prologue (xf-fuse-norm-into-gemm): γ and β of K, β only with γ and only for layer_norm.
func.func @gemm_norm_gamma(%x: tensor<?x64xf32>, %g: tensor<32xf32>, %w: tensor<64x256xf32>) {
  // expected-error @+1 {{norm gamma width: gamma [32] has 32 on axis 0 but input [?, 64] has 64 on axis 1}}
  %y = xf.gemm %x norm rms_norm eps 1.0e-06 gamma %g, %w activation none : (tensor<?x64xf32>, tensor<64x256xf32>, tensor<32xf32>) -> tensor<?x256xf32>
  return
}

// -----

func.func @gemm_norm_rms_beta(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %w: tensor<64x256xf32>) {
  // expected-error @+1 {{rms_norm takes no beta}}
  %y = xf.gemm %x norm rms_norm eps 1.0e-06 gamma %g beta %g, %w activation none : (tensor<?x64xf32>, tensor<64x256xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x256xf32>
  return
}

// -----

func.func @gemm_norm_beta_alone(%x: tensor<?x64xf32>, %b: tensor<64xf32>, %w: tensor<64x256xf32>) {
  // expected-error @+1 {{layer_norm takes gamma and beta together or neither}}
  %y = xf.gemm %x norm layer_norm eps 1.0e-05 beta %b, %w activation none : (tensor<?x64xf32>, tensor<64x256xf32>, tensor<64xf32>) -> tensor<?x256xf32>
  return
}

// -----

func.func @gemm_norm_epsilon(%x: tensor<?x64xf32>, %w: tensor<64x256xf32>) {
  // expected-error @+1 {{norm epsilon must be non-negative, got -1}}
  %y = xf.gemm %x norm layer_norm eps -1.0, %w activation none : (tensor<?x64xf32>, tensor<64x256xf32>) -> tensor<?x256xf32>
  return
}

// -----

func.func @gemm_norm_operands_without_norm(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %w: tensor<64x256xf32>) {
  // expected-error @+1 {{norm_epsilon, norm_gamma and norm_beta need a norm}}
  %y = xf.gemm %x gamma %g, %w activation none : (tensor<?x64xf32>, tensor<64x256xf32>, tensor<64xf32>) -> tensor<?x256xf32>
  return
}
