#pragma once
// One error type for bad input anywhere in mirage: it names where (file, line, field) and what
// was expected, and prints as "file:line: field: message" like a compiler diagnostic.
#include <stdexcept>
#include <string>

namespace mirage {

struct SourceLocation {
  std::string file;   // empty when not from a file
  long line = 0;      // 1-based; 0 when not line-oriented
  std::string field;  // the field or key concerned; empty when the whole record is at fault
};

std::string format_location(const SourceLocation& where);

class InputError : public std::runtime_error {
 public:
  InputError(SourceLocation where, const std::string& message);
  const SourceLocation& where() const { return where_; }
  const std::string& message() const { return message_; }

 private:
  SourceLocation where_;
  std::string message_;
};

}  // namespace mirage
