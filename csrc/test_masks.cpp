// Host-only test of the mask and ALiBi arguments our glue hands CK (tests/test_ck_build.py compiles and
// runs it with upstream clang and the HIP stub; no GPU): mask_args() fed through CK's own host-callable
// mask (make_generic_attention_mask_from_lr_window, as CK's fwd and bwd kernels build it) and ALiBi
// (make_alibi_from_lr_mask / Alibi, row- and column-major as the fwd and bwd kernels use them), for
// every sq, sk in 1..9 and window sides -1..9, against the reference: key j visible to query i iff
// i + sk - sq - left <= j <= i + sk - sq + right (a side of -1 unbounded), bias -slope * |i + sk - sq - j|.
// Also with max_seqlen_k only an upper bound of sk (by 3), as the KV-cache glue passes the cache capacity.
#include <cstdio>
#include <cstdlib>

#include "fa_ck.hpp"
#include "ck_tile/core.hpp"
#include "ck_tile/ops/fmha/block/block_masking.hpp"
#include "ck_tile/ops/fmha/block/block_position_encoding.hpp"

using Mask = ck_tile::SimplifiedGenericAttentionMask<true>;

template <bool RowMajor>
static float ck_bias(const fa_ck::MaskArgs& m, float slope, int sq, int sk, int i, int j) {
    float pixel = 0.f;
    if (m.type == 0) {
        ck_tile::Alibi<float, RowMajor>{slope, sq, sk, ck_tile::AlibiMode::FROM_BOTTOM_RIGHT}.update(pixel, i, j);
    } else {
        auto a = ck_tile::make_alibi_from_lr_mask<float, RowMajor>(
            slope, m.left, m.right, sq, sk, static_cast<ck_tile::GenericAttentionMaskEnum>(m.type));
        a.update(pixel, i, j);
    }
    return pixel;
}

int main() {
    const float slope = 0.375f;   // exact in binary: biases compare exactly
    float slopes[1];
    long cases = 0, entries = 0, mask_bad = 0, bias_bad = 0, no_mask_calls = 0;
    for (int sq = 1; sq <= 9; ++sq)
        for (int sk = 1; sk <= 9; ++sk)
            for (int left = -1; left <= 9; ++left)
                for (int right = -1; right <= 9; ++right)
                    for (int alibi = 0; alibi < 2; ++alibi)
                    for (int bound = 0; bound <= 3; bound += 3) {
                        fa_ck::FwdParams p;
                        p.seqlen_q = p.max_seqlen_q = sq;
                        p.seqlen_k = sk;
                        p.max_seqlen_k = sk + bound;
                        p.window_left = left;
                        p.window_right = right;
                        p.alibi = alibi ? slopes : nullptr;
                        const fa_ck::MaskArgs m = fa_ck::mask_args(p);
                        ++cases;
                        no_mask_calls += m.type == 0;
                        const Mask mask = ck_tile::make_generic_attention_mask_from_lr_window<Mask>(
                            m.left, m.right, sq, sk, m.type == 1);
                        for (int i = 0; i < sq; ++i)
                            for (int j = 0; j < sk; ++j) {
                                const int diag = i + sk - sq;
                                const bool want = (left < 0 || j >= diag - left) && (right < 0 || j <= diag + right);
                                const bool got = m.type == 0 || !mask.IsOutOfBound(i, j);
                                ++entries;
                                if (want != got) {
                                    if (++mask_bad <= 5)
                                        std::printf("mask_fail.%ld sq%d_sk%d_l%d_r%d_alibi%d_i%d_j%d_want%d\n", mask_bad,
                                                    sq, sk, left, right, alibi, i, j, want);
                                    continue;
                                }
                                if (!alibi || !want) continue;
                                const float ref = -slope * std::abs(diag - j);
                                const float fwd = ck_bias<true>(m, slope, sq, sk, i, j);
                                const float bwd = ck_bias<false>(m, slope, sq, sk, i, j);
                                if (fwd != ref || bwd != ref) {
                                    if (++bias_bad <= 5)
                                        std::printf("bias_fail.%ld sq%d_sk%d_l%d_r%d_i%d_j%d_ref%g_fwd%g_bwd%g\n",
                                                    bias_bad, sq, sk, left, right, i, j, ref, fwd, bwd);
                                }
                            }
                    }
    std::printf("cases %ld\nentries %ld\nmask_mismatches %ld\nbias_mismatches %ld\nno_mask_cases %ld\n", cases,
                entries, mask_bad, bias_bad, no_mask_calls);
    return 0;
}
