#!/usr/bin/python3
# ggml_quant.py: a second, independent implementation of docs/formats.md in numpy: ggml- and
# MLX-style quantizers, vectorized dequantizers, and the matmul test cases for the GPU tests.
"""Quantize random weights, dequantize them again, and write matmul test cases.

  ggml_quant.py make --format q4_K --m 33 --k 512 --tokens 3 --seed 7 --out DIR
                     [--experts E --top-k K] [--scale-type bf16|f16|f32]
  ggml_quant.py dequant --format F --w W.npy [--s S.npy --b B.npy] --out D.npy
  ggml_quant.py selftest

Block formats: q4_0 q4_1 q5_0 q5_1 q8_0 iq4_nl mxfp4 q2_K q3_K q4_K q5_K q6_K.
MLX affine: mlx<bits>_g<group>, bits in 2 3 4 5 6 8, group in 32 64 128.

The dequantizers (section "dequantizers") are written from docs/formats.md alone and
use nothing from the quantizers, so a quantizer bug cannot hide behind a
matching dequantizer bug; the selftest closes the loop through the NMSE.
"""
import argparse
import os
import re
import sys

import numpy as np

BLOCK_FORMATS = {  # name: (elements per block, bytes per block)
    "q4_0": (32, 18), "q4_1": (32, 20), "q5_0": (32, 22), "q5_1": (32, 24),
    "q8_0": (32, 34), "iq4_nl": (32, 18), "mxfp4": (32, 17),
    "q2_K": (256, 84), "q3_K": (256, 110), "q4_K": (256, 144),
    "q5_K": (256, 176), "q6_K": (256, 210),
}
IQ4NL_TABLE = np.array([-127, -104, -83, -65, -49, -35, -22, -10,
                        1, 13, 25, 38, 53, 69, 89, 113], dtype=np.int64)
MXFP4_TABLE = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=np.int64)
MLX_BITS = (2, 3, 4, 5, 6, 8)
MLX_GROUPS = (32, 64, 128)
SCALE_DTYPES = {"bf16": np.dtype("<u2"), "f16": np.dtype("<f2"), "f32": np.dtype("<f4")}


def parse_mlx(name):
    """(bits, group) for an MLX format name, or None."""
    m = re.fullmatch(r"mlx(\d)_g(\d+)", name)
    if not m or int(m.group(1)) not in MLX_BITS or int(m.group(2)) not in MLX_GROUPS:
        return None
    return int(m.group(1)), int(m.group(2))


# ---------------------------------------------------------------- dequantizers


def _f16(blocks, off):
    """The f16 field at byte offset off of each block, as float64."""
    return np.ascontiguousarray(blocks[:, off:off + 2]).view("<f2")[:, 0].astype(np.float64)


def _nibbles(qs):
    """Low nibbles are elements 0..15, high nibbles 16..31."""
    return np.concatenate([qs & 15, qs >> 4], axis=1).astype(np.int64)


def _fifth_bits(qh):
    """Bit j of the little-endian u32 qh, for j in 0..31."""
    h = np.ascontiguousarray(qh).view("<u4")[:, 0].astype(np.int64)
    return (h[:, None] >> np.arange(32)) & 1


def dq_q4_0(b):
    return _f16(b, 0)[:, None] * (_nibbles(b[:, 2:18]) - 8)


def dq_q4_1(b):
    return _f16(b, 0)[:, None] * _nibbles(b[:, 4:20]) + _f16(b, 2)[:, None]


def dq_q5_0(b):
    q = _nibbles(b[:, 6:22]) | (_fifth_bits(b[:, 2:6]) << 4)
    return _f16(b, 0)[:, None] * (q - 16)


def dq_q5_1(b):
    q = _nibbles(b[:, 8:24]) | (_fifth_bits(b[:, 4:8]) << 4)
    return _f16(b, 0)[:, None] * q + _f16(b, 2)[:, None]


def dq_q8_0(b):
    return _f16(b, 0)[:, None] * np.ascontiguousarray(b[:, 2:34]).view(np.int8)


def dq_iq4_nl(b):
    return _f16(b, 0)[:, None] * IQ4NL_TABLE[_nibbles(b[:, 2:18])]


def dq_mxfp4(b):
    s = np.ldexp(1.0, b[:, 0].astype(np.int64) - 128)
    return s[:, None] * MXFP4_TABLE[_nibbles(b[:, 1:17])]


def dq_q2_K(b):
    n = len(b)
    scales = b[:, 0:16].astype(np.int64).reshape(n, 2, 4, 2, 1)  # half, shift step, sub, -
    qs = b[:, 16:80].astype(np.int64).reshape(n, 2, 1, 2, 16)  # half, -, sub, l
    q = (qs >> (2 * np.arange(4)).reshape(1, 1, 4, 1, 1)) & 3
    d, dmin = _f16(b, 80).reshape(n, 1, 1, 1, 1), _f16(b, 82).reshape(n, 1, 1, 1, 1)
    y = (d * (scales & 15)) * q - dmin * (scales >> 4)
    return y.reshape(n, 256)


