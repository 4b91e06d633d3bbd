// RUN: xf-opt %s --xf-differentiate | FileCheck %s

// An encoder-decoder (Alg. 8, as examples/transformer.xf): @loss_and_gradients takes the
// source, the target's inputs and its next tokens (Alg. 11); the cross-attention's key and
// value gradients flow back into the encoder, and the objective is seq2seq.
module {
  func.func @forward(%z: tensor<?xi32>, %x: tensor<?xi32>) -> tensor<?x32xf32> attributes {xf.output = "logits"} {
    %we = xf.parameter "embed" : tensor<32x8xf32>
    %wk = xf.parameter "wk" : tensor<8x8xf32>
    %wu = xf.parameter "unembed" : tensor<8x32xf32>
    %ez = xf.token_embed %we[%z] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %pz = xf.sinusoidal_embed for %z base 1.0e+04 : tensor<?xi32> -> tensor<?x8xf32>
    %hz = xf.add %ez, %pz : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
    %kz = xf.linear %hz, %wk : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
    %ex = xf.token_embed %we[%x] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %y = xf.attention cross heads 2 %ex, %kz, %hz : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
    %logits = xf.unembed %y, %wu : tensor<?x8xf32>, tensor<8x32xf32> -> tensor<?x32xf32>
    return %logits : tensor<?x32xf32>
  }
}

// CHECK-LABEL: func.func @loss_and_gradients
// CHECK-SAME: (%[[Z:.*]]: tensor<?xi32>, %[[X:.*]]: tensor<?xi32>, %[[T:.*]]: tensor<?xi32>)
// CHECK-SAME: xf.gradients = ["embed", "wk", "unembed"]
// CHECK-SAME: xf.objective = "seq2seq"
// CHECK: xf.token_embed %{{.*}}[%[[Z]]]
// CHECK: xf.cross_entropy %{{.*}}, %[[T]]
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = xf.attention_grad cross heads 2
// CHECK: xf.token_embed_grad %[[X]], %[[DQ]]
// CHECK: xf.weight_grad %{{.*}}, %[[DK]]
// CHECK: xf.token_embed_grad %[[Z]]
