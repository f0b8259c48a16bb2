// "Did you mean ...?": the closest of a set of names to a mistyped one, for messages that name the
// problem and what to do (an unknown flag or command, a key file that is not there). Header-only.
#pragma once
#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tt {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two adjacent
// characters each cost 1, so the usual typos ("stpes", "trian", "--step") are one edit away.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size();
  const std::size_t m = b.size();
  // Three rows of the (n+1) x (m+1) table: the swap looks two rows back.
  std::vector<std::size_t> two(m + 1), one(m + 1), cur(m + 1);
  for (std::size_t j = 0; j <= m; ++j) one[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t sub = one[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({one[j] + 1, cur[j - 1] + 1, sub});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], two[j - 2] + 1);
    }
    std::swap(two, one);
    std::swap(one, cur);
  }
  return one[m];
}

// The candidate closest to `word`, if it is close enough to be what was meant: at most 2 edits, and
// fewer than half of the word's characters (so "x" suggests nothing). Ties go to the first candidate.
inline std::optional<std::string> closest_match(std::string_view word,
                                                const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_d = 0;
  for (const std::string& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d == 0) return c;
    if (!best || d < best_d) {
      best = c;
      best_d = d;
    }
  }
  const std::size_t core = std::min(word.size(), best ? best->size() : 0);
  if (!best || best_d > 2 || 2 * best_d >= core) return std::nullopt;
  return best;
}

}  // namespace tt
