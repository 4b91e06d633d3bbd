//===- BackwardLoopKernels.cpp - loop kernels of the training backward ----===//
//
// The row-wise backward rules of xf-differentiate (docs/training.md, "Backward
// rules") as loop kernels, built like the forward ones (LoopKernels.cpp):
// the loss and its gradient, the norms' input and gain gradients, the
// activations' derivatives, embedding scatters, slices, and attention's
// backward with P recomputed per query row. Gradients of parameters are
// accumulated (`acc +=`): the caller zeroes them once per batch, so the rows
// of several sequences add up.
//
//===----------------------------------------------------------------------===//

#include "LoopEmitter.h"
#include "xf/Codegen/LoopKernels.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::xf;

namespace {

Value loadId(Emitter &e, Value ids, Value t) {
  Type i32 = e.b.getI32Type();
  Value id = LLVM::LoadOp::create(e.b, e.loc, i32,
                                  LLVM::GEPOp::create(e.b, e.loc, e.ptr, i32, ids, ValueRange{t}));
  return arith::ExtSIOp::create(e.b, e.loc, e.i64, id);
}

Value expOf(Emitter &e, Value x) { return math::ExpOp::create(e.b, e.loc, x); }

/// Σ_c a[c]·b[c] over `n` floats.
Value dot(Emitter &e, Value a, Value b, int64_t n) {
  return e.sum(e.i(n), [&](Value c) { return e.mul(e.load(a, c), e.load(b, c)); });
}

/// The rows of `ids[0, rows)` that have a target (id ≥ 0), as an f64.
Value countTargets(Emitter &e, Value ids, Value rows) {
  auto count = scf::ForOp::create(
      e.b, e.loc, e.i(0), rows, e.i(1), ValueRange{e.i(0)},
      [&](OpBuilder &nested, Location, Value t, ValueRange acc) {
        OpBuilder::InsertionGuard guard(e.b);
        e.b.setInsertionPointToStart(nested.getInsertionBlock());
        Value has = arith::CmpIOp::create(e.b, e.loc, arith::CmpIPredicate::sge,
                                          loadId(e, ids, t), e.i(0));
        Value next = e.addi(acc[0], arith::ExtUIOp::create(e.b, e.loc, e.i64, has));
        scf::YieldOp::create(e.b, e.loc, next);
      });
  return arith::SIToFPOp::create(e.b, e.loc, e.f64, count.getResult(0));
}

/// One row of logits against its target: whether it has one (id ≥ 0), the
/// id (0 without one), max_c z[c] and Σ_c exp(z[c] − max), storing each
/// exp(z[c] − max) into `exps` when given; term = logsumexp(z) − z[target].
struct CrossEntropyRow {
  Value has, target, top, sum, term;
};
CrossEntropyRow crossEntropyRow(Emitter &e, Value logits, Value ids, Value t, int64_t width,
                                Value exps = Value()) {
  CrossEntropyRow r;
  Value id = loadId(e, ids, t);
  r.has = arith::CmpIOp::create(e.b, e.loc, arith::CmpIPredicate::sge, id, e.i(0));
  r.target = arith::SelectOp::create(e.b, e.loc, r.has, id, e.i(0));
  Value z = e.row(logits, t, width);
  r.top = e.maximum(e.i(width), [&](Value c) { return e.load(z, c); });
  r.sum = e.sum(e.i(width), [&](Value c) {
    Value x = expOf(e, e.sub(e.load(z, c), r.top));
    if (exps)
      e.store(x, exps, c);
    return x;
  });
  r.term = e.sub(e.add(r.top, math::LogOp::create(e.b, e.loc, r.sum)), e.load(z, r.target));
  return r;
}

/// Kernels (rows-in, targets, out, rows): out[0] = Σ term(t) over the row
/// range, summed in f64, over max(1, the rows with a target).
void storeTargetMean(Emitter &e, ValueRange args, llvm::function_ref<Value(Value)> term) {
  OpBuilder &b = e.b;
  const size_t n = args.size();
  Value zero64 = arith::ConstantFloatOp::create(b, e.loc, b.getF64Type(), APFloat(0.0));
  auto total = scf::ForOp::create(
      b, e.loc, args[n - 2], args[n - 1], e.i(1), ValueRange{zero64},
      [&](OpBuilder &nested, Location, Value t, ValueRange acc) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(nested.getInsertionBlock());
        scf::YieldOp::create(b, e.loc,
                             arith::AddFOp::create(b, e.loc, acc[0], term(t)).getResult());
      });
  Value count = arith::MaximumFOp::create(
      b, e.loc, countTargets(e, args[1], args[3]),
      arith::ConstantFloatOp::create(b, e.loc, b.getF64Type(), APFloat(1.0)));
  Value mean = arith::DivFOp::create(b, e.loc, total.getResult(0), count);
  e.store(arith::TruncFOp::create(b, e.loc, e.f32, mean), args[2], e.i(0));
}

} // namespace

