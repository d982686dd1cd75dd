"""Sketches as stored: each sample's gaps, bit-packed at the width its largest gap needs.

A bottom-s sample holds the s smallest 32-bit values of a document's shingles, in order: the
gaps between them average 2**32 / n for n shingles, so they fit in about log2(2**32 / n) + 3
bits, not 32 (25 bits for a page of 800 shingles; packed, a million pages' sketches take
135 MB less). No library packs sorted integers at a width of their own per row, a batch at a
time, with numpy alone; the format is small enough to own.

A packed sample is: its width w (1 to 32; 0 marks a sample kept whole, as ``<u4`` values),
the number of values n (2 bytes), the first value (4 bytes), then the n - 1 gaps at w bits
each, least significant bit first, the last byte padded with zeros. An empty sample is empty.
Both directions work on many samples at once: numpy's fixed cost per call outweighs the work
of one sample.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["RAW", "WHOLE_TAG", "pack_samples", "unpack_samples"]

U32 = npt.NDArray[np.uint32]
I64 = npt.NDArray[np.int64]

#: the width byte of a sample kept whole: its values follow as 32-bit little-endian integers
RAW = 0
#: the first byte of a sample kept whole
WHOLE_TAG = bytes([RAW])
_HEAD_LAYOUT = np.dtype([("width", "u1"), ("count", "<u2"), ("first", "<u4")])
_HEAD = _HEAD_LAYOUT.itemsize  # 7: packed, no alignment
_MAX_COUNT = 0xFFFF
_LOW32 = np.uint64(0xFFFFFFFF)


def pack_samples(values: U32, lengths: I64) -> list[bytes]:
    """Each sample of ``values`` (``lengths`` values each, ascending within a sample) packed;
    a sample that is not ascending, or too long for the count's 2 bytes, is kept whole."""
    values = np.asarray(values, np.uint32)
    lengths = np.asarray(lengths, np.int64)
    starts = np.cumsum(lengths) - lengths
    if not len(values):
        return [b"" for _ in range(len(lengths))]
    wide = values.astype(np.int64)
    gaps = np.empty(len(values), np.int64)
    gaps[0] = 0
    np.subtract(wide[1:], wide[:-1], out=gaps[1:])
    firsts = starts[lengths > 0]
    gaps[firsts] = 0  # a sample's first value is kept whole, not as a gap
    # the widest gap of each sample, and whether any gap is negative (not ascending)
    largest = np.zeros(len(lengths), np.int64)
    lowest = np.zeros(len(lengths), np.int64)
    present = lengths > 0
    largest[present] = np.maximum.reduceat(gaps, firsts)
    lowest[present] = np.minimum.reduceat(gaps, firsts)
    widths = np.maximum(1, _bit_lengths(largest))
    packable = present & (lowest >= 0) & (lengths <= _MAX_COUNT)
    # every gap's bit position within the packed bytes of all samples (first values: no bits)
    gap_bits = np.where(packable, (lengths - 1).clip(0) * widths, 0)
    sample_bytes = (gap_bits + 7) >> 3
    sample_base = np.cumsum(sample_bytes) - sample_bytes
    owner = np.repeat(np.arange(len(lengths)), lengths)
    rank = np.arange(len(values)) - starts[owner]  # 0 for a first value
    packed = packable[owner] & (rank > 0)
    owner, rank = owner[packed], rank[packed]
    bit = sample_base[owner] * 8 + (rank - 1) * widths[owner]
    gap = gaps[packed].astype(np.uint64)
    word, shift = bit >> 6, (bit & 63).astype(np.uint64)
    total = int(sample_bytes.sum())
    out = np.zeros((total >> 3) + 2, np.uint64)
    # bits of different gaps never overlap: each gap is or-ed into its 64-bit word, and the
    # bits that pass the word's end into the next one
    np.bitwise_or.at(out, word, gap << shift)
    spills = np.flatnonzero(shift + widths[owner].astype(np.uint64) > np.uint64(64))
    np.bitwise_or.at(out, word[spills] + 1, gap[spills] >> (np.uint64(64) - shift[spills]))
    body = out.astype("<u8", copy=False).tobytes()
    heads = np.zeros(len(lengths), _HEAD_LAYOUT)
    heads["width"] = np.where(packable, widths, RAW)
    heads["count"] = lengths.clip(0, _MAX_COUNT)
    heads["first"][present] = values[firsts]
    head_bytes = heads.tobytes()
    raw_values = values.astype("<u4")
    result: list[bytes] = []
    rows = zip(
        starts.tolist(),
        lengths.tolist(),
        packable.tolist(),
        sample_base.tolist(),
        sample_bytes.tolist(),
        strict=True,
    )
    for index, (start, length, is_packed, base, size) in enumerate(rows):
        if not length:
            result.append(b"")
        elif is_packed:
            result.append(
                head_bytes[_HEAD * index : _HEAD * index + _HEAD] + body[base : base + size]
            )
        else:
            result.append(WHOLE_TAG + raw_values[start : start + length].tobytes())
    return result


