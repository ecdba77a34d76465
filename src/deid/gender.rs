//! The gender cue a name surrogate keeps: "Mrs Ana Lee … she" should not become "Mr Omar
//! Chen … she".
//!
//! # Where the cue comes from
//! 1. The given name itself, when it is one of the common names below that are given to
//!    one gender far more often than the other. This comes first because it is the same in
//!    every note: with a subject, a patient's surrogate must not change between a note that
//!    says "she" and one that says nothing.
//! 2. Otherwise the text around the name: a title or a relation word just before it (`Mrs`,
//!    `Mr`, `son`, `wife`), or the first personal pronoun after it in the same sentence.
//!
//! The lists were written for phiguard from general knowledge (no third-party list copied),
//! across many origins, and are free to reuse (CC0). A name in neither list, with no cue in
//! the text, gets a surrogate from either pool.

/// Which pool a name surrogate is drawn from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Gender {
    /// No cue: either pool.
    #[default]
    Unknown,
    /// Female pool.
    Female,
    /// Male pool.
    Male,
}

/// Given names mostly given to girls and women.
const FEMALE: &[&str] = &[
    "abigail",
    "ada",
    "adaeze",
    "agnes",
    "aiko",
    "aisha",
    "aiyana",
    "alejandra",
    "alice",
    "alicia",
    "alison",
    "amanda",
    "amara",
    "amelia",
    "amina",
    "amy",
    "ana",
    "anastasia",
    "andrea",
    "angela",
    "anita",
    "ann",
    "anna",
    "anne",
    "annie",
    "ashley",
    "astrid",
    "aylin",
    "barbara",
    "beatriz",
    "betty",
    "bianca",
    "brenda",
    "bridget",
    "camila",
    "carmen",
    "carol",
    "caroline",
    "catherine",
    "charlotte",
    "chiara",
    "chloe",
    "christina",
    "claire",
    "clara",
    "daniela",
    "deborah",
    "deepika",
    "diana",
    "donna",
    "doris",
    "dorothy",
    "elena",
    "elif",
    "elizabeth",
    "ella",
    "ellen",
    "emily",
    "emma",
    "esther",
    "eva",
    "fatima",
    "fiona",
    "francesca",
    "freya",
    "gabriela",
    "grace",
    "hana",
    "hannah",
    "heather",
    "helen",
    "imani",
    "ines",
    "ingrid",
    "irene",
    "isabel",
    "isabella",
    "jane",
    "janet",
    "jennifer",
    "jessica",
    "joan",
    "josephine",
    "joyce",
    "judith",
    "julia",
    "julie",
    "karen",
    "katherine",
    "kathleen",
    "kelly",
    "kimberly",
    "laura",
    "lakshmi",
    "leila",
    "leilani",
    "linda",
    "lisa",
    "lucia",
    "lucy",
    "maria",
    "marie",
    "margaret",
    "martha",
    "mary",
    "mei",
    "melissa",
    "mia",
    "michelle",
    "mila",
    "nadia",
    "nancy",
    "natalia",
    "nicole",
    "nkechi",
    "noor",
    "olga",
    "olivia",
    "pamela",
    "patricia",
    "paula",
    "priya",
    "rachel",
    "rebecca",
    "rosa",
    "ruth",
    "samantha",
    "sandra",
    "sara",
    "sarah",
    "sharon",
    "sofia",
    "sophia",
    "sophie",
    "stephanie",
    "susan",
    "svetlana",
    "tatiana",
    "teresa",
    "valentina",
    "victoria",
    "wanjiru",
    "yasmin",
    "zainab",
    "zoe",
    "zoë",
];

/// Given names mostly given to boys and men.
const MALE: &[&str] = &[
    "aaron",
    "abdul",
    "adam",
    "ahmed",
    "alan",
    "albert",
    "alejandro",
    "alexander",
    "ali",
    "amir",
    "andrew",
    "anil",
    "anthony",
    "antonio",
    "arjun",
    "arthur",
    "benjamin",
    "bilal",
    "brian",
    "bruce",
    "carl",
    "carlos",
    "charles",
    "chinedu",
    "christopher",
    "daniel",
    "david",
    "dennis",
    "diego",
    "dmitri",
    "donald",
    "douglas",
    "edward",
    "emeka",
    "eric",
    "ethan",
    "farid",
    "francisco",
    "frank",
    "gabriel",
    "gary",
    "george",
    "giovanni",
    "gregory",
    "hans",
    "harold",
    "henry",
    "hiroshi",
    "hussein",
    "ibrahim",
    "ivan",
    "jack",
    "jacob",
    "jamal",
    "james",
    "jason",
    "javier",
    "jeffrey",
    "jerry",
    "john",
    "jorge",
    "jose",
    "joseph",
    "joshua",
    "juan",
    "justin",
    "kenji",
    "kenneth",
    "kevin",
    "kofi",
    "kwame",
    "larry",
    "lars",
    "liam",
    "louis",
    "luca",
    "luis",
    "marco",
    "mark",
    "mateo",
    "matthew",
    "michael",
    "miguel",
    "mohammed",
    "muhammad",
    "nathan",
    "nicholas",
    "oliver",
    "omar",
    "oscar",
    "patrick",
    "paul",
    "pedro",
    "peter",
    "rahul",
    "rajesh",
    "ralph",
    "raymond",
    "richard",
    "robert",
    "rohan",
    "ronald",
    "ryan",
    "samuel",
    "scott",
    "sergei",
    "stephen",
    "steven",
    "sven",
    "tariq",
    "thomas",
    "timothy",
    "tomasz",
    "vikram",
    "walter",
    "wei-jie",
    "william",
    "yusuf",
];

