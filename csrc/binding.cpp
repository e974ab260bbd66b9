// fa_ck._ck: checks torch tensors, allocates outputs and workspaces, fills fa_ck::FwdParams /
// BwdParams / KVCacheParams / AppendParams and calls the CK glue (ck_fwd.hip, ck_bwd.hip). Host C++ only: no CK
// headers here.
#include <torch/extension.h>
#include <c10/core/DeviceGuard.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "fa_ck.hpp"

#ifdef FA_CK_SYNTAX_ONLY
// CPU CI checks this file against a CPU torch, which has no HIP headers.
static void* current_stream(const at::Tensor&) { return nullptr; }
#else
#include <c10/hip/HIPStream.h>
// In ROCm torch the "cuda" device's current stream is a HIP stream from this same pool.
static void* current_stream(const at::Tensor& t) { return c10::hip::getCurrentHIPStream(t.get_device()).stream(); }
#endif

#ifndef FA_CK_HDIMS_LIST
#define FA_CK_HDIMS_LIST 32, 64, 96, 128, 192, 256
#endif

using at::Tensor;
using OptTensor = std::optional<Tensor>;

namespace {

fa_ck::View view(const Tensor& t, bool varlen) {
    // batch mode (B, S, H, D), varlen (total, H, D); strides in elements
    if (varlen) return {t.data_ptr(), 0, t.stride(0), t.stride(1)};
    return {t.data_ptr(), t.stride(0), t.stride(1), t.stride(2)};
}

Tensor last_dim_contiguous(const Tensor& t) { return t.stride(-1) == 1 ? t : t.contiguous(); }

// Shared checks and the fields common to forward and backward.
void fill_common(fa_ck::FwdParams& p, const Tensor& q, const Tensor& k, const Tensor& v,
                 const OptTensor& cu_q, const OptTensor& cu_k, int64_t max_q, int64_t max_k,
                 double scale, int64_t wl, int64_t wr, const OptTensor& alibi, double p_drop,
                 const OptTensor& rng) {
    const bool varlen = cu_q.has_value();
    TORCH_CHECK(q.is_cuda(), "fa_ck._ck: tensors must be on a ROCm GPU");
    TORCH_CHECK(q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16,
                "fa_ck._ck: CK supports float16 and bfloat16, got ", q.scalar_type());
    TORCH_CHECK(k.scalar_type() == q.scalar_type() && v.scalar_type() == q.scalar_type(),
                "fa_ck._ck: q, k, v must share a dtype");
    TORCH_CHECK(k.device() == q.device() && v.device() == q.device(), "fa_ck._ck: q, k, v on different devices");
    TORCH_CHECK(q.stride(-1) == 1 && k.stride(-1) == 1 && v.stride(-1) == 1,
                "fa_ck._ck: the last dim of q, k, v must be contiguous");
    TORCH_CHECK(q.dim() == (varlen ? 3 : 4) && k.dim() == q.dim() && v.dim() == q.dim(),
                "fa_ck._ck: expected ", varlen ? "(total, H, D)" : "(B, S, H, D)", " tensors");
    TORCH_CHECK(cu_q.has_value() == cu_k.has_value(), "fa_ck._ck: give both cu_seqlens or neither");
    const int64_t D = q.size(-1), Hq = q.size(-2), Hk = k.size(-2);
    TORCH_CHECK(k.size(-1) == D && v.size(-1) == D, "fa_ck._ck: q, k, v head dims differ");
    TORCH_CHECK(D % 8 == 0 && D <= 256, "fa_ck._ck: head dim must be a multiple of 8 and <= 256, got ", D);
    TORCH_CHECK(Hk > 0 && Hq % Hk == 0 && v.size(-2) == Hk, "fa_ck._ck: q heads must be a multiple of kv heads");
    p.bf16 = q.scalar_type() == at::kBFloat16;
    p.nhead_q = Hq; p.nhead_k = Hk; p.hdim = D;
    if (varlen) {
        for (const Tensor* c : {&*cu_q, &*cu_k})
            TORCH_CHECK(c->scalar_type() == at::kInt && c->is_contiguous() && c->device() == q.device(),
                        "fa_ck._ck: cu_seqlens must be contiguous int32 on q's device");
        TORCH_CHECK(cu_q->numel() == cu_k->numel() && cu_q->numel() >= 2, "fa_ck._ck: bad cu_seqlens");
        p.batch = cu_q->numel() - 1;
        p.seqlen_q = q.size(0); p.seqlen_k = k.size(0);
        p.max_seqlen_q = max_q; p.max_seqlen_k = max_k;
        p.cu_seqlens_q = cu_q->data_ptr<int32_t>(); p.cu_seqlens_k = cu_k->data_ptr<int32_t>();
    } else {
        TORCH_CHECK(k.size(0) == q.size(0) && v.size(0) == q.size(0) && v.size(1) == k.size(1),
                    "fa_ck._ck: q, k, v batch or key lengths differ");
        p.batch = q.size(0);
        p.seqlen_q = p.max_seqlen_q = q.size(1);
        p.seqlen_k = p.max_seqlen_k = k.size(1);
    }
    p.q = view(q, varlen); p.k = view(k, varlen); p.v = view(v, varlen);
    p.scale = static_cast<float>(scale);
    p.window_left = static_cast<int>(wl); p.window_right = static_cast<int>(wr);
    if (alibi) {
        TORCH_CHECK(alibi->scalar_type() == at::kFloat && alibi->device() == q.device() && alibi->stride(-1) == 1,
                    "fa_ck._ck: alibi slopes must be float32 on q's device, last dim contiguous");
        TORCH_CHECK((alibi->dim() == 1 && alibi->size(0) == Hq) ||
                    (alibi->dim() == 2 && alibi->size(0) == p.batch && alibi->size(1) == Hq),
                    "fa_ck._ck: alibi slopes must be (Hq,) or (B, Hq)");
        p.alibi = alibi->data_ptr<float>();
        p.alibi_batch_stride = alibi->dim() == 2 ? alibi->stride(0) : 0;
    }
    p.p_drop = static_cast<float>(p_drop);
    if (p_drop > 0) {
        TORCH_CHECK(rng && rng->scalar_type() == at::kLong && rng->numel() == 2 && rng->is_contiguous() &&
                    rng->device() == q.device(), "fa_ck._ck: dropout needs rng, int64 [seed, offset] on q's device");
        p.rng = rng->data_ptr<int64_t>();
    }
}

std::vector<Tensor> fwd(const Tensor& q, const Tensor& k, const Tensor& v, const OptTensor& cu_q,
                        const OptTensor& cu_k, int64_t max_q, int64_t max_k, double scale, int64_t wl,
                        int64_t wr, const OptTensor& alibi, double softcap, double p_drop, const OptTensor& rng) {
    fa_ck::FwdParams p;
    fill_common(p, q, k, v, cu_q, cu_k, max_q, max_k, scale, wl, wr, alibi, p_drop, rng);
    const bool varlen = cu_q.has_value();
    c10::DeviceGuard guard(q.device());
    Tensor out = at::empty(q.sizes(), q.options());
    Tensor lse = varlen ? at::empty({p.nhead_q, p.seqlen_q}, q.options().dtype(at::kFloat))
                        : at::empty({p.batch, p.nhead_q, p.seqlen_q}, q.options().dtype(at::kFloat));
    if (q.numel() == 0) return {out, lse};
    if (p.seqlen_k == 0) return {out.zero_(), lse.fill_(-INFINITY)};   // no key: 0 and -inf, like the reference
    p.o = view(out, varlen);
    p.lse = lse.data_ptr<float>();
    p.softcap = static_cast<float>(softcap);
    TORCH_CHECK(fa_ck::fwd(p, current_stream(q)), "fa_ck._ck: no CK forward instance for this call");
    return {out, lse};
}

std::vector<Tensor> bwd(const Tensor& dout_, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& out_, const Tensor& lse_, const OptTensor& cu_q, const OptTensor& cu_k,
                        int64_t max_q, int64_t max_k, double scale, int64_t wl, int64_t wr,
                        const OptTensor& alibi, double p_drop, const OptTensor& rng, bool deterministic) {
    fa_ck::BwdParams p;
    fill_common(p, q, k, v, cu_q, cu_k, max_q, max_k, scale, wl, wr, alibi, p_drop, rng);
    const bool varlen = cu_q.has_value();
    const Tensor dout = last_dim_contiguous(dout_), out = last_dim_contiguous(out_);
    const Tensor lse = lse_.to(at::kFloat).contiguous();
    TORCH_CHECK(dout.sizes() == q.sizes() && out.sizes() == q.sizes(), "fa_ck._ck: dout and out must have q's shape");
    c10::DeviceGuard guard(q.device());
    Tensor dq = at::empty(q.sizes(), q.options());
    Tensor dk = at::empty(k.sizes(), k.options()), dv = at::empty(v.sizes(), v.options());
    if (q.numel() == 0 || p.seqlen_k == 0) return {dq.zero_(), dk.zero_(), dv.zero_()};
    // CK writes dk, dv per q head; with GQA/MQA we sum each group of heads afterwards.
    const int64_t group = p.nhead_q / p.nhead_k;
    auto expanded = [&](const Tensor& t) {
        auto s = t.sizes().vec();
        s[s.size() - 2] = p.nhead_q;
        return at::empty(s, t.options());
    };
    Tensor dk_e = group == 1 ? dk : expanded(k), dv_e = group == 1 ? dv : expanded(v);
    Tensor d = at::empty_like(lse);
    const int64_t splits = fa_ck::bwd_dq_acc_splits(p.max_seqlen_k, p.hdim, deterministic);
    std::vector<int64_t> acc_shape{splits};
    for (auto s : q.sizes()) acc_shape.push_back(s);
    Tensor dq_acc = at::zeros(acc_shape, q.options().dtype(at::kFloat));   // CK accumulates into it

    p.o = view(out, varlen); p.dout = view(dout, varlen);
    p.dq = view(dq, varlen); p.dk = view(dk_e, varlen); p.dv = view(dv_e, varlen);
    p.lse = lse.data_ptr<float>(); p.d = d.data_ptr<float>(); p.dq_acc = dq_acc.data_ptr<float>();
    p.deterministic = deterministic;
    TORCH_CHECK(fa_ck::bwd(p, current_stream(q)), "fa_ck._ck: no CK backward instance for this call");
    if (group > 1) {
        auto reduce = [&](const Tensor& e, Tensor& dst) {
            auto s = dst.sizes().vec();
            s.insert(s.end() - 1, group);   // (.., Hkv, D) -> (.., Hkv, G, D)
            dst.copy_(e.view(s).sum(-2));
        };
        reduce(dk_e, dk);
        reduce(dv_e, dv);
    }
    return {dq, dk, dv};
}

Tensor int32_on(const Tensor& t, const Tensor& like, const char* name) {
    TORCH_CHECK(t.scalar_type() == at::kInt && t.device() == like.device() && t.dim() == 1 &&
                t.size(0) == like.size(0), "fa_ck._ck: ", name, " must be int32 (B,) on q's device");
    return t.contiguous();
}

// The device arrays CK's group mode reads: query starts, each row's first visible key in the dense cache
// flattened to (B_cache * rows, Hk, D) (paged: unused, zeros) and each row's visible key count.
std::vector<Tensor> kvcache_rows(const Tensor& q, const Tensor& seqlens_k, const OptTensor& leftpad,
                                 const OptTensor& batch_idx, bool paged, int64_t rows_per_cache_row) {
    const int64_t B = q.size(0), Sq = q.size(1);
    const auto i32 = q.options().dtype(at::kInt), i64 = q.options().dtype(at::kLong);
    Tensor seqstart_q = at::arange(0, (B + 1) * Sq, Sq, i64).to(at::kInt);
    Tensor seqlen_k = int32_on(seqlens_k, q, "seqlens_k");
    Tensor seqstart_k = at::zeros({B + 1}, i32);
    if (leftpad) seqlen_k = seqlen_k - int32_on(*leftpad, q, "leftpad");
    if (!paged) {
        Tensor row = batch_idx ? int32_on(*batch_idx, q, "batch_idx").to(at::kLong) : at::arange(B, i64);
        Tensor start = row * rows_per_cache_row;
        if (leftpad) start = start + leftpad->to(at::kLong);
        seqstart_k.narrow(0, 0, B).copy_(start);
    }
    return {seqstart_q, seqstart_k, seqlen_k.to(at::kInt).contiguous()};
}

// Checks shared with the forward, and the cache's layout: paged (num_blocks, page, Hk, D) with a block
// table, or dense (B_cache, S_cache, Hk, D) whose batch stride is a whole number of rows.
void kvcache_check(const Tensor& q, const Tensor& k, const Tensor& v, const OptTensor& block_table) {
    TORCH_CHECK(q.is_cuda(), "fa_ck._ck: tensors must be on a ROCm GPU");
    TORCH_CHECK(q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16,
                "fa_ck._ck: CK supports float16 and bfloat16, got ", q.scalar_type());
    TORCH_CHECK(k.scalar_type() == q.scalar_type() && v.scalar_type() == q.scalar_type(),
                "fa_ck._ck: q and the caches must share a dtype");
    TORCH_CHECK(k.device() == q.device() && v.device() == q.device(), "fa_ck._ck: q and caches on different devices");
    TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "fa_ck._ck: expected (B, S, H, D) q and caches");
    TORCH_CHECK(k.stride(-1) == 1 && v.stride(-1) == 1, "fa_ck._ck: the last dim of the caches must be contiguous");
    TORCH_CHECK(k.sizes() == v.sizes(), "fa_ck._ck: k_cache and v_cache shapes differ");
    const int64_t D = q.size(3), Hq = q.size(2), Hk = k.size(2);
    TORCH_CHECK(k.size(3) == D, "fa_ck._ck: q and cache head dims differ");
    TORCH_CHECK(Hk > 0 && Hq % Hk == 0, "fa_ck._ck: q heads must be a multiple of kv heads");
    if (block_table) {
        TORCH_CHECK(block_table->scalar_type() == at::kInt && block_table->dim() == 2 &&
                    block_table->size(0) == q.size(0) && block_table->stride(1) == 1 &&
                    block_table->device() == q.device(),
                    "fa_ck._ck: block_table must be int32 (B, max_blocks), last dim contiguous, on q's device");
        TORCH_CHECK(k.size(1) % fa_ck::kPageMultiple == 0, "fa_ck._ck: CK's paged split-KV needs pages of a "
                    "multiple of ", fa_ck::kPageMultiple, " keys, got ", k.size(1));
    } else if (k.size(0) > 1) {
        TORCH_CHECK(k.stride(1) > 0 && k.stride(0) % k.stride(1) == 0 && v.stride(1) > 0 &&
                    v.stride(0) % v.stride(1) == 0 && k.stride(0) / k.stride(1) == v.stride(0) / v.stride(1),
                    "fa_ck._ck: a dense cache's batch stride must be a whole number of rows, the same for k and v");
        TORCH_CHECK(k.size(0) * (k.stride(0) / k.stride(1)) <= INT32_MAX,
                    "fa_ck._ck: the dense cache has more rows than CK's 32-bit row index");
    }
}

