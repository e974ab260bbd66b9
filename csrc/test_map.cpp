// Host-only unit test of the argument mapping (tests/test_ck_build.py compiles and runs it with
// upstream clang and the HIP stub; no GPU, no torch). CK's dispatchers are replaced by stubs that
// record what they were given; the program prints "case.field value" lines for the test to check.
// CK's fmha_fwd.hpp and fmha_bwd.hpp cannot share a translation unit: build once per direction,
// with -DFA_CK_TEST_BWD=0 and =1.
#include <cstdio>
#include <hip/hip_runtime.h>
// the KV-cache glue's split heuristic reads the device; no device here (it then takes one split)
extern "C" hipError_t hipGetDevice(int*) { return hipErrorUnknown; }
extern "C" hipError_t hipGetDeviceProperties(hipDeviceProp_t*, int) { return hipErrorUnknown; }
#include "fa_ck.hpp"
#if FA_CK_TEST_BWD
#include "fmha_bwd.hpp"
template <> float fmha_bwd<2>(fmha_bwd_traits, fmha_bwd_args, const ck_tile::stream_config&);
#include "ck_bwd.hip"
static fmha_bwd_traits g_bt;
static fmha_bwd_args g_ba;
template <> float fmha_bwd<2>(fmha_bwd_traits t, fmha_bwd_args a, const ck_tile::stream_config&) { g_bt = t; g_ba = a; return 0.f; }
#else
#include "ck_fwd.hip"
static fmha_fwd_traits g_ft;
static fmha_fwd_args g_fa;
float fmha_fwd(fmha_fwd_traits t, fmha_fwd_args a, const ck_tile::stream_config&) { g_ft = t; g_fa = a; return 0.f; }
// ck_fwd.hip's KV-cache glue: tests/test_ck_build.py checks it through CK's split-KV and appendkv dispatchers
// (test_dispatch.cpp)
float fmha_fwd_splitkv(fmha_fwd_splitkv_traits, fmha_fwd_splitkv_args, const ck_tile::stream_config&) { return -1.f; }
float fmha_fwd_appendkv(fmha_fwd_appendkv_traits, fmha_fwd_appendkv_args, const ck_tile::stream_config&) { return -1.f; }
#endif

#define P(c, f, v) std::printf("%s.%s %lld\n", c, f, (long long)(v))

static fa_ck::FwdParams batch_params() {
    fa_ck::FwdParams p;
    p.batch = 2; p.nhead_q = 8; p.nhead_k = 2; p.hdim = 64;
    p.seqlen_q = p.max_seqlen_q = 5; p.seqlen_k = p.max_seqlen_k = 7;
    // q (B, Sq, Hq, D) with a padded row stride (not contiguous beyond D)
    p.q = {(void*)0x1000, 5 * 600, 600, 64};
    p.k = {(void*)0x2000, 7 * 128, 128, 64};
    p.v = {(void*)0x3000, 7 * 256, 256, 128};
    p.o = {(void*)0x4000, 5 * 512, 512, 64};
    p.lse = (float*)0x5000;
    p.scale = 0.125f;
    return p;
}

#if !FA_CK_TEST_BWD
static void print_fwd(const char* c) {
    P(c, "mask", int(g_ft.mask_type)); P(c, "bias", int(g_ft.bias_type)); P(c, "group", g_ft.is_group_mode);
    P(c, "lse", g_ft.has_lse); P(c, "dropout", g_ft.has_dropout); P(c, "softcap", g_ft.has_logits_soft_cap);
    P(c, "left", g_fa.window_size_left); P(c, "right", g_fa.window_size_right); P(c, "mask_type", g_fa.mask_type);
    P(c, "stride_q", g_fa.stride_q); P(c, "nhead_stride_q", g_fa.nhead_stride_q); P(c, "batch_stride_q", g_fa.batch_stride_q);
    P(c, "stride_v", g_fa.stride_v); P(c, "nhead_stride_v", g_fa.nhead_stride_v); P(c, "batch_stride_o", g_fa.batch_stride_o);
    P(c, "nhead_stride_lse", g_fa.nhead_stride_lse); P(c, "batch_stride_lse", g_fa.batch_stride_lse);
    P(c, "stride_bias", g_fa.stride_bias); P(c, "seqstart_q", (intptr_t)g_fa.seqstart_q_ptr);
    P(c, "nhead_k", g_fa.nhead_k); P(c, "scale_x1000", g_fa.scale_s * 1000);
    P(c, "seed_is_ptr", g_fa.drop_seed_offset.index());
}

