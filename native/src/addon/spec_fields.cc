// The field tables of the timed loop's inputs (see spec_fields.h), read by field_reader.h's readObject().
#include "spec_fields.h"

#include <string>

#include "field_reader.h"

namespace collbench::addon {
namespace {

// The enum-valued strings of a Segment.
BufId asBuf(const Napi::Value& v, const Where& w) {
  const std::string s = asString(v, w);
  if (s == "send") return BufId::Send;
  if (s == "recv") return BufId::Recv;
  refuse(v, w, "must be 'send' or 'recv', not " + shown(v));
}
SegKind asSegKind(const Napi::Value& v, const Where& w) {
  const std::string s = asString(v, w);
  std::string names;
  for (const EnumName& k : kSegKindNames) {
    if (s == k.name) return static_cast<SegKind>(k.value);
    names += std::string(names.empty() ? "" : ", ") + k.name;
  }
  refuse(v, w, "must be one of " + names + ", not " + shown(v));
}

// bench/core/types.ts Segment.
const Field<Segment> kSegmentFields[] = {
    {"buf", Kind::String, true, [](const Napi::Value& v, const Where& w, Segment* s) { s->buf = asBuf(v, w); }},
    {"kind", Kind::String, true, [](const Napi::Value& v, const Where& w, Segment* s) { s->kind = asSegKind(v, w); }},
    {"offset", Kind::Uint64, true,
     [](const Napi::Value& v, const Where& w, Segment* s) { s->offset = asUint64(v, w); }},
    {"count", Kind::Uint64, true, [](const Napi::Value& v, const Where& w, Segment* s) { s->count = asUint64(v, w); }},
    {"indexBase", Kind::Uint64, true,
     [](const Napi::Value& v, const Where& w, Segment* s) { s->indexBase = asUint64(v, w); }},
    {"stream", Kind::Uint64, true,
     [](const Napi::Value& v, const Where& w, Segment* s) { s->stream = asUint64(v, w); }},
    {"rank", Kind::Int32, true, [](const Napi::Value& v, const Where& w, Segment* s) { s->rank = asInt32(v, w); }},
};

// bench/core/types.ts PeerCounts.
const Field<PeerCounts> kPeerCountsFields[] = {
    {"sendCounts", Kind::Uint64s, true,
     [](const Napi::Value& v, const Where& w, PeerCounts* p) { p->sendCounts = asUint64s(v, w); }},
    {"sendDispls", Kind::Uint64s, true,
     [](const Napi::Value& v, const Where& w, PeerCounts* p) { p->sendDispls = asUint64s(v, w); }},
    {"recvCounts", Kind::Uint64s, true,
     [](const Napi::Value& v, const Where& w, PeerCounts* p) { p->recvCounts = asUint64s(v, w); }},
    {"recvDispls", Kind::Uint64s, true,
     [](const Napi::Value& v, const Where& w, PeerCounts* p) { p->recvDispls = asUint64s(v, w); }},
};

std::vector<Segment> asSegments(const Napi::Value& v, const Where& w) {
  Napi::Array a = asArray(v, w, "segments");
  std::vector<Segment> out;
  for (uint32_t i = 0; i < a.Length(); ++i) out.push_back(readObject(a.Get(i), item(w, i), kSegmentFields));
  return out;
}

// bench/core/types.ts HalfSpec (core/spec.h says what each field means).
using HS = HalfSpec;
const Field<HS> kHalfSpecFields[] = {
    {"coll", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, HS* s) { s->coll = static_cast<Coll>(asInt32(v, w)); }},
    {"dtype", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, HS* s) { s->dtype = static_cast<DType>(asInt32(v, w)); }},
    {"op", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, HS* s) { s->op = static_cast<RedOp>(asInt32(v, w)); }},
    {"root", Kind::Int32, true, [](const Napi::Value& v, const Where& w, HS* s) { s->root = asInt32(v, w); }},
    {"inPlace", Kind::Bool, true, [](const Napi::Value& v, const Where& w, HS* s) { s->inPlace = asBool(v, w); }},
    {"count", Kind::Uint64, true, [](const Napi::Value& v, const Where& w, HS* s) { s->count = asUint64(v, w); }},
    {"sendOffset", Kind::Uint64, true,
     [](const Napi::Value& v, const Where& w, HS* s) { s->sendOffset = asUint64(v, w); }},
    {"recvOffset", Kind::Uint64, true,
     [](const Napi::Value& v, const Where& w, HS* s) { s->recvOffset = asUint64(v, w); }},
    {"rotateBytes", Kind::Uint64, true,
     [](const Napi::Value& v, const Where& w, HS* s) { s->rotateBytes = asUint64(v, w); }},
    {"maxBytes", Kind::Uint64, true, [](const Napi::Value& v, const Where& w, HS* s) { s->maxBytes = asUint64(v, w); }},
    {"peers", Kind::Object, false,
     [](const Napi::Value& v, const Where& w, HS* s) { s->peers = readObject(v, w, kPeerCountsFields); }},
    {"fill", Kind::Objects, true, [](const Napi::Value& v, const Where& w, HS* s) { s->fill = asSegments(v, w); }},
    {"expect", Kind::Objects, true, [](const Napi::Value& v, const Where& w, HS* s) { s->expect = asSegments(v, w); }},
    {"iters", Kind::Int32, true, [](const Napi::Value& v, const Where& w, HS* s) { s->iters = asInt32(v, w); }},
    {"aggIters", Kind::Int32, true, [](const Napi::Value& v, const Where& w, HS* s) { s->aggIters = asInt32(v, w); }},
    {"blocking", Kind::Int32, true, [](const Napi::Value& v, const Where& w, HS* s) { s->blocking = asInt32(v, w); }},
    {"perIter", Kind::Bool, true, [](const Napi::Value& v, const Where& w, HS* s) { s->perIter = asBool(v, w); }},
    {"checkRounds", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, HS* s) { s->checkRounds = asInt32(v, w); }},
    {"checkSeed", Kind::Uint64, true,
     [](const Napi::Value& v, const Where& w, HS* s) { s->checkSeed = asUint64(v, w); }},
    {"average", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, HS* s) { s->average = static_cast<Combine>(asInt32(v, w)); }},
    {"unalignElems", Kind::Uint64, true,
     [](const Napi::Value& v, const Where& w, HS* s) { s->unalignElems = asUint64(v, w); }},
    {"graphLaunches", Kind::Int32, false,
     [](const Napi::Value& v, const Where& w, HS* s) { s->graphLaunches = asInt32(v, w); }},
    {"arrivals", Kind::Bool, false, [](const Napi::Value& v, const Where& w, HS* s) { s->arrivals = asBool(v, w); }},
    {"group", Kind::Int32, false, [](const Napi::Value& v, const Where& w, HS* s) { s->group = asInt32(v, w); }},
    {"member", Kind::Bool, false, [](const Napi::Value& v, const Where& w, HS* s) { s->member = asBool(v, w); }},
    {"groupSize", Kind::Int32, false,
     [](const Napi::Value& v, const Where& w, HS* s) { s->groupSize = asInt32(v, w); }},
};