// Rows with a negative target (Alg. 12's unmasked positions) take no part;
// the mean runs over the n rows that have one (no row: loss and gradient 0).
func::FuncOp LoopKernels::crossEntropy(int64_t width) {
  XF_KERNEL_CACHED_WITH("xf_cross_entropy_" + std::to_string(width), LoopSchedule{});
  return rowKernel(name, "pppi", kernelSchedule, /*rowsArg=*/3,
                   [&](Emitter &e, ValueRange args) {
    // The row terms summed in f64: ℓ of them, each ~log N_V.
    storeTargetMean(e, args, [&](Value t) {
      CrossEntropyRow row = crossEntropyRow(e, args[0], args[1], t, width);
      Value zero64 = arith::ConstantFloatOp::create(e.b, e.loc, e.b.getF64Type(), APFloat(0.0));
      return arith::SelectOp::create(e.b, e.loc, row.has,
                                     arith::ExtFOp::create(e.b, e.loc, e.f64, row.term), zero64)
          .getResult();
    });
  });
}

func::FuncOp LoopKernels::crossEntropyGrad(int64_t width) {
  XF_KERNEL_CACHED("xf_cross_entropy_grad_" + std::to_string(width));
  return rowKernel(name, "ppppi", kernelSchedule, /*rowsArg=*/4,
                   [&](Emitter &e, ValueRange args) {
    OpBuilder &b = e.b;
    Value count = arith::TruncFOp::create(b, e.loc, e.f32, countTargets(e, args[1], args[4]));
    Value invCount = e.div(e.f(1.0), arith::MaximumFOp::create(b, e.loc, count, e.f(1.0)));
    e.eachRow(args, [&](Value t) {
      Value out = e.row(args[2], t, width);
      CrossEntropyRow row = crossEntropyRow(e, args[0], args[1], t, width, out);
      e.store(arith::SelectOp::create(b, e.loc, row.has, row.term, e.f(0.0)), args[3], t);
      Value weight = arith::SelectOp::create(b, e.loc, row.has, invCount, e.f(0.0));
      Value scale = e.div(weight, row.sum);
      e.loop(e.i(width), [&](Value c) { e.store(e.mul(e.load(out, c), scale), out, c); });
      e.store(e.sub(e.load(out, row.target), weight), out, row.target);
    });
  });
}

func::FuncOp LoopKernels::crossEntropyMean() {
  XF_KERNEL_CACHED_WITH("xf_cross_entropy_mean", LoopSchedule{});
  return rowKernel(name, "pppi", kernelSchedule, /*rowsArg=*/3,
                   [&](Emitter &e, ValueRange args) {
    storeTargetMean(e, args, [&](Value t) {
      return arith::ExtFOp::create(e.b, e.loc, e.f64, e.load(args[0], t)).getResult();
    });
  });
}

