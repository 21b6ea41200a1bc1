#include "service/ops/journal_prune.hpp"

#include "core/canonical_json.hpp"
#include "core/sha256.hpp"
#include "core/rfc3339.hpp"
#include "core/run_id.hpp"

#include <openssl/rand.h>

#include <fstream>

namespace airlock::service::ops {

namespace json = boost::json;
using core::make_error;
using core::result;

namespace {

// A note holds at most this many runs: each entry is ~250 bytes, so a note stays far below the
// journal's 1 MiB record limit however many runs a prune removes. The runs of one note are removed
// in one transaction.
constexpr std::size_t runs_per_note = 2000;

// When a sealed run was sealed: the seal's sealed_at, or for seals written before airlock recorded
// it, the admission time (earlier than the seal, so such runs are judged a little older than they are).
std::optional<std::pair<std::string, std::chrono::sys_seconds>> sealed_time(store::lmdb_store const& journal,
                                                                           core::run_summary const& run) {
    std::string when = run.admitted_at;
    if (auto last = journal.read(run.run_id, run.head_seq); last && !last->empty()) {
        auto const& seal = last->back();
        if (auto const* at = seal.body.if_contains("sealed_at"); seal.kind == core::record_kind::run_sealed && at &&
                                                                 at->is_string())
            when = std::string(at->get_string());
    }
    auto parsed = core::parse_rfc3339(when);
    if (!parsed) return std::nullopt;  // a time nobody can read: kept, never guessed at
    return std::pair{when, *parsed};
}

bool never_pruned(core::run_summary const& run) {
    return !run.sealed || run.status == "quarantined" || run.agent == prune_agent;
}

json::object entry_json(pruned_run const& r) {
    return {{"run_id", r.run_id}, {"status", r.status},     {"sealed_at", r.sealed_at},
            {"head_seq", r.head_seq}, {"head_hash", r.head_hash}};
}

std::string new_run_id() {
    std::array<std::uint8_t, 10> random{};
    RAND_bytes(random.data(), static_cast<int>(random.size()));
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
    return core::run_id::from_parts(static_cast<std::uint64_t>(ms.count()), random).str();
}

result<void> export_runs(store::lmdb_store const& journal, std::vector<pruned_run> const& runs,
                         std::filesystem::path const& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return make_error("io_error", "cannot create " + dir.string() + ": " + ec.message());
    for (auto const& r : runs) {
        auto records = journal.read(r.run_id);
        if (!records) return records.error();
        if (auto fault = core::verify_chain(*records))
            return make_error("corrupt", "run " + r.run_id + " does not verify (seq " + std::to_string(fault->seq) + ": " +
                                             fault->reason + "); nothing was pruned");
        if (records->empty() || core::to_hex(records->back().hash) != r.head_hash)
            return make_error("corrupt", "run " + r.run_id + " ends elsewhere than its index says; nothing was pruned");
        if (auto written = write_run_file(*records, dir / (r.run_id + ".jsonl")); !written) return written.error();
    }
    return {};
}

}  // namespace

result<void> write_records(std::ostream& out, std::vector<core::record> const& records) {
    for (auto const& r : records) {
        auto line = core::canonical(core::to_json(r));
        if (!line) return make_error("corrupt", "run " + r.run_id + " seq " + std::to_string(r.seq) + ": " + line.error().message);
        out << *line << '\n';
    }
    return {};
}

result<void> write_run_file(std::vector<core::record> const& records, std::filesystem::path const& file) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    if (!out) return make_error("io_error", "cannot write " + file.string());
    if (auto written = write_records(out, records); !written) return written;
    out.flush();
    if (!out) return make_error("io_error", "cannot write " + file.string() + " (disk full?)");
    return {};
}

result<std::vector<pruned_run>> prunable_runs(store::lmdb_store const& journal, std::chrono::sys_seconds sealed_before) {
    std::vector<pruned_run> out;
    auto listed = journal.each_run([&](core::run_summary const& run) -> result<void> {
        if (never_pruned(run)) return {};
        auto when = sealed_time(journal, run);
        if (when && when->second < sealed_before)
            out.push_back({run.run_id, run.status, when->first, run.head_seq, core::to_hex(run.head_hash)});
        return {};
    });
    if (!listed) return listed.error();
    return out;
}

boost::asio::awaitable<result<prune_report>> async_prune(store::lmdb_store& journal, prune_request request) {
    prune_report report;
    auto chosen = prunable_runs(journal, request.sealed_before);
    if (!chosen) co_return chosen.error();
    report.runs = std::move(*chosen);
    if (report.runs.empty() || request.dry_run) co_return report;
    if (request.export_to)
        if (auto exported = export_runs(journal, report.runs, *request.export_to); !exported) co_return exported.error();

    // The prune is journaled before anything goes, so a prune cut short still says what it meant to do.
    report.record_run = new_run_id();
    json::object input{{"action", "prune"}, {"sealed_before", core::rfc3339(request.sealed_before)}};
    if (request.export_to) input["exported_to"] = request.export_to->string();
    std::vector<core::new_record> opening;
    opening.push_back({core::record_kind::run_admitted,
                       {{"agent", {{"name", prune_agent}, {"version", "1"}}},
                        {"input", input},
                        {"admitted_at", core::rfc3339(std::chrono::system_clock::now())}}});
    for (std::size_t i = 0; i < report.runs.size(); i += runs_per_note) {
        json::array runs;
        for (std::size_t j = i; j < std::min(report.runs.size(), i + runs_per_note); ++j) runs.push_back(entry_json(report.runs[j]));
        opening.push_back({core::record_kind::note, {{"event", "journal_pruned"}, {"runs", std::move(runs)}}});
    }
    auto admitted = co_await journal.async_append(report.record_run, std::move(opening));
    if (!admitted) co_return admitted.error();

    std::string failure;
    std::size_t removed_runs = 0;
    for (std::size_t i = 0; i < report.runs.size() && failure.empty(); i += runs_per_note) {
        std::vector<std::string> ids;
        for (std::size_t j = i; j < std::min(report.runs.size(), i + runs_per_note); ++j) ids.push_back(report.runs[j].run_id);
        auto const count = ids.size();
        auto removed = co_await journal.async_remove_sealed(std::move(ids));
        if (!removed) {
            failure = "removed " + std::to_string(removed_runs) + " of " + std::to_string(report.runs.size()) +
                      " runs: " + removed.error().message;
            break;
        }
        removed_runs += count;
        report.records += *removed;
    }
    // Named first: GCC 12 destroys a temporary argument of a coroutine inside co_await twice.
    std::string status = failure.empty() ? "succeeded" : "failed";
    std::string reason = failure.empty() ? "pruned " + std::to_string(removed_runs) + " runs" : failure;
    auto sealed = co_await journal.async_seal(report.record_run, std::move(status), std::move(reason));
    if (!failure.empty()) co_return make_error("prune_failed", failure);
    if (!sealed) co_return sealed.error();
    co_return report;
}

}  // namespace airlock::service::ops
