//! The gender cue a name surrogate keeps: "Mrs Ana Lee … she" should not become "Mr Omar
//! Chen … she".
//!
//! # Where the cue comes from
//! 1. The given name itself, when it is one of the common names below, or in the census
//!    lists ([`crate::detect::census`]), that are given to one gender far more often than
//!    the other. This comes first because it is the same in every note: with a subject,
//!    a patient's surrogate must not change between a note that says "she" and one that
//!    says nothing.
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
    "agnieszka",
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
    "anahera",
    "anastasia",
    "andrea",
    "angela",
    "anita",
    "ann",
    "anna",
    "anne",
    "anneli",
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
    "chiamaka",
    "chiara",
    "chloe",
    "christina",
    "claire",
    "clara",
    "dalia",
    "daniela",
    "deborah",
    "deepika",
    "diana",
    "dilnoza",
    "donna",
    "doris",
    "dorothy",
    "efua",
    "elena",
    "elif",
    "elizabeth",
    "ella",
    "ellen",
    "emily",
    "emma",
    "esperanza",
    "esther",
    "eva",
    "farah",
    "fatima",
    "fiona",
    "folake",
    "francesca",
    "freya",
    "gabriela",
    "grace",
    "greta",
    "hana",
    "hannah",
    "heather",
    "helen",
    "hyun-jung",
    "ilse",
    "imani",
    "ines",
    "ingrid",
    "irene",
    "isabel",
    "isabela",
    "isabella",
    "jane",
    "janet",
    "jennifer",
    "jessica",
    "jia",
    "joan",
    "josephine",
    "joyce",
    "judith",
    "julia",
    "julie",
    "kalani",
    "kamala",
    "karen",
    "katarzyna",
    "katherine",
    "kathleen",
    "keiko",
    "kelly",
    "kimberly",
    "lakshmi",
    "larissa",
    "laura",
    "leila",
    "leilani",
    "liesel",
    "lin",
    "linda",
    "lisa",
    "lucia",
    "lucy",
    "lupita",
    "magdalena",
    "malia",
    "margaret",
    "maria",
    "mariam",
    "marie",
    "marisol",
    "martha",
    "mary",
    "mei",
    "melissa",
    "mia",
    "michelle",
    "mila",
    "mirela",
    "nadia",
    "nancy",
    "nasrin",
    "natalia",
    "ngozi",
    "nicole",
    "nilufar",
    "nkechi",
    "noor",
    "oksana",
    "olga",
    "olivia",
    "pamela",
    "paola",
    "parisa",
    "patricia",
    "paula",
    "pilar",
    "priya",
    "qing",
    "rachel",
    "rania",
    "ranjani",
    "rebecca",
    "rosa",
    "ruth",
    "saanvi",
    "sakura",
    "salma",
    "samantha",
    "samira",
    "sandra",
    "sara",
    "sarah",
    "seo-yeon",
    "sharon",
    "shirin",
    "sigrid",
    "siobhan",
    "sofia",
    "soledad",
    "sophia",
    "sophie",
    "stephanie",
    "sunita",
    "susan",
    "svetlana",
    "tamar",
    "tatiana",
    "teresa",
    "thandiwe",
    "valentina",
    "victoria",
    "wanjiru",
    "ximena",
    "yara",
    "yasmin",
    "zainab",
    "zehra",
    "zoe",
    "zofia",
    "zoë",
];

