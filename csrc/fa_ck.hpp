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
// max_q, max_k: the longest query and key sequence of the call (an upper bound serves for max_k).
inline MaskArgs mask_args(int left, int right, bool top_left, bool alibi, int max_q, int max_k) {
    // A side of the window wide enough to hide no key (for every sequence of the batch) is
    // unbounded: then a call with no effective mask runs CK's cheaper no-mask kernels.
    const int reach_left = top_left ? max_q - 1 : max_k - 1;
    const int reach_right = top_left ? max_k - 1 : max_q - 1;
    if (left >= reach_left) left = -1;
    if (right >= reach_right) right = -1;
    if (left < 0 && right < 0) return {0, -1, -1};
    // CK reads (left < 0, right == 0) as "causal" and then switches ALiBi to a vertical form that
    // equals -slope*|i + sk - sq - j| only up to a per-row constant, which shifts lse. A finite
    // left that still hides nothing gives the same mask and keeps the exact bias.
    if (alibi && left < 0 && right == 0) left = max_q > max_k ? max_q : max_k;
    return {top_left ? 1 : 2, left, right};
}
inline MaskArgs mask_args(const FwdParams& p) {
    return mask_args(p.window_left, p.window_right, p.top_left, p.alibi != nullptr, p.max_seqlen_q, p.max_seqlen_k);
}

// ---- KV-cache decoding (flash_attn_with_kvcache): CK's split-KV forward and its combine kernel, run
// in CK's group mode so that each batch row has its own key count and start. q is already rotated and
// the cache already holds the new keys: nothing here writes the cache.
struct KVCacheParams {
    bool bf16 = false;
    int batch = 0, nhead_q = 0, nhead_k = 0, hdim = 0, seqlen_q = 0;
    int max_seqlen_k = 0;               // keys a row can hold (cache capacity): bounds masks and splits
    View q, o;                          // (B, Sq, H, D) with batch_stride == Sq * seq_stride
    // dense: (B_cache, S_cache, Hk, D), batch_stride a whole number of rows (CK reads row seqstart_k[b]
    // of the cache flattened to (B_cache * rows, Hk, D)); paged: (num_blocks, page, Hk, D), batch_stride
    // the page stride
    View k, v;
    const int32_t* block_table = nullptr;   // device (B, max_blocks): set means paged
    int64_t block_table_stride = 0;
    int page_size = 0;
    const int32_t* seqstart_q = nullptr;    // device (B + 1,): b * Sq
    const int32_t* seqstart_k = nullptr;    // device (B + 1,): dense: first visible key's flattened row
    const int32_t* seqlen_k = nullptr;      // device (B,): visible keys of each row
    float* lse = nullptr;               // (Hq, B * Sq) float32, natural log
    float* lse_acc = nullptr;           // workspace (Hq, splits, B * Sq) float32
    float* o_acc = nullptr;             // workspace (Hq, splits, B * Sq, D) float32
    int num_splits = 0;                 // 0: kvcache_num_splits chooses
    float scale = 1.f, softcap = 0.f;
    int window_left = -1, window_right = -1;   // bottom-right aligned on each row's visible keys
    const float* alibi = nullptr;       // device, (Hq,) or (B, Hq) float32
    int64_t alibi_batch_stride = 0;
};

// Head dims the shipped split-KV kernels serve (build_ck.SPLITKV_FILTER): 32, 64, 128 and 256 unpadded,
// and 65-96 through CK's d96 kernel, which pads the head dim (its unpadded twin is unreachable).
inline int kvcache_bucket(int hdim) {
    if (hdim == 32 || hdim == 64 || hdim == 128 || hdim == 256) return hdim;
    return hdim > 64 && hdim <= 96 ? 96 : 0;
}
// Queries and keys per tile of the split-KV kernel of a bucket (CK's gfx9 tiles at the pin).
struct KVTile { int m0, n0; };
inline KVTile kvcache_tile(int bucket) {
    return bucket == 32 ? KVTile{32, 64} : bucket == 64 ? KVTile{64, 64} : KVTile{64, 128};
}
inline constexpr int kMaxSplits = 128;  // CK's combine kernel takes at most 128 splits
inline constexpr int kPageMultiple = 128;   // CK's paged split-KV needs pages that hold whole key tiles

// Key splits for the call: p.num_splits when set, else enough to fill the GPU (reads the device's
// CU count once per device).
int kvcache_num_splits(const KVCacheParams& p);
// Launch on `stream`; false when no shipped instance serves the call.
bool kvcache_fwd(const KVCacheParams& p, void* stream);

// ---- The KV-cache append: CK's appendkv kernel (batch mode) writes the new keys, rotated, and the new values
// into the cache at each row's seqlen_k, and rotates q in place (the binding hands it a copy).
struct AppendParams {
    bool bf16 = false;
    int batch = 0, nhead_q = 0, nhead_k = 0, hdim = 0, seqlen_q = 0;
    int seqlen_new = 0;                 // new tokens per row (k.shape[1])
    View q;                             // (B, Sq, Hq, D); written only with rotary
    View knew, vnew;                    // (B, n, Hk, D)
    // the caches: dense (B_cache, S_cache, Hk, D), batch_stride between cache rows; paged
    // (num_blocks, page, Hk, D), batch_stride the page stride
    View k, v;
    const int32_t* seqlen_k = nullptr;          // device (B,): keys each row holds before the append
    const int32_t* cache_batch_idx = nullptr;   // device (B,), dense only; null: row b
    const int32_t* block_table = nullptr;       // device (B, max_blocks): set means paged
    int64_t block_table_stride = 0;
    int page_size = 0;
    // device (seqlen_ro, rotary_dim / 2), contiguous, in q's dtype; rotary_dim 0: no rotary
    const void* rotary_cos = nullptr;
    const void* rotary_sin = nullptr;
    int rotary_dim = 0;
    bool interleaved = false;           // pairs (2i, 2i + 1); else (i, i + rotary_dim / 2)
    bool q_per_position = false;        // query i at seqlen_k + i; else every query at seqlen_k
};

// CK's appendkv tile for a head dim (its dispatcher takes the smallest >= hdim; 0: none).
inline int appendkv_bucket(int hdim) {
    for (int b : {32, 64, 128, 256})
        if (hdim <= b) return b;
    return 0;
}
// A thread of CK's appendkv rotates its 8 contiguous elements only when all of them lie below rotary_dim
// (below rotary_dim / 2 for the half-rotated pairing): a multiple of 16 serves both pairings, and is what
// CK's example requires.
inline constexpr int kRotaryMultiple = 16;
// Launch on `stream`; false when CK's appendkv cannot serve the call (rotary_dim, page size, no instance).
bool kvcache_append(const AppendParams& p, void* stream);

}  // namespace fa_ck
