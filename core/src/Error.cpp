#include "mirage/core/Error.h"

namespace mirage {

std::string format_location(const SourceLocation& where) {
  std::string out = where.file.empty() ? std::string("<input>") : where.file;
  if (where.line > 0) out += ":" + std::to_string(where.line);
  if (!where.field.empty()) out += ": field '" + where.field + "'";
  return out;
}

InputError::InputError(SourceLocation where, const std::string& message)
    : std::runtime_error(format_location(where) + ": " + message),
      where_(std::move(where)),
      message_(message) {}

}  // namespace mirage
