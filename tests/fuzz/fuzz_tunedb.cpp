// Fuzz target: the tuning database reader (libs/tune Database::read and
// open, which mlcc-tune and mlcc-schedule --db use on files a user may have
// received). An accepted database must survive a merge: the merged file
// reads back with every distinct record, and opening it for appends (which
// cuts a torn last line) keeps them.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "mlcc/tune/database.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mlcc::fuzz::expectErrorsOnly([&] {
    const std::string path = mlcc::fuzz::writeScratch("in.db", data, size);
    const mlcc::tune::Database db = mlcc::tune::Database::read(path);
    const std::string merged = mlcc::fuzz::scratchDir() + "/merged.db";
    mlcc::tune::Database::merge({path}, merged);
    const size_t n = mlcc::tune::Database::read(merged).size();
    if (n > db.size()) mlcc::fuzz::fail("merge made records");
    if (mlcc::tune::Database::open(merged).size() != n)
      mlcc::fuzz::fail("open lost records of a merged file");
  });
  return 0;
}