/// ĝ = dy ⊙ γ; dx = (ĝ − mean(ĝ) − x̂ ⊙ mean(ĝ ⊙ x̂)) / σ (RMSNorm: no mean(ĝ)).
func::FuncOp LoopKernels::normalizeGrad(int64_t width, double eps, bool center, bool scaled) {
  XF_KERNEL_CACHED(std::string(center ? "xf_layer_norm_grad_" : "xf_rms_norm_grad_") +
                   std::to_string(width) + (scaled ? "_scaled_" : "_") + formatDouble(eps));
  return rowKernel(name, scaled ? "ppppi" : "pppi", kernelSchedule, /*rowsArg=*/scaled ? 4 : 3,
                   [&](Emitter &e, ValueRange args) {
    Value out = args[scaled ? 3 : 2];
    Value n = e.f(double(width));
    e.eachRow(args, [&](Value t) {
      Value x = e.row(args[0], t, width), dy = e.row(args[1], t, width);
      Value y = e.row(out, t, width);
      auto [meanValue, rstdValue] = rowStatistics(e, x, width, eps, center);
      Value mean = meanValue, rstd = rstdValue; // captured by the lambdas below
      auto ghat = [&](Value c) {
        return scaled ? e.mul(e.load(dy, c), e.load(args[2], c)) : e.load(dy, c);
      };
      auto xhat = [&](Value c) { return e.mul(e.sub(e.load(x, c), mean), rstd); };
      Value meanG = center ? e.div(e.sum(e.i(width), ghat), n) : e.f(0.0);
      Value meanGX = e.div(e.sum(e.i(width), [&](Value c) { return e.mul(ghat(c), xhat(c)); }), n);
      e.loop(e.i(width), [&](Value c) {
        Value v = e.sub(e.sub(ghat(c), meanG), e.mul(xhat(c), meanGX));
        e.store(e.mul(v, rstd), y, c);
      });
    });
  });
}

func::FuncOp LoopKernels::normalizeGammaGrad(int64_t width, double eps, bool center) {
  XF_KERNEL_CACHED_WITH(
      std::string(center ? "xf_layer_norm_gamma_grad_" : "xf_rms_norm_gamma_grad_") +
          std::to_string(width) + "_" + formatDouble(eps),
      LoopSchedule{});
  return rowKernel(name, "pppi", kernelSchedule, /*rowsArg=*/3,
                   [&](Emitter &e, ValueRange args) {
    e.eachRow(args, [&](Value t) {
      Value x = e.row(args[0], t, width), dy = e.row(args[1], t, width);
      auto [meanValue, rstdValue] = rowStatistics(e, x, width, eps, center);
      Value mean = meanValue, rstd = rstdValue; // captured by the lambdas below
      e.loop(e.i(width), [&](Value c) {
        Value xhat = e.mul(e.sub(e.load(x, c), mean), rstd);
        e.store(e.add(e.load(args[2], c), e.mul(e.load(dy, c), xhat)), args[2], c);
      });
    });
  });
}

func::FuncOp LoopKernels::rowSum(int64_t width) {
  XF_KERNEL_CACHED_WITH("xf_row_sum_" + std::to_string(width), LoopSchedule{});
  return rowKernel(name, "ppi", kernelSchedule, /*rowsArg=*/2,
                   [&](Emitter &e, ValueRange args) {
    e.eachRow(args, [&](Value t) {
      Value in = e.row(args[0], t, width);
      e.loop(e.i(width), [&](Value c) {
        e.store(e.add(e.load(args[1], c), e.load(in, c)), args[1], c);
      });
    });
  });
}