// Rows between the starts of two cache rows of a dense cache (0 for a single cache row).
int64_t rows_per_cache_row(const Tensor& k) { return k.size(0) > 1 ? k.stride(0) / k.stride(1) : 0; }

std::vector<Tensor> kvcache_fwd(const Tensor& q_, const Tensor& k, const Tensor& v, const Tensor& seqlens_k,
                                const OptTensor& leftpad, const OptTensor& batch_idx, const OptTensor& block_table,
                                double scale, int64_t wl, int64_t wr, const OptTensor& alibi, double softcap,
                                int64_t num_splits) {
    kvcache_check(q_, k, v, block_table);
    const bool paged = block_table.has_value();
    TORCH_CHECK(!(paged && leftpad), "fa_ck._ck: CK's paged split-KV takes no leftpad");
    TORCH_CHECK(num_splits >= 0 && num_splits <= fa_ck::kMaxSplits, "fa_ck._ck: num_splits must be 0..",
                fa_ck::kMaxSplits);
    // group mode walks q as (B * Sq, Hq, D): the batch stride must be Sq rows
    const Tensor q = q_.stride(-1) == 1 && q_.stride(0) == q_.size(1) * q_.stride(1) ? q_ : q_.contiguous();
    const int64_t B = q.size(0), Sq = q.size(1), Hq = q.size(2), D = q.size(3);
    c10::DeviceGuard guard(q.device());
    Tensor out = at::empty(q.sizes(), q.options());
    Tensor lse = at::empty({Hq, B * Sq}, q.options().dtype(at::kFloat));
    auto lse_bhs = [&] { return lse.view({Hq, B, Sq}).permute({1, 0, 2}).contiguous(); };
    if (q.numel() == 0) return {out, lse_bhs()};

    fa_ck::KVCacheParams p;
    p.bf16 = q.scalar_type() == at::kBFloat16;
    p.batch = B; p.seqlen_q = Sq; p.nhead_q = Hq; p.nhead_k = k.size(2); p.hdim = D;
    p.q = {q.data_ptr(), q.stride(0), q.stride(1), q.stride(2)};
    p.k = {k.data_ptr(), k.stride(0), k.stride(1), k.stride(2)};
    p.v = {v.data_ptr(), v.stride(0), v.stride(1), v.stride(2)};
    if (paged) {
        p.block_table = block_table->data_ptr<int32_t>();
        p.block_table_stride = block_table->stride(0);
        p.page_size = k.size(1);
        p.max_seqlen_k = block_table->size(1) * k.size(1);
    } else {
        p.max_seqlen_k = k.size(1);
    }
    const auto rows = kvcache_rows(q, seqlens_k, leftpad, batch_idx, paged, paged ? 0 : rows_per_cache_row(k));
    p.seqstart_q = rows[0].data_ptr<int32_t>(); p.seqstart_k = rows[1].data_ptr<int32_t>();
    p.seqlen_k = rows[2].data_ptr<int32_t>();
    p.scale = static_cast<float>(scale); p.softcap = static_cast<float>(softcap);
    p.window_left = static_cast<int>(wl); p.window_right = static_cast<int>(wr);
    if (alibi) {
        TORCH_CHECK(alibi->scalar_type() == at::kFloat && alibi->device() == q.device() && alibi->stride(-1) == 1 &&
                    ((alibi->dim() == 1 && alibi->size(0) == Hq) ||
                     (alibi->dim() == 2 && alibi->size(0) == B && alibi->size(1) == Hq)),
                    "fa_ck._ck: alibi slopes must be float32 (Hq,) or (B, Hq) on q's device, last dim contiguous");
        p.alibi = alibi->data_ptr<float>();
        p.alibi_batch_stride = alibi->dim() == 2 ? alibi->stride(0) : 0;
    }
    p.num_splits = static_cast<int>(num_splits);
    p.num_splits = fa_ck::kvcache_num_splits(p);      // the workspace is sized for what the kernel runs
    Tensor lse_acc = at::empty({Hq, p.num_splits, B * Sq}, q.options().dtype(at::kFloat));
    Tensor o_acc = at::empty({Hq, p.num_splits, B * Sq, D}, q.options().dtype(at::kFloat));
    p.o = {out.data_ptr(), out.stride(0), out.stride(1), out.stride(2)};
    p.lse = lse.data_ptr<float>(); p.lse_acc = lse_acc.data_ptr<float>(); p.o_acc = o_acc.data_ptr<float>();
    TORCH_CHECK(fa_ck::kvcache_fwd(p, current_stream(q)), "fa_ck._ck: no CK split-KV instance for this call");
    return {out, lse_bhs()};
}

