// The objects JavaScript hands the timed loop, each defined once on this side by a table of fields (name, kind,
// required) that drives its reader: bench/core/types.ts HalfSpec, Segment and PeerCounts, and bench/native/binding.ts
// SequenceOptions. A missing required field, a field the table does not know or a value of the wrong kind is refused
// with CORE_BAD_SPEC naming the field, never replaced by a default; specFields() hands the tables to JavaScript
// (test/native/spec-fields.test.ts compares them with the TypeScript types).
#pragma once
#include <napi.h>

#include <vector>

#include "../core/spec.h"
#include "../core/timed_loop.h"

namespace collbench::addon {

// One HalfSpec, or an array of them (one per local rank of a process that drives several). `call` names the
// function in the error ("runHalf").
std::vector<HalfSpec> readSpecs(const Napi::Value& value, const char* call);

// runSequence()'s options ({iters, warmupIters, gapUs?, check}).
SequenceSpec readSequenceOptions(const Napi::Value& value, const char* call);

// {halfSpec, segment, peerCounts, sequenceOptions}: each {field: {kind, required}}, the tables the readers use.
Napi::Object specFieldsObject(Napi::Env env);

}  // namespace collbench::addon