def _q3_K_scales(packed):
    a = np.ascontiguousarray(packed).view("<u4").astype(np.uint32)  # [n, 3]
    a0, a1, t = a[:, 0], a[:, 1], a[:, 2]
    k1, k2 = np.uint32(0x03030303), np.uint32(0x0F0F0F0F)
    w = np.stack([
        (a0 & k2) | (((t >> 0) & k1) << 4),
        (a1 & k2) | (((t >> 2) & k1) << 4),
        ((a0 >> 4) & k2) | (((t >> 4) & k1) << 4),
        ((a1 >> 4) & k2) | (((t >> 6) & k1) << 4),
    ], axis=1).astype("<u4")
    return w.view(np.int8).astype(np.int64) - 32  # [n, 16]


def dq_q3_K(b):
    n = len(b)
    sc = _q3_K_scales(b[:, 96:108]).reshape(n, 2, 4, 2, 1)  # scale index 8h + 2j + sub
    qs = b[:, 32:96].astype(np.int64).reshape(n, 2, 1, 2, 16)
    low = (qs >> (2 * np.arange(4)).reshape(1, 1, 4, 1, 1)) & 3
    hmask = b[:, 0:32].astype(np.int64).reshape(n, 1, 1, 2, 16)  # byte 16 sub + l, any half
    hbit = (hmask >> np.arange(8).reshape(1, 2, 4, 1, 1)) & 1  # mask bit 4h + j
    d = _f16(b, 108).reshape(n, 1, 1, 1, 1)
    return ((d * sc) * (low - 4 * (1 - hbit))).reshape(n, 256)


def _k4_scales_mins(s):
    s = s.astype(np.int64)
    sc = np.concatenate([s[:, 0:4] & 63, (s[:, 8:12] & 15) | ((s[:, 0:4] >> 6) << 4)], axis=1)
    mn = np.concatenate([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)], axis=1)
    return sc, mn


def _dq_q45_K(b, qh, qs):
    n = len(b)
    sc, mn = _k4_scales_mins(b[:, 4:16])
    qs = qs.astype(np.int64).reshape(n, 4, 1, 32)  # chunk, nibble, l
    q = np.concatenate([qs & 15, qs >> 4], axis=2)  # sub-block 2c + nibble
    if qh is not None:
        shifts = np.arange(8).reshape(1, 4, 2, 1)
        q = q + (((qh.astype(np.int64).reshape(n, 1, 1, 32) >> shifts) & 1) << 4)
    d, dmin = _f16(b, 0).reshape(n, 1, 1, 1), _f16(b, 2).reshape(n, 1, 1, 1)
    y = (d * sc.reshape(n, 4, 2, 1)) * q - dmin * mn.reshape(n, 4, 2, 1)
    return y.reshape(n, 256)


def dq_q4_K(b):
    return _dq_q45_K(b, None, b[:, 16:144])


def dq_q5_K(b):
    return _dq_q45_K(b, b[:, 16:48], b[:, 48:176])


def dq_q6_K(b):
    n = len(b)
    ql = b[:, 0:128].astype(np.int64).reshape(n, 2, 1, 2, 32)  # half, nibble, a, l
    low = np.concatenate([ql & 15, ql >> 4], axis=2).reshape(n, 2, 4, 32)  # k = 2 nibble + a
    qh = b[:, 128:192].astype(np.int64).reshape(n, 2, 1, 32)
    high = (qh >> (2 * np.arange(4)).reshape(1, 1, 4, 1)) & 3
    q = (low | (high << 4)) - 32
    sc = np.ascontiguousarray(b[:, 192:208]).view(np.int8).astype(np.int64)
    sc = sc.reshape(n, 2, 4, 2, 1)  # scales[8h + 2k + l/16]
    d = _f16(b, 208).reshape(n, 1, 1, 1, 1)
    return ((d * sc) * q.reshape(n, 2, 4, 2, 16)).reshape(n, 256)


DEQUANT = {name: globals()["dq_" + name] for name in BLOCK_FORMATS}


