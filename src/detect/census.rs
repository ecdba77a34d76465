//! Given and family names from the US Census Bureau's 1990 name frequency lists (a work of
//! the US government, public domain), most frequent first: surrogates drawn from
//! thousands of names rarely collide (`deid::surrogate`), a given name the hand-written
//! lists lack still has its gender cue (`deid::gender`), and a given name after a
//! surname and its comma is found (`Lee, Ann` in a table's row: [`super::sweep`]).
//!
//! A given name is in the list of a sex when the census counted it at least 20 times as
//! often for that sex as for the other (so `Mary` is a woman's name and `Jordan` in
//! neither). Family names are the 1,500 most frequent.

use std::collections::HashSet;
use std::sync::LazyLock;

const FEMALE: &str = include_str!("lists/census_female.txt");
const MALE: &str = include_str!("lists/census_male.txt");
const FAMILY: &str = include_str!("lists/census_family.txt");

/// Women's given names, most frequent first.
pub(crate) fn female() -> impl Iterator<Item = &'static str> {
    FEMALE.lines().filter(|l| !l.is_empty())
}

/// Men's given names, most frequent first.
pub(crate) fn male() -> impl Iterator<Item = &'static str> {
    MALE.lines().filter(|l| !l.is_empty())
}

/// Family names, most frequent first.
pub(crate) fn family() -> impl Iterator<Item = &'static str> {
    FAMILY.lines().filter(|l| !l.is_empty())
}

static FEMALE_SET: LazyLock<HashSet<String>> =
    LazyLock::new(|| female().map(str::to_lowercase).collect());
static MALE_SET: LazyLock<HashSet<String>> =
    LazyLock::new(|| male().map(str::to_lowercase).collect());

/// True when `lower` (a lower-case given name) is a woman's name in the census lists.
pub(crate) fn is_female(lower: &str) -> bool {
    FEMALE_SET.contains(lower)
}

/// True when `lower` (a lower-case given name) is a man's name in the census lists.
pub(crate) fn is_male(lower: &str) -> bool {
    MALE_SET.contains(lower)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lists_are_names_and_no_name_has_both_sexes() {
        assert!(female().count() > 3000 && male().count() > 1000 && family().count() == 1500);
        for n in female().chain(male()).chain(family()) {
            assert!(n.chars().all(char::is_alphabetic), "{n:?}");
        }
        assert!(female().all(|n| !is_male(&n.to_lowercase())));
        assert!(is_female("eleanor") && is_male("james") && !is_female("jordan"));
    }
}
