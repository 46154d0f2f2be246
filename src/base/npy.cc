#include "base/npy.h"

#include <fmt/format.h>

#include "base/mapped_file.h"

namespace tern {

Status WriteNpyF32(const std::string& path, std::span<const float> data, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    count *= shape[i];
    dims += fmt::format("{}, ", shape[i]);
  }
  if (shape.size() > 1) dims.resize(dims.size() - 2);  // "(a, b)"; a 1-D shape keeps "(a,)"
  else if (shape.size() == 1) dims.resize(dims.size() - 1);
  if (size_t(count) != data.size())
    return Status::Errorf("writing {}: {} floats given for shape of {} elements", path, data.size(), count);
  std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}", dims);
  // Magic (6) + version (2) + header length (2) + header + '\n', padded to 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(char(header.size() & 0xff));
  out.push_back(char(header.size() >> 8));
  out += header;
  out.append(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float));
  return WriteStringToFile(path, out);
}

}  // namespace tern
