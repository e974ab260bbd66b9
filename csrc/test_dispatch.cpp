// Host-only test of CK's generated dispatchers behind our glue (tests/test_ck_build.py compiles it
// with upstream clang and the HIP stub, against fmha_{fwd,bwd}_api.cpp generated for the shipped set;
// no GPU). The kernels are stubs that record which instance was picked: every feature combination the
// ck backend admits must reach an instance of its head-dim bucket and features, and the device's
// properties must be read once per device however many calls are made.
// Build once per direction: -DFA_CK_TEST_BWD=0 or 1, -DFA_CK_API_FILE="<generated api .cpp>"; KV-cache
// decoding: -DFA_CK_TEST_KVCACHE=1 with fmha_fwd_splitkv_api.cpp (the split-KV dispatcher behind
// kvcache_fwd, also checking the arguments each kernel would receive); its append: -DFA_CK_TEST_APPENDKV=1
// with fmha_fwd_appendkv_api.cpp (the appendkv dispatcher behind kvcache_append, likewise).
#include <cstdio>
#include <string>
#include <type_traits>

#include <hip/hip_runtime.h>

// ---- the HIP runtime, as far as the dispatchers reach: three devices, property reads counted
static int g_device = 0, g_props_calls = 0;
extern "C" {
hipError_t hipGetDevice(int* d) { *d = g_device; return hipSuccess; }
hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int d) {
    ++g_props_calls;
    *p = hipDeviceProp_t{};
    const char* arch[] = {"gfx942:sramecc+:xnack-", "gfx90a:sramecc+:xnack-", "gfx1100"};
    if (d < 0 || d > 2) return hipErrorInvalidValue;
    std::snprintf(p->gcnArchName, sizeof p->gcnArchName, "%s", arch[d]);
    p->multiProcessorCount = 304;
    return hipSuccess;
}
hipError_t hipGetLastError(void) { return hipSuccess; }
hipError_t hipPeekAtLastError(void) { return hipSuccess; }
const char* hipGetErrorString(hipError_t) { return "stub"; }
hipError_t hipEventCreate(hipEvent_t*) { return hipErrorUnknown; }   // timing is never asked for
hipError_t hipEventCreateWithFlags(hipEvent_t*, unsigned) { return hipErrorUnknown; }
hipError_t hipEventDestroy(hipEvent_t) { return hipErrorUnknown; }
hipError_t hipEventRecord(hipEvent_t, hipStream_t) { return hipErrorUnknown; }
hipError_t hipEventSynchronize(hipEvent_t) { return hipErrorUnknown; }
hipError_t hipEventElapsedTime(float*, hipEvent_t, hipEvent_t) { return hipErrorUnknown; }
hipError_t hipDeviceSynchronize(void) { return hipErrorUnknown; }
hipError_t hipStreamSynchronize(hipStream_t) { return hipErrorUnknown; }
hipError_t hipMalloc(void**, size_t) { return hipErrorUnknown; }
hipError_t hipFree(void*) { return hipErrorUnknown; }
hipError_t hipMemset(void*, int, size_t) { return hipErrorUnknown; }
hipError_t hipMemsetAsync(void*, int, size_t, hipStream_t) { return hipErrorUnknown; }
hipError_t hipMemcpy(void*, const void*, size_t, hipMemcpyKind) { return hipErrorUnknown; }
hipError_t hipMemcpyAsync(void*, const void*, size_t, hipMemcpyKind, hipStream_t) { return hipErrorUnknown; }
hipError_t hipDeviceGetAttribute(int*, int, int) { return hipErrorUnknown; }
hipError_t hipGetDeviceCount(int* n) { *n = 3; return hipSuccess; }
hipError_t hipSetDevice(int d) { g_device = d; return hipSuccess; }
}

