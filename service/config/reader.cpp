#include "service/config/reader.hpp"

#include "core/ascii.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace airlock::service::config_detail {

namespace {

bool runnable(fs::path const& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

}  // namespace

std::string show_path(fs::path const& p) { return in_quotes(p.string()); }

file_text read_text_file(fs::path const& p, std::size_t max_bytes) {
    std::error_code ec;
    auto status = fs::status(p, ec);
    if (ec || !fs::exists(status)) return {std::nullopt, "file_missing", "does not exist"};
    if (fs::is_directory(status)) return {std::nullopt, "file_unreadable", "is a directory, not a file"};
    std::ifstream in(p, std::ios::binary);
    if (!in) return {std::nullopt, "file_unreadable", "cannot be read (" + std::string(std::strerror(errno)) + ")"};
    std::string text;
    char buf[8192];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        text.append(buf, static_cast<std::size_t>(in.gcount()));
        if (text.size() > max_bytes)
            return {std::nullopt, "file_too_large", "is larger than " + std::to_string(max_bytes) + " bytes"};
    }
    if (in.bad()) return {std::nullopt, "file_unreadable", "could not be read to the end"};
    return {std::move(text), "", ""};
}

// True when group or others may read the file: a secret there is not a secret for long.
bool readable_by_others(fs::path const& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && (st.st_mode & (S_IRGRP | S_IROTH | S_IWGRP | S_IWOTH)) != 0;
}

// The same search stdio_transport does at start, so `airlock check` can say so early.
bool found_executable(std::string const& argv0, std::string const& path_var) {
    if (argv0.find('/') != std::string::npos) return runnable(argv0);
    std::size_t start = 0;
    for (;;) {
        auto end = path_var.find(':', start);
        auto dir = path_var.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (runnable(fs::path(dir.empty() ? "." : dir) / argv0)) return true;
        if (end == std::string::npos) return false;
        start = end + 1;
    }
}

}  // namespace airlock::service::config_detail
