// RUN: xf-opt %s --split-input-file --verify-diagnostics
// Misused `segments` (a packed batch's sequence lengths): each error is
// located at its op.

func.func @key_segments_alone(%q: tensor<?x16xf32>, %n: tensor<?xi64>) {
  // expected-error @+1 {{key_segments needs segments (the queries' sequence lengths)}}
  %a = xf.attention cross heads 2 %q, %q, %q key_segments %n : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @key_segments_on_self_attention(%q: tensor<?x16xf32>, %n: tensor<?xi64>) {
  // expected-error @+1 {{key_segments are for cross attention; causal self-attention's keys have the queries' segments}}
  %a = xf.attention causal heads 2 %q, %q, %q segments %n key_segments %n : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @cross_without_key_segments(%q: tensor<?x16xf32>, %z: tensor<?x16xf32>, %n: tensor<?xi64>) {
  // expected-error @+1 {{segmented cross attention needs key_segments (the context's sequence lengths)}}
  %a = xf.attention cross heads 2 %q, %z, %z segments %n : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @mha_key_segments_on_self_attention(%x: tensor<?x16xf32>, %w: tensor<16x16xf32>, %n: tensor<?xi64>) {
  // expected-error @+1 {{key_segments are for cross attention; bidirectional self-attention's keys have the queries' segments}}
  %y = xf.mha bidirectional heads 2 %x q %w k %w v %w o %w segments %n key_segments %n : (tensor<?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<?xi64>, tensor<?xi64>) -> tensor<?x16xf32>
  return
}

// -----

func.func @pos_embed_offset_and_segments(%x: tensor<?xi32>, %wpe: tensor<32x16xf32>, %o: index, %n: tensor<?xi64>) {
  // expected-error @+1 {{takes an offset or segments, not both (a packed batch's positions start at 0 in every sequence)}}
  %p = xf.pos_embed %wpe for %x offset %o segments %n : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @sinusoid_offset_and_segments(%x: tensor<?xi32>, %o: index, %n: tensor<?xi64>) {
  // expected-error @+1 {{takes an offset or segments, not both}}
  %p = xf.sinusoidal_embed for %x offset %o segments %n base 1.0e4 : tensor<?xi32> -> tensor<?x16xf32>
  return
}

// -----

func.func @rope_offset_and_segments(%x: tensor<?x16xf32>, %o: index, %n: tensor<?xi64>) {
  // expected-error @+1 {{takes an offset or segments, not both}}
  %r = xf.rope adjacent heads 2 %x offset %o segments %n base 1.0e4 : tensor<?x16xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @segments_of_another_type(%q: tensor<?x16xf32>, %n: tensor<?xi32>) {
  // expected-error @+1 {{operand #3 must be sequence lengths tensor<?xi64>}}
  %a = "xf.attention"(%q, %q, %q, %n) <{heads = 2 : i64, mask = 1 : i32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}> : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?xi32>) -> tensor<?x16xf32>
  return
}
