/*===- xf.h - The public C API of a model built with xfc --emit=lib -------===*
 *
 * `xfc model.xf --emit=lib -o libmodel.so` links the model's generated code and libxfrt into
 * one shared object whose only exported symbols are the functions below (docs/c-api.md).
 * Every function that can fail returns an xf_status; on failure, the message is
 * xf_session_error(session) for calls on a session and xf_last_error() (per thread) for the
 * others. Nothing here exits or aborts the process on bad input. Buffers are the caller's:
 * each output buffer comes with its capacity, checked before anything is written.
 *
 * Version: XF_API_VERSION is bumped whenever a declaration here changes incompatibly;
 * xf_api_version() says which one a library was built with.
 *
 *===----------------------------------------------------------------------===*/
#ifndef XF_XF_H
#define XF_XF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define XF_API_VERSION 1

typedef int32_t xf_status;
enum {
  XF_OK = 0,
  XF_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, a bad length, an id out of range */
  XF_ERROR_BUFFER_TOO_SMALL = 2, /* an output capacity below what the call writes */
  XF_ERROR_UNSUPPORTED = 3,      /* the model has no such entry point (decode on an encoder) */
  XF_ERROR_LOAD = 4,             /* weights or tokenizer files: missing, malformed, mismatched */
  XF_ERROR_RUNTIME = 5           /* a kernel failed (out of memory, ...) */
};

typedef struct xf_session xf_session;
typedef struct xf_tokenizer xf_tokenizer;

/* XF_API_VERSION of the library. */
int32_t xf_api_version(void);
/* The message of the last failed call on this thread that has no session (create,
 * tokenizer calls); "" when none has failed. Valid until this thread's next such call. */
const char *xf_last_error(void);
/* The model's manifest (docs/abi.md, "Manifest"): NUL-terminated JSON, static storage. Holds
 * "vocab", "d_out", "max_positions", "output" ("logits" or "hidden"), "cached",
 * "encoder_decoder", "hyperparameters", "parameters". */
const char *xf_manifest_json(void);
/* Threads of the kernels' pool (shared by every session of the library); 0 keeps the
 * default (the machine's hardware threads). */
xf_status xf_set_threads(int32_t threads);
/* A library built for CUDA (xfc --target cuda): 1 (the default) replays each decode step as one
 * CUDA graph, as the executables do (docs/gpu.md, "CUDA graphs"), 0 launches its kernels one by
 * one; takes effect from the next step. A CPU library accepts it and does nothing. A CUDA
 * library's calls reach the device one at a time (sessions share its stream and graphs). */
xf_status xf_set_cuda_graphs(int32_t on);

/* A session: the weights loaded and prepared, scratch and a KV cache. One call at a time
 * per session; sessions may run on different threads (the kernel pool runs one parallel
 * loop at a time; another thread's loop then runs on its own thread). */
/* weights_path: a .safetensors file, a sharded checkpoint's index .json or a .gguf file. */
xf_status xf_session_create(const char *weights_path, xf_session **out);
/* Deterministic random weights from `seed` (each parameter's init from the spec). */
xf_status xf_session_create_random(uint64_t seed, xf_session **out);
void xf_session_destroy(xf_session *session);
/* The message of the session's last failed call ("" when none). Valid until its next call. */
const char *xf_session_error(const xf_session *session);

/* One forward pass over n >= 1 ids (each < vocab; n <= max_positions when nonzero); an
 * encoder-decoder also takes its source ids (source_n >= 1), other models NULL and 0.
 * out: [n, d_out] float32 row-major, out_capacity floats. */
xf_status xf_session_forward(xf_session *session, const int32_t *ids, int64_t n,
                             const int32_t *source, int64_t source_n, float *out,
                             int64_t out_capacity);