def dequant_blocks(fmt, w):
    """w: uint8 [..., row_bytes] -> float64 [..., K]."""
    qk, bb = BLOCK_FORMATS[fmt]
    lead = w.shape[:-1]
    blocks = np.ascontiguousarray(w).reshape(-1, bb)
    return DEQUANT[fmt](blocks).reshape(*lead, w.shape[-1] // bb * qk)


def scales_to_f64(a):
    """bf16 bits (<u2), f16 or f32 arrays -> float64."""
    if a.dtype == np.dtype("<u2"):
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def dequant_mlx(bits, group, w, s, b):
    """w: uint32 [..., K*bits/32]; s, b: [..., K/group] -> float64 [..., K]."""
    lead = w.shape[:-1]
    stream = np.unpackbits(np.ascontiguousarray(w).astype("<u4").view(np.uint8),
                           axis=-1, bitorder="little")
    k = stream.shape[-1] // bits
    q = stream.reshape(*lead, k, bits).astype(np.int64) @ (1 << np.arange(bits))
    sf = np.repeat(scales_to_f64(s), group, axis=-1)
    bf = np.repeat(scales_to_f64(b), group, axis=-1)
    return q * sf + bf


# ------------------------------------------------------------------ quantizers
# Floats in float32 as ggml computes them; nearest_int is round-half-even, as
# ggml's magic-number trick; roundf (q8_0) is half away from zero.

GROUP_MAX_EPS = np.float32(1e-15)


def _to_f16_bits(x):
    return np.asarray(x, dtype=np.float32).astype("<f2").view("<u2")


def _f16_round(x):
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)


def _put_f16(out, off, x):
    out[:, off:off + 2] = _to_f16_bits(x).reshape(-1, 1).view(np.uint8).reshape(-1, 2)


def _recip(x):
    with np.errstate(divide="ignore"):
        return np.where(x != 0, np.float32(1) / np.where(x != 0, x, 1), 0).astype(np.float32)


def _signed_absmax(x):
    """The element of largest magnitude of each row (first one on ties)."""
    i = np.argmax(np.abs(x), axis=1)
    return x[np.arange(len(x)), i]


def _pack_nibbles(q):
    """q [n, 32] values 0..15 -> 16 bytes: low nibbles 0..15, high 16..31."""
    return (q[:, :16] | (q[:, 16:] << 4)).astype(np.uint8)


def _pack_qh32(q):
    """Fifth bits of q [n, 32] into a little-endian u32 per row."""
    h = ((q >> 4) & 1).astype(np.uint32) << np.arange(32, dtype=np.uint32)
    return h.sum(axis=1, dtype=np.uint32).astype("<u4").view(np.uint8).reshape(-1, 4)


def q_q4_0(x):
    mx = _signed_absmax(x)
    d = mx / np.float32(-8)
    q = np.minimum(15, np.trunc(x * _recip(d)[:, None] + np.float32(8.5))).astype(np.int64)
    out = np.zeros((len(x), 18), np.uint8)
    _put_f16(out, 0, d)
    out[:, 2:] = _pack_nibbles(q)
    return out


def q_q4_1(x):
    lo, hi = x.min(axis=1), x.max(axis=1)
    d = (hi - lo) / np.float32(15)
    q = np.minimum(15, np.trunc((x - lo[:, None]) * _recip(d)[:, None] + np.float32(0.5)))
    out = np.zeros((len(x), 20), np.uint8)
    _put_f16(out, 0, d)
    _put_f16(out, 2, lo)
    out[:, 4:] = _pack_nibbles(q.astype(np.int64))
    return out


def q_q5_0(x):
    d = _signed_absmax(x) / np.float32(-16)
    q = np.minimum(31, np.trunc(x * _recip(d)[:, None] + np.float32(16.5))).astype(np.int64)
    out = np.zeros((len(x), 22), np.uint8)
    _put_f16(out, 0, d)
    out[:, 2:6] = _pack_qh32(q)
    out[:, 6:] = _pack_nibbles(q & 15)
    return out


def q_q5_1(x):
    lo, hi = x.min(axis=1), x.max(axis=1)
    d = (hi - lo) / np.float32(31)
    q = np.minimum(31, np.trunc((x - lo[:, None]) * _recip(d)[:, None] + np.float32(0.5)))
    q = q.astype(np.int64)
    out = np.zeros((len(x), 24), np.uint8)
    _put_f16(out, 0, d)
    _put_f16(out, 2, lo)
    out[:, 4:8] = _pack_qh32(q)
    out[:, 8:] = _pack_nibbles(q & 15)
    return out


def q_q8_0(x):
    d = np.abs(x).max(axis=1) / np.float32(127)
    v = x * _recip(d)[:, None]
    q = np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))
    out = np.zeros((len(x), 34), np.uint8)
    _put_f16(out, 0, d)
    out[:, 2:] = q.astype(np.int8).view(np.uint8)
    return out


def _nearest_index(table, v, ties_up):
    """Index of the nearest entry of a sorted table."""
    mid = (table[1:] + table[:-1]) / 2.0
    return np.searchsorted(mid, v, side="right" if ties_up else "left")