#include "fa_ck.hpp"
#if FA_CK_TEST_BWD
#include "fmha_bwd.hpp"
// the generated api file specialises fmha_bwd<2> below: declared before ck_bwd.hip uses it
template <> float fmha_bwd<2>(fmha_bwd_traits, fmha_bwd_args, const ck_tile::stream_config&);
#include "ck_bwd.hip"
#else
#include "ck_fwd.hip"
#endif

// ---- what the stub kernels saw
struct Picked {
    int calls = 0, hdim = 0, key_tile = 0;
    bool bf16 = false, group = false, mask = false, alibi = false, dropout = false, softcap = false, det = false;
};
static Picked g;

template <typename Mask> constexpr bool masking() { return Mask::IsMasking; }
constexpr bool is_alibi(ck_tile::BlockAttentionBiasEnum b) { return b == ck_tile::BlockAttentionBiasEnum::ALIBI; }

#if FA_CK_TEST_BWD
template <typename T> struct BwdInfo;
template <ck_tile::index_t H, typename DT, bool G, typename M, typename D, ck_tile::BlockAttentionBiasEnum B,
          bool DB, ck_tile::index_t P, ck_tile::index_t PV, bool Det, bool TR, ck_tile::index_t MQ, ck_tile::index_t N0>
struct BwdInfo<fmha_bwd_dq_dk_dv_traits_<H, DT, G, M, D, B, DB, P, PV, Det, TR, MQ, N0>> {
    static void record() {
        g = Picked{g.calls + 1, H, N0, std::is_same_v<DT, FmhaBwdBf16>, G, masking<M>(), is_alibi(B),
                   D::IsDropout, false, Det};
    }
};
template <typename T, typename A> void fmha_bwd_dq_dk_dv_oneshot_(const ck_tile::stream_config&, fmha_bwd_args) {
    BwdInfo<T>::record();
}
template <typename T, typename A> float fmha_bwd_dq_dk_dv_(const ck_tile::stream_config&, fmha_bwd_args) { return -1; }
template <typename T, typename A> std::string fmha_bwd_dq_dk_dv_get_name_() { return ""; }
template <typename T, typename A> int fmha_bwd_dq_dk_dv_maxq_() { return 0; }
template <typename T, typename A> void fmha_bwd_dot_do_o_oneshot_(const ck_tile::stream_config&, fmha_bwd_args) {}
template <typename T, typename A> float fmha_bwd_dot_do_o_(const ck_tile::stream_config&, fmha_bwd_args) { return -1; }
template <typename T, typename A> std::string fmha_bwd_dot_do_o_get_name_() { return ""; }
template <typename T, typename A> void fmha_bwd_convert_dq_oneshot_(const ck_tile::stream_config&, fmha_bwd_args) {}
template <typename T, typename A> float fmha_bwd_convert_dq_(const ck_tile::stream_config&, fmha_bwd_args) { return -1; }
template <typename T, typename A> std::string fmha_bwd_convert_dq_get_name_() { return ""; }
#elif FA_CK_TEST_APPENDKV
#include "test_dispatch_appendkv.hpp"
#elif FA_CK_TEST_KVCACHE
float fmha_fwd(fmha_fwd_traits, fmha_fwd_args, const ck_tile::stream_config&) { return -1.f; }   // not under test
float fmha_fwd_appendkv(fmha_fwd_appendkv_traits, fmha_fwd_appendkv_args, const ck_tile::stream_config&) {
    return -1.f;
}

