// Forward: fa_ck::FwdParams -> CK's fmha_fwd_traits / fmha_fwd_args, then CK's generated dispatcher;
// KV-cache decoding: fa_ck::KVCacheParams -> fmha_fwd_splitkv_traits / fmha_fwd_splitkv_args (split-KV
// kernel, then its combine kernel); and its append: fa_ck::AppendParams -> fmha_fwd_appendkv_traits /
// fmha_fwd_appendkv_args. One file: all three declare their CK API in fmha_fwd.hpp.
#include "fa_ck.hpp"
#include "ck_map.hpp"

#include "fmha_fwd.hpp"

#include <algorithm>
#include <cmath>

namespace fa_ck {

fmha_fwd_traits fwd_traits(const FwdParams& p) {
    fmha_fwd_traits t{};
    t.hdim_q = p.hdim;
    t.hdim_v = p.hdim;
    t.data_type = p.bf16 ? "bf16" : "fp16";
    t.is_group_mode = p.cu_seqlens_q != nullptr;
    t.is_v_rowmajor = true;                    // v is (.., Sk, H, D): D contiguous
    t.has_logits_soft_cap = p.softcap > 0.f;
    t.mask_type = static_cast<mask_enum>(mask_args(p).type);
    t.bias_type = p.alibi ? bias_enum::alibi : bias_enum::no_bias;
    t.has_lse = true;                          // always: backward needs it, and we return it
    t.has_dropout = p.p_drop > 0.f;
    t.do_fp8_static_quant = false;
    t.skip_min_seqlen_q = false;
    return t;
}

fmha_fwd_args fwd_args(const FwdParams& p) {
    const bool group = p.cu_seqlens_q != nullptr;
    const MaskArgs m = mask_args(p);
    fmha_fwd_args a{};
    a.q_ptr = p.q.ptr;
    a.k_ptr = p.k.ptr;
    a.v_ptr = p.v.ptr;
    a.bias_ptr = p.alibi;
    a.rand_val_ptr = nullptr;                  // we never store the dropout mask
    a.lse_ptr = p.lse;
    a.o_ptr = p.o.ptr;
    // group mode: CK reads each sequence's start (and so length) from cu_seqlens on the device.
    a.seqstart_q_ptr = group ? p.cu_seqlens_q : nullptr;
    a.seqstart_k_ptr = group ? p.cu_seqlens_k : nullptr;
    a.seqlen_q = p.seqlen_q;
    a.seqlen_k = p.seqlen_k;
    a.batch = p.batch;
    a.max_seqlen_q = p.max_seqlen_q;
    a.hdim_q = p.hdim;
    a.hdim_v = p.hdim;
    a.nhead_q = p.nhead_q;
    a.nhead_k = p.nhead_k;
    a.scale_s = p.scale;
    a.scale_p = 1.f;                           // scale_p / scale_o are fp8 dequant factors
    a.scale_o = 1.f;
    a.logits_soft_cap = p.softcap;
    a.stride_q = idx(p.q.seq_stride);
    a.stride_k = idx(p.k.seq_stride);
    a.stride_v = idx(p.v.seq_stride);
    a.stride_bias = idx(p.alibi_batch_stride); // alibi: stride between batches of slopes, 0 if shared
    a.stride_randval = 0;
    a.stride_o = idx(p.o.seq_stride);
    a.nhead_stride_q = idx(p.q.head_stride);
    a.nhead_stride_k = idx(p.k.head_stride);
    a.nhead_stride_v = idx(p.v.head_stride);
    a.nhead_stride_bias = 0;
    a.nhead_stride_randval = 0;
    // lse: (B, Hq, Sq) batch mode, (Hq, total_q) group mode (CK offsets rows by the sequence start)
    a.nhead_stride_lse = p.seqlen_q;
    a.nhead_stride_o = idx(p.o.head_stride);
    a.batch_stride_q = group ? 0 : idx(p.q.batch_stride);
    a.batch_stride_k = group ? 0 : idx(p.k.batch_stride);
    a.batch_stride_v = group ? 0 : idx(p.v.batch_stride);
    a.batch_stride_bias = 0;
    a.batch_stride_randval = 0;
    a.batch_stride_lse = group ? 0 : idx(int64_t(p.nhead_q) * p.seqlen_q);
    a.batch_stride_o = group ? 0 : idx(p.o.batch_stride);
    a.window_size_left = m.left;
    a.window_size_right = m.right;
    a.mask_type = m.type;
    a.min_seqlen_q = 0;
    a.p_drop = p.p_drop;
    a.s_randval = false;
    a.drop_seed_offset = drop_seed_offset(p.rng);
    return a;
}

bool fwd(const FwdParams& p, void* stream) {
    const ck_tile::stream_config sc{static_cast<hipStream_t>(stream)};
    return fmha_fwd(fwd_traits(p), fwd_args(p), sc) >= 0.f;   // CK returns -1 when no instance fits
}

// ---- KV-cache decoding

// The smallest split count whose waves fill `slots` (two blocks per CU) to 85% of the best, among
// 1..max_splits; one split when the tiles alone nearly fill them (flash-attn's and CK's example rule).
static int splits_for(int tiles, int slots, int max_splits) {
    if (tiles >= 0.8f * slots || max_splits <= 1) return 1;
    max_splits = max_splits < slots ? max_splits : slots;
    auto efficiency = [&](int n) {
        const float waves = float(tiles) * n / slots;
        return waves / std::ceil(waves);
    };
    float best = 0.f;
    for (int n = 1; n <= max_splits; ++n) best = std::max(best, efficiency(n));
    for (int n = 1; n <= max_splits; ++n)
        if (efficiency(n) >= 0.85f * best) return n;
    return 1;
}

static MaskArgs kvcache_mask(const KVCacheParams& p) {
    return mask_args(p.window_left, p.window_right, false, p.alibi != nullptr, p.seqlen_q, p.max_seqlen_k);
}

int kvcache_num_splits(const KVCacheParams& p) {
    if (p.num_splits > 0) return p.num_splits;
    const int bucket = kvcache_bucket(p.hdim);
    const KVTile tile = kvcache_tile(bucket);
    // CK folds the q heads of a kv head into one q tile for d128 decoding without mask or bias
    // (its run_instance): then there are fewer, fuller tiles.
    const bool merged = bucket == 128 && !p.alibi && kvcache_mask(p).type == 0 && p.seqlen_q == 1 &&
                        p.nhead_k < p.nhead_q;
    const int heads = merged ? p.nhead_k : p.nhead_q;
    const int rows = merged ? p.nhead_q / p.nhead_k : p.seqlen_q;
    const int tiles = p.batch * heads * ((rows + tile.m0 - 1) / tile.m0);
    const int key_tiles = (p.max_seqlen_k + tile.n0 - 1) / tile.n0;   // each split gets a key tile
    int device = 0;
    hipDeviceProp_t props{};
    if (hipGetDevice(&device) != hipSuccess || hipGetDeviceProperties(&props, device) != hipSuccess) return 1;
    return splits_for(tiles, 2 * props.multiProcessorCount, std::min(kMaxSplits, key_tiles));
}

fmha_fwd_splitkv_traits kvcache_traits(const KVCacheParams& p) {
    fmha_fwd_splitkv_traits t{};
    t.hdim_q = p.hdim;
    t.hdim_v = p.hdim;
    t.data_type = p.bf16 ? "bf16" : "fp16";
    t.is_group_mode = true;                    // per-row key counts and starts (seqstart_k, seqlen_k)
    t.is_v_rowmajor = true;
    t.has_logits_soft_cap = p.softcap > 0.f;
    t.mask_type = static_cast<mask_enum>(kvcache_mask(p).type);
    t.bias_type = p.alibi ? bias_enum::alibi : bias_enum::no_bias;
    t.has_lse = true;
    t.do_fp8_static_quant = false;
    return t;
}

fmha_fwd_splitkv_args kvcache_args(const KVCacheParams& p, int splits) {
    const MaskArgs m = kvcache_mask(p);
    const int64_t total_q = int64_t(p.batch) * p.seqlen_q;
    const bool paged = p.block_table != nullptr;
    fmha_fwd_splitkv_args a{};
    a.q_ptr = p.q.ptr;
    a.k_ptr = p.k.ptr;
    a.v_ptr = p.v.ptr;
    a.bias_ptr = p.alibi;
    a.lse_acc_ptr = p.lse_acc;
    a.o_acc_ptr = p.o_acc;
    a.lse_ptr = p.lse;
    a.o_ptr = p.o.ptr;
    // paged: row b's keys through block_table[b]; the kernel then ignores the flattened start
    a.block_table_ptr = const_cast<int32_t*>(p.block_table);
    a.batch_stride_block_table = paged ? idx(p.block_table_stride) : 0;
    a.page_block_size = paged ? p.page_size : 0;
    a.is_gappy = false;                        // keys start at page offset 0 (no leftpad when paged)
    a.cache_batch_idx = nullptr;               // group mode: the cache row is in seqstart_k
    a.seqstart_q_ptr = p.seqstart_q;
    a.seqstart_k_ptr = p.seqstart_k;
    a.seqlen_k_ptr = p.seqlen_k;
    a.seqlen_q = p.seqlen_q;                   // group mode reads lengths from the pointers above
    a.seqlen_k = p.max_seqlen_k;
    a.batch = p.batch;
    a.max_seqlen_q = p.seqlen_q;
    a.hdim_q = p.hdim;
    a.hdim_v = p.hdim;
    a.nhead_q = p.nhead_q;
    a.nhead_k = p.nhead_k;
    a.num_splits = splits;
    a.scale_s = p.scale;
    a.scale_p = 1.f;
    a.scale_o = 1.f;
    a.logits_soft_cap = p.softcap;
    a.stride_q = idx(p.q.seq_stride);
    a.stride_k = idx(p.k.seq_stride);
    a.stride_v = idx(p.v.seq_stride);
    a.stride_bias = idx(p.alibi_batch_stride);
    a.stride_o_acc = p.hdim;
    a.stride_o = idx(p.o.seq_stride);
    a.nhead_stride_q = idx(p.q.head_stride);
    a.nhead_stride_k = idx(p.k.head_stride);
    a.nhead_stride_v = idx(p.v.head_stride);
    a.nhead_stride_bias = 0;
    a.nhead_stride_lse = idx(total_q);
    a.nhead_stride_lse_acc = idx(splits * total_q);
    a.nhead_stride_o_acc = idx(splits * total_q * p.hdim);
    a.nhead_stride_o = idx(p.o.head_stride);
    a.batch_stride_q = 0;                      // group mode: rows are offset by seqstart_*
    a.batch_stride_k = paged ? idx(p.k.batch_stride) : 0;   // paged: the page stride
    a.batch_stride_v = paged ? idx(p.v.batch_stride) : 0;
    a.batch_stride_bias = 0;
    a.batch_stride_lse = 0;
    a.batch_stride_lse_acc = 0;
    a.batch_stride_o_acc = 0;
    a.batch_stride_o = 0;
    a.split_stride_lse_acc = idx(total_q);
    a.split_stride_o_acc = idx(total_q * p.hdim);
    a.window_size_left = m.left;
    a.window_size_right = m.right;
    a.mask_type = m.type;
    return a;
}

bool kvcache_fwd(const KVCacheParams& p, void* stream) {
    const int splits = kvcache_num_splits(p);
    if (splits < 1 || splits > kMaxSplits) return false;
    if (p.block_table && (p.page_size <= 0 || p.page_size % kPageMultiple)) return false;
    const ck_tile::stream_config sc{static_cast<hipStream_t>(stream)};
    return fmha_fwd_splitkv(kvcache_traits(p), kvcache_args(p, splits), sc) >= 0.f;
}

// ---- The KV-cache append

fmha_fwd_appendkv_traits appendkv_traits(const AppendParams& p) {
    fmha_fwd_appendkv_traits t{};
    t.hdim_q = p.hdim;
    t.hdim_v = p.hdim;
    t.data_type = p.bf16 ? "bf16" : "fp16";
    t.is_v_rowmajor = true;
    t.rope_type = p.rotary_dim == 0 ? rope_enum::none
                  : p.interleaved   ? rope_enum::interleaved
                                    : rope_enum::half_rotated;
    return t;
}

fmha_fwd_appendkv_args appendkv_args(const AppendParams& p) {
    const bool paged = p.block_table != nullptr;
    fmha_fwd_appendkv_args a{};
    a.q_ptr = p.q.ptr;
    a.k_ptr = p.k.ptr;
    a.knew_ptr = p.knew.ptr;
    a.v_ptr = p.v.ptr;
    a.vnew_ptr = p.vnew.ptr;
    a.seqlen_k_ptr = p.seqlen_k;               // read on the device: the host never learns the lengths
    a.seqlen_q = p.seqlen_q;
    a.seqlen_knew = p.seqlen_new;
    a.batch = p.batch;
    a.hdim_q = p.hdim;
    a.hdim_v = p.hdim;
    a.nhead_q = p.nhead_q;
    a.nhead_k = p.nhead_k;
    a.rotary_cos_ptr = p.rotary_dim ? p.rotary_cos : nullptr;
    a.rotary_sin_ptr = p.rotary_dim ? p.rotary_sin : nullptr;
    a.rotary_dim = p.rotary_dim;
    // CK rotates query i at seqlen_k + i when has_mask (its row step through the table), else at seqlen_k
    a.has_mask = p.q_per_position;
    a.block_table_ptr = const_cast<int32_t*>(p.block_table);
    a.batch_stride_block_table = paged ? idx(p.block_table_stride) : 0;
    a.page_block_size = paged ? p.page_size : 0;
    a.cache_batch_idx = paged ? nullptr : p.cache_batch_idx;   // a paged row reads block_table[b] only
    a.stride_q = idx(p.q.seq_stride);
    a.stride_k = idx(p.k.seq_stride);
    a.stride_knew = idx(p.knew.seq_stride);
    a.stride_v = idx(p.v.seq_stride);
    a.stride_vnew = idx(p.vnew.seq_stride);
    a.nhead_stride_q = idx(p.q.head_stride);
    a.nhead_stride_k = idx(p.k.head_stride);
    a.nhead_stride_knew = idx(p.knew.head_stride);
    a.nhead_stride_v = idx(p.v.head_stride);
    a.nhead_stride_vnew = idx(p.vnew.head_stride);
    a.batch_stride_q = idx(p.q.batch_stride);
    a.batch_stride_k = idx(p.k.batch_stride);  // dense: between cache rows; paged: the page stride
    a.batch_stride_knew = idx(p.knew.batch_stride);
    a.batch_stride_v = idx(p.v.batch_stride);
    a.batch_stride_vnew = idx(p.vnew.batch_stride);
    return a;
}

bool kvcache_append(const AppendParams& p, void* stream) {
    if (p.rotary_dim < 0 || p.rotary_dim % kRotaryMultiple || p.rotary_dim > p.hdim) return false;
    // a 64-key tile of new keys must span at most two pages (CK writes a tile's second page once)
    if (p.block_table && (p.page_size <= 0 || p.page_size % kPageMultiple)) return false;
    if (appendkv_bucket(p.hdim) == 0) return false;
    // nothing to write or rotate: CK would launch an empty grid
    if (p.batch == 0 || p.nhead_q == 0 || (p.seqlen_new == 0 && (p.rotary_dim == 0 || p.seqlen_q == 0)))
        return true;
    const ck_tile::stream_config sc{static_cast<hipStream_t>(stream)};
    return fmha_fwd_appendkv(appendkv_traits(p), appendkv_args(p), sc) >= 0.f;
}

}  // namespace fa_ck
