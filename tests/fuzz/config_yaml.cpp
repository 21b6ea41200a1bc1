// The YAML layer every configuration file goes through (service/config/load.cpp reads its one
// document with core::yaml::read_documents, then its sections with the strict reader): whatever the
// text, reading returns (a syntax error is an exception, never a hang or a crash), counts at most
// most + 1 documents, and the strict reader turns the first document into JSON within its value
// budget, or says why not. The rest of the loader checks values whose shapes this has already read.
#include "core/canonical_json.hpp"
#include "core/strict_yaml.hpp"
#include "tests/fuzz/fuzz_check.hpp"

#include <yaml-cpp/yaml.h>

using namespace airlock;
using fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    auto text = std::string(fuzz::as_text(data, size));
    if (core::yaml::nul_byte(text)) return 0;  // refused by every reader before yaml-cpp sees it
    constexpr std::size_t most = 4;
    core::yaml::documents docs;
    try {
        docs = core::yaml::read_documents(text, most);
    } catch (YAML::Exception const& e) {
        require(!e.msg.empty(), "a YAML syntax error has no message");
        return 0;
    }
    require(docs.count <= most + 1, "read_documents counted past its bound");
    if (docs.count == 0) return 0;
    core::yaml::reader r({.document = "the configuration", .utf8_strings = true});
    std::size_t budget = 2000;
    auto value = r.json(docs.first, "", budget);
    if (!value) {
        require(!r.problems.empty(), "the strict reader refused a document without saying why");
        require(!r.problems.front().message.empty(), "a refusal has no message");
        return 0;
    }
    require(r.problems.empty(), "the strict reader read a value and recorded a problem");
    require(core::canonical(*value).has_value(), "a value the strict reader read has no canonical JSON");
    return 0;
}