// What the split-KV and combine stubs saw, and the arguments the split-KV kernel got.
struct KvPicked {
    int kernel_calls = 0, combine_calls = 0, hdim = 0, m0 = 0, n0 = 0, combine_hdim = 0;
    bool bf16 = false, group = false, paged = false, pad_d = false, pad_dv = false, combine_lse = false,
         combine_pad_dv = false, combine_after_kernel = false;
    fmha_fwd_splitkv_args a{};
};
static KvPicked kv;
template <typename T, typename A> void fmha_fwd_splitkv_oneshot_(const ck_tile::stream_config&, fmha_fwd_splitkv_args a) {
    kv = KvPicked{kv.kernel_calls + 1, kv.combine_calls, T::HDim, T::kM0, T::kN0, 0,
                  std::is_same_v<typename T::DataType, FmhaFwdBf16>, T::kIsGroupMode, T::kIsPagedKV, T::kPadD, T::kPadDv};
    kv.a = a;
    g = Picked{g.calls + 1, T::HDim, T::kN0, kv.bf16, T::kIsGroupMode, masking<typename T::FmhaMask>(),
               is_alibi(T::BiasEnum), false, T::kHasLogitsSoftCap, false};
}
template <typename T, typename A> void fmha_fwd_splitkv_combine_oneshot_(const ck_tile::stream_config&,
                                                                         fmha_fwd_splitkv_args) {
    ++kv.combine_calls;
    kv.combine_hdim = T::HDim;
    kv.combine_lse = T::kStoreLse;
    kv.combine_pad_dv = T::kPadDv;
    kv.combine_after_kernel = kv.kernel_calls == kv.combine_calls;
}
template <typename T, typename A> std::string fmha_fwd_splitkv_get_name_() { return ""; }
template <typename T, typename A> std::string fmha_fwd_splitkv_combine_get_name_() { return ""; }

