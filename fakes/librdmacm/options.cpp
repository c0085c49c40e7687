// rdma_set_option, the ports of an id's addresses and the device list: the calls that read or
// set an id's settings without an event.
#include "cm.hpp"

#include <arpa/inet.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

using namespace fakecm;

extern "C" {

__attribute__((visibility("default"))) int rdma_set_option(rdma_cm_id* id, int level, int optname,
                                                           void* optval, size_t optlen) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>&) -> int {
    if (!id || !optval) {
      errno = EINVAL;
      return -1;
    }
    auto* i = reinterpret_cast<Id*>(id);
    if (level == RDMA_OPTION_ID) {
      switch (optname) {
        case RDMA_OPTION_ID_TOS:
          if (optlen != sizeof(std::uint8_t)) return refuse(l, "set_option", i, EINVAL, "TOS is a uint8_t");
          i->tos = *static_cast<std::uint8_t*>(optval);
          return 0;
        case RDMA_OPTION_ID_REUSEADDR:
          if (optlen != sizeof(int)) return refuse(l, "set_option", i, EINVAL, "REUSEADDR is an int");
          if (i->state != State::idle) return refuse(l, "set_option", i, EINVAL, "REUSEADDR after bind");
          i->reuseaddr = *static_cast<int*>(optval) != 0;
          return 0;
        case RDMA_OPTION_ID_AFONLY:
          if (optlen != sizeof(int)) return refuse(l, "set_option", i, EINVAL, "AFONLY is an int");
          if (i->state != State::idle) return refuse(l, "set_option", i, EINVAL, "AFONLY after bind");
          i->afonly = *static_cast<int*>(optval) != 0;
          return 0;
        case RDMA_OPTION_ID_ACK_TIMEOUT:
          if (optlen != sizeof(std::uint8_t))
            return refuse(l, "set_option", i, EINVAL, "ACK_TIMEOUT is a uint8_t");
          i->ack_timeout = *static_cast<std::uint8_t*>(optval);
          return 0;
        default:
          break;
      }
    }
    // RDMA_OPTION_IB_PATH (an InfiniBand path record) and unknown options: the kernel's ENOSYS.
    return refuse(
        l, "set_option", i, ENOSYS,
        "option level " + std::to_string(level) + " name " + std::to_string(optname) + " is not modelled");
  });
}

__attribute__((visibility("default"))) uint16_t rdma_get_src_port(rdma_cm_id* id) {
  return unlocked_call<uint16_t>(0, [&]() -> uint16_t {
    const sockaddr* a = &id->route.addr.src_addr;
    if (a->sa_family == AF_INET) return reinterpret_cast<const sockaddr_in*>(a)->sin_port;
    if (a->sa_family == AF_INET6) return reinterpret_cast<const sockaddr_in6*>(a)->sin6_port;
    return 0;
  });
}

__attribute__((visibility("default"))) uint16_t rdma_get_dst_port(rdma_cm_id* id) {
  return unlocked_call<uint16_t>(0, [&]() -> uint16_t {
    const sockaddr* a = &id->route.addr.dst_addr;
    if (a->sa_family == AF_INET) return reinterpret_cast<const sockaddr_in*>(a)->sin_port;
    if (a->sa_family == AF_INET6) return reinterpret_cast<const sockaddr_in6*>(a)->sin6_port;
    return 0;
  });
}

__attribute__((visibility("default"))) ibv_context** rdma_get_devices(int* num_devices) {
  return locked_call<ibv_context**>(nullptr, [&](Library& l, std::unique_lock<std::mutex>&) -> ibv_context** {
    if (!ensure_loaded(l)) {
      if (num_devices) *num_devices = 0;
      return nullptr;
    }
    auto** list = static_cast<ibv_context**>(std::calloc(l.contexts.size() + 1, sizeof(ibv_context*)));
    if (!list) {
      errno = ENOMEM;
      return nullptr;
    }
    for (std::size_t k = 0; k < l.contexts.size(); ++k) list[k] = l.contexts[k];
    if (num_devices) *num_devices = static_cast<int>(l.contexts.size());
    return list;
  });
}

__attribute__((visibility("default"))) void rdma_free_devices(ibv_context** list) {
  unlocked_void_call([&] { std::free(list); });
}

}  // extern "C"