def q_iq4_nl(x, ntry=7):
    # ggml's quantize_row_iq4_nl_impl for one block of 32 with no importance
    # weights (w = x^2): a start from the largest value, a least-squares
    # scale, then 2*ntry alternative scales kept when they fit better.
    table = IQ4NL_TABLE.astype(np.float32)
    x = x.astype(np.float32)
    w = x * x
    mx = _signed_absmax(x)
    ok = np.abs(mx) >= GROUP_MAX_EPS
    safe_mx = np.where(ok, mx, 1).astype(np.float32)

    def fit(iscale):
        q = table[_nearest_index(table, iscale[:, None] * x, True)]
        return (w * q * x).sum(axis=1), (w * q * q).sum(axis=1)

    sumqx, sumq2 = fit(_recip(-safe_mx / table[0]))
    d = np.where(sumq2 > 0, sumqx / np.where(sumq2 > 0, sumq2, 1), 0).astype(np.float32)
    best = d * sumqx
    for itry in range(-ntry, ntry + 1):
        sumqx, sumq2 = fit(((itry + table[0]) / safe_mx).astype(np.float32))
        better = (sumq2 > 0) & (sumqx * sumqx > best * sumq2)
        d = np.where(better, sumqx / np.where(sumq2 > 0, sumq2, 1), d).astype(np.float32)
        best = np.where(better, d * sumqx, best)
    d = np.where(ok, d, 0).astype(np.float32)
    idx = _nearest_index(table, _recip(d)[:, None] * x, True)
    out = np.zeros((len(x), 18), np.uint8)
    _put_f16(out, 0, d)
    out[:, 2:] = _pack_nibbles(idx)
    return out


def q_mxfp4(x):
    # ggml's quantize_row_mxfp4_ref: exponent from the block maximum, then the
    # nearest table entry, ties to the first (smaller magnitude) entry.
    amax = np.abs(x).max(axis=1)
    with np.errstate(divide="ignore"):
        e = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1))) - 2 + 127, 0)
    e = e.astype(np.int64)
    d = np.ldexp(np.float32(1), e - 128).astype(np.float32)
    v = x / d[:, None]
    mag = _nearest_index(np.array([0, 1, 2, 3, 4, 6, 8, 12], np.float32), np.abs(v), False)
    idx = np.where((v < 0) & (mag > 0), mag + 8, mag)
    out = np.zeros((len(x), 17), np.uint8)
    out[:, 0] = e.astype(np.uint8)
    out[:, 1:] = _pack_nibbles(idx)
    return out


def _make_qkx2(x, w, nmax, rmin, rdelta, nstep, use_mad):
    """ggml's make_qkx2_quants over rows of x: an asymmetric fit (scale, min <= 0)
    searched over nstep+1 candidate scales. Returns (scale, -min, L)."""
    x, w = x.astype(np.float32), w.astype(np.float32)
    lo = np.minimum(x.min(axis=1), 0)
    hi = x.max(axis=1)
    flat = hi == lo
    rng = np.where(flat, 1, hi - lo).astype(np.float32)
    sum_w, sum_x = w.sum(axis=1), (w * x).sum(axis=1)

    def levels(iscale):
        return np.clip(np.rint(iscale[:, None] * (x - lo[:, None])), 0, nmax).astype(np.float32)

    def error(scale, mn, L):
        diff = scale[:, None] * L + mn[:, None] - x
        return (w * (np.abs(diff) if use_mad else diff * diff)).sum(axis=1)

    iscale = (nmax / rng).astype(np.float32)
    scale = (1 / iscale).astype(np.float32)
    mn = lo.copy()
    L = levels(iscale)
    best = error(scale, mn, L)
    for step in range(nstep + 1):
        La = levels(((rmin + rdelta * step + nmax) / rng).astype(np.float32))
        sum_l, sum_l2, sum_xl = (w * La).sum(axis=1), (w * La * La).sum(axis=1), \
            (w * La * x).sum(axis=1)
        D = sum_w * sum_l2 - sum_l * sum_l
        Ds = np.where(D > 0, D, 1)
        this_scale = (sum_w * sum_xl - sum_x * sum_l) / Ds
        this_min = (sum_l2 * sum_x - sum_l * sum_xl) / Ds
        pos = this_min > 0
        this_scale = np.where(pos, sum_xl / np.where(sum_l2 > 0, sum_l2, 1), this_scale)
        this_min = np.where(pos, 0, this_min)
        cur = error(this_scale, this_min, La)
        better = (D > 0) & (cur < best)
        L = np.where(better[:, None], La, L)
        best = np.where(better, cur, best)
        scale = np.where(better, this_scale, scale)
        mn = np.where(better, this_min, mn)
    scale = np.where(flat, 0, scale).astype(np.float32)
    mn = np.where(flat, lo, mn).astype(np.float32)
    return scale, -mn, np.where(flat[:, None], 0, L)


def _superblock_levels(values, top):
    """Quantize per-sub-block values [n, s] to integers 0..top with one f16 step
    per super-block, as ggml does: step = max/top. Returns (step_f16, ints)."""
    vmax = values.max(axis=1)
    inv = np.where(vmax > 0, top / np.where(vmax > 0, vmax, 1), 0).astype(np.float32)
    ints = np.clip(np.rint(inv[:, None] * values), 0, top).astype(np.int64)
    return np.where(vmax > 0, vmax / top, 0).astype(np.float32), ints


