// The journal record reader. Any record text it accepts is written back (serialize_record) as text
// it reads as the same record; and a record built from any body chain_next accepts, once written,
// reads back whole and verifies: what the journal acknowledged it can always read again.
#include "core/canonical_json.hpp"
#include "core/journal.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace airlock;
using fuzz::require;

namespace {

bool same_record(core::record const& a, core::record const& b) {
    return a.run_id == b.run_id && a.seq == b.seq && a.kind == b.kind && a.prev_hash == b.prev_hash &&
           a.hash == b.hash && fuzz::same_json(a.body, b.body);
}

void read_written(std::string_view text) {
    auto r = core::parse_record(text);
    if (!r) {
        require(!r.error().code.empty(), "a refused record has no error code");
        return;
    }
    auto written = core::serialize_record(*r);
    auto again = core::parse_record(written);
    require(again.has_value(), "a record read and written again is refused");
    require(same_record(*r, *again), "a record read and written again reads differently");
    require(core::serialize_record(*again) == written, "serialize_record is not stable");
}

void written_reads(std::string_view text) {
    auto v = core::parse_ijson(text);
    if (!v || !v->is_object()) return;
    auto first = core::chain_next("run-fuzz", std::nullopt, {core::record_kind::note, v->get_object()});
    if (!first) return;
    auto second = core::chain_next("run-fuzz", *first, {core::record_kind::effect_done, v->get_object()});
    require(second.has_value(), "a body accepted once is refused the second time");
    for (auto const* r : {&*first, &*second}) {
        auto back = core::parse_record(core::serialize_record(*r));
        require(back.has_value(), "a record chain_next built cannot be read back");
        require(same_record(*r, *back), "a record chain_next built reads back changed");
    }
    require(!core::verify_chain({*first, *second}), "a chain built by chain_next does not verify");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    auto text = fuzz::as_text(data, size);
    read_written(text);
    written_reads(text);
    return 0;
}
