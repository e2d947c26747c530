// Structure-aware fuzz target for the rans decoder (core/rans.h). The input chooses a tensor
// (numel, a group size that divides it, levels) and one of three payloads:
//  - values coded by the tests' independent encoder (tests/cpp/test_model_writer.h), with a plain
//    or (WithCodedTable) a Rice-coded frequency table, which must
//    decode to exactly those values, or be refused for a scale that is not finite; then, maybe,
//    a few bytes changed, cut or added;
//  - a payload assembled from the input with a frequency table that sums to 2^15 and lane states
//    in range, so that most inputs get past the header checks into the decoding loop;
//  - the input's bytes as they are.
// Payload and output live in allocations of exactly their size, so ASan sees any access outside
// them. A refusal must come with a message; a success must mean the payload is what the README
// describes (levels, lane count, table, states, lengths, finite scales) and every value is an
// integer in [-levels, levels] times its group's scale as the payload gives it.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/rans.h"
#include "../cpp/test_model_writer.h"

namespace {

using attn::rans::kLaneLength;
using attn::rans::kMaxLevels;
using attn::rans::kProbBits;
using attn::rans::kStateLow;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "rans_fuzz: broken promise: %s\n", what);
    std::abort();
  }
}

uint32_t GetU32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
void PutU32(std::vector<uint8_t>* b, uint32_t v) {
  for (int k = 0; k < 4; ++k) b->push_back(static_cast<uint8_t>(v >> (8 * k)));
}
uint32_t Bits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}
float FromBits(uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

uint64_t Lanes(uint64_t numel) { return (numel + kLaneLength - 1) / kLaneLength; }

// Mostly a few values, which decode fastest; else up to three lanes, often within two values of
// a lane boundary, where a one-off in the lane arithmetic would show.
uint64_t ChooseNumel(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 6:
      return in.ConsumeIntegralInRange<uint64_t>(0, 3 * kLaneLength + 7);
    case 7:
      return in.ConsumeIntegralInRange<uint64_t>(1, 3) * kLaneLength - 2 +
             in.ConsumeIntegralInRange<uint64_t>(0, 4);
    default:
      return in.ConsumeIntegralInRange<uint64_t>(1, 64);
  }
}

// The largest divisor of numel up to a chosen bound: single values, rows, the whole tensor.
uint32_t ChooseGroup(FuzzedDataProvider& in, uint64_t numel) {
  if (in.ConsumeBool()) return numel == 0 ? 1 : static_cast<uint32_t>(numel);
  uint64_t group = in.ConsumeIntegralInRange<uint64_t>(1, std::max<uint64_t>(1, numel));
  while (numel % group != 0) --group;
  return static_cast<uint32_t>(group);
}

uint32_t ChooseLevels(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
    case 1:
      return in.ConsumeIntegralInRange<uint32_t>(1, 8);
    case 2:
      return in.ConsumeIntegralInRange<uint32_t>(1, 511);
    default:
      return in.ConsumeIntegralInRange<uint32_t>(1, kMaxLevels);
  }
}

// Mostly small multiples of 1/16 of either sign, as quantised weights have; sometimes any bits:
// NaN, infinities, subnormals, and huge values whose products overflow.
float ChooseScale(FuzzedDataProvider& in) {
  if (in.ConsumeIntegralInRange<int>(0, 7) != 7) {
    return static_cast<float>(in.ConsumeIntegralInRange<int32_t>(-64, 64)) / 16.0f;
  }
  return FromBits(in.ConsumeIntegral<uint32_t>());
}

// A few bytes changed, the payload cut short, or a byte added.
void Damage(FuzzedDataProvider& in, std::vector<uint8_t>* payload) {
  const int edits = in.ConsumeIntegralInRange<int>(0, 3);
  for (int k = 0; k < edits; ++k) {
    const int kind = in.ConsumeIntegralInRange<int>(0, 3);
    if (kind == 3) {
      payload->push_back(in.ConsumeIntegral<uint8_t>());
    } else if (!payload->empty()) {
      const size_t at = in.ConsumeIntegralInRange<size_t>(0, payload->size() - 1);
      if (kind == 2) {
        payload->resize(at);
      } else {
        (*payload)[at] ^= static_cast<uint8_t>(in.ConsumeIntegralInRange<uint8_t>(1, 255));
      }
    }
  }
}