// The append of flash_attn_with_kvcache through CK's appendkv kernel: k, v (B, n, Hk, D) written into the cache
// in place at cache_seqlens (int32 (B,)), the keys rotated; returns q rotated into a new tensor with a rotary
// table (cos, sin (seqlen_ro, rotary_dim / 2) in q's dtype, contiguous), else q itself. No host sync.
Tensor kvcache_append(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& k_,
                      const Tensor& v_, const Tensor& cache_seqlens, const OptTensor& batch_idx,
                      const OptTensor& block_table_, const OptTensor& cos, const OptTensor& sin, bool interleaved,
                      bool q_per_position) {
    kvcache_check(q, k_cache, v_cache, block_table_);
    const Tensor k = last_dim_contiguous(k_), v = last_dim_contiguous(v_);
    TORCH_CHECK(k.scalar_type() == q.scalar_type() && v.scalar_type() == q.scalar_type() && k.dim() == 4 &&
                k.sizes() == v.sizes() && k.size(0) == q.size(0) && k.size(2) == k_cache.size(2) &&
                k.size(3) == q.size(3) && k.device() == q.device() && v.device() == q.device(),
                "fa_ck._ck: k and v must be (B, n, Hk, D) in q's dtype on q's device");
    TORCH_CHECK(cos.has_value() == sin.has_value(), "fa_ck._ck: give rotary_cos and rotary_sin together");
    const bool paged = block_table_.has_value();
    fa_ck::AppendParams p;
    p.bf16 = q.scalar_type() == at::kBFloat16;
    p.batch = q.size(0); p.seqlen_q = q.size(1); p.nhead_q = q.size(2); p.hdim = q.size(3);
    p.nhead_k = k_cache.size(2); p.seqlen_new = k.size(1);
    c10::DeviceGuard guard(q.device());
    Tensor q_out = q;
    if (cos) {
        TORCH_CHECK(cos->scalar_type() == q.scalar_type() && sin->scalar_type() == q.scalar_type() &&
                    cos->dim() == 2 && cos->sizes() == sin->sizes() && cos->is_contiguous() && sin->is_contiguous() &&
                    cos->device() == q.device() && sin->device() == q.device(),
                    "fa_ck._ck: rotary_cos and rotary_sin must be contiguous (seqlen_ro, rotary_dim / 2) in q's dtype");
        p.rotary_cos = cos->data_ptr(); p.rotary_sin = sin->data_ptr();
        p.rotary_dim = 2 * cos->size(1);
        TORCH_CHECK(p.rotary_dim <= p.hdim && p.rotary_dim % fa_ck::kRotaryMultiple == 0,
                    "fa_ck._ck: CK's appendkv needs rotary_dim <= head dim and a multiple of ", fa_ck::kRotaryMultiple,
                    ", got ", p.rotary_dim);
        q_out = at::empty(q.sizes(), q.options());
        q_out.copy_(q);                     // CK rotates q in place: the caller's q stays as it was
    }
    p.interleaved = interleaved; p.q_per_position = q_per_position;
    p.q = {q_out.data_ptr(), q_out.stride(0), q_out.stride(1), q_out.stride(2)};
    p.knew = {k.data_ptr(), k.stride(0), k.stride(1), k.stride(2)};
    p.vnew = {v.data_ptr(), v.stride(0), v.stride(1), v.stride(2)};
    p.k = {k_cache.data_ptr(), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2)};
    p.v = {v_cache.data_ptr(), v_cache.stride(0), v_cache.stride(1), v_cache.stride(2)};
    const Tensor lens = int32_on(cache_seqlens, q, "cache_seqlens");
    p.seqlen_k = lens.data_ptr<int32_t>();
    Tensor rows;
    if (paged) {                            // kvcache_check: int32, last dim contiguous, pages CK takes
        p.block_table = block_table_->data_ptr<int32_t>();
        p.block_table_stride = block_table_->stride(0);
        p.page_size = k_cache.size(1);
    } else if (batch_idx) {
        rows = int32_on(*batch_idx, q, "batch_idx");
        p.cache_batch_idx = rows.data_ptr<int32_t>();
    }
    TORCH_CHECK(fa_ck::kvcache_append(p, current_stream(q)), "fa_ck._ck: no CK appendkv instance for this call");
    return q_out;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.doc() = "fa_ck: Composable Kernel FlashAttention (forward, backward, varlen, KV-cache) for ROCm";
    m.def("fwd", &fwd, "out, lse = fwd(q, k, v, cu_q, cu_k, max_q, max_k, scale, left, right, alibi, softcap, p, rng)");
    m.def("bwd", &bwd, "dq, dk, dv = bwd(dout, q, k, v, out, lse, cu_q, cu_k, max_q, max_k, scale, left, right, "
                       "alibi, p, rng, deterministic)");
    // The head-dim buckets built (FA_CK_HDIMS), per direction: the ck backend admits calls by these.
    const std::vector<int> built{FA_CK_HDIMS_LIST};
    std::vector<int> bwd;
    for (int d : built)
        if (fa_ck::bwd_has_bucket(d)) bwd.push_back(d);
    m.attr("hdims") = built;
    m.attr("fwd_hdims") = built;
    m.attr("bwd_hdims") = bwd;
    m.def("kvcache_fwd", &kvcache_fwd, "out, lse = kvcache_fwd(q, k_cache, v_cache, seqlens_k, leftpad, batch_idx, "
                                       "block_table, scale, left, right, alibi, softcap, num_splits)");
    // Split-KV buckets built (CK has no d192 split-KV tile): the ck backend admits KV-cache calls by these.
    std::vector<int> kvcache, appendkv;
    for (int d : built)
        if (fa_ck::kvcache_bucket(d) == d) kvcache.push_back(d);
    // appendkv tiles built (build_ck.APPENDKV_TILE: d96 runs CK's d128 appendkv kernels)
    for (int d : kvcache)
        if (std::find(appendkv.begin(), appendkv.end(), fa_ck::appendkv_bucket(d)) == appendkv.end())
            appendkv.push_back(fa_ck::appendkv_bucket(d));
    std::sort(appendkv.begin(), appendkv.end());
    m.attr("kvcache_hdims") = kvcache;
    m.def("kvcache_append", &kvcache_append, "q = kvcache_append(q, k_cache, v_cache, k, v, cache_seqlens, batch_idx, "
                                             "block_table, rotary_cos, rotary_sin, interleaved, q_per_position)");
    m.attr("appendkv_hdims") = appendkv;
}