// Every head dim (multiples of 8 to 256) x dtype x dense/paged x no mask/causal/window x plain/alibi/softcap
// x splits (1, 3, chosen) x Sq (1, 5): a call is served exactly when kvcache_bucket() says so, by a
// group-mode split-KV instance of its bucket and features followed by its combine kernel, with the
// arguments our glue means (strides, page size and stride, the seqlen and seqstart pointers).
static int kvcache_grid() {
    constexpr int B = 2, Hq = 8, Hk = 2, kPage = 256, kBlocks = 4, kDenseRows = 1000;
    static int32_t seqstart_q[B + 1], seqstart_k[B + 1], seqlen_k[B], table[B * kBlocks];
    static float slopes[B * Hq], lse[1], lse_acc[1], o_acc[1];
    int total = 0, served = 0, wrong = 0;
    for (int d = 8; d <= 256; d += 8) {
        int d_served = 0, d_total = 0;
        for (int bf16 = 0; bf16 < 2; ++bf16)
        for (int paged = 0; paged < 2; ++paged)
        for (int mask = 0; mask < 3; ++mask)
        for (int feat = 0; feat < 3; ++feat)          // plain, alibi, softcap
        for (int splits : {1, 3, 0})
        for (int sq : {1, 5}) {
            fa_ck::KVCacheParams p;
            p.bf16 = bf16; p.batch = B; p.nhead_q = Hq; p.nhead_k = Hk; p.hdim = d; p.seqlen_q = sq;
            p.q = {(void*)0x1000, int64_t(sq) * Hq * d, Hq * d, d};
            p.o = {(void*)0x2000, int64_t(sq) * Hq * d, Hq * d, d};
            const int rows = paged ? kPage : kDenseRows;
            p.k = {(void*)0x3000, int64_t(rows) * Hk * d, Hk * d, d};
            p.v = {(void*)0x4000, int64_t(rows) * Hk * d, Hk * d, d};
            if (paged) { p.block_table = table; p.block_table_stride = kBlocks; p.page_size = kPage; }
            p.max_seqlen_k = paged ? kPage * kBlocks : kDenseRows;
            p.seqstart_q = seqstart_q; p.seqstart_k = seqstart_k; p.seqlen_k = seqlen_k;
            p.lse = lse; p.lse_acc = lse_acc; p.o_acc = o_acc;
            p.num_splits = splits;
            p.scale = 0.125f;
            if (mask == 1) p.window_right = 0;
            if (mask == 2) { p.window_left = 64; p.window_right = 2; }   // right hides keys only at Sq 5
            if (feat == 1) { p.alibi = slopes; p.alibi_batch_stride = Hq; }
            if (feat == 2) p.softcap = 30.f;
            kv = KvPicked{};
            const bool ok = fa_ck::kvcache_fwd(p, nullptr);
            const int bucket = fa_ck::kvcache_bucket(d);
            const fa_ck::KVTile tile = fa_ck::kvcache_tile(bucket);
            const bool want_mask = (mask == 1 && sq > 1) || mask == 2;   // causal at Sq 1 hides nothing
            const fmha_fwd_splitkv_args& a = kv.a;
            const int n = splits ? splits : a.num_splits;
            const int total_q = B * sq;
            bool right = ok == (bucket != 0);
            if (ok)
                right = right && kv.kernel_calls == 1 && kv.combine_calls == 1 && kv.combine_after_kernel &&
                        g.hdim == bucket && kv.bf16 == bool(bf16) && kv.group && kv.paged == bool(paged) &&
                        g.mask == want_mask && g.alibi == (feat == 1) && g.softcap == (feat == 2) &&
                        kv.pad_d == (bucket == 96) && kv.pad_dv == kv.pad_d && kv.combine_hdim == bucket &&
                        kv.combine_lse && kv.combine_pad_dv == kv.pad_dv && kv.m0 == tile.m0 && kv.n0 == tile.n0 &&
                        n >= 1 && n <= std::min(fa_ck::kMaxSplits, (p.max_seqlen_k + tile.n0 - 1) / tile.n0) &&
                        a.num_splits == n &&
                        // paged: the table, its row stride, the page size and the page stride; dense: none of them
                        a.block_table_ptr == (paged ? table : nullptr) && a.batch_stride_block_table == (paged ? kBlocks : 0) &&
                        a.page_block_size == (paged ? kPage : 0) && !a.is_gappy && a.cache_batch_idx == nullptr &&
                        a.batch_stride_k == (paged ? kPage * Hk * d : 0) && a.batch_stride_v == a.batch_stride_k &&
                        a.seqstart_q_ptr == seqstart_q && a.seqstart_k_ptr == seqstart_k && a.seqlen_k_ptr == seqlen_k &&
                        a.batch == B && a.max_seqlen_q == sq && a.hdim_q == d && a.hdim_v == d && a.nhead_q == Hq &&
                        a.nhead_k == Hk && a.stride_q == Hq * d && a.nhead_stride_q == d && a.batch_stride_q == 0 &&
                        a.stride_k == Hk * d && a.nhead_stride_k == d && a.stride_v == Hk * d && a.nhead_stride_v == d &&
                        a.stride_o == Hq * d && a.nhead_stride_o == d && a.batch_stride_o == 0 &&
                        a.nhead_stride_lse == total_q && a.lse_ptr == lse && a.o_ptr == p.o.ptr &&
                        a.split_stride_lse_acc == total_q && a.nhead_stride_lse_acc == n * total_q &&
                        a.stride_o_acc == d && a.split_stride_o_acc == total_q * d &&
                        a.nhead_stride_o_acc == n * total_q * d &&
                        a.bias_ptr == (feat == 1 ? slopes : nullptr) && a.stride_bias == (feat == 1 ? Hq : 0) &&
                        a.logits_soft_cap == (feat == 2 ? 30.f : 0.f) && a.scale_s == 0.125f &&
                        a.mask_type == (want_mask ? 2 : 0) &&
                        a.window_size_left == (mask == 2 ? 64 : want_mask && feat == 1 ? p.max_seqlen_k : -1) &&
                        a.window_size_right == (mask == 2 ? (sq > 3 ? 2 : -1) : want_mask ? 0 : -1);
            else
                right = right && kv.kernel_calls == 0 && kv.combine_calls == 0;
            ++total; ++d_total;
            served += ok; d_served += ok;
            if (!right && ++wrong <= 10)
                std::printf("fail.%d d%d_bf16%d_paged%d_mask%d_feat%d_splits%d_sq%d_ok%d_hdim%d\n", wrong, d, bf16,
                            paged, mask, feat, splits, sq, ok, g.hdim);
        }
        std::printf("hdim%d %d/%d\n", d, d_served, d_total);
    }
    std::printf("combos %d\nserved %d\nwrong %d\n", total, served, wrong);
    return wrong;
}

