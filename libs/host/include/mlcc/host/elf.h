// The ELF header facts mlcc-link and the model loader check: is the file ELF,
// 64-bit little-endian, and of which type (relocatable object, shared library).
#pragma once

#include <string>

namespace mlcc::host {

struct ElfInfo {
  bool readable = false;  // the file could be opened
  bool elf = false;       // starts with the ELF magic
  bool elf64_le = false;  // ELFCLASS64, little-endian
  int type = 0;           // e_type: 1 relocatable (.o), 2 executable, 3 shared object or PIE
};

inline constexpr int kElfRelocatable = 1;
inline constexpr int kElfShared = 3;

ElfInfo readElfInfo(const std::string& path);

}  // namespace mlcc::host
