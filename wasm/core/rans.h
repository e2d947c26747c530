// Decoding the `rans` tensor payload of the model file (dtype 3, model_data/README.md): integers
// in [-levels, levels] with one f32 scale per group, entropy-coded with rANS (a static
// frequency table per tensor, lanes of kLaneLength values, each its own byte stream). The
// writer is scripts/model/rans.py and scripts/model/modelfile.py.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace attn::rans {

constexpr uint32_t kProbBits = 15;        // frequencies sum to 2^15
constexpr uint32_t kStateLow = 1u << 23;  // the state lives in [2^23, 2^31)
constexpr uint32_t kLaneLength = 4096;    // values per lane (the last lane may be shorter)
constexpr uint32_t kMaxLevels = 16383;    // keeps the alphabet (2 levels + 1) below 2^15

// Writes numel values (integer x its group's scale) to out. Fails, naming the inconsistency,
// unless the payload's bytes are exactly the README's layout for numel values and groups of
// group_size, and every lane decodes to its end state with its stream used up. group_size must
// divide numel (the caller checks it against the shape). Never reads outside [data, data+bytes).
Status DecodeTensor(const uint8_t* data, uint64_t bytes, uint64_t numel, uint32_t group_size,
                    float* out);

}  // namespace attn::rans
