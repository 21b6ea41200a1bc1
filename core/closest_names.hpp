#pragma once
// Near misses: which of the names on offer a mistyped name most likely meant.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::core {

// The edit distance of `a` and `b` (optimal string alignment Damerau-Levenshtein): insertions,
// deletions, substitutions and swaps of two neighbours each cost one.
std::size_t edit_distance(std::string_view a, std::string_view b);

// At most `limit` names from `offered`, closest first (ties in the order offered), that are
// reasonably close to `wanted`: a few edits for a long name, one for a short one. Case is ignored
// in the distance, so "Read_File" finds "read_file". Empty when nothing is close.
std::vector<std::string> closest_names(std::string_view wanted, std::vector<std::string> const& offered,
                                       std::size_t limit = 3);

}  // namespace airlock::core