func::FuncOp LoopKernels::activationGrad(int64_t width, ActivationGradKind kind) {
  const char *names[] = {"relu", "gelu_tanh", "gelu_erf", "silu"};
  XF_KERNEL_CACHED(std::string("xf_") + names[int(kind)] + "_grad_" + std::to_string(width));
  return rowKernel(name, "pippi", kernelSchedule, /*rowsArg=*/4,
                   [&](Emitter &e, ValueRange args) {
    OpBuilder &b = e.b;
    auto derivative = [&](Value x) -> Value {
      switch (kind) {
      case ActivationGradKind::Relu:
        return arith::SelectOp::create(
            b, e.loc, arith::CmpFOp::create(b, e.loc, arith::CmpFPredicate::OGT, x, e.f(0.0)),
            e.f(1.0), e.f(0.0));
      case ActivationGradKind::GeluTanh: {
        // ½(1 + tanh u) + ½x(1 − tanh²u)·√(2/π)(1 + 0.134145x²)
        const double k = std::sqrt(2.0 / M_PI);
        Value x2 = e.mul(x, x);
        Value u = e.mul(e.f(k), e.add(x, e.mul(e.f(0.044715), e.mul(x2, x))));
        Value th = tanhRational(e, u);
        Value du = e.mul(e.f(k), e.add(e.f(1.0), e.mul(e.f(3 * 0.044715), x2)));
        Value left = e.mul(e.f(0.5), e.add(e.f(1.0), th));
        Value right = e.mul(e.mul(e.f(0.5), x), e.mul(e.sub(e.f(1.0), e.mul(th, th)), du));
        return e.add(left, right);
      }
      case ActivationGradKind::GeluErf: {
        // Φ(x) + x·φ(x)
        Value cdf = e.mul(e.f(0.5), e.add(e.f(1.0), math::ErfOp::create(
                                                        b, e.loc, e.mul(x, e.f(M_SQRT1_2)))));
        Value pdf = e.mul(e.f(1.0 / std::sqrt(2.0 * M_PI)),
                          expOf(e, e.mul(e.f(-0.5), e.mul(x, x))));
        return e.add(cdf, e.mul(x, pdf));
      }
      case ActivationGradKind::Silu: {
        // σ(x)·(1 + x·(1 − σ(x)))
        Value sigma =
            e.div(e.f(1.0), e.add(e.f(1.0), expOf(e, arith::NegFOp::create(b, e.loc, x))));
        return e.mul(sigma, e.add(e.f(1.0), e.mul(x, e.sub(e.f(1.0), sigma))));
      }
      }
      llvm_unreachable("unknown activation");
    };
    e.eachRow(args, [&](Value t) {
      Value x = e.at(args[0], e.muli(t, args[1]));
      Value dy = e.row(args[2], t, width), out = e.row(args[3], t, width);
      e.loop(e.i(width), [&](Value c) {
        e.store(e.mul(e.load(dy, c), derivative(e.load(x, c))), out, c);
      });
    });
  });
}

func::FuncOp LoopKernels::tokenEmbedGrad(int64_t width) {
  XF_KERNEL_CACHED_WITH("xf_token_embed_grad_" + std::to_string(width), LoopSchedule{});
  return rowKernel(name, "pppii", kernelSchedule, /*rowsArg=*/4,
                   [&](Emitter &e, ValueRange args) {
    e.eachRow(args, [&](Value t) {
      Value dy = e.row(args[1], t, width);
      Value acc = e.at(args[2], e.muli(loadId(e, args[0], t), args[3]));
      e.loop(e.i(width), [&](Value c) { e.store(e.add(e.load(acc, c), e.load(dy, c)), acc, c); });
    });
  });
}

func::FuncOp LoopKernels::positionGrad(int64_t width) {
  XF_KERNEL_CACHED("xf_position_grad_" + std::to_string(width));
  return rowKernel(name, "ppii", kernelSchedule, /*rowsArg=*/3,
                   [&](Emitter &e, ValueRange args) {
    e.eachRow(args, [&](Value t) {
      Value dy = e.row(args[0], t, width), acc = e.at(args[1], e.muli(t, args[2]));
      e.loop(e.i(width), [&](Value c) { e.store(e.add(e.load(acc, c), e.load(dy, c)), acc, c); });
    });
  });
}

