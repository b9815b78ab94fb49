// What runs a module (the interpreter, codegen) agrees on about its entry:
// which graph function runs by default, the names of its outputs once
// returned tuples are flattened, and which buffers of a prim func run as an
// entry are its inputs and outputs.
#pragma once

#include <string>
#include <vector>

#include "mlcc/ir/module.h"

namespace mlcc::ir {

// @main, else the only graph function with attribute entry = true, else the
// module's only function. Throws mlcc::Error listing the functions when
// there is none.
std::string defaultEntry(const Module& m);

// One tensor output of a graph function, its returned values flattened in
// order: `path` indexes into the returned value (empty for a tensor
// `return %y`; {i} for field i of `return (%a, %b)` or of a returned tuple
// variable; nested tuples add indices).
struct EntryOutput {
  std::string name;
  std::vector<size_t> path;
  Type type;  // a tensor type
};

// The outputs' names: the function's attribute `output_names` (a list of
// strings, one per flattened output) when it has one; otherwise the returned
// variables: a returned tuple variable bound to a tuple of variables gives
// those variables' names, other tuple fields are named NAME_i; repeated names
// get a suffix _1, _2, ... Throws mlcc::Error for an `output_names` that does
// not list one distinct, non-empty name per output.
std::vector<EntryOutput> entryOutputs(const GraphFunc& g);

// Keeps the outputs' names of `g` as they were before a pass rewrote it:
// when entryOutputs(g) no longer gives `before` (a pass forwarded `%y = %x`
// into the return, say), sets `output_names` to `before`. Returns whether it did.
bool pinOutputNames(GraphFunc& g, const std::vector<std::string>& before);

// The names of entryOutputs(g).
std::vector<std::string> outputNames(const GraphFunc& g);

// How prim func `f` uses each of its parameters (in order): whether it
// loads from it and whether it stores to it. A prim func run as an entry
// (mlcc-run --entry, a function of model.so) takes the parameters it reads
// or does not write as inputs and gives those it writes as outputs; one
// both read and written is both, the output starting as the input.
struct ParamUse {
  bool read = false, written = false;
  bool input() const { return read || !written; }
};
std::vector<ParamUse> paramUses(const PrimFunc& f);

}  // namespace mlcc::ir
