#pragma once
// Typed member-function handlers for the simulator's plain function-pointer callbacks.
// `handler<&Flow::finish>()` is an EventFn that calls obj->finish(arg) (or obj->finish() for a
// method without an argument) on the object it is given. No code casts a callback's object pointer
// back by hand: the casts are generated at compile time, here for events and in the typed
// registration helpers of the other callbacks (ServerPool::set_observer, FlowNetwork::set_observer,
// os::work_item, HostAction::set_note).

#include <cstdint>

#include "syntorch/sim/event_queue.hpp"

namespace syntorch::sim {

// The class a pointer to member belongs to.
template <class>
struct MemberClass;
template <class T, class F>
struct MemberClass<F T::*> {
  using type = T;
};
template <auto Method>
using MemberClassOf = typename MemberClass<decltype(Method)>::type;

template <auto Method>
void member_trampoline(void* obj, std::uint64_t arg) {
  using T = MemberClassOf<Method>;
  if constexpr (requires(T* t, std::uint64_t a) { (t->*Method)(a); }) {
    (static_cast<T*>(obj)->*Method)(arg);
  } else {
    (static_cast<T*>(obj)->*Method)();
  }
}

template <auto Method>
constexpr EventFn handler() {
  return &member_trampoline<Method>;
}

}  // namespace syntorch::sim
