// Small helpers shared by ck_fwd.hip and ck_bwd.hip (CK headers not needed here).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace fa_ck {

// CK's kernel arguments are 32-bit (ck_tile::index_t): refuse strides or sizes beyond that
// instead of letting them wrap.
inline int32_t idx(int64_t v) {
    if (v > INT32_MAX || v < INT32_MIN)
        throw std::out_of_range("fa_ck: stride or size " + std::to_string(v) +
                                " exceeds CK's 32-bit index; make the tensor contiguous or smaller");
    return static_cast<int32_t>(v);
}

// Dropout seed and offset are read by the kernel from our device rng tensor [seed, offset]
// (so the call captures in a graph). Without dropout CK ignores them.
using SeedOffset = std::variant<std::pair<uint64_t, uint64_t>, std::pair<const void*, const void*>>;
inline SeedOffset drop_seed_offset(const int64_t* rng) {
    if (!rng) return std::pair<uint64_t, uint64_t>{0, 0};
    return std::pair<const void*, const void*>{rng, rng + 1};
}

}  // namespace fa_ck
