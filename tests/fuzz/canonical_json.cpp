// Canonical JSON (RFC 8785) round trip: for any value the strict parser accepts, the canonical text
// parses back to the same value (its numbers as the doubles I-JSON reads), canonical is idempotent,
// and the cheap size bound really bounds.
#include "core/canonical_json.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace airlock;
using fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    auto text = fuzz::as_text(data, size);
    auto v = core::parse_ijson(text);
    if (!v) {
        require(!core::canonicalize(text), "canonicalize accepts what parse_ijson refuses");
        return 0;
    }
    require(!core::nests_deeper_than(*v, core::max_json_depth), "parse_ijson accepted a value deeper than its limit");
    auto c1 = core::canonical(*v);
    require(c1.has_value(), "a value parse_ijson accepted has no canonical form");
    require(core::canonical_size_bound(*v) >= c1->size(), "canonical_size_bound is below the canonical size");
    auto again = core::parse_ijson(*c1);
    require(again.has_value(), "canonical text does not parse");
    require(fuzz::same_json(*v, *again, true), "parse(canonical(v)) differs from v (numbers read as doubles)");
    auto c2 = core::canonical(*again);
    require(c2.has_value() && *c2 == *c1, "canonical is not idempotent");
    auto via = core::canonicalize(text);
    require(via.has_value() && *via == *c1, "canonicalize differs from canonical(parse_ijson)");
    // append_json keeps member order but must write the same values.
    std::string appended;
    require(core::append_json(appended, *v).has_value(), "append_json refuses a parsed value");
    auto back = core::parse_ijson(appended);
    require(back.has_value() && fuzz::same_json(*v, *back), "append_json's text reads back as another value");
    return 0;
}