def unpack_samples(parts: Sequence[bytes | memoryview]) -> tuple[U32, I64]:
    """The values of packed samples (``pack_samples``), concatenated, and each one's length;
    in slices of ``_SLICE`` samples, whose working arrays stay small (a batch of a large
    state verifies thousands of candidates)."""
    if len(parts) <= _SLICE:
        return _unpack(parts)
    slices = [_unpack(parts[at : at + _SLICE]) for at in range(0, len(parts), _SLICE)]
    return np.concatenate([v for v, _ in slices]), np.concatenate([n for _, n in slices])


#: samples unpacked together: numpy's fixed costs are shared, its arrays stay in cache
_SLICE = 512


def _unpack(parts: Sequence[bytes | memoryview]) -> tuple[U32, I64]:
    if not parts:
        return np.zeros(0, np.uint32), np.zeros(0, np.int64)
    sizes = np.fromiter((len(part) for part in parts), np.int64, len(parts))
    joined = b"".join(parts)
    # padded to whole 64-bit words, and one more: a gap is read from the word it starts in
    # and the next
    buffer = np.frombuffer(joined + bytes(16 - len(joined) % 8), np.uint8)
    words = buffer.view("<u8")
    offsets: I64 = np.cumsum(sizes) - sizes
    present = sizes > 0
    widths = np.zeros(len(parts), np.int64)
    widths[present] = buffer[offsets[present]]
    raw = present & (widths == RAW)
    lengths = np.zeros(len(parts), np.int64)
    lengths[raw] = (sizes[raw] - 1) >> 2
    packed = present & ~raw
    at = offsets[packed]
    lengths[packed] = buffer[at + 1].astype(np.int64) | (buffer[at + 2].astype(np.int64) << 8)
    starts: I64 = np.cumsum(lengths) - lengths
    steps = np.zeros(int(lengths.sum()), np.uint64)
    is_step = np.ones(len(steps), np.bool_)  # a gap of a packed sample
    is_step[starts[present]] = False
    # a packed sample's first value, then its gaps
    steps[starts[packed]] = _read(words, (at + 3) * 8, np.full(len(at), 32, np.int64))
    gaps = (lengths - 1).clip(0) * packed
    if gaps.any():
        # each gap's bit position: the running sum of the widths before it
        width = np.repeat(widths, gaps)
        step = np.empty(len(width), np.int64)
        step[0] = 0
        step[1:] = width[:-1]
        has = gaps > 0
        begin = (offsets[has] + _HEAD) * 8
        end = begin + (gaps * widths)[has]
        # at a sample's first gap, from the end of the one before (ends are a gap past)
        step[(np.cumsum(gaps) - gaps)[has]] += begin - np.concatenate(([0], end[:-1]))
        steps[is_step & np.repeat(packed, lengths)] = _read(words, np.cumsum(step), width)
    # a sample kept whole: its values as they are, taken as gaps like the rest
    if raw.any():
        kept_whole = lengths[raw]
        whole = np.repeat(np.flatnonzero(raw), kept_whole)
        rank: I64 = np.arange(len(whole)) - np.repeat(
            np.cumsum(kept_whole) - kept_whole, kept_whole
        )
        value_at = starts[whole] + rank
        steps[value_at] = _read(words, (offsets[whole] + 1 + 4 * rank) * 8, np.full(len(rank), 32))
        steps[value_at[rank > 0]] -= steps[value_at[rank > 0] - 1]  # modulo 2**64, as it sums
    # each sample's values: the running sum of its steps, from its own first value on
    totals = np.cumsum(steps)
    firsts = starts[present]
    before = totals[firsts] - steps[firsts]
    values = (totals - np.repeat(before, lengths[present])).astype(np.uint32)
    return values, lengths


def _read(words: npt.NDArray[np.uint64], bits: I64, widths: I64) -> npt.NDArray[np.uint64]:
    """The ``widths``-bit integers (up to 32) starting at ``bits`` in little-endian words."""
    word = bits >> 6
    shift = (bits & 63).astype(np.uint64)
    low = words[word] >> shift
    # the next word's bits above these; shifted in two steps, as a shift by 64 is undefined
    high = (words[word + 1] << np.uint64(1)) << (np.uint64(63) - shift)
    mask = (np.uint64(1) << widths.astype(np.uint64)) - np.uint64(1)
    read: npt.NDArray[np.uint64] = (low | high) & mask
    return read


def _bit_lengths(values: I64) -> I64:
    """Each non-negative value's bit length (0 for 0): frexp's exponent, exact."""
    lengths: I64 = np.frexp(values.astype(np.float64))[1].astype(np.int64)
    return lengths