func::FuncOp LoopKernels::sliceGrad(int64_t width, int64_t outWidth, int64_t offset) {
  XF_KERNEL_CACHED(llvm::formatv("xf_slice_grad_{0}_{1}_{2}", width, outWidth, offset).str());
  return rowKernel(name, "ppi", kernelSchedule, /*rowsArg=*/2,
                   [&](Emitter &e, ValueRange args) {
    e.eachRow(args, [&](Value t) {
      Value in = e.row(args[0], t, width), out = e.row(args[1], t, outWidth);
      e.loop(e.i(offset), [&](Value c) { e.store(e.f(0.0), out, c); });
      Value inside = e.at(out, e.i(offset));
      e.loop(e.i(width), [&](Value c) { e.store(e.load(in, c), inside, c); });
      e.loop(e.i(offset + width), e.i(outWidth), [&](Value c) { e.store(e.f(0.0), out, c); });
    });
  });
}

func::FuncOp LoopKernels::accumulate2d() {
  XF_KERNEL_CACHED_WITH("xf_accumulate2d", LoopSchedule{});
  return rowKernel(name, "pipiii", kernelSchedule, /*rowsArg=*/4,
                   [&](Emitter &e, ValueRange args) {
    e.eachRow(args, [&](Value r) {
      Value src = e.at(args[0], e.muli(r, args[1])), dst = e.at(args[2], e.muli(r, args[3]));
      e.loop(args[5], [&](Value c) { e.store(e.add(e.load(dst, c), e.load(src, c)), dst, c); });
    });
  });
}

func::FuncOp LoopKernels::transposeChunk() {
  XF_KERNEL_CACHED("xf_transpose_chunk");
  return rowKernel(name, "pipiii", kernelSchedule, /*rowsArg=*/5,
                   [&](Emitter &e, ValueRange args) {
    // Rows of the result: the columns c of the input.
    e.eachRow(args, [&](Value c) {
      Value dst = e.at(args[2], e.muli(c, args[4]));
      e.loop(args[3],
             [&](Value t) { e.store(e.load(args[0], e.addi(e.muli(t, args[1]), c)), dst, t); });
      e.loop(args[3], args[4], [&](Value t) { e.store(e.f(0.0), dst, t); });
    });
  });
}

func::FuncOp LoopKernels::padChunk() {
  XF_KERNEL_CACHED("xf_pad_chunk");
  return rowKernel(name, "pipiii", kernelSchedule, /*rowsArg=*/4,
                   [&](Emitter &e, ValueRange args) {
    OpBuilder &b = e.b;
    e.eachRow(args, [&](Value t) {
      Value dst = e.at(args[2], e.muli(t, args[5]));
      Value valid = arith::CmpIOp::create(b, e.loc, arith::CmpIPredicate::slt, t, args[3]);
      Value src = e.at(
          args[0], e.muli(arith::MinSIOp::create(b, e.loc, t, e.addi(args[3], e.i(-1))), args[1]));
      e.loop(args[5], [&](Value c) {
        e.store(arith::SelectOp::create(b, e.loc, valid, e.load(src, c), e.f(0.0)), dst, c);
      });
    });
  });
}