// Frequencies from the input's weights, scaled to sum to exactly 2^15 (the remainder goes to the
// heaviest symbol); a zero weight gives a symbol that never occurs. Sometimes raw u16s instead.
std::vector<uint16_t> ChooseFrequencies(FuzzedDataProvider& in, uint32_t alphabet) {
  std::vector<uint16_t> freq(alphabet, 0);
  if (in.ConsumeIntegralInRange<int>(0, 7) == 7) {
    for (uint16_t& f : freq) f = in.ConsumeIntegral<uint16_t>();
    return freq;
  }
  const uint32_t used = in.ConsumeIntegralInRange<uint32_t>(1, std::min<uint32_t>(alphabet, 64));
  std::vector<uint32_t> weight(alphabet, 0);
  uint64_t total_weight = 0;
  for (uint32_t k = 0; k < used; ++k) {
    const uint32_t s = in.ConsumeIntegralInRange<uint32_t>(0, alphabet - 1);
    const uint32_t w = in.ConsumeIntegralInRange<uint32_t>(1, 256);
    weight[s] += w;
    total_weight += w;
  }
  uint32_t total = 0, heaviest = 0;
  for (uint32_t s = 0; s < alphabet; ++s) {
    freq[s] = static_cast<uint16_t>(uint64_t{weight[s]} * (1u << kProbBits) / total_weight);
    total += freq[s];
    if (weight[s] > weight[heaviest]) heaviest = s;
  }
  freq[heaviest] = static_cast<uint16_t>(freq[heaviest] + ((1u << kProbBits) - total));
  return freq;
}

// The README's layout filled from the input: mostly consistent, so that the decoding loop runs
// and meets the end-of-lane checks, with rare deviations in each field.
std::vector<uint8_t> AssemblePayload(FuzzedDataProvider& in, uint64_t numel, uint32_t group) {
  const bool bad_levels = in.ConsumeIntegralInRange<int>(0, 15) == 15;
  const uint32_t levels = bad_levels ? in.ConsumeIntegral<uint32_t>() : ChooseLevels(in);
  uint32_t lanes = static_cast<uint32_t>(Lanes(numel));
  if (in.ConsumeIntegralInRange<int>(0, 15) == 15) {
    lanes = static_cast<uint32_t>(int64_t{lanes} + in.ConsumeIntegralInRange<int32_t>(-1, 1));
  }
  std::vector<uint8_t> p;
  PutU32(&p, levels);
  PutU32(&p, lanes);
  // A table for levels the decoder refuses would only be padding; keep it small.
  const uint32_t alphabet = 2 * std::min(levels, kMaxLevels) + 1;
  for (uint16_t f : ChooseFrequencies(in, bad_levels ? 3 : alphabet)) {
    p.push_back(static_cast<uint8_t>(f));
    p.push_back(static_cast<uint8_t>(f >> 8));
  }
  while (p.size() % 4 != 0) p.push_back(0);
  for (uint64_t g = 0; g < numel / group; ++g) PutU32(&p, Bits(ChooseScale(in)));
  // Lanes beyond the real count are written too when the header says so, so that the count
  // check, not the size check, is what refuses them.
  const uint32_t written_lanes = std::min<uint32_t>(lanes, static_cast<uint32_t>(Lanes(numel)) + 1);
  std::vector<uint32_t> lengths(written_lanes);
  for (uint32_t k = 0; k < written_lanes; ++k) {
    uint32_t state;
    switch (in.ConsumeIntegralInRange<int>(0, 7)) {
      case 0: state = kStateLow; break;
      case 1: state = in.ConsumeIntegral<uint32_t>(); break;
      default: state = in.ConsumeIntegralInRange<uint32_t>(kStateLow, (1u << 31) - 1);
    }
    PutU32(&p, state);
    lengths[k] = in.ConsumeIntegralInRange<uint32_t>(0, 64);
  }
  for (uint32_t length : lengths) PutU32(&p, length);
  for (uint32_t length : lengths) {
    const std::vector<uint8_t> stream = in.ConsumeBytes<uint8_t>(length);
    p.insert(p.end(), stream.begin(), stream.end());
    // Short input: the lane's stream still has the length its entry says, in zeros.
    p.resize(p.size() + (length - stream.size()), 0);
  }
  return p;
}

