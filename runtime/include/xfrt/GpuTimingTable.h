/*===- GpuTimingTable.h - what a CUDA timing program times --------*- C -*-===//
 *
 * `xfc tune --target cuda --export DIR` (docs/tuning.md, "CUDA GEMMs") compiles each GEMM's
 * candidate schedules into Halide CUDA pipelines, one function each, and writes this table
 * (as C, compiled and linked with them, libxfrt and libxfrt_gpu_timing_main into
 * DIR/xf-gpu-timing): per kernel its buffers, in the pipeline's argument order (x, weight,
 * [bias], [residual], [norm γ], [norm β], out: GemmKernel.cpp), its candidates, the
 * default first, and its baselines (Anderson2021's schedule per length). GpuTimingMain.cpp
 * times them. C, so that the generated file needs no C++.
 *===----------------------------------------------------------------------===*/
#ifndef XFRT_GPUTIMINGTABLE_H
#define XFRT_GPUTIMINGTABLE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { XF_TIMING_MAX_BUFFERS = 8 };

/* A float32 (or bfloat16) buffer: `cols` contiguous elements a row; rows: 0 for a 1-D buffer,
 * -1 for the timed length M, else that many rows. */
typedef struct {
  int64_t cols, rows;
  int bf16;
} xf_timing_buffer;

/* One candidate: its schedule's text (#xf.gpu_gemm_schedule<...>) and its pipeline,
 * int f(halide_buffer_t *...) with `buffers` arguments. */
typedef struct {
  const char *schedule;
  void *function;
} xf_timing_candidate;

/* A baseline to beat, never a schedule point: the same GEMM scheduled by another scheduler
 * (name: "anderson2021", Halide's GPU autoscheduler) for `rows` rows, timed at that length
 * only; the same arguments as the candidates. Where the export could not compile it,
 * function is NULL and `refused` says why. */
typedef struct {
  const char *name;
  int64_t rows;
  void *function;
  const char *refused;
} xf_timing_baseline;

typedef struct {
  const char *name;      /* the model's kernel, e.g. xf_gemm_0 */
  const char *signature; /* the tuning database's key (gemm k=768 n=2304 ...) */
  int buffers;
  xf_timing_buffer buffer[XF_TIMING_MAX_BUFFERS];
  int candidates;
  const xf_timing_candidate *candidate;
  int baselines;
  const xf_timing_baseline *baseline;
} xf_timing_kernel;

typedef struct {
  const char *xf_version;
  const char *target; /* the Halide target the candidates were compiled for */
  int lengths;
  const int64_t *length;
  int kernels;
  const xf_timing_kernel *kernel;
  const char *baselines_left_out; /* why the export has no baseline at all; "" where it has */
} xf_timing_program;

extern const xf_timing_program xf_timing;

#ifdef __cplusplus
}
#endif

#endif /* XFRT_GPUTIMINGTABLE_H */
