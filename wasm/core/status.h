// Status: how every fallible core function reports failure. The core never aborts or exits:
// inside WebAssembly an abort would take down every widget on the page, so errors travel
// as values and the caller (CLI, bindings, page) decides how to show them.
#pragma once

#include <string>
#include <utility>

namespace attn {

class Status {
 public:
  Status() = default;  // OK
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !failed_; }
  // The message names the problem and, where there is one, the fix.
  const std::string& message() const { return message_; }

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

}  // namespace attn
