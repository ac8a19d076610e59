# Turns a text file into a C++ source defining mirage::cli::embedded_sample_trace().
# Run as: cmake -DINPUT=... -DOUTPUT=... -DNAME=... -P EmbedFile.cmake
file(READ "${INPUT}" content HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${content}")
file(WRITE "${OUTPUT}" "// Generated from ${NAME} by cmake/EmbedFile.cmake; do not edit.\n"
  "#include \"EmbeddedSample.h\"\n"
  "namespace mirage::cli {\nnamespace {\nconst unsigned char kData[] = {${bytes}};\n}\n"
  "std::string_view embedded_sample_trace() {\n"
  "  return {reinterpret_cast<const char*>(kData), sizeof kData};\n}\n"
  "std::string embedded_sample_name() { return \"embedded:${NAME}\"; }\n}\n")
