#pragma once
// Recording the ATen ops a program runs on the torch layer, for exporting its graph (`syntorch
// graph export`): each public op, at the outermost level only (what linear runs inside is
// linear's), reports its ATen name, its arguments and its outputs to the recorder current on the
// thread; every view reports itself as an as_strided of the tensor that owns its memory. Nothing
// is recorded, and nothing allocated, while no recorder is set.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "syntorch/torch/tensor.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::torch {

// One argument of a recorded op, as ATen's schema has it.
struct RecordedArg {
  enum class Kind : std::uint8_t { none, tensor, tensors, integer, integers, real, boolean, text, dtype };
  Kind kind = Kind::none;
  Tensor tensor;
  std::vector<Tensor> tensors;
  std::int64_t integer = 0;
  std::vector<std::int64_t> integers;
  double real = 0;
  bool boolean = false;
  std::string text;
  ScalarType dtype = ScalarType::Float;
  std::string name;  // a keyword argument's name ("" for a positional one)

  static RecordedArg of(const Tensor& t);  // an undefined tensor is None
  static RecordedArg of(const std::vector<Tensor>& ts);
  static RecordedArg of(std::int64_t v);
  static RecordedArg of(IntArrayRef v);
  static RecordedArg of_real(double v);
  static RecordedArg of_bool(bool v);
  static RecordedArg of_text(std::string_view v);
  static RecordedArg of(ScalarType t);
  static RecordedArg none();
  RecordedArg&& keyword(std::string_view n) &&;
};

class OpRecorder {
 public:
  virtual ~OpRecorder() = default;
  // `op` as PyTorch prints the overload ("aten.linear.default"); outputs in return order
  // (undefined where the op returns no tensor).
  virtual void record(std::string_view op, std::span<const RecordedArg> args, std::span<const Tensor> outputs) = 0;
  // An outermost public op begins (whether or not it records itself): what ran before it is not
  // its work.
  virtual void begin_op() {}
};

// The recorder of this thread's program (nullptr: none).
void set_op_recorder(OpRecorder* recorder);
OpRecorder* op_recorder();
// Whether an op starting now would be recorded (a recorder is set, no public op is running).
bool recording_top_level();
// Reports an op to the current recorder.
void record_op(std::string_view op, std::initializer_list<RecordedArg> args, std::initializer_list<Tensor> outputs);

// Marks a public op's extent: ops it runs inside are not recorded. `record` reports the op when
// it is the outermost one and a recorder is set (the arguments are built only then).
class RecordOpScope {
 public:
  RecordOpScope();
  ~RecordOpScope();
  RecordOpScope(const RecordOpScope&) = delete;
  RecordOpScope& operator=(const RecordOpScope&) = delete;
  bool recording() const { return outermost_ && op_recorder() != nullptr; }

 private:
  bool outermost_;
};

}  // namespace syntorch::torch
