// The rANS decoder of the model file's `rans` dtype. Every count and offset read from the
// payload is checked against its size before use, so a damaged payload yields a Status.
#include "core/rans.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace attn::rans {
namespace {

uint32_t ReadU32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

std::string Num(uint64_t v) { return std::to_string(v); }

// The frequency table stored plainly: one little-endian u16 per symbol, padded to 4 bytes.
// Sums the frequencies into *total (stopping once past 2^15) and sets out->bytes.
Status ReadPlainTable(const uint8_t* data, uint64_t bytes, uint32_t alphabet, Header* out, uint32_t* total) {
  const uint64_t table_bytes = (2 * uint64_t{alphabet} + 3) / 4 * 4;
  if (8 + table_bytes > bytes) {
    return Status::Error("rans data is " + Num(bytes) + " bytes, too short for its frequency "
                         "table of " + Num(alphabet) + " symbols");
  }
  for (uint32_t s = 0; s < alphabet; ++s) {
    out->freq[s] = uint32_t{data[8 + 2 * s]} | uint32_t{data[9 + 2 * s]} << 8;
    *total += out->freq[s];
    if (*total > (1u << kProbBits)) break;
  }
  out->bytes = 8 + table_bytes;
  return Status::Ok();
}

// The Rice-coded frequency table: parameter k, the code's length (a multiple of 4), then per
// symbol its frequency's high part in unary (ones ended by a zero) and its k low bits, least
// significant bit first; the padding after the last symbol is zero. Same outputs as above.
Status ReadCodedTable(const uint8_t* data, uint64_t bytes, uint32_t alphabet, Header* out, uint32_t* total) {
  if (bytes < 16) {
    return Status::Error("rans data is " + Num(bytes) + " bytes, too short for a coded "
                         "frequency table's 16-byte header");
  }
  const uint32_t k = ReadU32(data + 8);
  const uint32_t code_bytes = ReadU32(data + 12);
  if (k > kMaxRiceParameter || code_bytes % 4 != 0 || 16 + uint64_t{code_bytes} > bytes) {
    return Status::Error("rans coded frequency table: parameter " + Num(k) + " and " +
                         Num(code_bytes) + " bytes of code do not fit (parameter at most " +
                         Num(kMaxRiceParameter) + ", length a multiple of 4 within the " +
                         Num(bytes) + " bytes of the tensor)");
  }
  const uint8_t* code = data + 16;
  const uint64_t code_bits = uint64_t{code_bytes} * 8;
  uint64_t at = 0;
  auto bit = [&]() { const uint32_t b = code[at >> 3] >> (at & 7) & 1u; ++at; return b; };
  const uint32_t most_high = (1u << kProbBits) >> k;  // no frequency exceeds 2^15
  for (uint32_t s = 0; s < alphabet; ++s) {
    uint32_t high = 0;
    for (;;) {
      if (at >= code_bits) return Status::Error("rans coded frequency table ends at symbol " + Num(s));
      if (!bit()) break;
      if (++high > most_high) {
        return Status::Error("rans coded frequency table: symbol " + Num(s) + " exceeds 2^15");
      }
    }
    if (at + k > code_bits) return Status::Error("rans coded frequency table ends at symbol " + Num(s));
    uint32_t low = 0;
    for (uint32_t b = 0; b < k; ++b) low |= bit() << b;
    out->freq[s] = high << k | low;
    *total += out->freq[s];
    if (*total > (1u << kProbBits)) break;
  }
  if (*total <= (1u << kProbBits)) {
    while (at < code_bits) {
      if (bit()) return Status::Error("rans coded frequency table: its padding is not zero");
    }
  }
  out->bytes = 16 + uint64_t{code_bytes};
  return Status::Ok();
}

}  // namespace

Status ReadHeader(const uint8_t* data, uint64_t bytes, Header* out) {
  if (bytes < 8) {
    return Status::Error("rans data is " + Num(bytes) + " bytes, shorter than its 8-byte header");
  }
  const uint32_t word = ReadU32(data);
  const bool coded = (word & kCodedTableFlag) != 0;
  const uint32_t levels = word & ~kCodedTableFlag;
  if (levels < 1 || levels > kMaxLevels) {
    return Status::Error("rans levels is " + Num(levels) + ", expected 1.." + Num(kMaxLevels));
  }
  out->levels = levels;
  out->lanes = ReadU32(data + 4);
  const uint32_t alphabet = 2 * levels + 1;
  out->freq.assign(alphabet, 0);
  uint32_t total = 0;
  const Status table = coded ? ReadCodedTable(data, bytes, alphabet, out, &total)
                             : ReadPlainTable(data, bytes, alphabet, out, &total);
  if (!table.ok()) return table;
  if (total != (1u << kProbBits)) {
    return Status::Error("rans frequencies do not sum to " + Num(1u << kProbBits));
  }
  // Each of the 2^15 slots names its symbol, for the decoder's table lookup.
  out->start.assign(alphabet, 0);
  out->slot_symbol.assign(1u << kProbBits, 0);
  for (uint32_t s = 0, sum = 0; s < alphabet; ++s) {
    out->start[s] = sum;
    for (uint32_t k = 0; k < out->freq[s]; ++k) out->slot_symbol[sum + k] = static_cast<uint16_t>(s);
    sum += out->freq[s];
  }
  return Status::Ok();
}