#endif

int main() {
#if !FA_CK_TEST_BWD
    fa_ck::FwdParams p = batch_params();
    fa_ck::fwd(p, nullptr); print_fwd("plain");

    p.window_right = 0; fa_ck::fwd(p, nullptr); print_fwd("causal");

    float slopes[8];
    p.alibi = slopes; p.alibi_batch_stride = 8; fa_ck::fwd(p, nullptr); print_fwd("alibi_causal");

    p = batch_params(); p.window_left = 6; p.window_right = 4; fa_ck::fwd(p, nullptr); print_fwd("wide_window");
    p.window_left = 2; fa_ck::fwd(p, nullptr); print_fwd("window");
    p.top_left = true; p.window_left = -1; p.window_right = 0; fa_ck::fwd(p, nullptr); print_fwd("top_left");

    int64_t rng[2];
    p = batch_params(); p.p_drop = 0.1f; p.rng = rng; p.softcap = 30.f; p.bf16 = true;
    fa_ck::fwd(p, nullptr); print_fwd("dropout");

    // varlen: 3 sequences, total_q 12, total_k 20, (total, H, D) tensors
    int32_t cu[4];
    p = batch_params(); p.batch = 3; p.seqlen_q = 12; p.seqlen_k = 20; p.max_seqlen_q = 6; p.max_seqlen_k = 9;
    p.cu_seqlens_q = cu; p.cu_seqlens_k = cu;
    p.q = {(void*)0x1000, 0, 512, 64}; p.o = p.q;
    fa_ck::fwd(p, nullptr); print_fwd("varlen");
#else

    fa_ck::BwdParams b;
    static_cast<fa_ck::FwdParams&>(b) = batch_params();
    b.window_right = 0; b.deterministic = true; b.max_seqlen_k = b.seqlen_k = 40;
    b.dout = b.o; b.dq = b.q; b.dk = {(void*)0x6000, 40 * 512, 512, 64}; b.dv = b.dk;
    fa_ck::bwd(b, nullptr);
    const char* c = "bwd";
    P(c, "mask", int(g_bt.mask_type)); P(c, "deterministic", g_bt.is_deterministic); P(c, "dbias", g_bt.has_dbias);
    P(c, "splits", fa_ck::bwd_dq_acc_splits(b.max_seqlen_k, b.hdim, true));
    P(c, "splits_nondet", fa_ck::bwd_dq_acc_splits(b.max_seqlen_k, b.hdim, false));
    P(c, "splits_4k_d128", fa_ck::bwd_dq_acc_splits(4096, 128, true));
    P(c, "splits_4k_d256", fa_ck::bwd_dq_acc_splits(4096, 256, true));
    // per head dim: the key tile the workspace is sized by, and whether CK has a backward bucket of it
    for (int d = 8; d <= 256; d += 8) {
        char name[32];
        std::snprintf(name, sizeof name, "d%d", d);
        P(name, "key_tile", fa_ck::bwd_key_tile(d));
        P(name, "bwd_bucket", fa_ck::bwd_has_bucket(d));
    }
    P(c, "stride_dq_acc", g_ba.stride_dq_acc); P(c, "nhead_stride_dq_acc", g_ba.nhead_stride_dq_acc);
    P(c, "batch_stride_dq_acc", g_ba.batch_stride_dq_acc); P(c, "split_stride_dq_acc", g_ba.split_stride_dq_acc);
    P(c, "stride_dk", g_ba.stride_dk); P(c, "nhead_stride_dk", g_ba.nhead_stride_dk);
    P(c, "nhead_stride_lsed", g_ba.nhead_stride_lsed); P(c, "batch_stride_lsed", g_ba.batch_stride_lsed);
    P(c, "p_undrop_x1000", g_ba.p_undrop * 1000);
#endif

    try { fa_ck::idx(int64_t(1) << 33); P("overflow", "raised", 0); }
    catch (const std::out_of_range&) { P("overflow", "raised", 1); }
    return 0;
}