// The split count chosen for num_splits=0 (the device has 304 CUs), the page sizes refused, the device read once.
static int kvcache_main() {
    const int wrong = kvcache_grid();
    std::printf("props_calls_one_device %d\n", g_props_calls);
    auto chosen = [](int batch, int hq, int hk, int sq, int cap, bool mask) {
        fa_ck::KVCacheParams p;
        p.batch = batch; p.nhead_q = hq; p.nhead_k = hk; p.hdim = 128; p.seqlen_q = sq; p.max_seqlen_k = cap;
        if (mask) p.window_right = 0;
        return fa_ck::kvcache_num_splits(p);
    };
    std::printf("splits.b1_gqa_128k %d\nsplits.b64_gqa_8k %d\nsplits.b1_cache256 %d\nsplits.b1_mha_causal_sq16 %d\n",
                chosen(1, 32, 8, 1, 131072, false), chosen(64, 32, 8, 1, 8192, false), chosen(1, 32, 8, 1, 256, false),
                chosen(1, 32, 32, 16, 131072, true));
    fa_ck::KVCacheParams p;
    p.hdim = 128; p.nhead_q = p.nhead_k = 1; p.batch = 1; p.seqlen_q = 1; p.max_seqlen_k = 64; p.num_splits = 1;
    static int32_t table[1];
    p.block_table = table; p.page_size = 64;
    const bool page64 = fa_ck::kvcache_fwd(p, nullptr);
    p.page_size = 128;
    const bool page128 = fa_ck::kvcache_fwd(p, nullptr);
    p.num_splits = fa_ck::kMaxSplits + 1;
    const bool too_many_splits = fa_ck::kvcache_fwd(p, nullptr);
    std::printf("page64_found %d\npage128_found %d\nsplits129_found %d\nprops_calls_end %d\n", page64, page128,
                too_many_splits, g_props_calls);
    return wrong ? 1 : 0;
}
#else
float fmha_fwd_splitkv(fmha_fwd_splitkv_traits, fmha_fwd_splitkv_args, const ck_tile::stream_config&) {
    return -1.f;   // ck_fwd.hip's KV-cache glue, not under test here
}
float fmha_fwd_appendkv(fmha_fwd_appendkv_traits, fmha_fwd_appendkv_args, const ck_tile::stream_config&) {
    return -1.f;
}
template <typename T, typename A> float fmha_fwd_(const ck_tile::stream_config&, fmha_fwd_args) {
    g = Picked{g.calls + 1, T::HDim, T::kN0, std::is_same_v<typename T::DataType, FmhaFwdBf16>, T::kIsGroupMode,
               masking<typename T::FmhaMask>(), is_alibi(T::BiasEnum), T::kHasDropout, T::kHasLogitsSoftCap,
               false};
    return T::kStoreLse ? 1.f : -1.f;   // our glue always asks for lse
}
#endif

#include FA_CK_API_FILE

static int bucket(int d, std::initializer_list<int> buckets) {
    for (int b : buckets)
        if (b >= d) return b;
    return 0;
}

