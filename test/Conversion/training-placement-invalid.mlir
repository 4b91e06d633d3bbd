// The training step's placement (placeTraining, TrainingPlacement.cpp), computed before the
// lowering's patterns run: its errors, at @loss_and_gradients, and the pass fails.
// RUN: xf-opt %s --split-input-file --verify-diagnostics --xf-lower-to-host

module {
  func.func @forward(%x: tensor<?xi32>) -> tensor<?x32xf32> {
    %w = xf.parameter "wte" : tensor<32x32xf32>
    %e = xf.token_embed %w[%x] : tensor<32x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
    %r = xf.relu %e : tensor<?x32xf32>
    return %r : tensor<?x32xf32>
  }
  // Parameters keep @forward's indices: the step may read no other.
  // expected-error @below {{@loss_and_gradients reads a parameter that @forward does not}}
  func.func @loss_and_gradients(%x: tensor<?xi32>, %t: tensor<?xi32>) -> tensor<f32>
      attributes {xf.gradients = []} {
    %w = xf.parameter "other" : tensor<32x32xf32>
    %e = xf.token_embed %w[%x] : tensor<32x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
    %loss = xf.cross_entropy %e, %t : tensor<?x32xf32>, tensor<?xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

module {
  func.func @forward(%x: tensor<?xi32>) -> tensor<?x32xf32> {
    %w = xf.parameter "wte" : tensor<32x32xf32>
    %e = xf.token_embed %w[%x] : tensor<32x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
    %r = xf.relu %e : tensor<?x32xf32>
    return %r : tensor<?x32xf32>
  }
  func.func @loss_and_gradients(%x: tensor<?xi32>, %t: tensor<?xi32>) -> tensor<?x32xf32>
      attributes {xf.gradients = []} {
    %w = xf.parameter "wte" : tensor<32x32xf32>
    %e = xf.token_embed %w[%x] : tensor<32x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
    // expected-error @below {{@loss_and_gradients must return the loss (xf.cross_entropy) first}}
    return %e : tensor<?x32xf32>
  }
}