// bench/native/binding.ts SequenceOptions.
const Field<SequenceSpec> kSequenceFields[] = {
    {"iters", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, SequenceSpec* q) { q->iters = asInt32(v, w); }},
    {"warmupIters", Kind::Int32, true,
     [](const Napi::Value& v, const Where& w, SequenceSpec* q) { q->warmupIters = asInt32(v, w); }},
    {"gapUs", Kind::Numbers, false,
     [](const Napi::Value& v, const Where& w, SequenceSpec* q) { q->gapUs = asNumbers(v, w); }},
    {"check", Kind::Bool, true, [](const Napi::Value& v, const Where& w, SequenceSpec* q) { q->check = asBool(v, w); }},
};

}  // namespace

std::vector<HalfSpec> readSpecs(const Napi::Value& value, const char* call) {
  std::vector<HalfSpec> out;
  if (value.IsArray()) {
    Napi::Array a = value.As<Napi::Array>();
    for (uint32_t i = 0; i < a.Length(); ++i)
      out.push_back(readObject(a.Get(i), {call, "[" + std::to_string(i) + "]"}, kHalfSpecFields));
  } else {
    out.push_back(readObject(value, {call, ""}, kHalfSpecFields));
  }
  return out;
}

SequenceSpec readSequenceOptions(const Napi::Value& value, const char* call) {
  return readObject(value, {call, ""}, kSequenceFields);
}

Napi::Object specFieldsObject(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("halfSpec", tableObject(env, kHalfSpecFields));
  o.Set("segment", tableObject(env, kSegmentFields));
  o.Set("peerCounts", tableObject(env, kPeerCountsFields));
  o.Set("sequenceOptions", tableObject(env, kSequenceFields));
  return o;
}

}  // namespace collbench::addon