def _requant(x, step, zero, nmax):
    """Levels 0..nmax for x ~ step*L - zero (step and zero per sub-block)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        L = np.rint((x + zero[..., None]) / step[..., None])
    return np.clip(np.where(step[..., None] != 0, L, 0), 0, nmax).astype(np.int64)


def _pack_crumbs(L):
    """Levels [n, 256] of 2 bits -> 64 bytes: element 128h + 32j + m is bits 2j
    of byte 32h + m."""
    L = L.reshape(len(L), 2, 4, 32)
    return (L[:, :, 0] | (L[:, :, 1] << 2) | (L[:, :, 2] << 4) | (L[:, :, 3] << 6)) \
        .astype(np.uint8).reshape(len(L), 64)


def q_q2_K(x):
    n = len(x)
    xs = x.reshape(n * 16, 16)
    scale, mins, _ = _make_qkx2(xs, np.abs(xs), 3, -0.5, 0.1, 15, True)
    scale, mins = scale.reshape(n, 16), mins.reshape(n, 16)
    d, ls = _superblock_levels(scale, 15)
    dmin, lm = _superblock_levels(mins, 15)
    d, dmin = _f16_round(d), _f16_round(dmin)
    L = _requant(x.reshape(n, 16, 16), d[:, None] * ls, dmin[:, None] * lm, 3)
    out = np.zeros((n, 84), np.uint8)
    out[:, 0:16] = (ls | (lm << 4)).astype(np.uint8)
    out[:, 16:80] = _pack_crumbs(L.reshape(n, 256))
    _put_f16(out, 80, d)
    _put_f16(out, 82, dmin)
    return out


def _make_q3(x, nmax=4, iters=5):
    """ggml's make_q3_quants (do_rmse): a symmetric scale for levels
    -nmax..nmax-1, refined one element at a time; vectorized over rows."""
    x = x.astype(np.float32)
    mx = _signed_absmax(x)
    ok = np.abs(mx) >= GROUP_MAX_EPS
    iscale = (-nmax / np.where(ok, mx, 1)).astype(np.float32)
    L = np.clip(np.rint(iscale[:, None] * x), -nmax, nmax - 1).astype(np.float32)
    w = x * x
    sumlx, suml2 = (w * x * L).sum(axis=1), (w * L * L).sum(axis=1)
    for _ in range(iters):
        for i in range(x.shape[1]):
            xi, wi, li = x[:, i], w[:, i], L[:, i]
            slx = sumlx - wi * xi * li
            sl2 = suml2 - wi * li * li
            with np.errstate(divide="ignore", invalid="ignore"):
                new = np.clip(np.rint(xi * sl2 / slx), -nmax, nmax - 1)
            slx2, sl22 = slx + wi * xi * new, sl2 + wi * new * new
            better = slx2 * slx2 * suml2 > sumlx * sumlx * sl22
            take = (slx > 0) & (new != li) & (sl22 > 0) & better
            L[:, i] = np.where(take, new, li)
            sumlx, suml2 = np.where(take, slx2, sumlx), np.where(take, sl22, suml2)
    scale = np.where(ok & (suml2 > 0), sumlx / np.where(suml2 > 0, suml2, 1), 0)
    return scale.astype(np.float32)


def q_q3_K(x):
    n = len(x)
    scale = _make_q3(x.reshape(n * 16, 16)).reshape(n, 16)
    mx = _signed_absmax(scale)
    iscale = np.where(mx != 0, -32 / np.where(mx != 0, mx, 1), 0).astype(np.float32)
    ls = np.clip(np.rint(iscale[:, None] * scale), -32, 31).astype(np.int64) + 32
    d = _f16_round(_recip(iscale))
    # Symmetric levels -4..3, stored as 0..7.
    step = d[:, None] * (ls - 32)
    with np.errstate(divide="ignore", invalid="ignore"):
        L = np.rint(x.reshape(n, 16, 16) / step[..., None])
    L = (np.clip(np.where(step[..., None] != 0, L, 0), -4, 3) + 4).astype(np.int64).reshape(n, 256)
    out = np.zeros((n, 110), np.uint8)
    # hmask: element e sets bit e/32 of byte e%32 when its level is 4..7.
    hb = (L >> 2).reshape(n, 8, 32) << np.arange(8).reshape(1, 8, 1)
    out[:, 0:32] = hb.sum(axis=1).astype(np.uint8)
    out[:, 32:96] = _pack_crumbs(L & 3)
    # 6-bit scales: low nibble of j in byte j (j < 8) or the high nibble of
    # byte j - 8; the top two bits at bits 2*(j/4) of byte 8 + j%4.
    packed = np.zeros((n, 12), np.int64)
    packed[:, 0:8] = (ls[:, 0:8] & 15) | ((ls[:, 8:16] & 15) << 4)
    top = (ls >> 4).reshape(n, 4, 4)  # [j/4, j%4]
    packed[:, 8:12] = top[:, 0] | (top[:, 1] << 2) | (top[:, 2] << 4) | (top[:, 3] << 6)
    out[:, 96:108] = packed.astype(np.uint8)
    _put_f16(out, 108, d)
    return out


def _pack_k4_scales(ls, lm):
    """6-bit scales and mins of 8 sub-blocks -> the 12 bytes of q4_K/q5_K."""
    s = np.zeros((len(ls), 12), np.int64)
    s[:, 0:4] = ls[:, 0:4] | ((ls[:, 4:8] >> 4) << 6)
    s[:, 4:8] = lm[:, 0:4] | ((lm[:, 4:8] >> 4) << 6)
    s[:, 8:12] = (ls[:, 4:8] & 15) | ((lm[:, 4:8] & 15) << 4)
    return s.astype(np.uint8)


def _q45_K(x, nmax, rmin, nstep):
    n = len(x)
    xs = x.reshape(n * 8, 32).astype(np.float32)
    av = np.sqrt((xs * xs).mean(axis=1))
    scale, mins, _ = _make_qkx2(xs, av[:, None] + np.abs(xs), nmax, rmin, 0.1, nstep, False)
    d, ls = _superblock_levels(scale.reshape(n, 8), 63)
    dmin, lm = _superblock_levels(mins.reshape(n, 8), 63)
    d, dmin = _f16_round(d), _f16_round(dmin)
    L = _requant(x.reshape(n, 8, 32), d[:, None] * ls, dmin[:, None] * lm, nmax)
    return d, dmin, _pack_k4_scales(ls, lm), L.reshape(n, 4, 2, 32)  # chunk, nibble, l


def q_q4_K(x):
    d, dmin, scales, L = _q45_K(x, 15, -1.0, 20)
    out = np.zeros((len(x), 144), np.uint8)
    _put_f16(out, 0, d)
    _put_f16(out, 2, dmin)
    out[:, 4:16] = scales
    out[:, 16:] = (L[:, :, 0] | (L[:, :, 1] << 4)).astype(np.uint8).reshape(len(x), 128)
    return out


def q_q5_K(x):
    d, dmin, scales, L = _q45_K(x, 31, -0.5, 15)
    n = len(x)
    out = np.zeros((n, 176), np.uint8)
    _put_f16(out, 0, d)
    _put_f16(out, 2, dmin)
    out[:, 4:16] = scales
    # Fifth bit of (chunk c, nibble) at bit 2c + nibble of qh[l].
    hb = ((L >> 4) & 1).reshape(n, 8, 32) << np.arange(8).reshape(1, 8, 1)
    out[:, 16:48] = hb.sum(axis=1).astype(np.uint8)
    L = L & 15
    out[:, 48:] = (L[:, :, 0] | (L[:, :, 1] << 4)).astype(np.uint8).reshape(n, 128)
    return out


def _make_qx(x, nmax=32):
    """ggml's make_qx_quants with rmse_type 1 (w = x^2): symmetric levels
    -nmax..nmax-1, 18 alternative scales around the max/-nmax start."""
    x = x.astype(np.float32)
    w = x * x
    mx = _signed_absmax(x)
    ok = np.abs(mx) >= GROUP_MAX_EPS
    mx = np.where(ok, mx, 1).astype(np.float32)

    def fit(iscale):
        L = np.clip(np.rint(iscale[:, None] * x), -nmax, nmax - 1)
        return (w * x * L).sum(axis=1), (w * L * L).sum(axis=1)

    sumlx, suml2 = fit((-nmax / mx).astype(np.float32))
    scale = np.where(suml2 > 0, sumlx / np.where(suml2 > 0, suml2, 1), 0)
    best = scale * sumlx
    for i in range(-9, 10):
        if i == 0:
            continue
        sumlx, suml2 = fit((-(nmax + np.float32(0.1) * i) / mx).astype(np.float32))
        better = (suml2 > 0) & (sumlx * sumlx > best * suml2)
        scale = np.where(better, sumlx / np.where(suml2 > 0, suml2, 1), scale)
        best = np.where(better, scale * sumlx, best)
    return np.where(ok, scale, 0).astype(np.float32)


def q_q6_K(x):
    n = len(x)
    scale = _make_qx(x.reshape(n * 16, 16)).reshape(n, 16)
    mx = _signed_absmax(scale)
    iscale = np.where(mx != 0, -128 / np.where(mx != 0, mx, 1), 0).astype(np.float32)
    ls = np.minimum(127, np.rint(iscale[:, None] * scale)).astype(np.int64)
    d = _f16_round(_recip(iscale))
    step = d[:, None] * ls
    with np.errstate(divide="ignore", invalid="ignore"):
        L = np.rint(x.reshape(n, 16, 16) / step[..., None])
    L = (np.clip(np.where(step[..., None] != 0, L, 0), -32, 31) + 32).astype(np.int64)
    L = L.reshape(n, 2, 4, 32)  # half, quarter k, l: element 128h + 32k + l
    out = np.zeros((n, 210), np.uint8)
    ql = np.stack([L[:, :, 0] & 15 | ((L[:, :, 2] & 15) << 4),
                   L[:, :, 1] & 15 | ((L[:, :, 3] & 15) << 4)], axis=2)  # ql[64h + 32a + l]
    out[:, 0:128] = ql.astype(np.uint8).reshape(n, 128)
    hi = L >> 4
    qh = hi[:, :, 0] | (hi[:, :, 1] << 2) | (hi[:, :, 2] << 4) | (hi[:, :, 3] << 6)
    out[:, 128:192] = qh.astype(np.uint8).reshape(n, 64)
    out[:, 192:208] = ls.astype(np.int8).view(np.uint8)
    _put_f16(out, 208, d)
    return out


QUANT = {name: globals()["q_" + name] for name in BLOCK_FORMATS}


def quantize_blocks(fmt, x):
    """x: float [..., K] -> uint8 [..., K/QK*block_bytes]."""
    qk, bb = BLOCK_FORMATS[fmt]
    lead = x.shape[:-1]
    blocks = QUANT[fmt](np.ascontiguousarray(x, dtype=np.float32).reshape(-1, qk))
    return blocks.reshape(*lead, x.shape[-1] // qk * bb)


def to_scale_dtype(x, stype):
    """float32 -> bf16 bits (round to nearest even), f16 or f32."""
    x = np.asarray(x, dtype=np.float32)
    if stype == "bf16":
        u = x.view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")
    return x.astype(SCALE_DTYPES[stype])


def quantize_mlx(w, bits, group, stype):
    """mlx.core.quantize (affine): per group scale = (max-min)/(2^bits-1), bias
    at the edge of larger magnitude, then the scale nudged so that 0 is
    exactly representable; values rounded and packed LSB-first into u32."""
    lead, k = w.shape[:-1], w.shape[-1]
    g = np.asarray(w, dtype=np.float32).reshape(-1, k // group, group)
    n_bins = np.float32((1 << bits) - 1)
    wmax, wmin = g.max(axis=-1), g.min(axis=-1)
    mask = np.abs(wmin) > np.abs(wmax)
    scales = np.maximum((wmax - wmin) / n_bins, np.float32(1e-7))
    scales = np.where(mask, scales, -scales)
    edge = np.where(mask, wmin, wmax)
    q0 = np.rint(edge / scales)
    scales = np.where(q0 != 0, edge / np.where(q0 != 0, q0, 1), scales).astype(np.float32)
    biases = np.where(q0 == 0, 0, edge).astype(np.float32)
    s, b = to_scale_dtype(scales, stype), to_scale_dtype(biases, stype)
    # Quantize against the stored (rounded) scales and biases.
    sf, bf = scales_to_f64(s)[..., None], scales_to_f64(b)[..., None]
    q = np.clip(np.rint((g - bf) / sf), 0, n_bins).astype(np.uint32).reshape(-1, k)
    stream = ((q[:, :, None] >> np.arange(bits, dtype=np.uint32)) & 1).astype(np.uint8)
    packed = np.packbits(stream.reshape(len(q), k * bits), axis=-1, bitorder="little")
    wq = packed.view("<u4").reshape(*lead, k * bits // 32)
    return wq, s.reshape(*lead, k // group), b.reshape(*lead, k // group)


# ------------------------------------------------------------------ commands


def make_case(fmt, m, k, tokens, seed, out, experts=0, top_k=0, stype="bf16"):
    rng = np.random.default_rng(seed)
    mlx = parse_mlx(fmt)
    if mlx is None and fmt not in BLOCK_FORMATS:
        raise SystemExit(f"ggml_quant.py: unknown format {fmt}")
    qk = mlx[1] if mlx else BLOCK_FORMATS[fmt][0]
    if k % qk:
        raise SystemExit(f"ggml_quant.py: --k {k} is not a multiple of {qk} for {fmt}")
    if experts and not 0 < top_k <= experts:
        raise SystemExit("ggml_quant.py: --top-k must be in 1..--experts")
    shape = (experts, m, k) if experts else (m, k)
    w = rng.standard_normal(shape, dtype=np.float32)
    os.makedirs(out, exist_ok=True)
    if mlx:
        wq, s, b = quantize_mlx(w, mlx[0], mlx[1], stype)
        np.save(os.path.join(out, "W.npy"), wq)
        np.save(os.path.join(out, "S.npy"), s)
        np.save(os.path.join(out, "B.npy"), b)
        deq = dequant_mlx(mlx[0], mlx[1], wq, s, b)
    else:
        wq = quantize_blocks(fmt, w)
        np.save(os.path.join(out, "W.npy"), wq)
        deq = dequant_blocks(fmt, wq)
    x = rng.standard_normal((tokens, k), dtype=np.float32)
    np.save(os.path.join(out, "X.npy"), x)
    x64 = x.astype(np.float64)
    if experts:
        ids = np.stack([rng.permutation(experts)[:top_k] for _ in range(tokens)]).astype(np.int32)
        np.save(os.path.join(out, "IDS.npy"), ids.reshape(tokens, top_k))
        ref = np.einsum("tk,tsmk->tsm", x64, deq[ids])
    else:
        ref = x64 @ deq.T
    np.save(os.path.join(out, "REF.npy"), ref)


def dequant_file(fmt, w_path, s_path, b_path, out):
    w = np.load(w_path)
    mlx = parse_mlx(fmt)
    if mlx:
        deq = dequant_mlx(mlx[0], mlx[1], w, np.load(s_path), np.load(b_path))
    elif fmt in BLOCK_FORMATS:
        deq = dequant_blocks(fmt, w)
    else:
        raise SystemExit(f"ggml_quant.py: unknown format {fmt}")
    np.save(out, deq)


# Bounds on NMSE for N(0, 1) weights, about twice what each format reaches.
NMSE_BOUND = {
    "q4_0": 1.5e-2, "q4_1": 1.2e-2, "q5_0": 4e-3, "q5_1": 3e-3, "q8_0": 5e-5,
    "iq4_nl": 1.2e-2, "mxfp4": 3e-2, "q2_K": 2.5e-1, "q3_K": 6e-2, "q4_K": 1.2e-2,
    "q5_K": 3e-3, "q6_K": 8e-4,
}
MLX_NMSE_BOUND = {2: 2.5e-1, 3: 6e-2, 4: 1.5e-2, 5: 4e-3, 6: 1e-3, 8: 6e-5}


def selftest():
    rng = np.random.default_rng(1)
    failures = 0

    def check(name, x, y, bound):
        nonlocal failures
        nmse = float(((x - y) ** 2).sum() / (x.astype(np.float64) ** 2).sum())
        ok = np.isfinite(nmse) and nmse < bound
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name:16s} nmse {nmse:.3e} (bound {bound:.0e})")

    x = rng.standard_normal((64, 1024), dtype=np.float32)
    x[3, 0:32] = 0  # an all-zero block must survive
    x[5, 256:512] *= 1e-3  # and a quiet super-block
    for fmt in BLOCK_FORMATS:
        wq = quantize_blocks(fmt, x)
        if wq.shape != (64, 1024 // BLOCK_FORMATS[fmt][0] * BLOCK_FORMATS[fmt][1]):
            print(f"FAIL {fmt}: shape {wq.shape}")
            failures += 1
        check(fmt, x, dequant_blocks(fmt, wq), NMSE_BOUND[fmt])
    for bits in MLX_BITS:
        for group in MLX_GROUPS:
            for stype in SCALE_DTYPES:
                wq, s, b = quantize_mlx(x, bits, group, stype)
                ok = wq.dtype == np.uint32 and wq.shape == (64, 1024 * bits // 32) \
                    and s.dtype == SCALE_DTYPES[stype] and s.shape == (64, 1024 // group)
                if not ok:
                    print(f"FAIL mlx{bits}_g{group} {stype}: dtypes or shapes")
                    failures += 1
                # Larger groups err more; the bound is for G = 64 and scales with G.
                check(f"mlx{bits}_g{group} {stype}", x, dequant_mlx(bits, group, wq, s, b),
                      MLX_NMSE_BOUND[bits] * (1.5 if group == 128 else 1))
    print("selftest:", "FAIL" if failures else "ok")
    return 1 if failures else 0


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make", help="write W, X, REF (and S, B, IDS) .npy files")
    mk.add_argument("--format", required=True)
    mk.add_argument("--m", type=int, required=True)
    mk.add_argument("--k", type=int, required=True)
    mk.add_argument("--tokens", type=int, default=1)
    mk.add_argument("--seed", type=int, default=0)
    mk.add_argument("--out", required=True)
    mk.add_argument("--experts", type=int, default=0)
    mk.add_argument("--top-k", type=int, default=0)
    mk.add_argument("--scale-type", choices=sorted(SCALE_DTYPES), default="bf16")
    dq = sub.add_parser("dequant", help="dequantize W.npy (with S.npy, B.npy for MLX) to float64")
    dq.add_argument("--format", required=True)
    dq.add_argument("--w", required=True)
    dq.add_argument("--s")
    dq.add_argument("--b")
    dq.add_argument("--out", required=True)
    sub.add_parser("selftest", help="check quantize -> dequantize error for every format")
    a = p.parse_args(argv)
    if a.cmd == "make":
        make_case(a.format, a.m, a.k, a.tokens, a.seed, a.out, a.experts, a.top_k, a.scale_type)
    elif a.cmd == "dequant":
        dequant_file(a.format, a.w, a.s, a.b, a.out)
    else:
        return selftest()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
