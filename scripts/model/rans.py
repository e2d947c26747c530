"""The rANS entropy coder of the model file's `rans` dtype (model_data/README.md, dtype 3).

Quantised weights are integers that cluster near zero, so storing each in a fixed number of bits
wastes most of them: an order-0 entropy coder spends close to the empirical entropy instead.
rANS (range asymmetric numeral systems) with a static frequency table per tensor does that with a
decoder of a few lines, which the C++ reader (wasm/core/rans.cc) repeats.

Parameters, fixed by the format: probabilities in units of 2^-15, a 32-bit state kept in
[2^23, 2^31), renormalised a byte at a time. The symbols are cut into lanes of LANE_LENGTH
consecutive symbols, each coded as its own stream; the lanes let numpy encode and decode all
of them in one vectorised loop (a pure Python loop over millions of symbols would take minutes).
"""

import numpy as np

PROB_BITS = 15
PROB_SCALE = 1 << PROB_BITS
STATE_LOW = 1 << 23
LANE_LENGTH = 4096
# The header's levels word has this bit set when the frequency table is Rice-coded
# (model_data/README.md): at thousands of levels most frequencies are 0 or 1, and the plain table
# of one u16 per symbol is 4 to 8 times larger than its code.
CODED_TABLE_FLAG = 1 << 31
MAX_RICE_PARAMETER = 14


class RansError(ValueError):
    """A coded stream that is damaged or does not follow the format."""


