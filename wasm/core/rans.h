// Decoding the `rans` tensor payload of the model file (dtype 3, model_data/README.md): integers
// in [-levels, levels] with one f32 scale per group, entropy-coded with rANS (a static
// frequency table per tensor, lanes of kLaneLength values, each its own byte stream). The
// writer is scripts/model/rans.py and scripts/model/modelfile.py.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"

namespace attn::rans {

constexpr uint32_t kProbBits = 15;        // frequencies sum to 2^15
constexpr uint32_t kStateLow = 1u << 23;  // the state lives in [2^23, 2^31)
constexpr uint32_t kLaneLength = 4096;    // values per lane (the last lane may be shorter)
constexpr uint32_t kMaxLevels = 16383;    // keeps the alphabet (2 levels + 1) below 2^15
// Set in the header's levels word when the frequency table is Rice-coded (model_data/README.md):
// a table of 2 levels + 1 u16 is mostly zeros and ones at thousands of levels, 4 to 8 times
// larger than its code.
constexpr uint32_t kCodedTableFlag = 1u << 31;
constexpr uint32_t kMaxRiceParameter = 14;

// What a rans payload's header says: its levels and lanes, where the scales start, and the
// frequency of each of the 2 levels + 1 symbols; with the decoder's tables built from them
// once (a split model decodes every word-embedding shard with its core's header).
struct Header {
  uint32_t levels = 0;
  uint32_t lanes = 0;
  uint64_t bytes = 0;  // the header's own length: the scales start here
  std::vector<uint32_t> freq;
  std::vector<uint32_t> start;         // cumulative frequency below each symbol
  std::vector<uint16_t> slot_symbol;   // the symbol of each of the 2^15 slots
};

// Reads the header at data (bytes long): levels, lanes and the frequency table, plain (u16 per
// symbol) or Rice-coded. Checks the levels, that the table lies inside the bytes and sums to
// 2^15, and that a coded table's padding is zero. Never reads outside [data, data+bytes).
Status ReadHeader(const uint8_t* data, uint64_t bytes, Header* out);

// Writes numel values (integer x its group's scale) to out. Fails, naming the inconsistency,
// unless the payload's bytes are exactly the README's layout for numel values and groups of
// group_size, and every lane decodes to its end state with its stream used up. group_size must
// divide numel (the caller checks it against the shape). Never reads outside [data, data+bytes).
Status DecodeTensor(const uint8_t* data, uint64_t bytes, uint64_t numel, uint32_t group_size,
                    float* out);

// Decodes numel values coded with `header`'s table from the parts that follow a header (scales,
// lane states, lane lengths, streams: body, bytes long), in ceil(numel / kLaneLength) lanes
// whatever header.lanes says (a shard's rows decode with the whole tensor's header).
// body_offset, where the body starts in its tensor, only places the messages.
Status DecodeBody(const Header& header, const uint8_t* body, uint64_t bytes, uint64_t numel,
                  uint32_t group_size, float* out, uint64_t body_offset = 0);

}  // namespace attn::rans
