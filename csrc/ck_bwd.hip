// Backward: fa_ck::BwdParams -> CK's fmha_bwd_traits / fmha_bwd_args, then CK's generated dispatcher
// (three kernels: dot(dO, O) -> d, dq/dk/dv, convert dq_acc -> dq).
#include "fa_ck.hpp"
#include "ck_map.hpp"

#include "fmha_bwd.hpp"

namespace fa_ck {

int64_t bwd_dq_acc_splits(int max_seqlen_k, int hdim, bool deterministic) {
    // Deterministic mode gives each key tile its own dq slice (summed in a fixed order by
    // convert_dq, which reads ceil(seqlen_k / bn0) of them) instead of atomics.
    const int tile = bwd_key_tile(hdim);
    return deterministic ? (max_seqlen_k + tile - 1) / tile : 1;
}

fmha_bwd_traits bwd_traits(const BwdParams& p) {
    fmha_bwd_traits t{};
    t.hdim_q = p.hdim;
    t.hdim_v = p.hdim;
    t.data_type = p.bf16 ? "bf16" : "fp16";
    t.is_group_mode = p.cu_seqlens_q != nullptr;
    t.mask_type = static_cast<mask_enum>(mask_args(p).type);
    t.bias_type = p.alibi ? bias_enum::alibi : bias_enum::no_bias;
    t.has_dbias = false;                       // alibi slopes take no gradient
    t.has_dropout = p.p_drop > 0.f;
    t.is_store_randval = false;
    t.is_deterministic = p.deterministic;
    return t;
}

fmha_bwd_args bwd_args(const BwdParams& p) {
    const bool group = p.cu_seqlens_q != nullptr;
    const MaskArgs m = mask_args(p);
    // dq_acc: float32 (splits, B, Sq, Hq, D) contiguous; group mode (splits, total_q, Hq, D)
    const int64_t acc_seq = int64_t(p.nhead_q) * p.hdim;
    const int64_t acc_batch = group ? 0 : acc_seq * p.seqlen_q;
    const int64_t acc_split = acc_seq * p.seqlen_q * (group ? 1 : p.batch);
    fmha_bwd_args a{};
    a.q_ptr = p.q.ptr;
    a.k_ptr = p.k.ptr;
    a.v_ptr = p.v.ptr;
    a.bias_ptr = p.alibi;
    a.o_ptr = p.o.ptr;
    a.lse_ptr = p.lse;
    a.do_ptr = p.dout.ptr;
    a.d_ptr = p.d;
    a.rand_val_ptr = nullptr;
    a.dq_ptr = p.dq.ptr;
    a.dk_ptr = p.dk.ptr;
    a.dv_ptr = p.dv.ptr;
    a.dbias_ptr = nullptr;
    a.dq_acc_ptr = p.dq_acc;
    a.seqstart_q_ptr = group ? p.cu_seqlens_q : nullptr;
    a.seqstart_k_ptr = group ? p.cu_seqlens_k : nullptr;
    a.seqlen_q = p.seqlen_q;
    a.seqlen_k = p.seqlen_k;
    a.batch = p.batch;
    a.max_seqlen_q = p.max_seqlen_q;
    a.max_seqlen_k = p.max_seqlen_k;
    a.hdim_q = p.hdim;
    a.hdim_v = p.hdim;
    a.nhead_q = p.nhead_q;
    a.nhead_k = p.nhead_k;
    a.scale = p.scale;
    a.stride_q = idx(p.q.seq_stride);
    a.stride_k = idx(p.k.seq_stride);
    a.stride_v = idx(p.v.seq_stride);
    a.stride_bias = idx(p.alibi_batch_stride);
    a.stride_o = idx(p.o.seq_stride);
    a.stride_randval = 0;
    a.stride_do = idx(p.dout.seq_stride);
    a.stride_dq_acc = idx(acc_seq);
    a.stride_dq = idx(p.dq.seq_stride);
    a.stride_dk = idx(p.dk.seq_stride);
    a.stride_dv = idx(p.dv.seq_stride);
    a.stride_dbias = 0;
    a.nhead_stride_q = idx(p.q.head_stride);
    a.nhead_stride_k = idx(p.k.head_stride);
    a.nhead_stride_v = idx(p.v.head_stride);
    a.nhead_stride_bias = 0;
    a.nhead_stride_o = idx(p.o.head_stride);
    a.nhead_stride_randval = 0;
    a.nhead_stride_do = idx(p.dout.head_stride);
    a.nhead_stride_lsed = p.seqlen_q;          // lse and d: (B, Hq, Sq) or (Hq, total_q)
    a.nhead_stride_dq_acc = p.hdim;
    a.nhead_stride_dq = idx(p.dq.head_stride);
    a.nhead_stride_dk = idx(p.dk.head_stride);
    a.nhead_stride_dv = idx(p.dv.head_stride);
    a.nhead_stride_dbias = 0;
    a.batch_stride_q = group ? 0 : idx(p.q.batch_stride);
    a.batch_stride_k = group ? 0 : idx(p.k.batch_stride);
    a.batch_stride_v = group ? 0 : idx(p.v.batch_stride);
    a.batch_stride_bias = 0;
    a.batch_stride_o = group ? 0 : idx(p.o.batch_stride);
    a.batch_stride_randval = 0;
    a.batch_stride_do = group ? 0 : idx(p.dout.batch_stride);
    a.batch_stride_lsed = group ? 0 : idx(int64_t(p.nhead_q) * p.seqlen_q);
    a.batch_stride_dq_acc = idx(acc_batch);
    a.batch_stride_dq = group ? 0 : idx(p.dq.batch_stride);
    a.batch_stride_dk = group ? 0 : idx(p.dk.batch_stride);
    a.batch_stride_dv = group ? 0 : idx(p.dv.batch_stride);
    a.batch_stride_dbias = 0;
    a.split_stride_dq_acc = idx(acc_split);
    a.window_size_left = m.left;
    a.window_size_right = m.right;
    a.mask_type = m.type;
    a.p_drop = p.p_drop;
    a.p_undrop = 1.f - p.p_drop;
    a.drop_seed_offset = drop_seed_offset(p.rng);
    return a;
}

bool bwd(const BwdParams& p, void* stream) {
    const ck_tile::stream_config sc{static_cast<hipStream_t>(stream)};
    return fmha_bwd<2>(bwd_traits(p), bwd_args(p), sc) >= 0.f;
}

}  // namespace fa_ck
