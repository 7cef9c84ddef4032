#pragma once
// torch::nn::Module, libtorch's module tree: named parameters, buffers and child modules,
// train/eval mode; ModuleHolder and TORCH_MODULE, the handle pattern of libtorch's modules
// (torch::nn::Linear holds a shared LinearImpl: linear->forward(x), linear(x)).

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "syntorch/torch/tensor.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::torch::nn {

// An insertion-ordered map with unique keys, as libtorch's torch::OrderedDict. Items have key()
// and value(), and bind as `auto& [name, tensor]`.
template <typename Key, typename Value>
class OrderedDict {
 public:
  struct Item {
    Key first;
    Value second;
    const Key& key() const { return first; }
    Value& value() { return second; }
    const Value& value() const { return second; }
  };

  std::size_t size() const { return items_.size(); }
  bool is_empty() const { return items_.empty(); }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  const std::vector<Item>& items() const { return items_; }
  Item& operator[](std::size_t i) { return items_[i]; }
  const Item& operator[](std::size_t i) const { return items_[i]; }

  Value* find(const Key& key) {
    for (auto& item : items_) {
      if (item.first == key) return &item.second;
    }
    return nullptr;
  }
  const Value* find(const Key& key) const { return const_cast<OrderedDict*>(this)->find(key); }
  bool contains(const Key& key) const { return find(key) != nullptr; }
  Value& operator[](const Key& key) {
    if (Value* v = find(key)) return *v;
    throw std::out_of_range("OrderedDict: no item with this key");
  }
  const Value& operator[](const Key& key) const { return const_cast<OrderedDict&>(*this)[key]; }

  // Appends; false when the key is already there.
  bool insert(Key key, Value value) {
    if (contains(key)) return false;
    items_.push_back(Item{std::move(key), std::move(value)});
    return true;
  }
  std::vector<Key> keys() const {
    std::vector<Key> out;
    out.reserve(items_.size());
    for (const auto& item : items_) out.push_back(item.first);
    return out;
  }
  std::vector<Value> values() const {
    std::vector<Value> out;
    out.reserve(items_.size());
    for (const auto& item : items_) out.push_back(item.second);
    return out;
  }

 private:
  std::vector<Item> items_;
};

template <typename Impl>
class ModuleHolder;

// A node of the model tree: its own parameters and buffers, and named children, in registration
// order. Names are unique per kind within a module and contain no dots (the recursive listings
// join them with dots: "h.0.attn.c_attn.weight"). Modules start in training mode, as libtorch's.
class Module {
 public:
  explicit Module(std::string name = "Module") : name_(std::move(name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The module's type name ("Linear"), as libtorch's Module::name().
  const std::string& name() const { return name_; }

  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<Module, M>, "register_module takes a torch::nn::Module");
    add_child(std::move(name), module);
    return module;
  }
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, ModuleHolder<M> holder) {
    return register_module(std::move(name), holder.ptr());
  }
  // Returns the registered tensor (the same handle as `tensor`). requires_grad is ignored.
  Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  Tensor& register_buffer(std::string name, Tensor tensor);

  // Recursive listings, depth first in registration order (own items first).
  std::vector<Tensor> parameters(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  OrderedDict<std::string, std::shared_ptr<Module>> named_children() const { return children_; }
  // Every module below this one (not this one), depth first, with dotted names.
  OrderedDict<std::string, std::shared_ptr<Module>> named_modules() const;

  // Sets the mode of this module and all below it.
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  template <typename M>
  M* as() {
    return dynamic_cast<M*>(this);
  }
  template <typename M>
  const M* as() const {
    return dynamic_cast<const M*>(this);
  }

 private:
  void add_child(std::string name, std::shared_ptr<Module> child);
  void collect(const std::string& prefix, bool parameters, bool recurse, OrderedDict<std::string, Tensor>& out) const;

  std::string name_;
  bool training_ = true;
  OrderedDict<std::string, Tensor> parameters_;
  OrderedDict<std::string, Tensor> buffers_;
  OrderedDict<std::string, std::shared_ptr<Module>> children_;
};

[[noreturn]] void throw_empty_holder();

// A shared handle to a module implementation, as libtorch's ModuleHolder: constructed from the
// Impl's constructor arguments (or nullptr for an empty holder, or a shared_ptr), used as a
// pointer (holder->forward(x)) or called (holder(x) is holder->forward(x)). Copies share the module.
template <typename Impl>
class ModuleHolder {
  template <typename T>
  static constexpr bool is_self_v = std::is_base_of_v<ModuleHolder, std::decay_t<T>> ||
                                    std::is_same_v<std::decay_t<T>, std::nullptr_t> ||
                                    std::is_convertible_v<std::decay_t<T>, std::shared_ptr<Impl>>;

 public:
  using ContainedType = Impl;

  ModuleHolder()
    requires std::is_default_constructible_v<Impl>
      : impl_(std::make_shared<Impl>()) {}
  ModuleHolder(std::nullptr_t) {}  // NOLINT: empty, as libtorch's `Linear fc{nullptr}`
  ModuleHolder(std::shared_ptr<Impl> module) : impl_(std::move(module)) {}  // NOLINT
  template <typename Head, typename... Tail>
    requires(sizeof...(Tail) > 0 || !is_self_v<Head>)
  explicit ModuleHolder(Head&& head, Tail&&... tail)
      : impl_(std::make_shared<Impl>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}

  Impl* operator->() const { return get(); }
  Impl& operator*() const { return *get(); }
  Impl* get() const {
    if (!impl_) throw_empty_holder();
    return impl_.get();
  }
  const std::shared_ptr<Impl>& ptr() const {
    if (!impl_) throw_empty_holder();
    return impl_;
  }
  bool is_empty() const { return impl_ == nullptr; }
  explicit operator bool() const { return impl_ != nullptr; }

  template <typename... Args>
  decltype(auto) operator()(Args&&... args) const {
    return get()->forward(std::forward<Args>(args)...);
  }

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace syntorch::torch::nn

// Declares `Name` as the holder of `ImplType`, as libtorch's TORCH_MODULE_IMPL.
#ifndef TORCH_MODULE_IMPL
#define TORCH_MODULE_IMPL(Name, ImplType)                                        \
  class Name : public ::syntorch::torch::nn::ModuleHolder<ImplType> {            \
   public:                                                                       \
    using ::syntorch::torch::nn::ModuleHolder<ImplType>::ModuleHolder;           \
  }
#endif
// Declares `Name` as the holder of `NameImpl`, as libtorch's TORCH_MODULE.
#ifndef TORCH_MODULE
#define TORCH_MODULE(Name) TORCH_MODULE_IMPL(Name, Name##Impl)
#endif
