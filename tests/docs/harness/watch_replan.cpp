// Harness for docs/live-hosts.md "GID changes": follow the advertised GID, re-plan on every change.
#include <gidpolicy/change.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/verbs/watch.hpp>

void snippet(gidpolicy::verbs::VerbsApi& api, gidpolicy::verbs::DeviceHandle dev,
             const gidpolicy::Profile& profile, gidpolicy::Plan plan);
void snippet(gidpolicy::verbs::VerbsApi& api, gidpolicy::verbs::DeviceHandle dev,
             const gidpolicy::Profile& profile, gidpolicy::Plan plan) {
#include SNIPPET_MAIN
}
