#include "core/journal.hpp"

#include "core/canonical_json.hpp"

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <array>
#include <utility>

namespace airlock::core {

namespace {

// One table for both directions, so a kind cannot be printable and unparseable (or the reverse).
constexpr std::array<std::pair<record_kind, std::string_view>, 9> kind_names{{
    {record_kind::run_admitted, "run_admitted"},
    {record_kind::effect_started, "effect_started"},
    {record_kind::effect_done, "effect_done"},
    {record_kind::effect_failed, "effect_failed"},
    {record_kind::policy_denied, "policy_denied"},
    {record_kind::approval_requested, "approval_requested"},
    {record_kind::approval_decided, "approval_decided"},
    {record_kind::note, "note"},
    {record_kind::run_sealed, "run_sealed"},
}};

constexpr sha256_digest zero_digest{};

// The hashed bytes are prev_hash followed by the canonical form of
// {"body":…,"kind":…,"run_id":…,"seq":…}. Those four names already sort in RFC 8785 order, so the
// envelope is written around the body's canonical text instead of copying the body into a wrapper
// object and canonicalizing it a second time: chain_next needs the body's canonical size anyway, and
// bodies may be up to a mebibyte. The journal tests pin this against canonical() of the wrapper.
result<sha256_digest> hash_canonical_body(sha256_digest const& prev_hash, std::string_view run_id,
                                          std::uint64_t seq, record_kind kind, std::string_view canonical_body) {
    auto kind_text = canonical(boost::json::value(to_string(kind)));
    if (!kind_text) return kind_text.error();
    auto run_text = canonical(boost::json::value(run_id));
    if (!run_text) return make_error(run_text.error().code, "run_id: " + run_text.error().message);

    sha256_hasher h;
    h.update(prev_hash.data(), prev_hash.size());
    h.update(R"({"body":)");
    h.update(canonical_body);
    h.update(R"(,"kind":)");
    h.update(*kind_text);
    h.update(R"(,"run_id":)");
    h.update(*run_text);
    h.update(R"(,"seq":)");
    // As RFC 8785 writes a number: a seq beyond 2^53, which no run reaches, as the nearest double.
    h.update(seq <= (std::uint64_t(1) << 53) ? std::to_string(seq) : format_es_number(static_cast<double>(seq)));
    h.update("}");
    return h.finish();
}

result<std::string> canonical_body(boost::json::object const& body) {
    auto text = canonical(body);
    if (!text) return make_error(text.error().code, "body: " + text.error().message);
    return text;
}

std::string too_large_message(std::size_t size) {
    return "body is " + std::to_string(size) + " bytes in canonical form; records are limited to " +
           std::to_string(max_record_bytes) + " bytes and are never truncated";
}

int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;  // upper case is refused: exports are written lower case and must round-trip byte for byte
}

std::optional<sha256_digest> parse_digest(std::string_view hex) noexcept {
    sha256_digest d{};
    if (hex.size() != d.size() * 2) return std::nullopt;
    for (std::size_t i = 0; i < d.size(); ++i) {
        int hi = hex_value(hex[2 * i]);
        int lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        d[i] = static_cast<std::uint8_t>(hi << 4 | lo);
    }
    return d;
}

}  // namespace

std::vector<new_record> one_record(new_record rec) {
    std::vector<new_record> batch;
    batch.push_back(std::move(rec));
    return batch;
}

std::vector<new_record> one_record(record_kind kind, boost::json::object body) {
    return one_record(new_record{kind, std::move(body)});
}

std::string_view to_string(record_kind k) noexcept {
    for (auto const& [kind, name] : kind_names)
        if (kind == k) return name;
    return "unknown";
}

std::optional<record_kind> parse_record_kind(std::string_view s) noexcept {
    // Byte-for-byte: the kind is part of the hashed bytes, so a near miss must not read as a kind.
    for (auto const& [kind, name] : kind_names)
        if (name == s) return kind;
    return std::nullopt;
}

result<sha256_digest> record_hash(sha256_digest const& prev_hash, std::string_view run_id, std::uint64_t seq,
                                  record_kind kind, boost::json::object const& body) {
    auto text = canonical_body(body);
    if (!text) return text.error();
    return hash_canonical_body(prev_hash, run_id, seq, kind, *text);
}

