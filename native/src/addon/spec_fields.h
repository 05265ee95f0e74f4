// The objects JavaScript hands the timed loop (HalfSpec, Segment, PeerCounts, SequenceOptions), each defined once by a
// field table that drives its reader (field_reader.h: unknown, missing or mistyped fields refused by name);
// specFields() hands the tables over and test/native/spec-fields.test.ts compares them with the TypeScript types.
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