def frequencies(symbols, alphabet):
    """Symbol frequencies summing to PROB_SCALE, at least 1 for every symbol that occurs, close
    to the counts in proportion (the loss against the counts' entropy is negligible)."""
    counts = np.bincount(symbols, minlength=alphabet).astype(np.int64)
    present = counts > 0
    if present.sum() > PROB_SCALE:
        raise RansError(f"{present.sum()} distinct symbols do not fit {PROB_SCALE} slots")
    freq = np.where(present, np.maximum(counts * PROB_SCALE // counts.sum(), 1), 0)
    # Give the rounding shortfall to the commonest symbol, or take an excess back from the
    # commonest ones, never below 1.
    excess = int(freq.sum()) - PROB_SCALE
    if excess < 0:
        freq[np.argmax(freq)] -= excess
    for index in np.argsort(-freq, kind="stable"):
        if excess <= 0:
            break
        take = min(excess, int(freq[index]) - 1)
        freq[index] -= take
        excess -= take
    return freq.astype(np.uint16)  # PROB_SCALE itself fits: a lone symbol gets 2^15


def rice_code(freq, k):
    """The Rice code of freq with parameter k: per value, value >> k in unary (ones ended by a
    zero), then its k low bits; bits least significant first in each byte, zero-padded to a
    multiple of 4 bytes."""
    freq = np.asarray(freq, dtype=np.int64)
    high = freq >> k
    lengths = high + 1 + k
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    total = int(lengths.sum())
    bits = np.zeros(-(-total // 32) * 32, dtype=np.uint8)
    ones = np.repeat(starts, high) + (np.arange(int(high.sum())) - np.repeat(np.cumsum(high) - high, high))
    bits[ones] = 1
    for b in range(k):
        bits[starts + high + 1 + b] = (freq >> b) & 1
    return np.packbits(bits, bitorder="little").tobytes()


def encode_table(freq, levels):
    """The header's first words and the frequency table: plain (u16 per symbol) or Rice-coded,
    whichever is shorter."""
    plain = freq.astype("<u2").tobytes()
    plain += b"\0" * (-len(plain) % 4)
    k, best = min(((k, rice_code(freq, k)) for k in range(MAX_RICE_PARAMETER + 1)),
                  key=lambda pair: len(pair[1]))
    if 8 + len(best) < len(plain):
        return levels | CODED_TABLE_FLAG, np.array([k, len(best)], dtype="<u4").tobytes() + best
    return levels, plain


def decode_table(raw, at, levels_word, max_levels):
    """(levels, frequencies, offset after the table) of the table at raw[at:], for the header's
    levels word; RansError if it is damaged."""
    levels = levels_word & ~CODED_TABLE_FLAG
    if not 1 <= levels <= max_levels:
        raise RansError(f"levels {levels}, expected 1 to {max_levels}")
    alphabet = 2 * levels + 1
    if not levels_word & CODED_TABLE_FLAG:
        size = 2 * alphabet
        if at + size > len(raw):
            raise RansError(f"data ends inside its frequency table ({len(raw)} bytes)")
        freq = np.frombuffer(raw, dtype="<u2", count=alphabet, offset=at).astype(np.int64)
        end = at + size + (-size % 4)
    else:
        if at + 8 > len(raw):
            raise RansError(f"data ends inside its coded table's header ({len(raw)} bytes)")
        k, size = (int(v) for v in np.frombuffer(raw, dtype="<u4", count=2, offset=at))
        if k > MAX_RICE_PARAMETER or size % 4 or at + 8 + size > len(raw):
            raise RansError(f"coded table with parameter {k} and {size} bytes does not fit")
        bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8, count=size, offset=at + 8),
                             bitorder="little")
        freq = np.zeros(alphabet, dtype=np.int64)
        pos = 0
        zeros = np.flatnonzero(bits == 0)
        for s in range(alphabet):
            # The unary part ends at the next zero bit.
            z = np.searchsorted(zeros, pos)
            if z >= len(zeros):
                raise RansError(f"coded table ends at symbol {s}")
            stop = int(zeros[z])
            high = stop - pos
            if high > PROB_SCALE >> k or stop + 1 + k > len(bits):
                raise RansError(f"coded table: symbol {s} does not fit")
            low = int(np.dot(bits[stop + 1:stop + 1 + k].astype(np.int64), 1 << np.arange(k)))
            freq[s] = high << k | low
            pos = stop + 1 + k
        if bits[pos:].any():
            raise RansError("coded table: its padding is not zero")
        end = at + 8 + size
    if int(freq.sum()) != PROB_SCALE:
        raise RansError(f"frequencies sum to {int(freq.sum())}, expected {PROB_SCALE}")
    return levels, freq, end


def encode(symbols, freq):
    """(final states (lanes,) uint32, [bytes of each lane]) coding symbols (ints in
    [0, len(freq)), every one with a non-zero frequency) in lanes of LANE_LENGTH."""
    symbols = np.asarray(symbols, dtype=np.int64)
    numel = symbols.size
    lanes = -(-numel // LANE_LENGTH)
    freq64 = freq.astype(np.uint64)
    cum = np.concatenate([[0], np.cumsum(freq64)[:-1]]).astype(np.uint64)
    padded = np.full(lanes * LANE_LENGTH, -1, dtype=np.int64)
    padded[:numel] = symbols
    grid = padded.reshape(lanes, LANE_LENGTH)
    state = np.full(lanes, STATE_LOW, dtype=np.uint64)
    # A lane emits at most 2 bytes per symbol; bytes are pushed in reverse decoding order.
    out = np.zeros((lanes, 2 * LANE_LENGTH), dtype=np.uint8)
    count = np.zeros(lanes, dtype=np.int64)
    rows = np.arange(lanes)
    bound_unit = np.uint64((STATE_LOW >> PROB_BITS) << 8)
    for t in range(LANE_LENGTH - 1, -1, -1):
        s = grid[:, t]
        valid = s >= 0
        s = np.where(valid, s, 0)
        f = np.where(valid, freq64[s], np.uint64(1))
        bound = bound_unit * f
        for _ in range(2):
            emit = valid & (state >= bound)
            if emit.any():
                r = rows[emit]
                out[r, count[r]] = (state[r] & np.uint64(0xFF)).astype(np.uint8)
                count[r] += 1
                state[r] >>= np.uint64(8)
        coded = (state // f << np.uint64(PROB_BITS)) + state % f + cum[s]
        state = np.where(valid, coded, state)
    streams = [out[k, :count[k]][::-1].tobytes() for k in range(lanes)]
    return state.astype(np.uint32), streams


def decode(states, streams, freq, numel):
    """The numel symbols coded by encode; RansError if the streams are inconsistent."""
    lanes = len(streams)
    if lanes != -(-numel // LANE_LENGTH) or len(states) != lanes:
        raise RansError(f"{lanes} lanes, expected {-(-numel // LANE_LENGTH)} for {numel} values")
    freq64 = np.asarray(freq, dtype=np.uint64)
    if int(freq64.sum()) != PROB_SCALE:
        raise RansError(f"frequencies sum to {int(freq64.sum())}, expected {PROB_SCALE}")
    cum = np.concatenate([[0], np.cumsum(freq64)[:-1]]).astype(np.uint64)
    slot_symbol = np.repeat(np.arange(len(freq64)), freq64.astype(np.int64))
    state = np.asarray(states, dtype=np.uint64)
    if np.any(state < STATE_LOW) or np.any(state >= np.uint64(1 << 31)):
        raise RansError("a lane's initial state is outside [2^23, 2^31)")
    lengths = np.array([len(s) for s in streams], dtype=np.int64)
    ends = np.cumsum(lengths)
    pos = ends - lengths
    data = np.frombuffer(b"".join(streams) + b"\0", dtype=np.uint8)
    lane_values = np.full(lanes, LANE_LENGTH, dtype=np.int64)
    lane_values[-1] = numel - (lanes - 1) * LANE_LENGTH
    out = np.zeros((lanes, LANE_LENGTH), dtype=np.int64)
    mask = np.uint64(PROB_SCALE - 1)
    for t in range(LANE_LENGTH):
        active = t < lane_values
        if not active.any():
            break
        slot = state & mask
        s = slot_symbol[slot.astype(np.int64)]
        out[:, t] = s
        decoded = freq64[s] * (state >> np.uint64(PROB_BITS)) + slot - cum[s]
        state = np.where(active, decoded, state)
        for _ in range(2):
            need = active & (state < STATE_LOW)
            if need.any():
                if np.any(pos[need] >= ends[need]):
                    raise RansError("a lane's stream ends before its last value")
                state[need] = (state[need] << np.uint64(8)) | data[pos[need]].astype(np.uint64)
                pos[need] += 1
    if np.any(state != STATE_LOW) or np.any(pos != ends):
        raise RansError("a lane does not end in the initial state with its stream used up")
    return out.reshape(-1)[:numel]
