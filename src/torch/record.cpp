// The recorder current on a thread and the nesting depth of public ops.
#include "syntorch/torch/record.hpp"

namespace syntorch::torch {

namespace {
// Per thread: each rank's program runs on a thread of its own, and records (or not) on its own.
thread_local OpRecorder* t_recorder = nullptr;
// Per thread: how deep the thread is in public ops (only the outermost records).
thread_local int t_depth = 0;
}  // namespace

RecordedArg RecordedArg::of(const Tensor& t) {
  RecordedArg a;
  if (t.defined()) {
    a.kind = Kind::tensor;
    a.tensor = t;
  }
  return a;
}
RecordedArg RecordedArg::of(const std::vector<Tensor>& ts) {
  RecordedArg a;
  a.kind = Kind::tensors;
  a.tensors = ts;
  return a;
}
RecordedArg RecordedArg::of(std::int64_t v) {
  RecordedArg a;
  a.kind = Kind::integer;
  a.integer = v;
  return a;
}
RecordedArg RecordedArg::of(IntArrayRef v) {
  RecordedArg a;
  a.kind = Kind::integers;
  a.integers.assign(v.begin(), v.end());
  return a;
}
RecordedArg RecordedArg::of_real(double v) {
  RecordedArg a;
  a.kind = Kind::real;
  a.real = v;
  return a;
}
RecordedArg RecordedArg::of_bool(bool v) {
  RecordedArg a;
  a.kind = Kind::boolean;
  a.boolean = v;
  return a;
}
RecordedArg RecordedArg::of_text(std::string_view v) {
  RecordedArg a;
  a.kind = Kind::text;
  a.text = v;
  return a;
}
RecordedArg RecordedArg::of(ScalarType t) {
  RecordedArg a;
  a.kind = Kind::dtype;
  a.dtype = t;
  return a;
}
RecordedArg RecordedArg::none() { return RecordedArg{}; }
RecordedArg&& RecordedArg::keyword(std::string_view n) && {
  name = n;
  return std::move(*this);
}

void set_op_recorder(OpRecorder* recorder) { t_recorder = recorder; }
OpRecorder* op_recorder() { return t_recorder; }
bool recording_top_level() { return t_recorder != nullptr && t_depth == 0; }

void record_op(std::string_view op, std::initializer_list<RecordedArg> args, std::initializer_list<Tensor> outputs) {
  if (t_recorder == nullptr) return;
  t_recorder->record(op, std::span<const RecordedArg>(args.begin(), args.size()),
                     std::span<const Tensor>(outputs.begin(), outputs.size()));
}

RecordOpScope::RecordOpScope() : outermost_(t_depth++ == 0) {
  if (outermost_ && t_recorder != nullptr) t_recorder->begin_op();
}
RecordOpScope::~RecordOpScope() { --t_depth; }

}  // namespace syntorch::torch
