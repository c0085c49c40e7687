/* The names rdma-core's verbs headers take from the Linux UAPI <linux/types.h>, for a target
 * that has no Linux headers (the browser build, cmake/GidpolicyWasm.cmake). Same widths and
 * alignment as the kernel's: the verbs structures keep their layout. */
#ifndef GIDPOLICY_WASM_LINUX_TYPES_H
#define GIDPOLICY_WASM_LINUX_TYPES_H
#include <stdint.h>
typedef uint8_t __u8;
typedef uint16_t __u16;
typedef uint32_t __u32;
typedef uint64_t __u64;
typedef int8_t __s8;
typedef int16_t __s16;
typedef int32_t __s32;
typedef int64_t __s64;
typedef uint16_t __be16;
typedef uint32_t __be32;
typedef uint64_t __be64;
typedef uint16_t __le16;
typedef uint32_t __le32;
typedef uint64_t __le64;
#define __aligned_u64 __u64 __attribute__((aligned(8)))
#endif
