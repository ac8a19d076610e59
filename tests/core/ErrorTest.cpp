// Error helpers in core/src/Error.cpp: locations, InputError, and the escaping that keeps
// control bytes from input out of printed messages.
#include <gtest/gtest.h>

#include <string>

#include "mirage/core/Error.h"

namespace mirage {
namespace {

using namespace std::string_literals;

TEST(ErrorTest, EscapeControlShowsControlBytesAsEscapes) {
  EXPECT_EQ(escape_control("a\tb\nc\rd"), "a\\tb\\nc\\rd");
  EXPECT_EQ(escape_control("bell\x07 esc\x1b[2J del\x7f"), "bell\\x07 esc\\x1b[2J del\\x7f");
  EXPECT_EQ(escape_control("nul\0end"s), "nul\\x00end");
  EXPECT_TRUE(has_control("a\tb"));
  EXPECT_FALSE(has_control("Ã©tÃ©"));  // UTF-8 is printable
}

TEST(ErrorTest, EscapeControlKeepsPrintableTextAndUtf8) {
  EXPECT_EQ(escape_control(""), "");
  EXPECT_EQ(escape_control("job 42 | user=bob ~/x \\ 'q'"), "job 42 | user=bob ~/x \\ 'q'");
  EXPECT_EQ(escape_control("Zürich 東京 🚀"), "Zürich 東京 🚀");
}

TEST(ErrorTest, EscapeControlEscapesC1ControlsAndInvalidUtf8) {
  EXPECT_EQ(escape_control("\x9b"
                           "31m"),
            "\\x9b31m");                                         // a lone C1 CSI byte
  EXPECT_EQ(escape_control("\xc2\x9b"), "\\xc2\\x9b");           // CSI as a UTF-8 code point
  EXPECT_EQ(escape_control("\xc3"), "\\xc3");                    // cut-off sequence
  EXPECT_EQ(escape_control("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(escape_control("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(escape_control("\xff\xfe"), "\\xff\\xfe");
}

TEST(ErrorTest, EscapeControlIsIdempotent) {
  const std::string once = escape_control("a\x07\xc2\x9b\xff\tb\xc3\xa9");
  EXPECT_EQ(escape_control(once), once);
}

TEST(ErrorTest, InputErrorEscapesFileFieldAndMessage) {
  const InputError e(SourceLocation{"lo\x1bg.txt", 3, "Sub\tmit"}, "got '\x07'");
  EXPECT_STREQ(e.what(), "lo\\x1bg.txt:3: field 'Sub\\tmit': got '\\x07'");
  EXPECT_EQ(e.message(), "got '\\x07'");
  EXPECT_EQ(e.where().file, "lo\x1bg.txt");  // the location itself is kept as given
}

// Line breaks the program writes stay; control bytes within the lines do not.
TEST(ErrorTest, InputErrorKeepsTheLinesOfAMessage) {
  const InputError e(SourceLocation{"plugin.so", 0, ""}, "tried:\n  a\x1b.so\n  b.so");
  EXPECT_STREQ(e.what(), "plugin.so: tried:\n  a\\x1b.so\n  b.so");
}

// A megabyte-long key or value quoted in a message would flood a terminal or a log.
TEST(ErrorTest, InputErrorCutsVeryLongFieldsAndMessages) {
  const std::string key(100000, 'k');
  const InputError e(SourceLocation{"c.toml", 2, key}, "got \"" + std::string(100000, 'v') + "\"");
  EXPECT_LT(std::string(e.what()).size(), 700u);
  EXPECT_NE(std::string(e.what()).find("c.toml:2: field 'kkk"), std::string::npos);
  EXPECT_NE(e.message().find("bytes left out"), std::string::npos);
  EXPECT_EQ(e.message().substr(e.message().size() - 4), "vvv\"");
  EXPECT_EQ(e.where().field, key);
}

}  // namespace
}  // namespace mirage