Status DecodeTensor(const uint8_t* data, uint64_t bytes, uint64_t numel, uint32_t group_size,
                    float* out) {
  Header header;
  if (Status status = ReadHeader(data, bytes, &header); !status.ok()) return status;
  const uint64_t want_lanes = (numel + kLaneLength - 1) / kLaneLength;
  if (header.lanes != want_lanes) {
    return Status::Error("rans lane count is " + Num(header.lanes) + ", expected " + Num(want_lanes) +
                         " for " + Num(numel) + " values in lanes of " + Num(kLaneLength));
  }
  return DecodeBody(header, data + header.bytes, bytes - header.bytes, numel, group_size, out,
                    header.bytes);
}

Status DecodeBody(const Header& header, const uint8_t* body, uint64_t bytes, uint64_t numel,
                  uint32_t group_size, float* out, uint64_t body_offset) {
  const uint32_t levels = header.levels;
  const uint32_t lanes = static_cast<uint32_t>((numel + kLaneLength - 1) / kLaneLength);
  const uint64_t groups = numel / group_size;
  // Offsets of the parts in the body; all sums stay far below 2^64 because numel and lanes
  // come from a validated config. Messages count from the tensor's first byte.
  const uint8_t* const data = body - body_offset;
  bytes += body_offset;
  const uint64_t scales_at = body_offset;
  const uint64_t states_at = scales_at + 4 * groups;
  const uint64_t lengths_at = states_at + 4 * uint64_t{lanes};
  const uint64_t streams_at = lengths_at + 4 * uint64_t{lanes};
  if (streams_at > bytes) {
    return Status::Error("rans data is " + Num(bytes) + " bytes, too short for its frequency "
                         "table, " + Num(groups) + " scales and " + Num(lanes) + " lanes (" +
                         Num(streams_at) + " bytes before the streams)");
  }
  uint64_t stream_bytes = 0;
  for (uint32_t k = 0; k < lanes; ++k) stream_bytes += ReadU32(data + lengths_at + 4 * uint64_t{k});
  if (streams_at + stream_bytes != bytes) {
    return Status::Error("rans streams take " + Num(stream_bytes) + " bytes after offset " +
                         Num(streams_at) + ", but the tensor has " + Num(bytes) + " bytes");
  }
  const std::vector<uint32_t>& freq = header.freq;
  const std::vector<uint32_t>& start = header.start;
  const std::vector<uint16_t>& slot_symbol = header.slot_symbol;

  for (uint64_t g = 0; g < groups; ++g) {
    float scale;
    const uint32_t bits = ReadU32(data + scales_at + 4 * g);
    std::memcpy(&scale, &bits, sizeof scale);
    if (!std::isfinite(scale)) {
      return Status::Error("rans scale " + Num(g) + " is not finite");
    }
  }

  const uint8_t* stream = data + streams_at;
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    uint32_t state = ReadU32(data + states_at + 4 * uint64_t{lane});
    const uint8_t* const stream_end = stream + ReadU32(data + lengths_at + 4 * uint64_t{lane});
    if (state < kStateLow || state >= (1u << 31)) {
      return Status::Error("rans lane " + Num(lane) + " starts in state " + Num(state) +
                           ", outside [2^23, 2^31)");
    }
    const uint64_t first = uint64_t{lane} * kLaneLength;
    const uint64_t count = std::min<uint64_t>(kLaneLength, numel - first);
    for (uint64_t i = first; i < first + count; ++i) {
      const uint32_t slot = state & ((1u << kProbBits) - 1);
      const uint32_t s = slot_symbol[slot];
      state = freq[s] * (state >> kProbBits) + slot - start[s];
      while (state < kStateLow) {
        if (stream == stream_end) {
          return Status::Error("rans lane " + Num(lane) + " runs out of bytes at value " +
                               Num(i - first));
        }
        state = state << 8 | *stream++;
      }
      float scale;
      const uint32_t bits = ReadU32(data + scales_at + 4 * (i / group_size));
      std::memcpy(&scale, &bits, sizeof scale);
      out[i] = static_cast<float>(static_cast<int32_t>(s) - static_cast<int32_t>(levels)) * scale;
    }
    if (state != kStateLow || stream != stream_end) {
      return Status::Error("rans lane " + Num(lane) + " does not end in its initial state with "
                           "its stream used up");
    }
  }
  return Status::Ok();
}

}  // namespace attn::rans
