#include "service/app/interrupted_sessions.hpp"

#include "core/record_body.hpp"
#include "core/effect_records.hpp"

#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <set>

namespace airlock::service {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view lock_suffix = ".lock";

fs::path owners_dir(fs::path const& journal_dir) { return journal_dir / "owners"; }

// An id is 32 lowercase hex digits: anything else names no lock file (and no path outside owners/).
bool is_instance_id(std::string_view id) {
    if (id.size() != 32) return false;
    for (char c : id)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

// Whether some process holds `file`'s lock. A file that cannot be opened (removed by a sweep) is held by nobody.
bool held(fs::path const& file) {
    int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    // flock locks belong to the open file, so this conflicts with a lock this process holds too.
    bool is_held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);
    return is_held;
}

}  // namespace

instance_lock::instance_lock(fs::path dir, std::string id, int fd) : journal_dir_(std::move(dir)), id_(std::move(id)), fd_(fd) {}

instance_lock::~instance_lock() {
    std::error_code ec;
    fs::remove(owners_dir(journal_dir_) / (id_ + std::string(lock_suffix)), ec);
    if (fd_ >= 0) ::close(fd_);
}

core::result<std::unique_ptr<instance_lock>> instance_lock::acquire(fs::path const& journal_dir) {
    unsigned char bytes[16];
    if (RAND_bytes(bytes, sizeof bytes) != 1)
        return core::make_error("io_error", "OpenSSL could not produce random bytes for this process's id");
    static constexpr char hex[] = "0123456789abcdef";
    std::string id;
    for (auto b : bytes) {
        id.push_back(hex[b >> 4]);
        id.push_back(hex[b & 15]);
    }
    auto dir = owners_dir(journal_dir);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return core::make_error("io_error", "cannot create " + dir.string() + ": " + ec.message());
    // Locked under a temporary name, then renamed into place: a sweep by another process only looks at
    // final names, so it never sees this file unlocked and removes it.
    auto tmp = dir / (id + ".new");
    int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
    if (fd < 0) return core::make_error("io_error", "cannot create " + tmp.string() + ": " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        auto why = std::string(std::strerror(errno));
        ::close(fd);
        fs::remove(tmp, ec);
        return core::make_error("io_error", "cannot lock " + tmp.string() + ": " + why);
    }
    fs::rename(tmp, dir / (id + std::string(lock_suffix)), ec);
    if (ec) {
        ::close(fd);
        fs::remove(tmp, ec);
        return core::make_error("io_error", "cannot create the lock file in " + dir.string() + ": " + ec.message());
    }
    return std::unique_ptr<instance_lock>(new instance_lock(journal_dir, std::move(id), fd));
}

bool instance_lock::alive(std::string_view id) const {
    if (id == id_) return true;
    if (!is_instance_id(id)) return false;
    return held(owners_dir(journal_dir_) / (std::string(id) + std::string(lock_suffix)));
}

std::size_t instance_lock::sweep() const {
    std::size_t removed = 0;
    std::error_code ec;
    for (auto const& entry : fs::directory_iterator(owners_dir(journal_dir_), ec)) {
        auto name = entry.path().filename().string();
        if (!name.ends_with(lock_suffix)) continue;
        auto id = std::string_view(name).substr(0, name.size() - lock_suffix.size());
        if (id == id_ || !is_instance_id(id) || held(entry.path())) continue;
        std::error_code rm;
        if (fs::remove(entry.path(), rm)) ++removed;
    }
    return removed;
}

session_owner owner_of(core::record const& admitted) {
    session_owner o;
    if (admitted.kind != core::record_kind::run_admitted) return o;
    auto const* mode = admitted.body.if_contains("mode");
    o.gateway = !mode || (mode->is_string() && mode->get_string() == "gateway");
    o.instance = core::body_string(admitted.body, "instance");
    return o;
}

