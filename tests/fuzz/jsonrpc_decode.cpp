// JSON-RPC decoding: a message that parses is written back as text that parses to the same message,
// a refused one is answered with a parse or invalid-request error (invalid params when it nests too
// deep), and a message's head (what the line framer reads of an oversized line) agrees with the
// whole message.
#include "core/canonical_json.hpp"
#include "mcp/protocol/jsonrpc.hpp"
#include "tests/fuzz/fuzz_check.hpp"

#include <boost/json/value_from.hpp>

using namespace airlock;
using fuzz::require;

namespace {

void check_accepted(std::string_view text, mcp::message const& m) {
    auto written = mcp::serialize(m);
    auto again = mcp::parse_message(written);
    require(again.has_value(), "a serialized message does not parse");
    require(again->index() == m.index(), "a serialized message reads back as another kind");
    require(fuzz::same_json(mcp::to_json(*again), mcp::to_json(m)), "a serialized message reads back changed");
    require(mcp::serialize(*again) == written, "serialize is not stable across a round trip");
    require(mcp::id_of(*again) == mcp::id_of(m), "the id changed across a round trip");
    auto head = mcp::read_message_head(text);
    bool const has_method = std::holds_alternative<mcp::request>(m) || std::holds_alternative<mcp::notification>(m);
    require(head.has_method == has_method, "read_message_head disagrees about a top-level method");
    if (head.id) require(head.id == mcp::id_of(m), "read_message_head reads another id than the message's");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    auto text = fuzz::as_text(data, size);
    auto parsed = mcp::parse_message(text);
    if (parsed) {
        check_accepted(text, *parsed);
        return 0;
    }
    auto const& reply = parsed.error().reply;
    auto code = reply.error.code;
    // Well-formed JSON nested past the limit is refused as params airlock will not take (-32602),
    // naming the limit; anything else is a parse error or an invalid request.
    bool const too_deep = code == mcp::rpc_code::invalid_params &&
                          reply.error.message.find("nests deeper than") != std::string::npos;
    require(code == mcp::rpc_code::parse_error || code == mcp::rpc_code::invalid_request || too_deep,
            "a refused message is answered with a code other than -32700, -32600 or -32602 for nesting");
    require(!reply.error.message.empty(), "a refusal has no message");
    auto answer = mcp::parse_message(mcp::serialize(mcp::message{reply}));
    require(answer.has_value() && std::holds_alternative<mcp::error_response>(*answer),
            "the error response to a refused message does not read back as one");
    (void)mcp::read_trailing_id(text);
    return 0;
}
