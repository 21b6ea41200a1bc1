#pragma once
// The journal: per run, a hash chain of records written before and after every effect, and the
// store interface that keeps it. Stores assign seq and hashes; callers supply kind and body.

#include "core/canonical_json.hpp"
#include "core/error.hpp"
#include "core/sha256.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::core {

enum class record_kind {
    run_admitted,        // {agent:{name,version,digest}, input, input_label, principal?, idempotency_key?, admitted_at}
    effect_started,      // {effect_key, target:"tool"|"model", tool?, arguments (canonical), mutates, attempt}
    effect_done,         // {effect_key, output, output_label, usage?}
    effect_failed,       // {effect_key, error_kind, disposition, detail}
    policy_denied,       // {effect_key?, tool, reason, detail}
    approval_requested,  // {effect_key, tool, arguments}
    approval_decided,    // {effect_key, approved, reviewer?, comment?}
    note,                // free-form {text, ...}
    run_sealed,          // {status, reason, chain_head}
};

std::string_view to_string(record_kind k) noexcept;
std::optional<record_kind> parse_record_kind(std::string_view s) noexcept;

// Records larger than this (canonical body) are refused, never truncated.
inline constexpr std::size_t max_record_bytes = 1024 * 1024;

// How deep a stored record may nest, its own object being level 1 and its body level 2. A body holds
// a value airlock read (at most max_json_depth deep) a few levels below its root, so every value the
// door accepts fits; a body that would not fit is refused when appended ("too_deep"), never written
// in a form the reader then refuses.
inline constexpr std::size_t max_record_depth = max_json_depth + 16;

struct new_record {
    record_kind kind;
    boost::json::object body;
};

// A batch of one record, the body moved in: a braced list would copy it (its elements are const),
// and a body carries a call's whole arguments and provenance.
std::vector<new_record> one_record(new_record rec);
std::vector<new_record> one_record(record_kind kind, boost::json::object body);

struct record {
    std::string run_id;
    std::uint64_t seq = 0;  // 1-based, contiguous per run
    record_kind kind = record_kind::note;
    boost::json::object body;
    sha256_digest prev_hash{};  // all zero for seq 1
    sha256_digest hash{};
};

// SHA-256(prev_hash ‖ canonical({"body":…,"kind":…,"run_id":…,"seq":…})).
result<sha256_digest> record_hash(sha256_digest const& prev_hash, std::string_view run_id, std::uint64_t seq,
                                  record_kind kind, boost::json::object const& body);

// Builds the next record of a chain (seq = prev.seq + 1, or 1 after genesis), refusing bodies over
// max_record_bytes and bodies that are not canonicalizable.
result<record> chain_next(std::string_view run_id, std::optional<record> const& prev, new_record const& next);

// The first record that breaks the chain, with why; nullopt when every record verifies.
struct chain_fault {
    std::uint64_t seq;
    std::string reason;  // "seq gap: expected 4", "prev_hash mismatch", "hash mismatch", ...
};
std::optional<chain_fault> verify_chain(std::vector<record> const& records);

// Record ↔ JSON, for export/import and the REST API. Hashes as lowercase hex.
boost::json::object to_json(record const& r);
// to_json(r) as text, members in to_json's order and numbers written as ECMAScript writes them
// (append_json), without copying the body: the form stores keep and the REST journal route sends.
std::string serialize_record(record const& r);
result<record> record_from_json(boost::json::value const& v);
// Reads one record's text as stored or exported: parse_ijson to max_record_depth, then
// record_from_json. Every reader of journal bytes goes through here, so what one reads all read.
result<record> parse_record(std::string_view text);

// Run statuses; the store derives a run's status from its records (admitted → running,
// approval_requested → awaiting_approval, approval_decided → running, run_sealed → body.status).
inline constexpr std::string_view run_statuses[] = {"running", "succeeded", "failed", "exhausted",
                                                    "awaiting_approval", "quarantined", "cancelled"};
