#include "Gzip.h"

#include <zlib.h>

#include <algorithm>
#include <new>

#include "mirage/core/Error.h"

namespace mirage {
namespace {

// zlib counts in uInt; feed and drain at most this much per call.
constexpr std::size_t kMaxChunk = 1u << 30;

class Inflater {
 public:
  Inflater() {
    if (inflateInit2(&z_, 15 + 16) != Z_OK) throw std::bad_alloc();  // 16: gzip wrapper only
  }
  ~Inflater() { inflateEnd(&z_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  z_stream& operator*() { return z_; }

 private:
  z_stream z_{};
};

// A first guess at the text size from the last member's trailer (its size modulo 2^32), within
// what a gzip file of this size can plausibly hold, so that most files need no regrowth.
std::size_t size_guess(std::string_view bytes) {
  std::size_t isize = 0;
  if (bytes.size() >= 18)
    for (int i = 0; i < 4; ++i)
      isize |= static_cast<std::size_t>(static_cast<unsigned char>(bytes[bytes.size() - 4 + i]))
               << (8 * i);
  return std::clamp<std::size_t>(isize + 1, 1 << 16, 16 * bytes.size() + (1 << 16));
}

}  // namespace

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gunzip(std::string_view bytes, const std::string& name) {
  const SourceLocation where{name, 0, ""};
  Inflater inflater;
  z_stream& z = *inflater;
  std::string out(size_guess(bytes), '\0');
  std::size_t in_pos = 0, out_pos = 0;
  int member = 1;
  while (true) {
    if (out_pos == out.size()) out.resize(out.size() * 2);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + in_pos));
    z.avail_in = static_cast<uInt>(std::min(bytes.size() - in_pos, kMaxChunk));
    z.next_out = reinterpret_cast<Bytef*>(out.data() + out_pos);
    z.avail_out = static_cast<uInt>(std::min(out.size() - out_pos, kMaxChunk));
    const uInt in_before = z.avail_in, out_before = z.avail_out;
    const int rc = inflate(&z, Z_NO_FLUSH);
    in_pos += in_before - z.avail_in;
    out_pos += out_before - z.avail_out;
    if (rc == Z_OK) continue;
    if (rc == Z_STREAM_END) {
      const std::string_view rest = bytes.substr(in_pos);
      if (rest.empty()) break;
      if (is_gzip(rest)) {  // another member: `cat a.gz b.gz` is a valid gzip file
        inflateReset(&z);
        ++member;
        continue;
      }
      if (rest.find_first_not_of('\0') == std::string_view::npos) break;  // block padding
      throw InputError(where, "unexpected data after gzip member " + std::to_string(member) +
                                  " at compressed byte " + std::to_string(in_pos) + " of " +
                                  std::to_string(bytes.size()) +
                                  ": not a gzip member (the file is damaged)");
    }
    if (rc == Z_MEM_ERROR) throw std::bad_alloc();
    if (rc == Z_BUF_ERROR && in_pos == bytes.size())
      throw InputError(where, "gzip data ends early: the file stops at compressed byte " +
                                  std::to_string(in_pos) + ", inside gzip member " +
                                  std::to_string(member) + ", after " + std::to_string(out_pos) +
                                  " bytes of text (the file is truncated; is the copy complete?)");
    throw InputError(where, "gzip data is corrupt at compressed byte " + std::to_string(in_pos) +
                                ": " + (z.msg ? z.msg : "inflate error " + std::to_string(rc)));
  }
  out.resize(out_pos);
  return out;
}

}  // namespace mirage
