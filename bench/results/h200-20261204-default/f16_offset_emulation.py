"""(CPU, numpy) What the f16 rounding of the one-fma step's offset costs, against the wide step: one
head's online softmax over 128-key blocks, the first block in float64 (the kernel's f32 _step), the
others as softmax_f16._f16_step computes the exponent's argument, everything else exact (no fp8
rounding, so only the f16 offset / scale show):
  one-fma: x = f16(s * f16(c) + f16(P_LOG2 - m * c))     wide: x = f16(f16(s - m) * f16(c) + P_LOG2)
s are the raw scores (f16, as the kernel's wgmma sums them), c the scale in log2 units, m the running
raw max. Prints ||out - exact|| / ||exact|| per head kind.
    python3 f16_offset_emulation.py
"""
import numpy as np

P_LOG2 = np.log2(448.0)


def attend(s, v, c, step):
    """Online softmax of raw scores s (rows, keys) scaled by c (log2 units), 128-key blocks."""
    rows, keys = s.shape
    acc = np.zeros((rows, v.shape[1]))
    m = np.full(rows, -np.inf)
    l = np.zeros(rows)
    for j in range(0, keys, 128):
        sb = s[:, j:j + 128]
        m_new = np.maximum(m, sb.max(1))
        if j == 0:
            p = np.exp2((sb - m_new[:, None]) * c + P_LOG2)
        elif step == "one-fma":
            neg = (P_LOG2 - m_new * c).astype(np.float16).astype(np.float64)
            c16 = np.float64(np.float16(c))
            p = np.exp2((sb * c16 + neg[:, None]).astype(np.float16).astype(np.float64))
        else:
            d = (sb - m_new[:, None]).astype(np.float16).astype(np.float64)
            c16 = np.float64(np.float16(min(c, 65504.0)))
            p = np.exp2((d * c16 + P_LOG2).astype(np.float16).astype(np.float64))
        alpha = np.exp2((m - m_new) * c)
        acc = acc * alpha[:, None] + p @ v[j:j + 128]
        l = l * alpha + p.sum(1)
        m = m_new
    return acc / l[:, None]


def main():
    rng = np.random.default_rng(0)
    n, d = 2048, 128
    c = d ** -0.5 / np.log(2.0)
    for name, outlier, std in (("N(0, 1)", 0.0, 1.0), ("logit std 4", 0.0, 4.0), ("outlier channel 20", 20.0, 1.0),
                               ("outlier channel 40", 40.0, 1.0)):
        q = rng.standard_normal((n, d)) * np.sqrt(std)
        k = rng.standard_normal((n, d)) * np.sqrt(std)
        v = rng.standard_normal((n, d))
        if outlier:
            q[:, 0] = outlier * rng.uniform(0.5, 1.0, n)
            k[:, 0] = outlier * rng.uniform(0.5, 1.0, n)
        s = (q @ k.T).astype(np.float16).astype(np.float64)          # f16 sums, as the kernel's
        x = s * c
        exact = np.exp2(x - x.max(1, keepdims=True))
        exact = (exact / exact.sum(1, keepdims=True)) @ v
        row_max = np.abs(x.max(1)).mean()
        errs = {step: np.linalg.norm(attend(s, v, c, step) - exact) / np.linalg.norm(exact)
                for step in ("one-fma", "wide")}
        print(f"{name:20s} mean row max {row_max:8.1f} log2 units: one-fma {errs['one-fma']:.2e}, wide {errs['wide']:.2e}")


if __name__ == "__main__":
    main()
