// Agent manifest YAML: parse_manifest refuses exactly when manifest_problems finds a problem, with
// the first of them; an accepted manifest's digest is the SHA-256 of its canonical JSON, and the
// same text always gives the same digest.
#include "core/canonical_json.hpp"
#include "core/manifest.hpp"
#include "core/sha256.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace airlock;
using fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    auto text = fuzz::as_text(data, size);
    auto m = core::parse_manifest(text);
    auto problems = core::manifest_problems(text);
    if (!m) {
        require(!problems.empty(), "parse_manifest refuses a manifest that has no problems");
        require(problems.front() == m.error(), "parse_manifest's error is not the first problem");
        require(!m.error().message.empty(), "a refusal has no message");
        return 0;
    }
    require(problems.empty(), "parse_manifest accepts a manifest with problems");
    auto json = core::canonical(core::to_json(*m));
    require(json.has_value(), "an accepted manifest has no canonical JSON");
    require(m->digest == core::sha256_hex(*json), "the digest is not that of the canonical JSON");
    auto again = core::parse_manifest(text);
    require(again.has_value() && again->digest == m->digest, "the same text digests differently");
    return 0;
}
