#pragma once
// gzip decompression of a whole file held in memory.
#include <string>
#include <string_view>

namespace mirage {

// Whether the bytes start with gzip's magic number.
bool is_gzip(std::string_view bytes);

// Decompresses every member of a gzip file (concatenated members read as one text). A corrupt
// stream, one that ends before its trailer (a truncated copy) and bytes after the last member
// that are not a member (other than zero padding) are InputErrors naming `name` and the
// compressed byte offset: any of them would otherwise lose jobs without a word.
std::string gunzip(std::string_view bytes, const std::string& name);

}  // namespace mirage
