#include "core/closest_names.hpp"

#include <algorithm>
#include <utility>

namespace airlock::core {

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lowered(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = lower(c);
    return out;
}

// How many edits still read as the same name mistyped. A third of the name: "read_txt_file" (13)
// may be 4 edits from what was meant, "echo" only 1; beyond that the suggestion would be a guess
// about a different tool, which misleads more than it helps.
std::size_t tolerance(std::string_view wanted) { return std::clamp<std::size_t>(wanted.size() / 3, 1, 4); }

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
    // Three rows suffice: a swap looks two rows back.
    std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t const cost = a[i - 1] == b[j - 1] ? 0 : 1;
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                current[j] = std::min(current[j], before[j - 2] + 1);
        }
        std::swap(before, previous);
        std::swap(previous, current);
    }
    return previous[b.size()];
}

std::vector<std::string> closest_names(std::string_view wanted, std::vector<std::string> const& offered,
                                       std::size_t limit) {
    auto const folded = lowered(wanted);
    auto const most = tolerance(wanted);
    std::vector<std::pair<std::size_t, std::size_t>> near;  // distance, index in offered
    for (std::size_t i = 0; i < offered.size(); ++i) {
        if (offered[i] == wanted) continue;
        auto d = edit_distance(folded, lowered(offered[i]));
        if (d <= most) near.emplace_back(d, i);
    }
    std::stable_sort(near.begin(), near.end(), [](auto const& x, auto const& y) { return x.first < y.first; });
    std::vector<std::string> out;
    for (std::size_t k = 0; k < near.size() && k < limit; ++k) out.push_back(offered[near[k].second]);
    return out;
}

}  // namespace airlock::core