// What a successful decode promises, checked against the payload's bytes read here from the
// README's layout.
void CheckDecoded(const uint8_t* p, uint64_t bytes, uint64_t numel, uint32_t group,
                  const float* out) {
  Check(bytes >= 8, "a decoded payload has its 8-byte header");
  // The top bit of the levels word marks a Rice-coded frequency table (16 bytes of header and
  // its code's length in bytes 12..15) where a decoder knows that form; the plain table is
  // 2 levels + 1 u16, padded to 4 bytes.
  const bool coded = (GetU32(p) & (1u << 31)) != 0;
  const uint32_t levels = GetU32(p) & ~(1u << 31), lanes = GetU32(p + 4);
  Check(levels >= 1 && levels <= kMaxLevels, "a decoded payload's levels are 1..16383");
  Check(lanes == Lanes(numel), "a decoded payload has ceil(numel / 4096) lanes");
  const uint64_t alphabet = 2 * uint64_t{levels} + 1;
  Check(!coded || bytes >= 16, "a decoded coded table has its 16-byte header");
  const uint64_t scales_at = coded ? 16 + uint64_t{GetU32(p + 12)} : 8 + (2 * alphabet + 3) / 4 * 4;
  const uint64_t groups = numel / group;
  const uint64_t states_at = scales_at + 4 * groups;
  const uint64_t streams_at = states_at + 8 * uint64_t{lanes};
  Check(streams_at <= bytes, "a decoded payload holds its table, scales, states and lengths");
  if (!coded) {
    uint32_t total = 0;
    for (uint64_t s = 0; s < alphabet; ++s) total += p[8 + 2 * s] | p[9 + 2 * s] << 8;
    Check(total == 1u << kProbBits, "a decoded payload's frequencies sum to 2^15");
  }
  uint64_t stream_bytes = 0;
  for (uint64_t k = 0; k < lanes; ++k) {
    const uint32_t state = GetU32(p + states_at + 4 * k);
    Check(state >= kStateLow && state < (1u << 31), "a decoded lane starts in [2^23, 2^31)");
    stream_bytes += GetU32(p + states_at + 4 * (lanes + k));
  }
  Check(streams_at + stream_bytes == bytes, "a decoded payload ends where its last stream does");
  for (uint64_t g = 0; g < groups; ++g) {
    Check(std::isfinite(FromBits(GetU32(p + scales_at + 4 * g))), "a decoded payload's scales are finite");
  }
  for (uint64_t i = 0; i < numel; ++i) {
    const float scale = FromBits(GetU32(p + scales_at + 4 * (i / group)));
    const float v = out[i];
    Check(!std::isnan(v), "every value is written, none NaN");
    if (std::isinf(v)) {
      // Only a product that overflows float may be infinite.
      Check(std::isinf(static_cast<float>(levels) * std::fabs(scale)), "an infinite value is an overflow");
      continue;
    }
    if (scale == 0.0f) {
      Check(v == 0.0f, "a zero scale gives zeros");
      continue;
    }
    // v is float(k) * scale rounded once; dividing back is within far less than 0.5 of k.
    const long long k = std::llround(static_cast<double>(v) / static_cast<double>(scale));
    Check(k >= -static_cast<long long>(levels) && k <= static_cast<long long>(levels),
          "every value is an integer in [-levels, levels] times its scale");
    Check(Bits(static_cast<float>(k) * scale) == Bits(v), "every value is exactly integer x scale");
  }
}