/// Per query head h of the task's key/value head g and query row i: the
/// scores s_j = scale·q_i·k_j (j ≤ i when causal), P_ij = softmax_j(s),
/// dP_ij = dy_i·v_j, D_i = Σ_j P_ij·dP_ij, dS_ij = P_ij·(dP_ij − D_i);
/// dq_i = scale·Σ_j dS_ij·k_j, dk_j += scale·dS_ij·q_i, dv_j += P_ij·dy_i.
func::FuncOp LoopKernels::attentionGrad(int64_t heads, int64_t kvHeads, int64_t dK, int64_t dV,
                                        bool causal, double scale) {
  XF_KERNEL_CACHED_WITH(llvm::formatv("xf_attention_grad_{0}_{1}_{2}x{3}_{4}_{5}", heads, kvHeads,
                                      dK, dV, causal ? "causal" : "full", formatDouble(scale))
                            .str(),
                        (LoopSchedule{/*rowsPerTask=*/1, /*vectorBits=*/0}));
  return rowKernel(name, "pipipipippppiii", kernelSchedule, /*rowsArg=*/14,
                   [&](Emitter &e, ValueRange args) {
    Value q = args[0], qs = args[1], k = args[2], ks = args[3], v = args[4], vs = args[5];
    Value dy = args[6], dys = args[7], dq = args[8], dk = args[9], dv = args[10];
    // Query rows; key/value rows (the source's, for cross-attention).
    Value work = args[11], rows = args[12], keyRows = args[13];
    const int64_t group = heads / kvHeads;
    e.eachRow(args, [&](Value g) {
      Value kCol = e.muli(g, e.i(dK)), vCol = e.muli(g, e.i(dV));
      Value p = e.at(work, e.muli(e.muli(g, e.i(2)), keyRows)), dp = e.at(p, keyRows);
      e.loop(keyRows, [&](Value j) {
        Value dkj = e.at(dk, e.addi(e.muli(j, e.i(kvHeads * dK)), kCol));
        Value dvj = e.at(dv, e.addi(e.muli(j, e.i(kvHeads * dV)), vCol));
        e.loop(e.i(dK), [&](Value c) { e.store(e.f(0.0), dkj, c); });
        e.loop(e.i(dV), [&](Value c) { e.store(e.f(0.0), dvj, c); });
      });
      e.loop(e.muli(g, e.i(group)), e.muli(e.addi(g, e.i(1)), e.i(group)), [&](Value h) {
        Value qCol = e.muli(h, e.i(dK)), yCol = e.muli(h, e.i(dV));
        e.loop(rows, [&](Value i) {
          Value qi = e.at(q, e.addi(e.muli(i, qs), qCol));
          Value dyi = e.at(dy, e.addi(e.muli(i, dys), yCol));
          Value dqi = e.at(dq, e.addi(e.muli(i, e.i(heads * dK)), qCol));
          Value keys = causal ? e.addi(i, e.i(1)) : keyRows;
          auto kRow = [&](Value j) { return e.at(k, e.addi(e.muli(j, ks), kCol)); };
          auto vRow = [&](Value j) { return e.at(v, e.addi(e.muli(j, vs), vCol)); };
          Value top = e.maximum(keys, [&](Value j) {
            Value s = e.mul(e.f(scale), dot(e, qi, kRow(j), dK));
            e.store(s, p, j);
            return s;
          });
          Value total = e.sum(keys, [&](Value j) {
            Value x = expOf(e, e.sub(e.load(p, j), top));
            e.store(x, p, j);
            return x;
          });
          Value inv = e.div(e.f(1.0), total);
          Value d = e.sum(keys, [&](Value j) {
            Value pj = e.mul(e.load(p, j), inv);
            e.store(pj, p, j);
            Value dpj = dot(e, dyi, vRow(j), dV);
            e.store(dpj, dp, j);
            return e.mul(pj, dpj);
          });
          e.loop(e.i(dK), [&](Value c) { e.store(e.f(0.0), dqi, c); });
          e.loop(keys, [&](Value j) {
            Value pj = e.load(p, j);
            Value ds = e.mul(e.f(scale), e.mul(pj, e.sub(e.load(dp, j), d)));
            Value kj = kRow(j);
            Value dkj = e.at(dk, e.addi(e.muli(j, e.i(kvHeads * dK)), kCol));
            Value dvj = e.at(dv, e.addi(e.muli(j, e.i(kvHeads * dV)), vCol));
            e.loop(e.i(dK), [&](Value c) {
              e.store(e.add(e.load(dqi, c), e.mul(ds, e.load(kj, c))), dqi, c);
              e.store(e.add(e.load(dkj, c), e.mul(ds, e.load(qi, c))), dkj, c);
            });
            e.loop(e.i(dV), [&](Value c) {
              e.store(e.add(e.load(dvj, c), e.mul(pj, e.load(dyi, c))), dvj, c);
            });
          });
        });
      });
    });
  });
}