bool is_terminal_status(std::string_view status) noexcept;

// What a run is, from its admission (run_kind_of): "agent", a run of an agent (REST, `airlock run`);
// "session", the calls of one gateway session, or a stateless principal's calls for a while; "airlock",
// airlock's own record keeping (its gateway's events, a journal prune).
inline constexpr char const* run_kinds[] = {"agent", "session", "airlock"};

struct run_summary {
    std::string run_id;
    std::string agent;        // from run_admitted.body.agent.name
    std::string kind;         // one of run_kinds; "" only in an index entry written before kinds were kept
    std::string status;
    std::string admitted_at;  // from run_admitted.body.admitted_at (RFC 3339)
    // Who owns the run: run_admitted.body.principal (a run started over REST), else
    // body.input.principal of a gateway session's run. "" is nobody: internal runs, anonymous
    // `airlock run`s and index entries written before owners were recorded; only operators see those.
    std::string principal;
    std::uint64_t head_seq = 0;
    sha256_digest head_hash{};
    bool sealed = false;
};

struct run_filter {
    std::optional<std::string> status;
    std::optional<std::string> agent;
    std::optional<std::string> since;  // admitted_at >= since (RFC 3339 strings compare in order)
    std::optional<std::string> principal;  // runs this principal owns; "" matches no run
    std::optional<std::string> kind;       // runs of this kind only (run_kinds); none: every kind
    std::size_t limit = 100;
    std::optional<std::string> cursor;  // run ids after this one, in run id order
};

struct run_page {
    std::vector<run_summary> runs;
    std::optional<std::string> next_cursor;
};

struct admission {
    std::string run_id;
    bool fresh = false;  // false: the key was claimed before; run_id is the earlier run
};

// Error codes stores return: record_too_large, sealed, duplicate_effect, not_admitted (first record
// is not run_admitted, or a run is admitted twice), unknown_run, empty_append, invalid_record
// (effect_started without an effect_key, run_sealed without a terminal status), invalid_status (seal
// with a status that is not terminal), map_full, disk_full, io_error, corrupt, closed.
class journal_store {
public:
    virtual ~journal_store() = default;

    // Atomically appends the records (all or none); completes only once they are durable.
    virtual boost::asio::awaitable<result<std::vector<record>>> async_append(std::string run_id,
                                                                             std::vector<new_record> records) = 0;
    // An append whose durability nobody waits for (a gateway call's outcome, written after the
    // reply): a store may hold it back to ride in the transaction of the next append that must be
    // durable now (the LMDB store does, for at most its defer_limit); records keep the order in
    // which they were submitted, deferred or not. By default it is an ordinary append.
    virtual boost::asio::awaitable<result<std::vector<record>>> async_append_deferred(std::string run_id,
                                                                                      std::vector<new_record> records);
    virtual boost::asio::awaitable<result<std::vector<record>>> async_read(std::string run_id,
                                                                           std::uint64_t from_seq = 1) = 0;
    virtual boost::asio::awaitable<result<std::optional<run_summary>>> async_head(std::string run_id) = 0;
    virtual boost::asio::awaitable<result<run_page>> async_runs(run_filter filter) = 0;
    // Verifies the stored chain of one run; nullopt when it verifies.
    virtual boost::asio::awaitable<result<std::optional<chain_fault>>> async_verify(std::string run_id) = 0;
    // Claims an idempotency key for a proposed run id, or returns the run that already holds it.
    virtual boost::asio::awaitable<result<admission>> async_claim_admission(std::string idempotency_key,
                                                                            std::string proposed_run_id) = 0;
    // Appends run_sealed {status, reason, chain_head}; later appends to the run are refused.
    virtual boost::asio::awaitable<result<record>> async_seal(std::string run_id, std::string status,
                                                              std::string reason) = 0;
};

}  // namespace airlock::core
