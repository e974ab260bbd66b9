#pragma once
// CK (HIP >= 7) includes this only to get the __bf16 type, which clang provides natively.
