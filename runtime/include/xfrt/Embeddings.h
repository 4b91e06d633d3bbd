//===- Embeddings.h - Sentence embeddings from hidden states -----*- C++
//-*-===//
//
// poolHidden turns an encoder's hidden states [l, d] into one vector [d]: the
// mean over all l rows (every token is real here, [CLS] and [SEP] included, as
// sentence-transformers' mean pooling does with an all-ones attention mask) or
// the first row ([CLS]); then optionally x / max(‖x‖₂, 1e-12)
// (torch.nn.functional.normalize). Sums are taken in double.
//
//===----------------------------------------------------------------------===//
#ifndef XFRT_EMBEDDINGS_H
#define XFRT_EMBEDDINGS_H

#include <cstdint>

namespace xfrt {

enum class Pooling { Mean, Cls };

// hidden: [l, d] row-major, l >= 1; out: [d].
void poolHidden(const float *hidden, int64_t l, int64_t d, Pooling pool, bool normalize,
                float *out);

} // namespace xfrt

#endif // XFRT_EMBEDDINGS_H
