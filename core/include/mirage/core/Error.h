#pragma once
// One error type for bad input anywhere in mirage: it names where (file, line, field) and what
// was expected, and prints as "file:line: field: message" like a compiler diagnostic.
#include <stdexcept>
#include <string>
#include <string_view>

namespace mirage {

struct SourceLocation {
  std::string file;   // empty when not from a file
  long line = 0;      // 1-based; 0 when not line-oriented
  std::string field;  // the field or key concerned; empty when the whole record is at fault
};

// Input text made safe to print: a terminal must never receive bytes from a file or a request
// that it would act on (escape sequences, bells, carriage returns). Control bytes and DEL become
// C escapes ("\t", "\x1b"); so do C1 controls and bytes that are not valid UTF-8. Printable
// ASCII and other valid UTF-8 pass unchanged, so the result escaped again is the same.
std::string escape_control(std::string_view text);
// True when escape_control would change `text`: it holds something a terminal would act on.
bool has_control(std::string_view text);

// "file:line: field 'name'", with file and field escaped as above (a very long field is cut).
std::string format_location(const SourceLocation& where);

// what() and message() are escaped as above line by line (a message may be written over lines),
// and a very long line keeps only its head and tail: they quote input and are printed as they are.
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
