#pragma once
// The program's version: the one in the top-level CMakeLists.txt's project(), and nowhere else.
namespace mirage {
inline constexpr const char* kVersion = MIRAGE_VERSION;
}  // namespace mirage