result<record> chain_next(std::string_view run_id, std::optional<record> const& prev, new_record const& next) {
    if (prev && prev->run_id != run_id)
        return make_error("invalid_record", "run_id: the previous record belongs to run '" + prev->run_id +
                                                "', not '" + std::string(run_id) + "'");
    auto text = canonical_body(next.body);
    if (!text) return text.error();
    if (text->size() > max_record_bytes) return make_error("record_too_large", too_large_message(text->size()));
    // The body is level 2 of the stored record.
    if (nests_deeper_than(next.body, max_record_depth - 1))
        return make_error(core::errc::too_deep, "the record's body nests deeper than " + std::to_string(max_record_depth - 1) +
                                          " levels, the most a journal record holds");

    record r;
    r.run_id = std::string(run_id);
    r.seq = prev ? prev->seq + 1 : 1;
    r.kind = next.kind;
    r.body = next.body;
    r.prev_hash = prev ? prev->hash : zero_digest;
    auto h = hash_canonical_body(r.prev_hash, r.run_id, r.seq, r.kind, *text);
    if (!h) return h.error();
    r.hash = *h;
    return r;
}

namespace {

// Releases before airlock followed RFC 8785 for integers beyond 2^53 hashed them with all their
// digits. A record holding one may have been written so; it verifies if its hash is of that form.
// Only such records are hashed twice: for all others the two forms are the same text.
bool hashed_with_exact_integers(record const& r, std::string_view canonical_text) {
    auto exact = canonical_exact_integers(r.body);
    if (!exact || *exact == canonical_text) return false;
    auto h = hash_canonical_body(r.prev_hash, r.run_id, r.seq, r.kind, *exact);
    return h && *h == r.hash;
}

}  // namespace

std::optional<chain_fault> verify_chain(std::vector<record> const& records) {
    if (records.empty()) return std::nullopt;
    std::string const& run_id = records.front().run_id;
    for (std::size_t i = 0; i < records.size(); ++i) {
        record const& r = records[i];
        std::uint64_t const expected_seq = i + 1;
        if (r.run_id != run_id)
            return chain_fault{r.seq, "run_id mismatch: expected '" + run_id + "', found '" + r.run_id + "'"};
        if (r.seq != expected_seq) {
            // Telling a lost record from a moved one points whoever reads the fault at the right cause:
            // the expected seq turning up later (or a seq going backwards) means records were reordered.
            bool moved = r.seq < expected_seq ||
                         std::any_of(records.begin() + static_cast<std::ptrdiff_t>(i) + 1, records.end(),
                                     [&](record const& later) { return later.seq == expected_seq; });
            return chain_fault{r.seq, std::string(moved ? "seq out of order" : "seq gap") + ": expected " +
                                          std::to_string(expected_seq) + ", found " + std::to_string(r.seq)};
        }
        sha256_digest const& expected_prev = i == 0 ? zero_digest : records[i - 1].hash;
        if (r.prev_hash != expected_prev)
            return chain_fault{r.seq, i == 0 ? std::string("prev_hash mismatch: the first record must link to the "
                                                           "all-zero genesis hash")
                                             : "prev_hash mismatch: expected " + to_hex(expected_prev) +
                                                   " (the hash of seq " + std::to_string(r.seq - 1) + ")"};
        auto text = canonical_body(r.body);
        if (!text) return chain_fault{r.seq, "body cannot be canonicalized: " + text.error().message};
        // A record the store would have refused cannot be part of an honest chain, even if it hashes.
        if (text->size() > max_record_bytes) return chain_fault{r.seq, "record too large: " + too_large_message(text->size())};
        auto h = hash_canonical_body(r.prev_hash, r.run_id, r.seq, r.kind, *text);
        if (!h) return chain_fault{r.seq, "hash cannot be computed: " + h.error().message};
        if (*h != r.hash && !hashed_with_exact_integers(r, *text))
            return chain_fault{r.seq, "hash mismatch: recomputed " + to_hex(*h) + ", stored " + to_hex(r.hash)};
    }
    return std::nullopt;
}

boost::json::object to_json(record const& r) {
    boost::json::object o;
    o["run_id"] = r.run_id;
    o["seq"] = r.seq;
    o["kind"] = to_string(r.kind);
    o["body"] = r.body;
    o["prev_hash"] = to_hex(r.prev_hash);
    o["hash"] = to_hex(r.hash);
    return o;
}