/* Cached decoding (models with "cached": true): n >= 1 new ids at positions
 * start .. start+n-1; keys and values of earlier positions come from the session's KV
 * cache, written by earlier calls (start = 0 begins a new sequence; a cached
 * xf_session_generate leaves its prompt and new ids but the last there). out: [d_out], the
 * row of the newest id. start is at most the positions the cache holds (an earlier start
 * rewrites from there); start + n <= the cache's size: the manifest's "cache_positions" for
 * a sequence begun by a decode, the prompt and max_new_tokens after a generate. */
xf_status xf_session_decode(xf_session *session, const int32_t *ids, int64_t n, int64_t start,
                            float *out, int64_t out_capacity);

/* Sentence embedding of an encoder ("output": "hidden"): the hidden states of n ids pooled
 * (XF_POOL_MEAN over every row, or XF_POOL_CLS: the first row), then divided by their
 * Euclidean norm when `normalize` is nonzero. out: [d_out]. */
enum { XF_POOL_MEAN = 0, XF_POOL_CLS = 1 };
xf_status xf_session_embed(xf_session *session, const int32_t *ids, int64_t n, int32_t pooling,
                           int32_t normalize, float *out, int64_t out_capacity);

/* Generation (Alg. 14): a decoder extends the prompt one token at a time, through the KV
 * cache when the model has one. Greedy at temperature 0. */
typedef struct xf_generate_options {
  int64_t max_new_tokens; /* >= 1 */
  double temperature;     /* 0: greedy */
  int64_t top_k;          /* 0: no limit */
  double top_p;           /* (0, 1]; 1: no limit */
  uint64_t seed;          /* of the sampler */
  int32_t eos;            /* stop after emitting this id (it is included); -1: none */
  int32_t use_cache;      /* nonzero: the KV cache when the model has one */
} xf_generate_options;
/* The defaults: 16 new tokens, greedy, no eos, the cache. */
xf_generate_options xf_generate_defaults(void);
/* New ids into out_ids (out_capacity >= max_new_tokens), their count into *out_count. */
xf_status xf_session_generate(xf_session *session, const int32_t *prompt, int64_t n,
                              const int32_t *source, int64_t source_n,
                              const xf_generate_options *options, int32_t *out_ids,
                              int64_t out_capacity, int64_t *out_count);

/* Tokenizers (the runtime's, as the executables' --tokenizer takes them): a directory
 * holding vocab.json + merges.txt (GPT-2 BPE) or vocab.txt (BERT WordPiece), a vocab.txt
 * or vocab.json file, or a .gguf file's tokenizer. Errors: xf_last_error(). */
xf_status xf_tokenizer_load(const char *path, xf_tokenizer **out);
void xf_tokenizer_destroy(xf_tokenizer *tokenizer);
/* Ids of `text` (text_bytes bytes, UTF-8) into ids[capacity]; *count is their number, set
 * also when the capacity is too small (XF_ERROR_BUFFER_TOO_SMALL: call again). */
xf_status xf_tokenizer_encode(const xf_tokenizer *tokenizer, const char *text, int64_t text_bytes,
                              int32_t *ids, int64_t capacity, int64_t *count);
/* The text of n ids into text[capacity] (not NUL-terminated); *bytes its length, set also
 * when the capacity is too small. */
xf_status xf_tokenizer_decode(const xf_tokenizer *tokenizer, const int32_t *ids, int64_t n,
                              char *text, int64_t capacity, int64_t *bytes);
/* The id the executables put before a text input (--text, --prompt): a GGUF file's BOS when
 * its tokenizer.ggml.add_bos_token is true; -1 otherwise. Encode does not add it. */
int32_t xf_tokenizer_bos(const xf_tokenizer *tokenizer);
/* Entries of its vocabulary; its end-of-text id (GPT-2 <|endoftext|>, WordPiece [SEP]) or -1. */
int64_t xf_tokenizer_vocab_size(const xf_tokenizer *tokenizer);
int32_t xf_tokenizer_end_of_text(const xf_tokenizer *tokenizer);

#ifdef __cplusplus
}
#endif

#endif /* XF_XF_H */
