/*===- GpuTimingTable.h - what a CUDA timing program times --------*- C -*-===//
 *
 * `xfc tune --target cuda --export DIR` (docs/tuning.md, "CUDA GEMMs") compiles each kernel's
 * candidate schedules (GEMMs' and attentions') into Halide CUDA pipelines and writes this
 * table (as C, compiled and linked with them, libxfrt and libxfrt_gpu_timing_main into
 * DIR/xf-gpu-timing): per kernel its device memories, the arguments its calls pass (views of
 * those memories, or int32 scalars), the calls one measurement makes (a GEMM: the pipeline
 * on (x, weight, [bias], [residual], [norm γ], [norm β], out); an attention at ≤ 4 rows:
 * flash-decoding's range pass, then the merge), its candidates, the default first, and its
 * baselines (Anderson2021's schedule of a GEMM per length). GpuTimingMain.cpp times them.
 * C, so that the generated file needs no C++.
 *===----------------------------------------------------------------------===*/
#ifndef XFRT_GPUTIMINGTABLE_H
#define XFRT_GPUTIMINGTABLE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  XF_TIMING_MAX_MEMORIES = 8,
  XF_TIMING_MAX_ARGUMENTS = 12,
  XF_TIMING_MAX_DIMENSIONS = 5,
  XF_TIMING_MAX_CALLS = 2,
};

/* Sizes of the timed length: its rows M, and the keys an attention attends over (a prefill's
 * own rows; at ≤ 4 rows, a decode step's, the longest length). */
enum { XF_TIMING_ROWS = -1, XF_TIMING_KEYS = -2 };

/* A device allocation of `elements` float32 (or bfloat16) values, filled with small
 * pseudo-random values once. */
typedef struct {
  int64_t elements;
  int bf16;
} xf_timing_memory;

/* A buffer dimension; extent XF_TIMING_ROWS or XF_TIMING_KEYS: that size of the length. */
typedef struct {
  int64_t extent, stride;
} xf_timing_dimension;

/* An argument: a buffer of `dimensions` dims viewing memory `memory` from `offset` elements on,
 * or (memory -1) an int32 scalar, `value` (XF_TIMING_ROWS / XF_TIMING_KEYS: that size). */
typedef struct {
  int memory;
  int64_t offset;
  int dimensions;
  xf_timing_dimension dim[XF_TIMING_MAX_DIMENSIONS];
  int64_t value;
} xf_timing_argument;

/* One function of a measurement: called with these arguments (indices) at lengths of at most
 * `most_rows` rows (0: at every length). */
typedef struct {
  int64_t most_rows;
  int arguments;
  int argument[XF_TIMING_MAX_ARGUMENTS];
} xf_timing_call;

/* One candidate: its schedule's text (#xf.gpu_gemm_schedule<...> or
 * #xf.gpu_attention_schedule<...>), per call its pipeline's Halide argv entry
 * (int f_argv(void **): a buffer's halide_buffer_t *, a scalar's address), and its arguments
 * (the kernel's `arguments` of them: an attention's partials hold as many key ranges as its
 * schedule sets). */
typedef struct {
  const char *schedule;
  void *function[XF_TIMING_MAX_CALLS];
  const xf_timing_argument *argument;
} xf_timing_candidate;

/* A baseline to beat, never a schedule point: the same GEMM scheduled by another scheduler
 * (name: "anderson2021", Halide's GPU autoscheduler) for `rows` rows, timed at that length
 * only; the default's arguments. Where the export could not compile it, function is NULL and
 * `refused` says why. */
typedef struct {
  const char *name;
  int64_t rows;
  void *function[XF_TIMING_MAX_CALLS];
  const char *refused;
} xf_timing_baseline;

typedef struct {
  const char *name;      /* the model's kernel, e.g. xf_gemm_0, xf_attention_0 */
  const char *signature; /* the tuning database's key (gemm k=768 n=2304 ...) */
  int memories;
  xf_timing_memory memory[XF_TIMING_MAX_MEMORIES];
  int arguments;
  int output; /* the argument compared with the default's: float32, dense from its memory's start */
  int calls;
  xf_timing_call call[XF_TIMING_MAX_CALLS];
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
  const int64_t *keys; /* per length: XF_TIMING_KEYS */
  int kernels;
  const xf_timing_kernel *kernel;
  const char *baselines_left_out; /* why the export has no baseline at all; "" where it has */
} xf_timing_program;

extern const xf_timing_program xf_timing;

#ifdef __cplusplus
}
#endif

#endif /* XFRT_GPUTIMINGTABLE_H */
