// Host-only test of CK's generated dispatchers behind our glue (tests/test_ck_build.py compiles it
// with upstream clang and the HIP stub, against fmha_{fwd,bwd}_api.cpp generated for the shipped set;
// no GPU). The kernels are stubs that record which instance was picked: every feature combination the
// ck backend admits must reach an instance of its head-dim bucket and features, and the device's
// properties must be read once per device however many calls are made.
// Build once per direction: -DFA_CK_TEST_BWD=0 or 1, -DFA_CK_API_FILE="<generated api .cpp>".
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
#else
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
}