/// Titles and relation words that say the gender of the name after them.
const BEFORE_FEMALE: &[&str] = &[
    "mrs",
    "ms",
    "miss",
    "madam",
    "madame",
    "lady",
    "dame",
    "mother",
    "mom",
    "mum",
    "wife",
    "daughter",
    "sister",
    "aunt",
    "niece",
    "grandmother",
    "granddaughter",
    "girlfriend",
    "fiancee",
    "fiancée",
    "señora",
    "sra",
    "frau",
];
const BEFORE_MALE: &[&str] = &[
    "mr",
    "sir",
    "lord",
    "father",
    "dad",
    "husband",
    "son",
    "brother",
    "uncle",
    "nephew",
    "grandfather",
    "grandson",
    "boyfriend",
    "fiance",
    "fiancé",
    "señor",
    "sr",
    "herr",
];

const PRONOUN_FEMALE: &[&str] = &["she", "her", "hers", "herself"];
const PRONOUN_MALE: &[&str] = &["he", "him", "his", "himself"];

/// The gender the given name `first` is mostly given to, when the lists know it.
pub(crate) fn of_name(first: &str) -> Gender {
    let key = first
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    if FEMALE.contains(&key.as_str()) {
        Gender::Female
    } else if MALE.contains(&key.as_str()) {
        Gender::Male
    } else {
        Gender::Unknown
    }
}

fn words(text: &str) -> impl DoubleEndedIterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// The cue in the text around a name: `before` is the text up to it, `after` the text
/// after it. A title or relation word among the two words before it wins; otherwise the
/// first personal pronoun after it, up to the end of its sentence.
pub(crate) fn of_context(before: &str, after: &str) -> Gender {
    for w in words(before).rev().take(2) {
        if BEFORE_FEMALE.contains(&w.as_str()) {
            return Gender::Female;
        }
        if BEFORE_MALE.contains(&w.as_str()) {
            return Gender::Male;
        }
    }
    let sentence = after
        .find(['.', '!', '?', '\n', ';'])
        .map_or(after, |i| &after[..i]);
    for w in words(sentence) {
        if PRONOUN_FEMALE.contains(&w.as_str()) {
            return Gender::Female;
        }
        if PRONOUN_MALE.contains(&w.as_str()) {
            return Gender::Male;
        }
    }
    Gender::Unknown
}

/// The cue for a name whose first word is `first`: the name itself, else its context.
pub(crate) fn cue(first: &str, before: &str, after: &str) -> Gender {
    match of_name(first) {
        Gender::Unknown => of_context(before, after),
        known => known,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_itself_comes_first() {
        assert_eq!(cue("Maria", "Mr", "he said"), Gender::Female);
        assert_eq!(cue("Omar", "", ""), Gender::Male);
    }

    #[test]
    fn otherwise_a_title_or_relation_before_it() {
        assert_eq!(cue("Nkwenti", "Seen with Mrs. ", ""), Gender::Female);
        assert_eq!(cue("Tane", "her son ", " visited"), Gender::Male);
        assert_eq!(cue("Ngozi", "Dr ", ""), Gender::Unknown);
    }

    #[test]
    fn otherwise_the_first_pronoun_of_its_sentence() {
        assert_eq!(cue("Tane", "", " says she is better"), Gender::Female);
        assert_eq!(cue("Tane", "", " reviewed. He left"), Gender::Unknown);
        assert_eq!(cue("Tane", "", " and his wife"), Gender::Male);
    }

    #[test]
    fn the_lists_do_not_overlap() {
        for f in FEMALE {
            assert!(!MALE.contains(f), "{f} is in both lists");
        }
    }
}
