// test_dispatch.cpp's appendkv part (-DFA_CK_TEST_APPENDKV=1, with fmha_fwd_appendkv_api.cpp generated for the
// shipped set): CK's appendkv dispatcher behind fa_ck::kvcache_append, with a stub kernel that records which
// instance was picked and the arguments it got. Included after ck_fwd.hip, before the generated api file.
#pragma once
#include <algorithm>
#include <initializer_list>

float fmha_fwd(fmha_fwd_traits, fmha_fwd_args, const ck_tile::stream_config&) { return -1.f; }   // not under test
float fmha_fwd_splitkv(fmha_fwd_splitkv_traits, fmha_fwd_splitkv_args, const ck_tile::stream_config&) {
    return -1.f;
}

// What the appendkv stub saw: the instance's traits and the arguments.
struct AkPicked {
    int calls = 0, hdim = 0, tile_s = 0, tile_sk = 0, tile_d = 0, tile_dv = 0, rope = -1;
    bool bf16 = false, row_v = false, pad_s = false, pad_sk = false, pad_d = false, pad_dv = false, paged = false;
    fmha_fwd_appendkv_args a{};
};
static AkPicked ak;
template <typename T, typename A> float fmha_fwd_appendkv_(const ck_tile::stream_config&, fmha_fwd_appendkv_args a) {
    ak = AkPicked{ak.calls + 1, T::HDim, T::kTileSizeS, T::kTileSizeSk, T::kTileSizeD, T::kTileSizeDv,
                  static_cast<int>(T::RotaryEnum), std::is_same_v<typename T::DataType, FmhaFwdBf16>,
                  T::kIsVLayoutRowMajor, T::kPadS, T::kPadSk, T::kPadD, T::kPadDv, T::kIsPagedKV};
    ak.a = a;
    return 1.f;
}

// The kernel CK's dispatcher must pick: the tile of appendkv_bucket(d); the one padding only the key length where
// Sq % 64 == 0 and d is the tile's (with rotary it pads the head dim of q and k too), else the one padding all.
static bool appendkv_kernel_right(int d, int sq, int rope, bool bf16, bool paged) {
    const int tile = fa_ck::appendkv_bucket(d);
    const bool pad_s = sq % 64 != 0 || d != tile;
    const bool pad_d = rope != 0 || pad_s;
    return ak.calls == 1 && ak.hdim == tile && ak.tile_s == 64 && ak.tile_sk == 64 && ak.tile_d == tile &&
           ak.tile_dv == tile && ak.rope == rope && ak.bf16 == bf16 && ak.row_v && ak.pad_s == pad_s && ak.pad_sk &&
           ak.pad_d == pad_d && ak.pad_dv == pad_s && ak.paged == paged;
}