/// Given names mostly given to boys and men.
const MALE: &[&str] = &[
    "aaron",
    "abdul",
    "abebe",
    "adam",
    "adebayo",
    "ahmed",
    "alan",
    "albert",
    "alejandro",
    "alexander",
    "ali",
    "amir",
    "anders",
    "andrew",
    "andrzej",
    "anil",
    "anthony",
    "antonio",
    "arash",
    "arjun",
    "arthur",
    "bao",
    "benjamin",
    "bilal",
    "bongani",
    "brian",
    "bruce",
    "carl",
    "carlos",
    "charles",
    "chidi",
    "chinedu",
    "christopher",
    "cian",
    "daniel",
    "dariusz",
    "david",
    "dawit",
    "dennis",
    "diego",
    "dmitri",
    "donald",
    "douglas",
    "eduardo",
    "edward",
    "emeka",
    "emil",
    "eric",
    "esteban",
    "ethan",
    "farid",
    "femi",
    "florin",
    "francisco",
    "frank",
    "gabriel",
    "gary",
    "george",
    "giorgos",
    "giovanni",
    "goran",
    "gregory",
    "gustavo",
    "hans",
    "harold",
    "haruto",
    "hemi",
    "henrik",
    "henry",
    "hiroshi",
    "hussein",
    "ibrahim",
    "ivan",
    "jack",
    "jacob",
    "jakub",
    "jamal",
    "james",
    "jason",
    "javier",
    "jeffrey",
    "jerry",
    "jin-ho",
    "joaquin",
    "john",
    "jorge",
    "jose",
    "joseph",
    "joshua",
    "juan",
    "justin",
    "kaveh",
    "kemal",
    "kenji",
    "kenneth",
    "kevin",
    "khalid",
    "kiri",
    "kofi",
    "kwame",
    "larry",
    "lars",
    "liam",
    "lorenzo",
    "louis",
    "luca",
    "luis",
    "mahmoud",
    "malik",
    "marco",
    "marek",
    "mark",
    "mateo",
    "matteo",
    "matthew",
    "mehmet",
    "michael",
    "miguel",
    "minh",
    "mohammed",
    "muhammad",
    "mustafa",
    "nathan",
    "nicholas",
    "nikhil",
    "nikolai",
    "obinna",
    "oliver",
    "omar",
    "oscar",
    "oskar",
    "pablo",
    "paolo",
    "patrick",
    "paul",
    "pedro",
    "peter",
    "rafael",
    "rahul",
    "rajesh",
    "ralph",
    "rashid",
    "raymond",
    "richard",
    "rizwan",
    "robert",
    "rohan",
    "ronald",
    "ryan",
    "samuel",
    "santiago",
    "scott",
    "sergei",
    "seung-woo",
    "sipho",
    "stefan",
    "stephen",
    "steven",
    "sven",
    "takeshi",
    "tane",
    "tariq",
    "thabo",
    "thomas",
    "tiago",
    "timothy",
    "tomasz",
    "tunde",
    "vikram",
    "walter",
    "wei-jie",
    "william",
    "wiremu",
    "yusuf",
    "zoran",
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
    match listed(&key) {
        // `José`, `Zoë`, `Renée`: the lists spell names without accents, as the census does.
        Gender::Unknown => listed(&without_accents(&key)),
        known => known,
    }
}

/// `key` with its combining accents taken off (`josé` → `jose`).
fn without_accents(key: &str) -> String {
    use unicode_normalization::char::is_combining_mark;
    use unicode_normalization::UnicodeNormalization;
    key.nfd().filter(|c| !is_combining_mark(*c)).collect()
}

/// The gender of a lowercased given name as the lists have it.
fn listed(key: &str) -> Gender {
    if FEMALE.contains(&key) {
        Gender::Female
    } else if MALE.contains(&key) {
        Gender::Male
    } else if crate::detect::census::is_female(key) {
        Gender::Female
    } else if crate::detect::census::is_male(key) {
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
        // Accented spellings of listed names (José drew female surrogates 2 runs in 6).
        assert_eq!(of_name("José"), Gender::Male);
        assert_eq!(of_name("JOSÉ"), Gender::Male);
        assert_eq!(of_name("Zoë"), Gender::Female);
    }

    #[test]
    fn otherwise_a_title_or_relation_before_it() {
        assert_eq!(cue("Nkwenti", "Seen with Mrs. ", ""), Gender::Female);
        assert_eq!(cue("Ngaio", "her son ", " visited"), Gender::Male);
        assert_eq!(cue("Ngaio", "Dr ", ""), Gender::Unknown);
    }

    #[test]
    fn otherwise_the_first_pronoun_of_its_sentence() {
        assert_eq!(cue("Ngaio", "", " says she is better"), Gender::Female);
        assert_eq!(cue("Ngaio", "", " reviewed. He left"), Gender::Unknown);
        assert_eq!(cue("Ngaio", "", " and his wife"), Gender::Male);
    }

    #[test]
    fn the_lists_do_not_overlap() {
        for f in FEMALE {
            assert!(!MALE.contains(f), "{f} is in both lists");
        }
    }
}