std::string serialize_record(record const& r) {
    // The members in to_json's order, each written by boost::json, without copying the body.
    std::string out = R"({"run_id":)";
    out += boost::json::serialize(boost::json::string_view(r.run_id));
    out += R"(,"seq":)";
    out += std::to_string(r.seq);
    out += R"(,"kind":")";
    out += to_string(r.kind);  // names are plain ASCII words
    out += R"(","body":)";
    // Numbers as ECMAScript writes them, integers with all their digits: what any JSON reader
    // expects. A body the chain accepted is always writable this way; the fallback keeps the function total all the same.
    auto body_at = out.size();
    if (!append_json(out, r.body)) {
        out.resize(body_at);
        out += boost::json::serialize(r.body);
    }
    out += R"(,"prev_hash":")";
    out += to_hex(r.prev_hash);
    out += R"(","hash":")";
    out += to_hex(r.hash);
    out += R"("})";
    return out;
}

result<record> parse_record(std::string_view text) {
    auto v = parse_ijson(text, max_record_depth);
    if (!v) return v.error();
    return record_from_json(*v);
}

result<record> record_from_json(boost::json::value const& v) {
    auto const* o = v.if_object();
    if (!o) return make_error("wrong_type", "a record must be a JSON object");

    // Unknown members are refused: an import that silently dropped one would not round-trip, and a
    // field we do not hash is a field nobody can trust.
    static constexpr std::string_view known[] = {"run_id", "seq", "kind", "body", "prev_hash", "hash"};
    for (auto const& kv : *o) {
        bool found = false;
        for (auto k : known) found = found || kv.key() == k;
        if (!found) return make_error("unknown_field", "record." + std::string(kv.key()) + " is not a record field");
    }
    auto field = [&](std::string_view name) -> result<boost::json::value const*> {
        auto const* p = o->if_contains(name);
        if (!p) return make_error("missing_field", "record." + std::string(name) + " is required");
        return p;
    };

    record r;

    auto run_id = field("run_id");
    if (!run_id) return run_id.error();
    auto const* run_text = (*run_id)->if_string();
    if (!run_text) return make_error("wrong_type", "record.run_id must be a string");
    r.run_id = std::string(*run_text);

    auto seq = field("seq");
    if (!seq) return seq.error();
    if (auto const* i = (*seq)->if_int64(); i && *i > 0)
        r.seq = static_cast<std::uint64_t>(*i);
    else if (auto const* u = (*seq)->if_uint64(); u && *u > 0)
        r.seq = *u;
    else
        return make_error("wrong_type", "record.seq must be a positive integer");

    auto kind = field("kind");
    if (!kind) return kind.error();
    auto const* kind_text = (*kind)->if_string();
    if (!kind_text) return make_error("wrong_type", "record.kind must be a string");
    auto k = parse_record_kind(*kind_text);
    if (!k) return make_error(core::errc::invalid_field, "record.kind '" + std::string(*kind_text) + "' is not a record kind");
    r.kind = *k;

    auto body = field("body");
    if (!body) return body.error();
    auto const* body_obj = (*body)->if_object();
    if (!body_obj) return make_error("wrong_type", "record.body must be an object");
    r.body = *body_obj;

    for (auto [name, target] : {std::pair{std::string_view("prev_hash"), &r.prev_hash},
                                std::pair{std::string_view("hash"), &r.hash}}) {
        auto f = field(name);
        if (!f) return f.error();
        auto const* text = (*f)->if_string();
        if (!text) return make_error("wrong_type", "record." + std::string(name) + " must be a string");
        auto d = parse_digest(*text);
        if (!d)
            return make_error(core::errc::invalid_field,
                              "record." + std::string(name) + " must be 64 lowercase hexadecimal digits");
        *target = *d;
    }
    return r;
}

bool is_terminal_status(std::string_view status) noexcept {
    return status == "succeeded" || status == "failed" || status == "exhausted" || status == "quarantined" ||
           status == "cancelled";
}

boost::asio::awaitable<result<std::vector<record>>> journal_store::async_append_deferred(std::string run_id,
                                                                                   std::vector<new_record> records) {
    co_return co_await async_append(std::move(run_id), std::move(records));
}

}  // namespace airlock::core