interrupted_seal plan_interrupted_seal(std::vector<core::record> const& records) {
    struct started {
        std::string tool;
        bool mutates = false;
    };
    std::map<std::string, started> open;  // effect key → the call, while no outcome follows it
    std::set<std::string> noted;
    for (auto const& r : records) {
        auto key = core::body_string(r.body, "effect_key");
        switch (r.kind) {
            case core::record_kind::effect_started: {
                // The one schema of a call's records (core/effect_records) reads every shape written.
                if (auto s = core::parse_effect_started(r.body))
                    open[key] = started{s->tool.value_or(""), s->mutates.value_or(false)};
                else
                    open[key] = started{core::body_string(r.body, "tool"), false};
                break;
            }
            case core::record_kind::effect_done:
            case core::record_kind::effect_failed: open.erase(key); break;
            case core::record_kind::note:
                if (core::body_string(r.body, "event") == "effect_in_doubt") noted.insert(key);
                break;
            default: break;
        }
    }
    interrupted_seal plan;
    bool mutating_in_doubt = false;
    std::string keys;
    for (auto const& [key, call] : open) {
        mutating_in_doubt = mutating_in_doubt || call.mutates;
        if (!keys.empty()) keys += ", ";
        keys += key + " (" + call.tool + ")";
        if (noted.contains(key)) continue;
        plan.notes.push_back({core::record_kind::note,
                              core::in_doubt_note(key, call.tool, call.mutates,
                                                  "the call was started and its outcome was not journaled before "
                                                  "the airlock process holding the session ended")});
    }
    plan.in_doubt = open.size();
    plan.status = mutating_in_doubt ? "quarantined" : "cancelled";
    plan.reason = "interrupted: the airlock process holding this gateway session ended without closing it";
    if (!open.empty())
        plan.reason += "; " + std::to_string(open.size()) + (open.size() == 1 ? " call is" : " calls are") +
                       " in doubt (may or may not have taken effect): " + keys;
    return plan;
}

namespace {

boost::asio::awaitable<bool> async_seal_logged(core::journal_store& journal, std::string const& run, std::string status,
                                               std::string reason) {
    auto sealed = co_await journal.async_seal(run, status, reason);
    if (!sealed) {
        spdlog::error("run {}: cannot seal it {}: {}", run, status, sealed.error().message);
        co_return false;
    }
    spdlog::warn("run {}: sealed {}: {}", run, status, reason);
    co_return true;
}

}  // namespace

boost::asio::awaitable<core::result<std::size_t>> async_seal_interrupted_sessions(
    std::shared_ptr<core::journal_store> journal, std::function<bool(std::string_view instance)> alive) {
    // The candidates are gathered first: sealing changes the statuses the pages are filtered by.
    std::vector<std::string> candidates;
    for (std::string status : {"running", "awaiting_approval"}) {
        core::run_filter filter;
        filter.status = status;
        filter.limit = 500;
        for (;;) {
            auto page = co_await journal->async_runs(filter);
            if (!page) co_return page.error();
            for (auto const& s : page->runs) candidates.push_back(s.run_id);
            if (!page->next_cursor) break;
            filter.cursor = page->next_cursor;
        }
    }
    std::size_t sealed = 0;
    for (auto const& run : candidates) {
        auto records = co_await journal->async_read(run, 1);
        if (!records && records.error().code == "corrupt") {
            // Nothing can replay, resume or close a run whose history cannot be read: it waits for an
            // operator, and `journal verify` names the record.
            if (co_await async_seal_logged(*journal, run, "quarantined",
                                           "its journal cannot be read, so it cannot be resumed: " + records.error().message))
                ++sealed;
            continue;
        }
        if (!records) {
            spdlog::error("run {}: cannot read it to see whether it was interrupted: {}", run, records.error().message);
            continue;
        }
        if (records->empty()) continue;
        auto owner = owner_of(records->front());
        if (!owner.gateway || alive(owner.instance)) continue;
        auto plan = plan_interrupted_seal(*records);
        if (!plan.notes.empty()) {
            auto noted = co_await journal->async_append(run, std::move(plan.notes));
            if (!noted) {
                spdlog::error("run {}: cannot flag its calls in doubt: {}", run, noted.error().message);
                continue;
            }
        }
        if (co_await async_seal_logged(*journal, run, plan.status, plan.reason)) ++sealed;
    }
    co_return sealed;
}

}  // namespace airlock::service
