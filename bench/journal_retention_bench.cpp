// Journal size over time: CALLS gateway calls (records shaped exactly like the ones a real airlock
// wrote in tests/fixtures/journal-v1: an effect_started with its arguments and provenance, an
// effect_done with its output), in sessions of 100 calls, sealed; then prune all of them, write the
// same again into the freed pages, prune again and make a compacting copy. Prints the data file's
// size at each step beside the floor (the records' own bytes), and the time prune and compaction
// take. Prints a table and one JSON line; it never passes or fails.
//
//   build/bench/bench_journal_retention_bench [--calls N] [--dir DIR]

#include "core/journal.hpp"
#include "service/ops/journal_prune.hpp"
#include "store/lmdb_store.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include <unistd.h>

using namespace airlock;
namespace ops = airlock::service::ops;
namespace fs = std::filesystem;
namespace json = boost::json;
using clock_type = std::chrono::steady_clock;

namespace {

template <class T>
T run(boost::asio::awaitable<T> task) {
    boost::asio::io_context ioc;
    auto f = boost::asio::co_spawn(ioc, std::move(task), boost::asio::use_future);
    ioc.run();
    return f.get();
}

struct call_shape {
    json::object started, done;
};

// The first effect_started / effect_done pair of the fixture's gateway session run.
call_shape real_call() {
    std::ifstream in(std::string(AIRLOCK_SOURCE_DIR) + "/tests/fixtures/journal-v1/journal.jsonl");
    call_shape shape;
    for (std::string line; std::getline(in, line);) {
        auto v = json::parse(line).as_object();
        if (v.at("run_id") != "01M8T3TFWT58Q2QFW6N7E8TBTF") continue;
        if (v.at("kind") == "effect_started" && shape.started.empty()) shape.started = v.at("body").as_object();
        if (v.at("kind") == "effect_done" && shape.done.empty()) shape.done = v.at("body").as_object();
    }
    if (shape.started.empty() || shape.done.empty()) throw std::runtime_error("the fixture's session run has no call");
    return shape;
}

double mib(std::uintmax_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

std::uintmax_t file_bytes(fs::path const& dir) { return fs::file_size(dir / "data.mdb"); }

// Writes `calls` calls in sealed sessions of 100; the records' canonical bytes, the floor.
std::uintmax_t write_calls(store::lmdb_store& s, call_shape const& shape, int calls, std::string const& prefix) {
    std::uintmax_t bytes = 0;
    constexpr int per_session = 100;
    for (int session = 0; session * per_session < calls; ++session) {
        auto const id = prefix + std::to_string(session);
        std::vector<core::new_record> batch;
        batch.push_back({core::record_kind::run_admitted,
                         {{"agent", {{"name", "gateway"}, {"version", "1"}}},
                          {"input", {{"principal", "alice"}}},
                          {"mode", "gateway"},
                          {"admitted_at", "2026-11-01T00:00:00Z"}}});
        for (int i = 0; i < per_session && session * per_session + i < calls; ++i) {
            auto key = id + "/" + std::to_string(i) + "/tool";
            auto started = shape.started;
            started["effect_key"] = key;
            auto done = shape.done;
            done["effect_key"] = key;
            batch.push_back({core::record_kind::effect_started, std::move(started)});
            batch.push_back({core::record_kind::effect_done, std::move(done)});
        }
        auto written = run(s.async_append(id, std::move(batch)));
        if (!written) throw std::runtime_error(written.error().message);
        for (auto const& r : *written) bytes += core::serialize_record(r).size();
        auto sealed = run(s.async_seal(id, "succeeded", "session ended"));
        if (!sealed) throw std::runtime_error(sealed.error().message);
        bytes += core::serialize_record(*sealed).size();
    }
    return bytes;
}

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

std::size_t prune_all(store::lmdb_store& s) {
    ops::prune_request everything{std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now() + std::chrono::hours(1))};
    auto pruned = run(ops::async_prune(s, everything));
    if (!pruned) throw std::runtime_error(pruned.error().message);
    return pruned->records;
}

}  // namespace

int main(int argc, char** argv) {
    int calls = 100'000;
    fs::path dir = fs::temp_directory_path() / ("airlock-retention-bench-" + std::to_string(::getpid()));
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i];
        if (a == "--calls") calls = std::stoi(argv[i + 1]);
        else if (a == "--dir") dir = argv[i + 1];
    }
    fs::remove_all(dir);
    auto shape = real_call();
    store::lmdb_options o{dir, std::size_t{8} << 30, store::durability::fast};
    auto opened = store::lmdb_store::open(o);
    if (!opened) {
        std::cerr << opened.error().message << "\n";
        return 1;
    }
    auto& s = **opened;

    auto t = clock_type::now();
    auto floor = write_calls(s, shape, calls, "a-");
    double const write_s = seconds_since(t);
    auto const full = file_bytes(dir);

    t = clock_type::now();
    auto removed = prune_all(s);
    double const prune_s = seconds_since(t);
    auto const after_prune = file_bytes(dir);

    write_calls(s, shape, calls, "b-");
    auto const refilled = file_bytes(dir);
    prune_all(s);

    t = clock_type::now();
    auto copied = s.copy_compacted(dir / "compacted");
    double const compact_s = seconds_since(t);
    if (!copied) {
        std::cerr << copied.error().message << "\n";
        return 1;
    }
    auto const compacted = file_bytes(dir / "compacted");

    std::printf("journal retention, %d gateway calls (records as a real airlock writes them), sessions of 100\n", calls);
    std::printf("%-44s %12s\n", "step", "data.mdb MiB");
    std::printf("%-44s %12.1f\n", "floor: the records' own bytes", mib(floor));
    std::printf("%-44s %12.1f   (%.0f bytes per call, written in %.1f s)\n", "written", mib(full),
                static_cast<double>(full) / calls, write_s);
    std::printf("%-44s %12.1f   (%zu records removed in %.2f s)\n", "after prune (pages freed, file kept)", mib(after_prune),
                removed, prune_s);
    std::printf("%-44s %12.1f\n", "the same calls again, into the freed pages", mib(refilled));
    std::printf("%-44s %12.3f   (in %.2f s)\n", "pruned again, compacting copy", mib(compacted), compact_s);
    std::printf(
        "{\"bench\":\"journal_retention\",\"calls\":%d,\"floor_bytes\":%ju,\"written_bytes\":%ju,\"after_prune_bytes\":%ju,"
        "\"refilled_bytes\":%ju,\"compacted_bytes\":%ju,\"prune_s\":%.3f,\"compact_s\":%.3f}\n",
        calls, floor, full, after_prune, refilled, compacted, prune_s, compact_s);
    opened->reset();
    fs::remove_all(dir);
    return 0;
}
