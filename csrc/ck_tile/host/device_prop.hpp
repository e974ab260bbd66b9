// fa_ck's front for CK's ck_tile/host/device_prop.hpp: csrc/ leads the include path of every CK
// translation unit we build, so this file is found first and includes CK's own with #include_next.
// CK's generated dispatchers (fmha_fwd, fmha_bwd) read the device's properties on every call (its
// arch name, and its CU count in the forward), and hipGetDeviceProperties is slow: here every
// hipGetDeviceProperties after this point reads a copy taken once per device.
#pragma once
#include <hip/hip_runtime.h>

#include <atomic>
#include <mutex>

namespace fa_ck {

inline hipError_t device_properties(hipDeviceProp_t* props, int device) {
    constexpr int kMaxDevices = 64;
    if (device < 0 || device >= kMaxDevices) return hipGetDeviceProperties(props, device);
    static hipDeviceProp_t cache[kMaxDevices];
    static std::atomic<bool> ready[kMaxDevices];
    static std::mutex fill;
    if (!ready[device].load(std::memory_order_acquire)) {
        std::lock_guard<std::mutex> lock(fill);
        if (!ready[device].load(std::memory_order_relaxed)) {
            const hipError_t status = hipGetDeviceProperties(&cache[device], device);
            if (status != hipSuccess) return status;   // not cached: a later call asks again
            ready[device].store(true, std::memory_order_release);
        }
    }
    *props = cache[device];
    return hipSuccess;
}

}  // namespace fa_ck

// HIP 6 defines hipGetDeviceProperties as a macro for its versioned symbol; the function above
// already calls that, and everything after calls the cache.
#undef hipGetDeviceProperties
#define hipGetDeviceProperties fa_ck::device_properties

#include_next "ck_tile/host/device_prop.hpp"
