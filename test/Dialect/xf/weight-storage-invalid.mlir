// `xf.weight_storage` (xf-assign-weight-storage's decision) where the kernels
// could not read a weight so: each rule of XfDialect.cpp's verifier.
// RUN: xf-opt %s -split-input-file -verify-diagnostics

func.func @not_an_enum(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{'xf.weight_storage' must be a #xf.weight_storage, not "bf16"}}
  %w = xf.parameter "w" {xf.weight_storage = "bf16"} : tensor<32x64xf32>
  %a = xf.gemm %x, %w activation none transpose_weight : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}

// -----

func.func @not_a_weight(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'xf.weight_storage' is only for xf.parameter and xf.concat, not 'xf.gelu'}}
  %r = xf.gelu erf %x {xf.weight_storage = #xf.weight_storage<bf16>} : tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// -----

func.func @vector(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{#xf.weight_storage<bf16> needs a matrix}}
  %g = xf.parameter "g" {xf.weight_storage = #xf.weight_storage<bf16>} : tensor<64xf32>
  %y = xf.rms_norm %x gamma %g eps 1.0e-5 : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @bf16_read_elsewhere(%x: tensor<32x64xf32>) -> tensor<32x64xf32> {
  // expected-error @+1 {{#xf.weight_storage<bf16> is read only as an xf.gemm weight or an xf.token_embed table or a part of a concatenation stored so, not by operand 0 of 'xf.add'}}
  %w = xf.parameter "w" {xf.weight_storage = #xf.weight_storage<bf16>} : tensor<32x64xf32>
  %y = xf.add %w, %x : tensor<32x64xf32>, tensor<32x64xf32> -> tensor<32x64xf32>
  return %y : tensor<32x64xf32>
}

// -----

func.func @blocks_kn(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{#xf.weight_storage<q8_0> is read only as an xf.gemm weight ([N, K], transpose_weight) or an xf.token_embed table or a part of a concatenation stored so, not by operand 1 of 'xf.gemm'}}
  %w = xf.parameter "w" {xf.weight_storage = #xf.weight_storage<q8_0>} : tensor<64x32xf32>
  %a = xf.gemm %x, %w activation none : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}

// -----

func.func @blocks_partial_rows(%x: tensor<?x48xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{#xf.weight_storage<q4_0> needs a GEMM's rows of K of whole 32-element blocks, not 48}}
  %w = xf.parameter "w" {xf.weight_storage = #xf.weight_storage<q4_0>} : tensor<32x48xf32>
  %a = xf.gemm %x, %w activation none transpose_weight : (tensor<?x48xf32>, tensor<32x48xf32>) -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}

// -----

func.func @bf16_concat(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %a = xf.parameter "a" : tensor<32x64xf32>
  // expected-error @+1 {{#xf.weight_storage<bf16> needs every part an xf.parameter stored as #xf.weight_storage<bf16>}}
  %w = xf.concat %a, %a axis 0 {xf.weight_storage = #xf.weight_storage<bf16>} : tensor<32x64xf32>, tensor<32x64xf32> -> tensor<64x64xf32>
  %y = xf.gemm %x, %w activation none transpose_weight : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @bf16_concat_odd(%x: tensor<?x63xf32>) -> tensor<?x64xf32> {
  %a = xf.parameter "a" {xf.weight_storage = #xf.weight_storage<bf16>} : tensor<32x63xf32>
  // expected-error @+1 {{#xf.weight_storage<bf16> joins rows of an even length, not 63}}
  %w = xf.concat %a, %a axis 0 {xf.weight_storage = #xf.weight_storage<bf16>} : tensor<32x63xf32>, tensor<32x63xf32> -> tensor<64x63xf32>
  %y = xf.gemm %x, %w activation none transpose_weight : (tensor<?x63xf32>, tensor<64x63xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @bf16_concat_gathered(%t: tensor<?xi64>) -> tensor<?x64xf32> {
  %a = xf.parameter "a" {xf.weight_storage = #xf.weight_storage<bf16>} : tensor<32x64xf32>
  // expected-error @+1 {{#xf.weight_storage<bf16> is read only as an xf.gemm weight, not by operand 0 of 'xf.token_embed'}}
  %w = xf.concat %a, %a axis 0 {xf.weight_storage = #xf.weight_storage<bf16>} : tensor<32x64xf32>, tensor<32x64xf32> -> tensor<64x64xf32>
  %e = xf.token_embed %w[%t] : tensor<64x64xf32>, tensor<?xi64> -> tensor<?x64xf32>
  return %e : tensor<?x64xf32>
}

// -----

func.func @concat_columns(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %a = xf.parameter "a" {xf.weight_storage = #xf.weight_storage<q8_0>} : tensor<64x32xf32>
  // expected-error @+1 {{#xf.weight_storage<q8_0> joins rows (axis 0), not axis 1}}
  %w = xf.concat %a, %a axis 1 {xf.weight_storage = #xf.weight_storage<q8_0>} : tensor<64x32xf32>, tensor<64x32xf32> -> tensor<64x64xf32>
  %y = xf.gemm %x, %w activation none transpose_weight : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @concat_mixed(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %a = xf.parameter "a" {xf.weight_storage = #xf.weight_storage<q8_0>} : tensor<32x64xf32>
  %b = xf.parameter "b" : tensor<32x64xf32>
  // expected-error @+1 {{#xf.weight_storage<q8_0> needs every part an xf.parameter stored as #xf.weight_storage<q8_0>}}
  %w = xf.concat %a, %b axis 0 {xf.weight_storage = #xf.weight_storage<q8_0>} : tensor<32x64xf32>, tensor<32x64xf32> -> tensor<64x64xf32>
  %y = xf.gemm %x, %w activation none transpose_weight : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @concat_gathered(%t: tensor<?xi64>) -> tensor<?x64xf32> {
  %a = xf.parameter "a" {xf.weight_storage = #xf.weight_storage<q8_0>} : tensor<32x64xf32>
  // expected-error @+1 {{#xf.weight_storage<q8_0> is read only as an xf.gemm weight ([N, K], transpose_weight), not by operand 0 of 'xf.token_embed'}}
  %w = xf.concat %a, %a axis 0 {xf.weight_storage = #xf.weight_storage<q8_0>} : tensor<32x64xf32>, tensor<32x64xf32> -> tensor<64x64xf32>
  %e = xf.token_embed %w[%t] : tensor<64x64xf32>, tensor<?xi64> -> tensor<?x64xf32>
  return %e : tensor<?x64xf32>
}