// Runs the decoder on an exact-size copy of payload into an exact-size output.
bool Decode(const std::vector<uint8_t>& payload, uint64_t numel, uint32_t group,
            std::unique_ptr<float[]>* out, std::string* message) {
  std::unique_ptr<uint8_t[]> data(new uint8_t[payload.size()]);
  if (!payload.empty()) std::memcpy(data.get(), payload.data(), payload.size());
  out->reset(new float[numel]);
  std::fill(out->get(), out->get() + numel, std::nanf(""));
  const attn::Status status = attn::rans::DecodeTensor(data.get(), payload.size(), numel, group, out->get());
  if (status.ok()) {
    CheckDecoded(data.get(), payload.size(), numel, group, out->get());
  } else {
    Check(status.message().rfind("rans ", 0) == 0, "a refusal names rans and says why");
  }
  *message = status.message();
  return status.ok();
}

// Values coded by the test writer's encoder: exact round trip, unless a scale is not finite.
void RoundTrip(FuzzedDataProvider& in, uint64_t numel, uint32_t group) {
  attn::testing::WriterTensor t;
  t.name = "t";
  t.ndim = 1;
  t.shape = {static_cast<uint32_t>(numel), 0, 0, 0};
  t.dtype = 3;
  t.group_size = group;
  // The writer settles its table's rounding one unit at a time over the whole alphabet; large
  // alphabets on large tensors would only be slow.
  t.levels = numel > 64 ? std::min<uint32_t>(ChooseLevels(in), 511) : ChooseLevels(in);
  const auto spread = in.ConsumeIntegralInRange<int32_t>(0, static_cast<int32_t>(t.levels));
  t.integers.resize(numel);
  for (int32_t& q : t.integers) q = in.ConsumeIntegralInRange<int32_t>(-spread, spread);
  t.scales.resize(numel / group);
  bool finite = true;
  for (float& scale : t.scales) {
    scale = ChooseScale(in);
    finite = finite && std::isfinite(scale);
  }
  std::vector<uint8_t> payload = attn::testing::RansPayload(t);
  // Half the time the same payload with its table Rice-coded, at any parameter: it must decode
  // to the same values.
  if (in.ConsumeBool()) {
    payload = attn::testing::WithCodedTable(payload, in.ConsumeIntegralInRange<uint32_t>(0, attn::rans::kMaxRiceParameter));
  }
  const bool damaged = in.ConsumeBool();
  if (damaged) Damage(in, &payload);
  std::unique_ptr<float[]> out;
  std::string message;
  const bool ok = Decode(payload, numel, group, &out, &message);
  if (damaged) return;
  Check(ok == finite, "an encoded tensor decodes exactly when its scales are finite");
  if (!ok) {
    Check(message.find("is not finite") != std::string::npos, "a non-finite scale is named");
    return;
  }
  for (uint64_t i = 0; i < numel; ++i) {
    Check(Bits(out[i]) == Bits(t.Expected(i)), "an encoded tensor decodes to its values");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const int mode = in.ConsumeIntegralInRange<int>(0, 2);
  const uint64_t numel = ChooseNumel(in);
  const uint32_t group = ChooseGroup(in, numel);
  std::unique_ptr<float[]> out;
  std::string message;
  if (mode == 0 && numel > 0) {
    RoundTrip(in, numel, group);
  } else if (mode == 2) {
    (void)Decode(in.ConsumeRemainingBytes<uint8_t>(), numel, group, &out, &message);
  } else {
    std::vector<uint8_t> payload = AssemblePayload(in, numel, group);
    if (in.ConsumeBool()) Damage(in, &payload);
    (void)Decode(payload, numel, group, &out, &message);
  }
  return 0;
}