// Every head dim (multiples of 8 to 256) x dtype x rotary (none, interleaved, half) x layout (dense, dense with
// cache_batch_idx, paged) x Sq (1, 64) x new tokens (1, 70) x q per position: served exactly where the glue says
// (a rotary_dim <= d that is a multiple of 16), by the instance above, with the arguments the glue means.
static int appendkv_grid() {
    constexpr int B = 3, Hq = 8, Hk = 2, kPage = 256, kBlocks = 4, kRows = 1000, kRo = 4096;
    static int32_t seqlen_k[B], table[B * kBlocks], batch_idx[B];
    static uint16_t cos[kRo * 128], sin[kRo * 128];
    int total = 0, served = 0, wrong = 0;
    for (int d = 8; d <= 256; d += 8) {
        int d_served = 0, d_total = 0;
        for (int bf16 = 0; bf16 < 2; ++bf16)
        for (int rope = 0; rope < 3; ++rope)
        for (int layout = 0; layout < 3; ++layout)
        for (int sq : {1, 64})
        for (int n : {1, 70})
        for (int qpp = 0; qpp < 2; ++qpp) {
            const bool paged = layout == 2;
            const int rd = rope == 0 ? 0 : std::max(16, d / 16 * 16);
            fa_ck::AppendParams p;
            p.bf16 = bf16; p.batch = B; p.nhead_q = Hq; p.nhead_k = Hk; p.hdim = d; p.seqlen_q = sq; p.seqlen_new = n;
            p.q = {(void*)0x1000, int64_t(sq) * Hq * d, Hq * d, d};
            // new keys and values as (B, Hk, n, D) storage seen as (B, n, Hk, D): strides the glue passes as given
            p.knew = {(void*)0x2000, int64_t(Hk) * n * d, d, int64_t(n) * d};
            p.vnew = {(void*)0x3000, int64_t(Hk) * n * (d + 8), d + 8, int64_t(n) * (d + 8)};
            const int rows = paged ? kPage : kRows;
            p.k = {(void*)0x4000, int64_t(rows) * Hk * d, Hk * d, d};
            p.v = {(void*)0x5000, int64_t(rows) * Hk * d * 2, Hk * d * 2, d};   // a cache with a padded row stride
            p.seqlen_k = seqlen_k;
            if (layout == 1) p.cache_batch_idx = batch_idx;
            if (paged) { p.block_table = table; p.block_table_stride = kBlocks; p.page_size = kPage; }
            if (rope) { p.rotary_cos = cos; p.rotary_sin = sin; p.rotary_dim = rd; p.interleaved = rope == 1; }
            p.q_per_position = qpp;
            ak = AkPicked{};
            const bool ok = fa_ck::kvcache_append(p, nullptr);
            const bool want = rd <= d;
            const fmha_fwd_appendkv_args& a = ak.a;
            bool right = ok == want;
            if (ok)
                right = right && appendkv_kernel_right(d, sq, rope, bf16, paged) &&
                        a.q_ptr == p.q.ptr && a.k_ptr == p.k.ptr && a.knew_ptr == p.knew.ptr && a.v_ptr == p.v.ptr &&
                        a.vnew_ptr == p.vnew.ptr && a.seqlen_k_ptr == seqlen_k && a.seqlen_q == sq &&
                        a.seqlen_knew == n && a.batch == B && a.hdim_q == d && a.hdim_v == d && a.nhead_q == Hq &&
                        a.nhead_k == Hk &&
                        a.rotary_cos_ptr == (rope ? (void*)cos : nullptr) &&
                        a.rotary_sin_ptr == (rope ? (void*)sin : nullptr) && a.rotary_dim == rd &&
                        a.has_mask == bool(qpp) &&
                        a.block_table_ptr == (paged ? table : nullptr) &&
                        a.batch_stride_block_table == (paged ? kBlocks : 0) && a.page_block_size == (paged ? kPage : 0) &&
                        a.cache_batch_idx == (layout == 1 ? batch_idx : nullptr) &&
                        a.stride_q == Hq * d && a.nhead_stride_q == d && a.batch_stride_q == sq * Hq * d &&
                        a.stride_knew == d && a.nhead_stride_knew == n * d && a.batch_stride_knew == Hk * n * d &&
                        a.stride_vnew == d + 8 && a.nhead_stride_vnew == n * (d + 8) &&
                        a.batch_stride_vnew == Hk * n * (d + 8) &&
                        a.stride_k == Hk * d && a.nhead_stride_k == d && a.batch_stride_k == rows * Hk * d &&
                        a.stride_v == 2 * Hk * d && a.nhead_stride_v == d && a.batch_stride_v == 2 * rows * Hk * d;
            else
                right = right && ak.calls == 0;
            ++total; ++d_total;
            served += ok; d_served += ok;
            if (!right && ++wrong <= 10)
                std::printf("fail.%d d%d_bf16%d_rope%d_layout%d_sq%d_n%d_qpp%d_ok%d_hdim%d\n", wrong, d, bf16, rope,
                            layout, sq, n, qpp, ok, ak.hdim);
        }
        std::printf("hdim%d %d/%d\n", d, d_served, d_total);
    }
    std::printf("combos %d\nserved %d\nwrong %d\n", total, served, wrong);
    return wrong;
}

// One call of head dim d (paged with `page` keys per page, 0: dense) and rotary_dim rd; whether CK was called.
static int appendkv_one(int d, int page, int rd, int batch = 1, int n = 1, int sq = 1) {
    static int32_t seqlen_k[1], table[1];
    static uint16_t cos[1], sin[1];
    fa_ck::AppendParams p;
    p.batch = batch; p.nhead_q = p.nhead_k = 1; p.hdim = d; p.seqlen_q = sq; p.seqlen_new = n;
    p.q = p.knew = p.vnew = {(void*)0x1000, d, d, d};
    p.k = p.v = {(void*)0x2000, 512 * d, d, d};
    p.seqlen_k = seqlen_k;
    if (page) { p.block_table = table; p.block_table_stride = 1; p.page_size = page; }
    if (rd) { p.rotary_cos = cos; p.rotary_sin = sin; p.rotary_dim = rd; }
    ak = AkPicked{};
    const bool ok = fa_ck::kvcache_append(p, nullptr);
    return ok ? 1 + ak.calls : 0;      // 0 refused, 1 done without CK, 2 through CK
}

static int appendkv_main() {
    const int wrong = appendkv_grid();
    std::printf("props_calls_one_device %d\n", g_props_calls);
    // rotary dims 2..d at d 128 and 80 (the d128 tile, padded): CK is called exactly for multiples of 16
    for (int d : {128, 80}) {
        std::string served;
        for (int rd = 2; rd <= d; rd += 2)
            if (appendkv_one(d, 0, rd) == 2) served += std::to_string(rd) + ",";
        std::printf("rotary_served_d%d %s\n", d, served.c_str());
    }
    std::string pages;
    for (int page : {16, 32, 64, 128, 192, 256, 512})
        if (appendkv_one(128, page, 0) == 2) pages += std::to_string(page) + ",";
    std::printf("pages_served %s\n", pages.c_str());
    std::printf("d264 %d\nbatch0 %d\nnothing_new %d\nrotary_only %d\nrotary_nothing %d\nprops_calls_end %d\n",
                appendkv_one(264, 0, 0), appendkv_one(64, 0, 16, 0), appendkv_one(64, 0, 0, 1, 0),
                appendkv_one(64, 0, 16, 1, 0), appendkv_one(64, 0, 16, 1, 0, 0), g_props_calls);
    return wrong ? 1 : 0;
}
