// RUN: xf-opt %s -split-input-file --xf-differentiate -verify-diagnostics

// What xf-differentiate refuses, each with its one-line reason.

// expected-error @+1 {{xf-differentiate: no func.func @forward}}
module {
  func.func @other() {
    return
  }
}

// -----

module {
  // expected-error @+1 {{training needs @forward returning logits; an encoder returning hidden states has no output layer to train (see examples/bert-mlm.xf for BERT with its masked-token head)}}
  func.func @forward(%x: tensor<?xi32>) -> tensor<?x8xf32> attributes {xf.output = "hidden_states"} {
    %we = xf.parameter "wte" : tensor<32x8xf32>
    %e = xf.token_embed %we[%x] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    return %e : tensor<?x8xf32>
  }
}

// -----

module {
  // expected-error @+1 {{xf-differentiate: @forward must take token ids, or source and target token ids (an encoder-decoder)}}
  func.func @forward(%a: tensor<?xi32>, %b: tensor<?xi32>, %c: tensor<?xi32>) -> tensor<?x32xf32> attributes {xf.output = "logits"} {
    %we = xf.parameter "wte" : tensor<32x8xf32>
    %e = xf.token_embed %we[%c] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %logits = xf.unembed %e, tied %we : tensor<?x8xf32>, tensor<32x8xf32> -> tensor<?x32xf32>
    return %logits : tensor<?x32xf32>
  }
}

// -----

module {
  func.func @forward(%x: tensor<?xi32>) -> tensor<?x32xf32> attributes {xf.output = "logits"} {
    %we = xf.parameter "wte" : tensor<32x8xf32>
    %e = xf.token_embed %we[%x] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    // expected-error @+1 {{xf-differentiate: no backward rule for 'xf.softmax' yet}}
    %r = xf.softmax %e : tensor<?x8xf32>
    %logits = xf.unembed %r, tied %we : tensor<?x8xf32>, tensor<32x8xf32> -> tensor<?x32xf32>
    return %logits : tensor<?x32xf32>
  }
}

// -----

module {
  func.func @forward(%x: tensor<?xi32>) -> tensor<?x32xf32> attributes {xf.output = "logits"} {
    %we = xf.parameter "wte" : tensor<32x8xf32>
    %e = xf.token_embed %we[%x] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %o = arith.constant 3 : index
    // expected-error @+1 {{rotary positions with an offset (KV-cache decoding) are not differentiated}}
    %r = xf.rope adjacent heads 2 %e offset %o base 1.0e4 : tensor<?x8xf32> -> tensor<?x8xf32>
    %logits = xf.unembed %r, tied %we : tensor<?x8xf32>, tensor<32x8xf32> -> tensor<?x32xf32>
    return %logits : tensor<?x32xf32>
  }
}

// -----

module {
  func.func @forward(%x: tensor<?xi32>) -> tensor<?x32xf32> attributes {xf.output = "logits"} {
    %we = xf.parameter "wte" : tensor<32x8xf32>
    %w = xf.parameter "w" : tensor<8x8xf32>
    %e = xf.token_embed %we[%x] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    // expected-error @+1 {{xf-differentiate: run xf-decompose-mha first}}
    %y = xf.mha causal heads 2 %e q %w k %w v %w o %w : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
    %logits = xf.unembed %y, tied %we : tensor<?x8xf32>, tensor<32x8xf32> -> tensor<?x32xf32>
    return %logits : tensor<?x32xf32>
  }
}

// -----

module {
  // expected-error @+1 {{xf-differentiate: @forward must return [ℓ, N_V] logits}}
  func.func @forward(%x: tensor<?xi32>) -> i32 attributes {xf.output = "logits"} {
    %c = arith.constant 0 : i32
    return %c : i32
  }
}

// -----

module {
  // expected-error @+1 {{xf-differentiate: @forward's arguments must be token ids}}
  func.func @forward(%x: tensor<?xf32>) -> tensor<8x4xf32> attributes {xf.output = "logits"} {
    %z = xf.parameter "z" : tensor<8x4xf32>
    return %z : tensor<8x4xf32>
  }
}

// -----

module {
  func.func @forward(%x: tensor<?xi32>) -> tensor<?x32xf32> attributes {xf.output = "logits"} {
    %we = xf.parameter "wte" : tensor<32x8xf32>
    %e = xf.token_embed %we[%x] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    // expected-error @+1 {{xf-differentiate: attention with fused rotary positions has no backward; differentiate before xf-fuse-rope-attention}}
    %a = xf.attention causal heads 2 rope adjacent base 1.0e4 %e, %e, %e : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
    %logits = xf.unembed %a, tied %we : tensor<?x8xf32>, tensor<32x8xf32> -> tensor<?x32xf32>
    return %logits : tensor<?x32xf32>
  }
}
