// readElfInfo: the first 18 bytes of an ELF header.
#include "mlcc/host/elf.h"

#include <cstring>
#include <fstream>

namespace mlcc::host {

ElfInfo readElfInfo(const std::string& path) {
  ElfInfo info;
  std::ifstream f(path, std::ios::binary);
  info.readable = f.is_open();
  unsigned char h[18] = {};
  if (!f.read(reinterpret_cast<char*>(h), sizeof h)) return info;
  static const unsigned char kMagic[4] = {0x7f, 'E', 'L', 'F'};
  info.elf = std::memcmp(h, kMagic, 4) == 0;
  info.elf64_le = info.elf && h[4] == 2 && h[5] == 1;
  if (info.elf64_le) info.type = h[16] | (h[17] << 8);
  return info;
}

}  // namespace mlcc::host
