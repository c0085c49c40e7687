// Choices that shrink. This rapidcheck's gen::element, gen::elementOf, gen::weightedElement,
// gen::oneOf and gen::weightedOneOf pick without shrinking (Select.hpp returns
// shrinkable::just), so a counterexample keeps whatever branch it was generated with: a
// Thunderbolt table with its mapped GID at index 5 stays at 5. These pick the same way (by
// weight) but shrink toward the first alternative, which the generators list first because it
// is the usual, simplest case (mapped GID at 1, no pods, one address...).
#pragma once

#include <rapidcheck.h>

#include <cstddef>
#include <utility>
#include <vector>

namespace gidpolicy::test {

/// One of `choices` by weight; shrinks toward earlier entries.
template <class T>
rc::Gen<T> weighted_element(std::vector<std::pair<std::size_t, T>> choices) {
  return rc::Gen<T>([choices = std::move(choices)](const rc::Random& random, int) {
    std::size_t total = 0;
    for (const auto& c : choices) total += c.first;
    std::size_t pick = static_cast<std::size_t>(rc::Random(random).next() % (total == 0 ? 1 : total));
    std::size_t index = 0;
    while (index + 1 < choices.size() && pick >= choices[index].first) pick -= choices[index++].first;
    const auto values = choices;
    return rc::shrinkable::map(
        rc::shrinkable::shrinkRecur(index,
                                    [](std::size_t x) { return rc::shrink::towards<std::size_t>(x, 0); }),
        [values](std::size_t k) { return values[k].second; });
  });
}

/// One of `choices`, each as likely; shrinks toward earlier entries.
template <class T>
rc::Gen<T> element(std::vector<T> choices) {
  std::vector<std::pair<std::size_t, T>> weighted;
  for (auto& c : choices) weighted.emplace_back(1, std::move(c));
  return weighted_element(std::move(weighted));
}

/// A value from one of `gens` by weight; shrinks toward earlier generators, then within one.
template <class T>
rc::Gen<T> weighted_one_of(std::vector<std::pair<std::size_t, rc::Gen<T>>> gens) {
  return rc::gen::join(weighted_element(std::move(gens)));
}

}  // namespace gidpolicy::test
