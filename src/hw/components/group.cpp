#include "components.hpp"

namespace syntorch::hw::detail {

void parse_group(ObjectReader& r, ComponentSpec& out) {
  GroupSpec g;
  g.count = r.count("count", false, 1).value_or(1);
  if (const Json* components = r.raw("components")) {
    // A list names members written beside the group; parse_components places them in it.
    if (!components->is_array()) parse_components(*components, child_pointer(r.pointer(), "components"), r.context(), g);
    if ((components->is_object() || components->is_array()) && components->empty()) {
      r.context().error(child_pointer(r.pointer(), "components"), "a group needs at least one component");
    }
  } else {
    r.context().error(r.pointer(), "missing required field \"components\" (an object mapping names to components, or a "
                                   "list of the names of components written beside the group) in a group component");
  }
  out.body = std::move(g);
}

}  // namespace syntorch::hw::detail
