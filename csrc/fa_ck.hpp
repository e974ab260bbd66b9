// fa_ck's torch-free, CK-free interface: plain pointers, shapes, strides and flags.
// binding.cpp (torch) fills these; ck_fwd.hip / ck_bwd.hip (CK) map them to fmha_fwd / fmha_bwd.
// Keeping both sides apart lets the mapping be compiled and tested without torch, and the
// binding without CK.
#pragma once
#include <cstdint>

namespace fa_ck {

// One (B, S, H, D) tensor in flash-attn layout, or (total, H, D) in varlen mode. The last dim is
// contiguous; strides are in elements. batch_stride is ignored in varlen mode.
struct View {
    void* ptr = nullptr;
    int64_t batch_stride = 0, seq_stride = 0, head_stride = 0;
};

struct FwdParams {
    bool bf16 = false;                  // else fp16
    int batch = 0, nhead_q = 0, nhead_k = 0, hdim = 0;
    int seqlen_q = 0, seqlen_k = 0;     // batch mode: the lengths; varlen: total_q, total_k
    int max_seqlen_q = 0, max_seqlen_k = 0;
    const int32_t* cu_seqlens_q = nullptr;   // device, (batch + 1,): set means varlen (CK "group mode")
    const int32_t* cu_seqlens_k = nullptr;
    View q, k, v, o;
    float* lse = nullptr;               // (B, Hq, Sq) or (Hq, total_q), contiguous, natural log
    float scale = 1.f;
    float softcap = 0.f;                // > 0: forward only (CK's backward has no softcap)
    // key j visible to query i iff i + (sk - sq) - left <= j <= i + (sk - sq) + right; -1 unbounded
    int window_left = -1, window_right = -1;
    bool top_left = false;              // align the window to the top-left corner instead
    const float* alibi = nullptr;       // device, (Hq,) or (B, Hq) float32
    int64_t alibi_batch_stride = 0;     // 0 when slopes are (Hq,)
    float p_drop = 0.f;
    const int64_t* rng = nullptr;       // device [seed, offset], read by the kernel (graph-safe)
};

struct BwdParams : FwdParams {
    View dout, dq;
    View dk, dv;                        // (B, Sk, Hq, D): one per q head; the caller sums GQA groups
    float* d = nullptr;                 // workspace like lse: rowsum(dO * O)
    float* dq_acc = nullptr;            // workspace float32 (splits, B, Sq, Hq, D) contiguous, zeroed
    bool deterministic = false;
};

// Head-dim buckets CK's codegen (receipt 2, gfx9 and gfx950) has backward tiles for: none at 192, so
// a d129-192 backward runs the 256 bucket. tests/test_ck_build.py checks both against the codegen.
inline constexpr int kBwdHdims[] = {32, 64, 96, 128, 256};
inline bool bwd_has_bucket(int hdim) {
    for (int d : kBwdHdims)
        if (d == hdim) return true;
    return false;
}
// Keys per tile (bn0) of the deterministic backward kernels that can serve head dim `hdim`: the
// smallest of them, so the dq_acc slices cover every tile the chosen kernel walks.
inline int bwd_key_tile(int hdim) { return hdim <= 128 ? 128 : 64; }

// Number of dq accumulation splits CK's backward needs (deterministic mode: one per key tile).
int64_t bwd_dq_acc_splits(int max_seqlen_k, int hdim, bool deterministic);

// Launch on `stream` (a hipStream_t). Return false when no shipped CK instance serves the call.
bool fwd(const FwdParams& p, void* stream);
bool bwd(const BwdParams& p, void* stream);

// What the mask arguments become for CK: mask_enum value and the left/right it is given.
struct MaskArgs {
    int type;                           // 0 no mask, 1 top-left, 2 bottom-right (CK's mask_enum)
    int left, right;
};
inline MaskArgs mask_args(const FwdParams& p) {
    int left = p.window_left, right = p.window_right;
    // A side of the window wide enough to hide no key (for every sequence of the batch) is
    // unbounded: then a call with no effective mask runs CK's cheaper no-mask kernels.
    const int reach_left = p.top_left ? p.max_seqlen_q - 1 : p.max_seqlen_k - 1;
    const int reach_right = p.top_left ? p.max_seqlen_k - 1 : p.max_seqlen_q - 1;
    if (left >= reach_left) left = -1;
    if (right >= reach_right) right = -1;
    if (left < 0 && right < 0) return {0, -1, -1};
    // CK reads (left < 0, right == 0) as "causal" and then switches ALiBi to a vertical form that
    // equals -slope*|i + sk - sq - j| only up to a per-row constant, which shifts lse. A finite
    // left that still hides nothing gives the same mask and keeps the exact bias.
    if (p.alibi && left < 0 && right == 0)
        left = (p.max_seqlen_q > p.max_seqlen_k ? p.max_seqlen_q : p.max_seqlen_k);
    return {p.top_left ? 1 : 2, left, right};
}

}  // namespace fa_ck