int main() {
#if FA_CK_TEST_APPENDKV
    return appendkv_main();
#elif FA_CK_TEST_KVCACHE
    return kvcache_main();
#else
    constexpr int kSq = 300, kSk = 400;
    float slopes[2 * 16];
    int64_t rng[2];
    int32_t cu[3];
    int total = 0, found = 0, wrong = 0;
    // head dim, dtype, batch/varlen, mask (none, causal, sliding window), alibi, dropout, then
    // softcap (forward; never with alibi) or deterministic (backward)
    for (int d = 8; d <= 256; d += 8)
        for (int bf16 = 0; bf16 < 2; ++bf16)
            for (int group = 0; group < 2; ++group)
                for (int mask = 0; mask < 3; ++mask)
                    for (int alibi = 0; alibi < 2; ++alibi)
                        for (int drop = 0; drop < 2; ++drop)
                            for (int last = 0; last < 2; ++last) {
#if FA_CK_TEST_BWD
                                fa_ck::BwdParams p;
                                const bool softcap = false, det = last;
                                const int want_hdim = bucket(d, {32, 64, 96, 128, 256});
#else
                                fa_ck::FwdParams p;
                                const bool softcap = last, det = false;
                                if (softcap && alibi) continue;
                                const int want_hdim = bucket(d, {32, 64, 96, 128, 192, 256});
#endif
                                p.bf16 = bf16; p.hdim = d; p.nhead_q = 16; p.nhead_k = 4; p.batch = 2;
                                p.seqlen_q = p.max_seqlen_q = kSq; p.seqlen_k = p.max_seqlen_k = kSk;
                                if (group) { p.cu_seqlens_q = p.cu_seqlens_k = cu; p.seqlen_q *= 2; p.seqlen_k *= 2; }
                                if (mask == 1) p.window_right = 0;
                                if (mask == 2) { p.window_left = 64; p.window_right = 16; }
                                if (alibi) p.alibi = slopes;
                                if (drop) { p.p_drop = 0.1f; p.rng = rng; }
                                p.softcap = softcap ? 30.f : 0.f;
#if FA_CK_TEST_BWD
                                p.deterministic = det;
                                const bool ok = fa_ck::bwd(p, nullptr);
#else
                                const bool ok = fa_ck::fwd(p, nullptr);
#endif
                                ++total;
                                found += ok;
                                const bool right = ok && g.hdim == want_hdim && g.bf16 == bool(bf16) &&
                                                   g.group == bool(group) && g.mask == (mask > 0) &&
                                                   g.alibi == bool(alibi) && g.dropout == bool(drop) &&
                                                   g.softcap == softcap && g.det == det;
#if FA_CK_TEST_BWD
                                // the dq workspace must hold one slice per key tile of the picked kernel
                                const bool tiles_ok = !det || fa_ck::bwd_dq_acc_splits(kSk, d, true) ==
                                                                  (kSk + g.key_tile - 1) / g.key_tile;
#else
                                const bool tiles_ok = true;
#endif
                                if (!right || !tiles_ok) {
                                    if (++wrong <= 10)
                                        std::printf("fail.%d d%d_bf16%d_group%d_mask%d_alibi%d_drop%d_last%d_found%d_hdim%d\n",
                                                    wrong, d, bf16, group, mask, alibi, drop, last, ok, g.hdim);
                                }
                            }
    std::printf("combos %d\nfound %d\nwrong %d\nprops_calls_one_device %d\n", total, found, wrong, g_props_calls);
    // a second device is read once more; a device with no instance finds none (and is read once)
#if FA_CK_TEST_BWD
    fa_ck::BwdParams p;
#else
    fa_ck::FwdParams p;
#endif
    p.hdim = 64; p.nhead_q = p.nhead_k = 1; p.batch = 1; p.seqlen_q = p.max_seqlen_q = p.seqlen_k = p.max_seqlen_k = 128;
    auto call = [&] {
#if FA_CK_TEST_BWD
        return fa_ck::bwd(p, nullptr);
#else
        return fa_ck::fwd(p, nullptr);
#endif
    };
    g_device = 1;
    const bool dev1 = call() && call();
    g_device = 2;
    const bool dev2 = call() || call();
    g_device = 0;
    const bool dev0 = call();
    std::printf("device1_found %d\ndevice2_found %d\ndevice0_found %d\nprops_calls_three_devices %d\n", dev1, dev2,
                dev0, g_props_calls);
    return 0;
#endif
}
