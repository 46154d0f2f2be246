# Writes the chat page (IN, an HTML file) into a C++ source (OUT) as bytes,
# so the binary serves it with no file beside it:
#   cmake -DIN=index.html -DOUT=webui_page.cc -P embed.cmake
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR size "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}.tmp"
"// Generated from src/server/webui/index.html by embed.cmake; do not edit.
#include \"server/webui.h\"

namespace tern::server {
namespace {
const unsigned char kPage[${size}] = {
${bytes}
};
}  // namespace

std::string_view WebUiPage() { return {reinterpret_cast<const char*>(kPage), sizeof(kPage)}; }

}  // namespace tern::server
")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
