// Deprecated forwarding header: DriverProfile was renamed DriverModel (driver_model.hpp), so that
// "profile" means only a named behaviour (profiles.hpp: a policy and its source-index rule).
// Kept for one release; include <gidpolicy/driver_model.hpp> instead.
#pragma once

#include <gidpolicy/driver_model.hpp>

#ifndef GIDPOLICY_NO_DEPRECATED
namespace gidpolicy {
/// The old name of DriverModel.
using DriverProfile [[deprecated("renamed gidpolicy::DriverModel (driver_model.hpp)")]] = DriverModel;
}  // namespace gidpolicy
#endif
