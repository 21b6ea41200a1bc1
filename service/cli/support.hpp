#pragma once
// What every one-shot command shares: running a coroutine to its end from main's thread, reading
// a flag's value, and finding the journal a command names (--journal DIR or --config FILE).

#include "store/lmdb_store.hpp"
#include "store/served_journal.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::service::cli {

// Runs `task` on `ioc` until the loop has no work left; its result, or what it threw rethrown.
template <class T>
T run_sync(boost::asio::io_context& ioc, boost::asio::awaitable<T> task) {
    auto fut = boost::asio::co_spawn(ioc, std::move(task), boost::asio::use_future);
    ioc.run();
    return fut.get();
}

// The same on a loop of its own, for a task that needs no other work beside it.
template <class T>
T run_sync(boost::asio::awaitable<T> task) {
    boost::asio::io_context ioc;
    return run_sync(ioc, std::move(task));
}

// The value of the flag at args[i], advancing i; nullptr, after printing
// "airlock COMMAND: FLAG needs a value", when it is the last argument.
std::string const* flag_value(std::vector<std::string> const& args, std::size_t& i, std::string_view command);

// The journal's settings: `config_file`'s journal section when given, else DIR (default
// var/journal); nullopt after printing "airlock COMMAND: FILE: why" when the file does not load.
std::optional<store::lmdb_options> journal_options(std::string_view command, std::optional<std::string> const& dir,
                                                   std::optional<std::string> const& config_file);

// Opens the journal; null after printing why (exit 1). With `must_exist`, a directory without one
// is refused rather than given a new, empty journal: reading must not create one.
std::unique_ptr<store::lmdb_store> open_journal(std::string_view command, store::lmdb_options const& options,
                                                bool must_exist);

// The journal a reading or pin command names: DIR's LMDB journal (default var/journal), or the one
// `config_file` keeps, in LMDB (journal.dir) or PostgreSQL (journal.postgres); null after printing
// why (exit 1). With `must_exist`, none is created where there was none.
std::unique_ptr<store::served_journal> open_named_journal(std::string_view command, std::optional<std::string> const& dir,
                                                          std::optional<std::string> const& config_file, bool must_exist);

}  // namespace airlock::service::cli
