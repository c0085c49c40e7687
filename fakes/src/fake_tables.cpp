// Table mutations: the named changes a test applies to the fake's GID tables (now or at the
// Nth call), as the kernel would make them, with the events it would raise.
#include "fake_verbs_impl.hpp"

namespace gidpolicy::fakes {

// ---- TableMutation ---------------------------------------------------------------------------

TableMutation TableMutation::stale_entry(std::string device, std::uint32_t port, std::uint32_t index,
                                         Gid now) {
  TableMutation m;
  m.kind = Kind::stale_entry;
  m.device = std::move(device);
  m.port = port;
  m.index = index;
  m.gid = now;
  return m;
}
TableMutation TableMutation::moved_index(std::string device, std::uint32_t port, std::uint32_t from,
                                         std::uint32_t to) {
  TableMutation m;
  m.kind = Kind::moved_index;
  m.device = std::move(device);
  m.port = port;
  m.index = from;
  m.to_index = to;
  return m;
}
TableMutation TableMutation::emptied(std::string device, std::uint32_t port, std::uint32_t index) {
  TableMutation m;
  m.kind = Kind::emptied;
  m.device = std::move(device);
  m.port = port;
  m.index = index;
  return m;
}
TableMutation TableMutation::netdev_gone(std::string device, std::uint32_t port, std::uint32_t index) {
  TableMutation m;
  m.kind = Kind::netdev_gone;
  m.device = std::move(device);
  m.port = port;
  m.index = index;
  return m;
}
TableMutation TableMutation::netdev_back(std::string device, std::uint32_t port, std::uint32_t index) {
  TableMutation m = netdev_gone(std::move(device), port, index);
  m.kind = Kind::netdev_back;
  return m;
}
TableMutation TableMutation::set(std::string device, std::uint32_t port, GidEntry entry) {
  TableMutation m;
  m.kind = Kind::set_entry;
  m.device = std::move(device);
  m.port = port;
  m.index = entry.index;
  m.entry = std::move(entry);
  return m;
}
TableMutation TableMutation::port_state(std::string device, std::uint32_t port, PortState state) {
  TableMutation m;
  m.kind = Kind::port_state;
  m.device = std::move(device);
  m.port = port;
  m.state = state;
  return m;
}

std::string TableMutation::to_string() const {
  std::string at = device + ":" + std::to_string(port) + "[" + std::to_string(index) + "]";
  switch (kind) {
    case Kind::stale_entry:
      return "stale_entry " + at + " -> " + gid.to_string();
    case Kind::moved_index:
      return "moved_index " + at + " -> [" + std::to_string(to_index) + "]";
    case Kind::emptied:
      return "emptied " + at;
    case Kind::netdev_gone:
      return "netdev_gone " + at;
    case Kind::netdev_back:
      return "netdev_back " + at;
    case Kind::set_entry:
      return "set_entry " + at + " = " + std::string(gidpolicy::to_string(entry.state)) +
             (entry.state == EntryState::valid ? " " + entry.gid.to_string() : "");
    case Kind::port_state:
      return "port_state " + device + ":" + std::to_string(port) + " -> " +
             std::string(gidpolicy::to_string(state));
  }
  return at;
}

// ---- applying them ------------------------------------------------------------------------

result<void> FakeVerbs::Impl::apply(const TableMutation& m) {
  GIDPOLICY_TRY(p, port(m.device, m.port));
  const std::string at = m.to_string();
  auto in_range = [&](std::uint32_t i) -> result<void> {
    if (i >= p->length())
      return fail(errc::invalid_argument, at + ": index " + std::to_string(i) + " is not below gid_tbl_len " +
                                              std::to_string(p->length()));
    return success();
  };
  if (m.kind != TableMutation::Kind::port_state) GIDPOLICY_TRYV(in_range(m.index));
  switch (m.kind) {
    case TableMutation::Kind::stale_entry: {
      auto it = p->entries.find(m.index);
      GidEntry e = it != p->entries.end() && it->second.state == EntryState::valid
                       ? it->second
                       : GidEntry::valid(m.index, m.gid);
      e.gid = m.gid;
      e.state = EntryState::valid;
      p->entries[m.index] = e;
      break;
    }
    case TableMutation::Kind::moved_index: {
      GIDPOLICY_TRYV(in_range(m.to_index));
      auto it = p->entries.find(m.index);
      if (it == p->entries.end() || it->second.state != EntryState::valid)
        return fail(errc::invalid_argument, at + ": the slot holds no GID to move");
      GidEntry e = it->second;
      p->entries.erase(it);
      e.index = m.to_index;
      p->entries[m.to_index] = e;
      p->netdev_gone.erase(m.to_index);
      if (p->netdev_gone.erase(m.index)) p->netdev_gone.insert(m.to_index);
      break;
    }
    case TableMutation::Kind::emptied:
      p->entries.erase(m.index);
      p->netdev_gone.erase(m.index);
      break;
    case TableMutation::Kind::netdev_gone:
      p->netdev_gone.insert(m.index);
      break;
    case TableMutation::Kind::netdev_back:
      p->netdev_gone.erase(m.index);
      break;
    case TableMutation::Kind::set_entry: {
      GidEntry e = m.entry;
      e.index = m.index;
      p->entries[m.index] = e;
      break;
    }
    case TableMutation::Kind::port_state: {
      const bool was = usable_state(p->info.state);
      p->info.state = m.state;
      if (was != usable_state(m.state))
        raise(m.device, m.port, usable_state(m.state) ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR);
      return success();
    }
  }
  // A netdev leaving the namespace changes no GID the kernel reports: no event, as in the
  // kernel (the entry stays; RTR from it fails with ENODEV).
  if (m.kind != TableMutation::Kind::netdev_gone && m.kind != TableMutation::Kind::netdev_back)
    raise(m.device, m.port, IBV_EVENT_GID_CHANGE);
  return success();
}

result<GidTable> FakeVerbs::table(std::string_view device, std::uint32_t port) const {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(p, impl_->port(device, port));
  return p->table();
}

result<void> FakeVerbs::apply(const TableMutation& mutation) {
  std::lock_guard lock(impl_->mu);
  return impl_->apply(mutation);
}

result<void> FakeVerbs::mutate_at(VerbsCall kind, unsigned nth, TableMutation mutation) {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(p, impl_->port(mutation.device, mutation.port));
  for (std::uint32_t i :
       {mutation.index, mutation.kind == TableMutation::Kind::moved_index ? mutation.to_index : 0u})
    if (i >= p->length())
      return fail(errc::invalid_argument, mutation.to_string() + ": index " + std::to_string(i) +
                                              " is not below gid_tbl_len " + std::to_string(p->length()));
  impl_->pending.push_back({Pending::What::mutate, kind, nth == 0 ? 1 : nth, 0, std::move(mutation)});
  return success();
}

result<bool> FakeVerbs::replace_port(const GidTable& table) {
  std::lock_guard lock(impl_->mu);
  const PortInfo& info = table.port();
  GIDPOLICY_TRY(p, impl_->port(info.device, info.port));
  for (const GidEntry& e : table)
    if (e.index >= p->length())
      return fail(errc::invalid_argument,
                  entry_name(info, e.index) + " is not below gid_tbl_len " + std::to_string(p->length()));
  std::map<std::uint32_t, GidEntry> entries;
  for (const GidEntry& e : table) entries.emplace(e.index, e);
  const bool gids_changed = entries != p->entries;
  const bool was = Impl::usable_state(p->info.state);
  const bool now = Impl::usable_state(info.state);
  const bool state_changed = p->info.state != info.state;
  p->entries = std::move(entries);
  p->info.state = info.state;
  if (gids_changed) impl_->raise(info.device, info.port, IBV_EVENT_GID_CHANGE);
  if (was != now) impl_->raise(info.device, info.port, now ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR);
  return gids_changed || state_changed;
}

}  // namespace gidpolicy::fakes
