// Forward: fa_ck::FwdParams -> CK's fmha_fwd_traits / fmha_fwd_args, then CK's generated dispatcher.
#include "fa_ck.hpp"
#include "ck_map.hpp"

#include "fmha_fwd.hpp"

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

}  // namespace fa_ck
