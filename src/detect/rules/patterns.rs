//! The rule table: one entry per pattern, grouped by Safe Harbor family.
//!
//! # Why each family looks the way it does
//!
//! - **Dates** (Safe Harbor (C)): every element of a date except the year is an identifier.
//!   Numeric dates need three fields (or month/four-digit year) so that vitals (`120/80`),
//!   fractions and scores (`3/5`) never match; the parser rejects month 13 and February 30.
//!   A year alone is left alone (Safe Harbor keeps years). Month names are English and
//!   French; other languages' month names are taken beside a day or a year (`3 de marzo de
//!   2020`, `15. März`, `marzo de 2020`), their numeric forms with all three (`1994년 3월
//!   15일`): a month's name next to a number leaves no doubt. Dates in native digits, and
//!   a day and a year around a word in a script after Cyrillic (`15 במרץ 2020`), are
//!   dates too.
//! - **Phone and fax** (D, E): NANP numbers must be written with separators or parentheses
//!   (a bare ten-digit run is an account number as often as a phone), except after a
//!   phone word. International numbers start with `+` and have 8–15 digits. "fax" in the
//!   left context relabels the number as a fax number. A number read out a digit at a time
//!   (`five five five, one two three four`) needs seven digits and must not count.
//! - **Email, URL, IP** (F, N, O): shapes are distinctive; IPv4 octets must be ≤ 255 and
//!   IPv6 candidates must parse, so clock times (`10:30:45`) never pass.
//! - **SSN** (G): dashed or spaced 3-2-4 groups that satisfy the SSA's issuance rules;
//!   bare nine digits only after an SSN word.
//! - **MRN, health plan, account, licence numbers** (H–K): the numbers themselves have no
//!   shape, so these need a context word; DEA numbers (check digit) and NPIs (Luhn with the
//!   `80840` prefix) are validated by checksum.
//! - **Vehicle and device identifiers** (L, M): VINs carry a check digit; plates, serial
//!   numbers and device ids need a context word; GS1 UDIs start with `(01)` and 14 digits.
//! - **Credit cards** (account numbers): 13–19 digits with an issuer prefix, Luhn-valid.
//! - **ZIP codes and street addresses** (B): a ZIP is five digits only after a state
//!   abbreviation or a ZIP word (five bare digits are usually a count or a lab value);
//!   addresses are a house number, one to three capitalised words and a street suffix,
//!   optionally a unit, city and state; PO boxes. Other languages' streets need their
//!   street word and a number (`Via Roma 12`, `Keizersgracht 123`, `улица Ленина, дом
//!   12`), their postal codes the postal word right before them (`PIN 411001`, `पिन कोड
//!   ૩૮૦૦૦૧` in any script's digits). Where a note has no street word the rules know (most
//!   scripts other than Latin, `東京都新宿区西新宿2丁目8番1号`), an address's field label
//!   (`Adresse`, `पता`, `住址`) and a number in what follows it are the evidence.
//! - **Ages over 89** (C): only ages of 90 and more are identifiers; the number must be
//!   tied to an age phrase (`92-year-old`, `age 95`, `96 yo`, `97 y/o`, `is 101M`).
//! - **Partial identifiers and short forms**: the last four digits of an SSN or a card
//!   (`SSN ending 4421`, `last 4 of SSN: 4421`, `xxx-xx-4421`, `Visa ending in 5512`), a
//!   month and day with no year (`Sep-08`), holidays (`Christmas Eve`), links without a
//!   scheme (`bit.ly/2ymcDjt`), an IPv4 address with its port, short pager numbers, group
//!   and unit numbers: each needs the words that say what it is.

use regex::Regex;

use super::checks;
use super::{Context, Pattern};
use crate::detect::Label;

/// The French months' full names, with or without their accents: `dates::FRENCH_MONTHS` as
/// a regex (a test there holds the two to the same words). A macro so that [`MONTH`] can
/// be one literal that contains it.
macro_rules! fr_month {
    () => {
        r"(?:janvier|f[ée]vrier|mars|avril|mai|juin|juillet|ao[ûu]t|septembre|octobre|novembre|d[ée]cembre)"
    };
}

/// Month names and abbreviations, English and French, with an optional full stop.
pub(super) const MONTH: &str = concat!(
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|",
    fr_month!(),
    r")\.?"
);

/// The French months' full names (in [`MONTH`] too).
pub(super) const FR_MONTH: &str = fr_month!();

/// Month names of other languages written in Latin or Cyrillic letters, in the form a date
/// with a day takes: Spanish, Portuguese, Italian, German, Dutch, Polish and Russian
/// (genitive), Romanian; `dates::OTHER_MONTHS` as a regex, without the names English and
/// French share (a test there holds the two together). Only used beside a day or a year,
/// where no other word fits.
pub(super) const OTHER_MONTH: &str = concat!(
    r"(?:enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|setiembre|octubre|noviembre|diciembre|",
    r"janeiro|fevereiro|março|maio|junho|julho|setembro|outubro|novembro|dezembro|",
    r"gennaio|febbraio|aprile|maggio|giugno|luglio|settembre|ottobre|dicembre|",
    r"januar|jänner|februar|märz|mai|juni|juli|august|oktober|dezember|",
    r"januari|februari|maart|mei|augustus|",
    r"stycznia|lutego|marca|kwietnia|maja|czerwca|lipca|sierpnia|wrze[sś]nia|pa[zź]dziernika|listopada|grudnia|",
    r"ianuarie|februarie|martie|aprilie|iunie|iulie|septembrie|octombrie|noiembrie|decembrie|",
    r"января|февраля|марта|апреля|мая|июня|июля|августа|сентября|октября|ноября|декабря|",
    r"ιανουαρίου|φεβρουαρίου|μαρτίου|απριλίου|μαΐου|ιουνίου|ιουλίου|αυγούστου|σεπτεμβρίου|οκτωβρίου|νοεμβρίου|δεκεμβρίου)"
);

/// A digit spelled out, as a number is read aloud (`oh` for zero).
const SPELLED_DIGIT: &str = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)";

/// Hungarian month names (a Hungarian date runs year, month, day: `1985. május 5.`).
pub(super) const HU_MONTH: &str = r"(?:január|február|március|április|május|június|július|augusztus|szeptember|október|november|december)";

/// Words before a dotted number that make it a version, not a date (`version 2.1.24`).
const VERSION_WORDS: &[&str] = &[
    "version", "ver.", "release", "firmware", "software", "build", "rev.", "revision",
];

/// An identifier token that follows a context word.
const ID_TOKEN: &str = r"\b[A-Za-z]{0,3}\d[A-Za-z0-9-]{3,24}\b";

const PHONE_WORDS: &[&str] = &[
    "phone",
    "tel",
    "tel.",
    "telephone",
    "cell",
    "mobile",
    "call",
    "fax",
    "pager",
    "contact",
    "ph:",
    "ph.",
    "ph #",
    "home",
    "work",
];
const FAX_WORDS: &[&str] = &["fax", "facsimile"];
const SSN_WORDS: &[&str] = &[
    "ssn",
    "ss#",
    "ss #",
    "social security",
    "soc sec",
    "soc. sec.",
];
const MRN_WORDS: &[&str] = &[
    "mrn",
    "mr#",
    "mr #",
    "mr no",
    "medical record",
    "med rec",
    "chart",
    "chart #",
    "chart no",
    "record #",
    "record no",
    "hospital number",
    "hospital #",
    "patient id",
    "pt id",
    "unit no",
    "unit number",
    "unit #",
];
const PLAN_WORDS: &[&str] = &[
    "member id",
    "member #",
    "member number",
    "member no",
    "policy",
    "subscriber",
    "insurance id",
    "insurance #",
    "insurance number",
    "insurance no",
    "medicare",
    "medicaid",
    "health plan",
    "group number",
    "group #",
    "group no",
    "group id",
    "grp #",
    "grp no",
    "plan id",
    "beneficiary",
    "mbi",
];
const ACCOUNT_WORDS: &[&str] = &["account", "acct", "acct.", "a/c", "billing", "invoice"];
const LICENSE_WORDS: &[&str] = &[
    "license",
    "licence",
    "lic #",
    "lic no",
    "lic.",
    "dl#",
    "dl #",
    "dl no",
    "driver's license",
    "drivers license",
    "driver license",
    "driver's licence",
    "certificate",
    "cert #",
    "board certification",
];
const NPI_WORDS: &[&str] = &["npi", "national provider"];
const PLATE_WORDS: &[&str] = &[
    "plate",
    "plates",
    "tag",
    "tag number",
    "tag #",
    "registration",
];
const DEVICE_WORDS: &[&str] = &[
    "serial",
    "serial number",
    "serial no",
    "s/n",
    "sn",
    "sn:",
    "device id",
    "device",
    "udi",
    "implant",
    "pacemaker",
    "lot",
    "model number",
    "imei",
];
/// What names a social security number in the last-four rules.
const SSN_WORD: &str = r"(?:ssn|social security(?: number| no\.?| #)?|ss#|soc\.? sec\.?)";
/// What says the digits are the last four.
const LAST4: &str =
    r"(?:ending(?: in| with)?|ends in|last (?:4|four)(?: digits)?(?: (?:is|are|of))?)";
/// Holidays, capitalised as written; `’` and `'` both. A clinical head noun after one is
/// read too, so that the check can refuse `Christmas disease` (haemophilia B).
const HOLIDAY: &str = r"\b(?:Easter(?: Sunday| Monday)?|Thanksgiving(?: Day)?|Christmas(?: Eve| Day)?|New Year['’]?s(?: Eve| Day)|Independence Day|Memorial Day|Labor Day|Labour Day|Veterans['’]? Day|Halloween|Valentine['’]?s Day|Mother['’]?s Day|Father['’]?s Day|Good Friday|Juneteenth|Martin Luther King(?: Jr\.?)? Day|MLK Day|Presidents['’]? Day|Columbus Day|Boxing Day|Yom Kippur|Rosh Hashanah|Hanukkah|Diwali|Lunar New Year)(?:\s+(?:disease|factor))?\b";
/// A host name with a common top-level domain and a path, no scheme (`bit.ly/2ymcDjt`,
/// `portal.example.org/visit/1`): the path is what makes it a link and not a word.
const URL_BARE: &str = r#"(?i)\b(?:[a-z0-9-]+\.)+(?:com|org|net|edu|gov|io|ly|co|us|info|health|me|gl|gd|cc|in|uk|ca|app)/[^\s<>"']*"#;
const ZIP_WORDS: &[&str] = &["zip", "zip code", "zipcode", "postal code", "postcode"];

/// Words for a postal code in other languages and forms (`PIN 411001`, `PLZ 10115`,
/// `индекс 190000`, `postal_code=560001`): a code of four to six digits right after one
/// (a `:`, `=` or `#` between) is one; further on, `pin removed 2019` is a year. Not `cap`
/// or `cp`, which are capsules and more as often.
const POSTAL_WORDS: &[&str] = &[
    "postal code",
    "postal_code",
    "postcode",
    "post code",
    "pin",
    "pin code",
    "pincode",
    "plz",
    "postleitzahl",
    "code postal",
    "código postal",
    "codigo postal",
    "postnummer",
    "postinumero",
    "kode pos",
    "posta kodu",
    "индекс",
    "почтовый индекс",
    "पिन",
    "पिन कोड",
    "ডাক কোড",
    "পোস্টকোড",
    "পিন",
    "ਪਿੰਨ",
    "ಪಿನ್",
    "அஞ்சல்",
    "الرمز البريدي",
    "የፖስታ ኮድ",
    "郵便番号",
    "邮编",
    "우편번호",
    "પિન કોડ",
    "પિન",
    "پن کوڈ",
    "پِن کوڈ",
    "அஞ்சல் குறியீடு",
    "ପିନ୍",
    "പിൻ",
    "పిన్",
    "ਪਿੰਨ ਕੋਡ",
    "टपाल",
    "کد پستی",
    "מיקוד",
    "รหัสไปรษณีย์",
    "邮政编码",
    "郵遞區號",
    "kod pocztowy",
    "cod poștal",
    "cod postal",
    "irányítószám",
    "poskode",
    "mã bưu chính",
    "koodu nzipu ozi",
    "kóòdù ìfìwéránṣẹ́",
    "ταχυδρομικός κώδικας",
    "пощенски код",
    "поштански број",
    "поштовий індекс",
];
/// The start of a word that may begin with a letter outside ASCII: the start of the text
/// or a character that is no letter, mark, digit or `_`, consumed (a rule using it puts
/// what it finds in a group). `\b` is rewritten to ASCII in [`all`], and an ASCII `\b`
/// before `Å` or `Ş` never holds.
const WORD_START: &str = r"(?:^|[^\p{L}\p{M}\p{N}_])";
/// One character of the gap between a field label and its value: a blank, or one of the
/// invisible isolates (U+2066 to U+2069) and marks that right-to-left text puts around
/// numbers (`پن کوڈ`, an isolate, `٥٠٠٠٠١`).
const GAP_CHAR: &str = r"[ \t\x{2066}-\x{2069}\x{200E}\x{200F}]";
/// What ends a labelled address's value: a field's or a sentence's end in any script
/// (`;`, `|`, a line end, the danda, the Urdu and Ethiopic full stops, the Arabic
/// semicolon), as the inside of a regex class.
const STOP_CHARS: &str = r";。।॥|\n۔።؛!?";
/// An address's field label in languages that put a space after it (`Adresse`, `địa
/// chỉ`, `पत्ता`, `முகவரி`, `ที่อยู่`), English left out (see [`labelled_address`]). Words
/// with another common sense (`domicilio`'s home visits, `عنوان`'s titles) are left out,
/// and Swedish `adress`, English's commonest misspelling (`will adress 3 issues`).
const ADDRESS_WORDS: &[&str] = &[
    "adres",
    "woonadres",
    "adresse",
    "anschrift",
    "wohnadresse",
    "dirección",
    "direccion",
    "indirizzo",
    "morada",
    "endereço",
    "endereco",
    "adresă",
    "adresa",
    "lakcím",
    "osoite",
    "adreesị",
    "àdírẹ́sì",
    "anwani",
    "ikheli",
    "idilesi",
    "alamat",
    "địa chỉ",
    "địa chỉ thường trú",
    "адрес",
    "адреса",
    "διεύθυνση",
    "نشانی",
    "آدرس",
    "כתובת",
    "पत्ता",
    "ঠিকানা",
    "ঠিকনা",
    "ଠିକଣା",
    "સરનામું",
    "முகவரி",
    "చిరునామా",
    "ವಿಳಾಸ",
    "വിലാസം",
    "ที่อยู่",
    "አድራሻ",
];
/// Address labels that are also everyday words: the word for knowing (Hindi and Punjabi
/// `pata`, Urdu `patah`: `पता चला कि 3 दिन से`, "found out that for 3 days"), and home or
/// residence (Bengali `basa`, Urdu `rihaish`: `বাসা থেকে 3 কিমি`, "3 km from home"). Their
/// value needs a number in its first two words (`पता 44 कमल मार्ग`, `پتہ سڑک ٢٤ حیدرآباد`,
/// `বাসা ৭ শান্তি নগর`, `رہائش مکان ۳۴ سری نگر`).
const ADDRESS_WORDS_ALSO_KNOWING: &[&str] = &["पता", "ਪਤਾ", "پتہ", "বাসা", "رہائش"];
/// An address's field label in the scripts that write none after it (`住址北京市…`).
const ADDRESS_WORDS_UNSPACED: &[&str] = &["住所", "住址", "地址", "주소는", "주소"];

/// An address after its field label (`words`, and with `unspaced` the CJK labels): the
/// value runs to the end of its sentence or field (`;`, `|`, a line end, a full stop of
/// any script, a `.` then a blank) or to the postcode's label or digits after a comma,
/// whichever comes first; `checks::address_value` then asks for a number in it. Street
/// suffixes differ in every language and are missing in many scripts' notes (`አዲስ አበባ
/// ቦሌ 12`, `東京都新宿区西新宿2丁目8番1号`), so the label is the evidence. (The end of a
/// value takes the blank after its `.`, so a label right after that sentence is not read:
/// the regex crate has no look-ahead, and a Unicode `\b` would cost every note with an
/// accent the fast engine, see [`all`].)
fn labelled_address(words: &[&str], unspaced: &[&str]) -> String {
    let unspaced = if unspaced.is_empty() {
        String::new()
    } else {
        format!(r"|(?:{}){GAP_CHAR}*[:：]?{GAP_CHAR}*", unspaced.join("|"))
    };
    format!(
        r"(?i){WORD_START}(?:(?:{words}){GAP_CHAR}*[:：፡=]{GAP_CHAR}*|(?:{words}){GAP_CHAR}+{unspaced})([^{STOP_CHARS}]+?)(?:(?:[ \t]*[,،][ \t]*|[ \t]+)(?:{postal})(?:[^\p{{L}}\p{{M}}]|$)|[ \t]*[,،][ \t]*\d|[{STOP_CHARS}]|\.(?:\s|$)|$)",
        words = words.join("|"),
        postal = POSTAL_WORDS.join("|"),
    )
}
/// What says a number with `F` after it is a temperature (or a catheter's French size),
/// not an age and a sex.
const TEMPERATURE_WORDS: &[&str] = &[
    "t",
    "temp",
    "temp.",
    "tmax",
    "t max",
    "tcurrent",
    "temperature",
    "fever",
    "febrile",
    "afebrile",
    "pyrexia",
    "spiked",
    "degrees",
    "deg",
    "°",
    "foley",
    "fr",
    "french",
    "catheter",
    "sheath",
    "tube",
    "oral",
    "rectal",
    "axillary",
    "tympanic",
];

/// Words before a pair of decimals that make them coordinates.
const GPS_WORDS: &[&str] = &[
    "lat",
    "latitude",
    "long",
    "longitude",
    "lat/long",
    "lat/lon",
    "gps",
    "coordinates",
    "coords",
    "geolocation",
];

struct Spec {
    name: &'static str,
    re: String,
    group: usize,
    label: Label,
    score: f32,
    context: Context,
    relabel: Option<(&'static [&'static str], Label)>,
    check: fn(&str) -> Option<&str>,
    full_check: fn(&str) -> bool,
    /// An item's pattern and the function that reads the list (see [`super::Listed`]).
    listed: Option<(&'static str, super::ListedItems)>,
}

fn spec(
    name: &'static str,
    re: &str,
    label: Label,
    score: f32,
    check: fn(&str) -> Option<&str>,
) -> Spec {
    Spec {
        name,
        re: re.to_owned(),
        group: 0,
        label,
        score,
        context: Context::None,
        relabel: None,
        check,
        full_check: |_| true,
        listed: None,
    }
}

impl Spec {
    fn group(mut self, g: usize) -> Spec {
        self.group = g;
        self
    }
    fn needs(mut self, words: &'static [&'static str]) -> Spec {
        self.context = Context::Required(words);
        self
    }
    fn unless(mut self, words: &'static [&'static str]) -> Spec {
        self.context = Context::Forbidden(words);
        self
    }
    fn whole(mut self, check: fn(&str) -> bool) -> Spec {
        self.full_check = check;
        self
    }
    fn relabel(mut self, words: &'static [&'static str], label: Label) -> Spec {
        self.relabel = Some((words, label));
        self
    }
    fn listed(mut self, item: &'static str, items: super::ListedItems) -> Spec {
        self.listed = Some((item, items));
        self
    }
}

fn specs() -> Vec<Spec> {
    let m = MONTH;
    let ext = r"(?:\s*(?:x|ext\.?|extension)\s*\d{1,6}\b)?";
    vec![
        // --- dates
        spec("date_slash", r"\b\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})\b", Label::Date, 0.9, checks::date),
        spec("date_dash", r"\b\d{1,2}-\d{1,2}-(?:\d{4}|\d{2})\b", Label::Date, 0.9, checks::date),
        spec("date_dot", r"\b(?:\d{1,2}\.\d{1,2}\.\d{4}|\d{2}\.\d{2}\.\d{2})\b", Label::Date, 0.85, checks::date),
        // A one-digit day or month with a two-digit year (`3.5.24`), not inside a longer
        // dotted number (`1.3.5.24`, `v2.1.24`) nor before a decimal (`3.5.24.1`).
        spec("date_dot_short", r"(?:^|[^\w.])(\d{1,2}\.\d{1,2}\.\d{2})(?:[^\w.]|\.(?:\s|$)|$)", Label::Date, 0.8, checks::date)
            .group(1)
            .unless(VERSION_WORDS),
        spec("date_iso", r"\b(\d{4}-\d{1,2}-\d{1,2})(?:\b|T)", Label::Date, 0.9, checks::date).group(1),
        spec("date_iso_slash", r"\b\d{4}/\d{1,2}/\d{1,2}\b", Label::Date, 0.9, checks::date),
        spec("date_month_day_year", &format!(r"(?i)\b{m}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b"), Label::Date, 0.9, checks::date),
        spec("date_day_month_year", &format!(r"(?i)\b\d{{1,2}}(?:st|nd|rd|th|er|ᵉʳ)?\s+(?:of\s+)?{m},?\s+\d{{4}}\b"), Label::Date, 0.9, checks::date),
        // French: a two-digit year (`15 mars 24`), or none (`le 5 mars`, `2 avril`): the
        // month's full name says it is a date.
        spec("date_fr_day_month_yy", &format!(r"(?i)\b\d{{1,2}}(?:er|ᵉʳ)?\s+{FR_MONTH}\s+\d{{2}}\b"), Label::Date, 0.85, checks::date),
        spec("date_fr_day_month", &format!(r"(?i)\b\d{{1,2}}(?:er|ᵉʳ)?\s+{FR_MONTH}\b"), Label::Date, 0.8, checks::day_month),
        // The first day of a range before its month (`du 1er au 15 mars`, `from 2nd to 9th
        // May`, `between 1 and 15 March`): the month the second day names is the first's.
        spec("date_day_range", &format!(r"(?i)\b(?:du|from|between)[ \t]+(\d{{1,2}}(?:st|nd|rd|th|er|ᵉʳ)?)[ \t]*(?:au|to|and|until|till|-|–)[ \t]*\d{{1,2}}(?:st|nd|rd|th|er|ᵉʳ)?[ \t]+(?:of[ \t]+)?{m}\b"), Label::Date, 0.8, checks::day_of_month)
            .group(1)
            .whole(checks::not_the_verb_may),
        spec("date_day_mon_year_dash", &format!(r"(?i)\b\d{{1,2}}-{m}-(?:\d{{4}}|\d{{2}})\b"), Label::Date, 0.9, checks::date),
        spec("date_month_year", &format!(r"(?i)\b{m},?\s+\d{{4}}\b"), Label::Date, 0.75, checks::date),
        // Dates of other languages, each with its day and its year (`3 de marzo de 2020`,
        // `4. Mai 2019`, `5 марта 2020`, `1985. május 5.`, `1994년 3월 15일`, `ngày 8 tháng 12
        // năm 1970`). Shifting moves them in their language (`dates::OTHER_MONTHS`, and the
        // unit words of `dates::unit_word`).
        spec("date_day_month_year_other", &format!(r"(?i)\b\d{{1,2}}\.?[ \t]+(?:de[ \t]+)?{OTHER_MONTH}(?:[ \t]+de)?,?[ \t]+\d{{4}}\b(?:[ \t]?г\.)?"), Label::Date, 0.85, checks::day_month_year_numbers),
        // Without their year or day (`3 de marzo`, `15. März`; `marzo de 2020`, `März 2020`):
        // a month and a day, or a month and a year, are elements of a date all the same.
        // The month's edge is no letter rather than `\b`, which is ASCII here and so never
        // stands beside a Cyrillic month.
        spec("date_day_month_other", &format!(r"(?i)\b(\d{{1,2}}\.?[ \t]+(?:de[ \t]+)?{OTHER_MONTH})(?:[^\p{{L}}]|$)"), Label::Date, 0.8, checks::day_and_other_month)
            .group(1),
        spec("date_month_year_other", &format!(r"(?i)(?:^|[^\p{{L}}\d])({OTHER_MONTH}(?:[ \t]+de)?,?[ \t]+\d{{4}})\b"), Label::Date, 0.8, checks::year_alone)
            .group(1),
        spec("date_hu", &format!(r"(?i)\b\d{{4}}\.[ \t]*{HU_MONTH}[ \t]+\d{{1,2}}\.?"), Label::Date, 0.85, checks::day_month_year_numbers),
        spec("date_cjk", r"\b\d{4}[ \t]*[년年][ \t]*\d{1,2}[ \t]*[월月][ \t]*\d{1,2}[ \t]*[일日]", Label::Date, 0.85, checks::day_month_year_numbers),
        spec("date_vi", r"(?i)(?:\bngày[ \t]+)?\b\d{1,2}[ \t]+tháng[ \t]+\d{1,2}[ \t]+năm[ \t]+\d{4}\b", Label::Date, 0.85, checks::day_month_year_numbers),
        // Dates in other scripts: in native digits (`১৪/০১/২০২৬`, `१२ ऑक्टोबर १९७९`), or a
        // month's name in a script after Latin, Greek, Cyrillic and Armenian between a day
        // and a year (`15 במרץ 2020`, `15 مارس 2020`, `14 जनवरी 2026`). Shifting moves the
        // numeric ones in their digits (`dates::ascii_digits`); it cannot read those month
        // names, so it masks those dates.
        spec("date_native_numeric", r"(?:^|[^\p{Nd}/.\-])(\p{Nd}{1,2}[/.\-]\p{Nd}{1,2}[/.\-]\p{Nd}{2,4})(?:[^\p{Nd}/.\-]|$)", Label::Date, 0.85, checks::native_date)
            .group(1),
        spec("date_native_words", r"(?:^|[^\p{L}\p{M}\p{Nd}])(\p{Nd}{1,2}[ \t]+[\p{L}\p{M}\u{200C}\u{200D}&&[^\x00-\u{058F}]]+[ \t]+\p{Nd}{4})(?:[^\p{L}\p{M}\p{Nd}]|$)", Label::Date, 0.8, checks::native_day_word_year)
            .group(1),
        // In Ethiopic numerals, which are no decimal digits (`፲፬/፭/፲፱፻፹፰`, 14/5/1988 in the
        // Ethiopian calendar): masked, as shifting cannot read them.
        spec("date_ethiopic", r"(?:^|[^\p{L}\p{M}\p{N}])([\x{1369}-\x{137C}]{1,3}/[\x{1369}-\x{137C}]{1,3}/[\x{1369}-\x{137C}]{2,6})(?:[^\p{L}\p{M}\p{N}]|$)", Label::Date, 0.85, checks::ethiopic_date)
            .group(1),
        spec("date_num_month_year", r"\b\d{1,2}/\d{4}\b", Label::Date, 0.7, checks::date),
        // A month and a day with no year (`Sep-08`); a month name leaves no doubt.
        spec("date_mon_day_dash", &format!(r"(?i)\b{m}-(\d{{1,2}})\b"), Label::Date, 0.8, checks::any)
            .whole(checks::day_after_dash),
        // A month and a day with a time of day (`11/21 @ 1015`, `2/13 at 18:30`): the time
        // says it is a date, not a ratio or a score.
        spec("date_md_at_time", r"(?i)\b(\d{1,2}/\d{1,2})\s*(?:@|at)\s*(?:[01]\d|2[0-3]):?[0-5]\d\b", Label::Date, 0.85, checks::any)
            .whole(checks::month_day),
        // A month and a day with no year after a word that says it is a day (`seen 3/4`,
        // `Thu 3/4`, `f/u 6/14`, `from 3/2`), unless a unit or a dose follows (`on 1/2
        // NS`, `from 3/4 strength`): a ratio or a dose takes no such word. The cue covers
        // a list that follows (`seen 3/4 and 12/25`).
        spec("date_md_cue", r"(?i)\b(?:seen|on|from|since|until|till|f/u|follow[- ]?up|scheduled(?:[ \t]+for)?|dated|visit|visited|admitted|discharged|due|(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day)?,?)[ \t]+(\d{1,2}/\d{1,2})(?:/\d+)?\b(?:[ \t]+([A-Za-z%]+))?", Label::Date, 0.8, checks::any)
            .group(1)
            .whole(checks::cued_month_day)
            .listed(super::dates::LISTED_MONTH_DAY, super::dates::listed_month_days),
        // A year alone after a birth cue (`DOB 1928`, `born in 1931`): a birth year.
        spec("dob_year", r"(?i)\b(?:dob|d\.o\.b\.?|date[ \t]+of[ \t]+birth|born(?:[ \t]+in)?(?:[ \t]+(?:the[ \t]+)?(?:spring|summer|autumn|fall|winter|early|late|mid|middle)(?:[ \t]+of)?)?|birth[ \t]*year|yob)[ \t]*[:#]?[ \t]*((?:18|19|20)\d{2})\b", Label::DateOfBirth, 0.85, checks::any).group(1),
        // A month and a two-digit year after an apostrophe (`Jan '19`, `Oct. ’20`).
        spec("date_mon_yy", &format!(r"(?i)\b{m}\.?[ \t]*['’]\d{{2}}\b"), Label::Date, 0.85, checks::any),
        // A weekday and the day of its month (`Sunday the 7th`).
        spec("date_weekday_ordinal", r"(?i)\b(?:mon|tues|wednes|thurs|fri|satur|sun)day[ \t]+the[ \t]+(?:3[01]|[12]\d|[1-9])(?:st|nd|rd|th)\b", Label::Date, 0.85, checks::any),
        // Holidays name a day of a year as surely as a date does.
        spec("date_holiday", HOLIDAY, Label::Date, 0.8, checks::holiday),
        // --- phone / fax
        spec("phone_nanp", &format!(r"(?i)(?:\+1[\s.-]?|\b1[\s.-])?(?:\(\d{{3}}\)\s?|\b\d{{3}}[\s.-])\d{{3}}[\s.-]\d{{4}}\b{ext}"), Label::Phone, 0.85, checks::any)
            .relabel(FAX_WORDS, Label::Fax),
        spec("phone_intl", &format!(r"(?i)\+\d{{1,3}}(?:[\s.-]?\(?\d{{2,5}}\)?){{1,5}}\b{ext}"), Label::Phone, 0.85, checks::intl_phone)
            .relabel(FAX_WORDS, Label::Fax),
        // A Russian number dialled with the trunk 8 (`8 (495) 123-45-67`): its area code in
        // brackets and its last seven digits grouped 3-2-2.
        spec("phone_ru_trunk", r"\b8[ \t-]?\(\d{3,5}\)[ \t-]?\d{1,3}-\d{2}-\d{2}\b", Label::Phone, 0.85, checks::any)
            .relabel(FAX_WORDS, Label::Fax),
        // A number spelled out a digit at a time (`five five five, one two three four`), from
        // seven digits: no dose or score is read so, and counting (`one two three …`) is not.
        spec("phone_spelled", &format!(r"(?i)\b{SPELLED_DIGIT}(?:[ \t]*[,.-]?[ \t]+{SPELLED_DIGIT}){{6,14}}\b"), Label::Phone, 0.75, checks::spelled_number),
        spec("pager_short", r"(?i)\b(?:pager|beeper|pgr)\s*(?:#|no\.?|number)?\s*:?\s*(\d{4,7})\b", Label::Phone, 0.8, checks::any).group(1),
        // An extension or a pager number in a hospital's short forms (`ext. 22815`,
        // `x5567`, `pager 4-2231`, `extension 4-5567`); `x` only glued to its digits, since
        // `x 1000` is a count.
        spec("phone_ext", r"(?i)\b(?:(?:ext\.?|extension|pager|beeper|pgr)[ \t]*(?:#|no\.?|number)?[ \t]*:?[ \t]*|x)(\d{1,2}-\d{4}|\d{4,6})\b", Label::Phone, 0.8, checks::any).group(1),
        spec("phone_bare_ctx", r"\b\d{10}\b", Label::Phone, 0.7, checks::any)
            .needs(PHONE_WORDS)
            .relabel(FAX_WORDS, Label::Fax),
        // --- email, url, ip
        spec("email", r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b", Label::Email, 0.95, checks::any),
        spec("url", r#"(?i)\b(?:https?://|www\.)[^\s<>"']+"#, Label::Url, 0.9, checks::url),
        spec("url_bare", URL_BARE, Label::Url, 0.85, checks::url),
        spec("ipv4", r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b", Label::IpAddress, 0.85, checks::ipv4_port),
        spec("ipv6", r"(?i)(?:^|[^0-9a-z:])((?:[0-9a-f]{0,4}:){2,7}[0-9a-f]{0,4})(?:$|[^0-9a-z:])", Label::IpAddress, 0.85, checks::ipv6)
            .group(1),
        // The machine-readable zone of a passport or an identity card (ICAO 9303: three
        // lines of 30, two of 36 or two of 44), scanned into a note: the holder's name,
        // birth date and document number in one block. The document number's check digit
        // must hold.
        spec("mrz", r"(?mR)^(?:[A-Z0-9<]{30}\r?\n[A-Z0-9<]{30}\r?\n[A-Z0-9<]{30}|[A-Z0-9<]{36}\r?\n[A-Z0-9<]{36}|[A-Z0-9<]{44}\r?\n[A-Z0-9<]{44})$", Label::IdNum, 0.95, checks::mrz),
        // National numbers with a check digit: a Russian SNILS (`945-180-612 14`) and an
        // Indian PAN (`AFZPK7190K`, the fourth letter the holder's kind).
        spec("snils", r"\b\d{3}-\d{3}-\d{3}[ -]\d{2}\b", Label::IdNum, 0.9, checks::snils),
        // A French social security number (NIR: sex, year, month, department, commune,
        // order, key), spaced as the carte Vitale prints it or not.
        spec("nir_fr", r"\b[1-478] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}\b", Label::IdNum, 0.9, checks::nir),
        spec("pan_in", r"\b[A-Z]{3}[PCHFATBLJG][A-Z]\d{4}[A-Z]\b", Label::IdNum, 0.85, checks::any),
        // After its label a PAN's shape is enough (a test or mistyped one, `PAN=ABCDE1234F`).
        spec("pan_in_labelled", r"\b(?i:pan)(?:[ \t]*(?i:no\.?|number))?[ \t]*[:=#][ \t]*([A-Z]{5}[0-9]{4}[A-Z])\b", Label::IdNum, 0.85, checks::any).group(1),
        // --- ssn
        spec("ssn_dashed", r"\b\d{3}-\d{2}-\d{4}\b", Label::Ssn, 0.95, checks::ssn),
        spec("ssn_spaced", r"\b\d{3} \d{2} \d{4}\b", Label::Ssn, 0.8, checks::ssn),
        spec("ssn_bare_ctx", r"\b\d{9}\b", Label::Ssn, 0.9, checks::bare_ssn).needs(SSN_WORDS),
        // The last four digits (`SSN ending 4421`, `last 4 of SSN: 4421`, `xxx-xx-4421`):
        // a partial identifier, and with a name or a birth date often enough.
        spec("ssn_last4", &format!(r"(?i)\b{SSN_WORD}[^\n\d]{{0,12}}?\b{LAST4}\s*[:#]?\s*(\d{{4}})\b"), Label::Ssn, 0.9, checks::any).group(1),
        spec("ssn_last4_of", &format!(r"(?i)\blast (?:4|four)(?: digits)? of (?:the |his |her |their |pt'?s |patient'?s )?{SSN_WORD}\s*(?:is|are|:|#|=|-)?\s*(\d{{4}})\b"), Label::Ssn, 0.9, checks::any).group(1),
        spec("ssn_masked", r"(?i)(?:\bx{3}|\*{3}|#{3})[- ]?(?:x{2}|\*{2}|#{2})[- ]?\d{4}\b", Label::Ssn, 0.9, checks::any),
        // --- record, plan, account, licence numbers (context)
        spec("mrn_ctx", ID_TOKEN, Label::MedicalRecordNumber, 0.8, checks::id_token).needs(MRN_WORDS),
        spec("health_plan_ctx", ID_TOKEN, Label::HealthPlanNumber, 0.8, checks::id_token).needs(PLAN_WORDS),
        spec("account_ctx", ID_TOKEN, Label::AccountNumber, 0.8, checks::id_token).needs(ACCOUNT_WORDS),
        spec("license_ctx", ID_TOKEN, Label::LicenseNumber, 0.75, checks::id_token).needs(LICENSE_WORDS),
        // A card's or an account's last four digits (`Visa ending in 5512`).
        spec("account_last4", &format!(r"(?i)\b(?:visa|master ?card|amex|american express|discover|credit card|debit card|card|account|acct\.?)[^\n\d]{{0,12}}?\b{LAST4}\s*[:#]?\s*(\d{{4}})\b"), Label::AccountNumber, 0.85, checks::any).group(1),
        spec("dea", r"\b[A-Za-z]{2}\d{7}\b", Label::LicenseNumber, 0.9, checks::dea),
        spec("npi_ctx", r"\b\d{10}\b", Label::LicenseNumber, 0.9, checks::npi).needs(NPI_WORDS),
        // --- vehicles and devices
        spec("vin", r"(?i)\b[A-HJ-NPR-Z0-9]{17}\b", Label::VehicleId, 0.9, checks::vin),
        // One space may split a plate (`HJK 4471`, `DOC 4U`): both halves are the plate.
        spec("plate_ctx", r"\b[A-Z0-9][A-Z0-9-]{0,6}(?: [A-Z0-9]{1,4})?[A-Z0-9]\b", Label::VehicleId, 0.85, checks::plate).needs(PLATE_WORDS),
        spec("device_ctx", r"\b[A-Za-z]{0,6}\d[A-Za-z0-9-]{3,30}\b", Label::DeviceId, 0.8, checks::id_token).needs(DEVICE_WORDS),
        // A MAC address written with colons (the dash form is a device id after its cue).
        spec("mac_colon", r"(?i)\b(?:[0-9a-f]{2}:){5}[0-9a-f]{2}\b", Label::DeviceId, 0.85, checks::any),
        // Coordinates: with their hemispheres (`40.7128 N, 74.0060 W`), or a pair of
        // decimals after a word that says they are coordinates (`Lat/long 42.3601, -71.0589`).
        spec("gps_hemispheres", r"\b\d{1,2}\.\d{2,}°?[ \t]*[NS],?[ \t]+\d{1,3}\.\d{2,}°?[ \t]*[EW]\b", Label::Location, 0.85, checks::any),
        spec("gps_ctx", r"[-+]?\b\d{1,2}\.\d{3,}[ \t]*,[ \t]*[-+]?\d{1,3}\.\d{3,}\b", Label::Location, 0.8, checks::any).needs(GPS_WORDS),
        spec("udi_gs1", r"\(01\)\d{14}(?:\(\d{2,4}\)[A-Za-z0-9]{1,20})*", Label::DeviceId, 0.9, checks::any),
        // --- credit cards
        // Card groupings (4-4-4-x, Amex 4-6-5) or one run, so two phone numbers in a row
        // never read as one card.
        spec(
            "credit_card",
            r"\b(?:\d{4}[ -]?\d{4}[ -]?\d{4}[ -]?\d{1,7}|\d{4}[ -]?\d{6}[ -]?\d{4,5})\b",
            Label::CreditCard,
            0.9,
            checks::credit_card,
        ),
        // --- zip codes, addresses
        spec("zip_after_state", r"\b[A-Z]{2},?\s+(\d{5}(?:-\d{4})?)\b", Label::Zipcode, 0.85, checks::any)
            .group(1)
            .whole(|m| checks::state_zip(m).is_some()),
        spec("zip_ctx", r"\b\d{5}(?:-\d{4})?\b", Label::Zipcode, 0.85, checks::any).needs(ZIP_WORDS),
        spec("postal_code_ctx", &format!(r"(?i)(?:^|[^\p{{L}}\p{{M}}])(?:{}){GAP_CHAR}*[:=#：፡]?{GAP_CHAR}*(\d{{4,6}})(?:[^\p{{L}}\p{{M}}\p{{N}}]|$)", POSTAL_WORDS.join("|")), Label::Zipcode, 0.8, checks::any)
            .group(1),
        spec("address_labelled", &labelled_address(ADDRESS_WORDS, ADDRESS_WORDS_UNSPACED), Label::StreetAddress, 0.8, checks::address_value).group(1),
        spec("address_labelled_english", &labelled_address(&["address"], &[]), Label::StreetAddress, 0.8, checks::address_value_other_script).group(1),
        spec("address_labelled_also_knowing", &labelled_address(ADDRESS_WORDS_ALSO_KNOWING, &[]), Label::StreetAddress, 0.8, checks::address_value_numbered_early).group(1),
        spec(
            "street_address",
            r"\b\d{1,6}(?:-?[A-Z])?[ \t]+(?:[NSEW]\.?[ \t]+|(?:North|South|East|West)[ \t]+)?(?:(?:[A-Z][a-z]+|\d+(?:st|nd|rd|th))[ \t]+){1,3}(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Terrace|Ter|Way|Circle|Cir|Parkway|Pkwy|Highway|Hwy|Square|Sq|Trail|Trl)\b(?:,?\s+(?:Apt|Apartment|Unit|Suite|Ste|Rm|Room|Fl|Floor)\.?\s*#?\s*[A-Za-z0-9-]+|,?\s+#\s*[A-Za-z0-9-]+)?(?:,\s*[A-Z][a-z]+(?:\s[A-Z][a-z]+)?,\s*[A-Z]{2}\b)?",
            Label::StreetAddress,
            0.85,
            checks::any,
        ),
        // Streets of other languages, with their number: the street's word first (`Via Roma
        // 12`, `Calle Mayor, 5`, `Rua Augusta, n.º 10`, `ulica Długa 7`), a French number
        // first (`12 rue de la Paix`), the word last (`Keizersgracht 123`, `Hauptstr. 5`,
        // `Atatürk Caddesi 12`), or a Russian house (`улица Ленина, дом 12`). The words
        // English uses too (`via`, `place`, `avenue`) are left to the English rule and the
        // model.
        spec("street_word_first", r"\b(?:Via|Viale|Vicolo|Piazza|Piazzale|Corso|Calle|Avenida|Avda\.|Paseo|Carrer|Rua|Travessa|Praça|Rue|Chemin|Impasse|Allée|Quai|ulica|ul\.|aleja|Strada|Calea|Bulevardul)[ \t]+(?:(?:de|del|della|delle|dei|di|da|do|dos|das|la|le|les|des|du)[ \t]+)?\p{Lu}[\p{L}'’-]+(?:[ \t]+\p{Lu}[\p{L}'’-]+){0,2},?[ \t]+(?:(?:n\.?[ºo°]?|nr\.?|no\.?)[ \t]*)?\d{1,4}[A-Za-z]?\b", Label::StreetAddress, 0.85, checks::any),
        spec("street_fr", r"(?i)\b\d{1,4}(?:[ \t]?(?:bis|ter))?,?[ \t]+(?:rue|avenue|av\.|boulevard|bd|place|chemin|allée|allee|impasse|quai|route|cours)[ \t]+(?:(?:de[ \t]+la|de[ \t]+l'|des|du|de|d')[ \t]*)?\p{Lu}[\p{L}'’-]+(?:[ \t]+\p{Lu}[\p{L}'’-]+){0,2}", Label::StreetAddress, 0.85, checks::any),
        // These two start with a capital that may be no ASCII letter (`Ålgade 3`, `Şehit
        // Sokak 5`), where the ASCII `\b` of `all` never holds: a word's start is read as
        // the character before it, outside the span (group 1).
        spec("street_word_last", &format!(r"{WORD_START}(\p{{Lu}}\p{{Ll}}+(?:straat|gracht|weg|laan|plein|kade|singel|dijk|steeg|straße|strasse|str\.|gasse|allee|platz|damm|gatan|vägen|gata|vej|gade|veien|katu)[ \t]+\d{{1,4}}[a-z]?)\b"), Label::StreetAddress, 0.85, checks::any).group(1),
        spec("street_tr", &format!(r"{WORD_START}(\p{{Lu}}\p{{L}}+(?:[ \t]+\p{{Lu}}\p{{L}}+)?[ \t]+(?:Caddesi|Cad\.|Sokak|Sokağı|Sk\.|Bulvarı|Mahallesi|Mah\.)[ \t]+(?:No:?[ \t]*)?\d{{1,4}})\b"), Label::StreetAddress, 0.85, checks::any).group(1),
        spec("street_ru", r"(?:улица|ул\.|проспект|пр-т|переулок|пер\.|шоссе|бульвар|площадь|набережная)[ \t]+\p{Lu}[\p{L}-]+(?:[ \t]+\p{Lu}[\p{L}-]+)?,?[ \t]+(?:дом|д\.)[ \t]*\d{1,4}", Label::StreetAddress, 0.85, checks::any),
        // A rural route and its box (`RR 2 Box 24`, `Rural Route 3, Box 118`).
        spec("rural_route", r"(?i)\b(?:RR|R\.R\.|Rural\s+Route)\s*\d{1,3}\s*,?\s*Box\s+\d{1,5}\b", Label::StreetAddress, 0.85, checks::any),
        spec("po_box", r"(?i)\bP\.?\s?O\.?\s*Box\s+\d{1,6}\b", Label::StreetAddress, 0.85, checks::any),
        // --- ages over 89
        spec("age_year_old", r"(?i)\b(\d{2,3})(?:[- ](?:years?|yrs?)[- ]old|[ \t]+(?:years?|yrs?)[ \t]+of[ \t]+age)\b", Label::Age, 0.9, checks::age_over_89).group(1),
        // An age over 89 as its decade (`in her late 90s`) or its birthday (`his 90th
        // birthday`): each says more than Safe Harbor's "90 or older".
        spec("age_decade", r"(?i)\bin[ \t]+(?:his|her|their|the)[ \t]+(?:(?:early|mid|late)[ \t-]+)?(\d{1,2}0'?s)\b", Label::Age, 0.85, checks::age_decade_over_89).group(1),
        spec("age_birthday", r"(?i)\b(\d{2,3})(?:st|nd|rd|th)[ \t]+birthday\b", Label::Age, 0.85, checks::age_over_89).group(1),
        spec("age_word", r"(?i)\b(?:age|aged|age:)\s*(\d{2,3})\b", Label::Age, 0.9, checks::age_over_89).group(1),
        // Age and sex run together (`Patient is 101M with CHF`): only after "is", since
        // `101F` alone is as often a temperature.
        spec("age_sex", r"\b(?:is an?|is|aged?)\s+(\d{2,3})\s?(?:M|F|yo[MF]|y/o[MF]?)\b", Label::Age, 0.85, checks::age_over_89).group(1),
        // Clinical shorthand for age and sex (`Pt 91F with CHF`, `92M s/p fall`, `(95F)`,
        // `History: 94 F, dementia`): over 89, unless the words before say it is a
        // temperature (`T 101F`, `fever to 101F`) or a French size.
        spec("age_sex_shorthand", r"\b(\d{2,3})\s?(?:M|F)\b", Label::Age, 0.8, checks::age_over_89)
            .group(1)
            .unless(TEMPERATURE_WORDS),
        // `a 96F with Wells score 2`: after "a", only before what introduces a patient's
        // history, since `a 101F fever` is a temperature.
        spec("age_sex_a", r"\ban?\s+(\d{2,3})\s?(?:M|F)\s+(?:with|w/|who|presenting|presents|admitted|s/p|here|pt|patient|female|male|woman|man)\b", Label::Age, 0.85, checks::age_over_89).group(1),
        spec("age_yo", r"(?i)\b(\d{2,3})[\s-]*(?:yo\b|y/o\b|y\.o\.|yrs? old\b)", Label::Age, 0.9, checks::age_over_89).group(1),
        // A person who "is 103": a person or a relative, then is/was/turned and a number
        // that ends the clause (not `98.6`, `95%`, `103 lbs`), over 89.
        spec("age_person_is", r"(?im)\b(?:he|she|patient|pt|mother|father|mom|dad|mum|sister|brother|wife|husband|grandmother|grandfather|grandma|grandpa|aunt|uncle|spouse|partner)\s+(?:is|was|turned|turns|is now|just turned|will be)\s+(\d{2,3})(?:\s*[,;)!]|\.(?:\D|$)|\s*$|\s+(?:and|but|who|now|today|this|next|last|in|on)\b)", Label::Age, 0.85, checks::age_over_89).group(1),
        // An age over 89 in words (`ninety-one`, `Ninety two yo`, `one hundred and two`):
        // before the words of an age, or after `aged`/`age:` or a person's `is`/`was`
        // where the number ends the clause.
        spec("age_words_yo", &format!(r"(?i)\b({AGE_WORDS})[ \t-]*(?:years?[ \t-]+old|years?[ \t-]+of[ \t-]+age|yrs?[ \t-]+old|y/o|yo|y\.o\.|years?)\b"), Label::Age, 0.85, checks::any).group(1),
        spec("age_words_is", &format!(r"(?i)\b(?:age|aged|age:|is|was|turn|turned|turns|turning)[ \t]+({AGE_WORDS})(?:[ \t]*[,;.)!]|[ \t]*$|[ \t]+(?:and|but|who|now|today|next|this|soon|tomorrow|in|on)\b)"), Label::Age, 0.85, checks::any).group(1),
    ]
}

/// Ages from 90 to 119 in words.
const AGE_WORDS: &str = r"ninety(?:[ \t-](?:one|two|three|four|five|six|seven|eight|nine))?|(?:one[ \t]+|a[ \t]+)?hundred(?:[ \t]+(?:and[ \t]+)?(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen))?";

/// Compiles the whole table.
///
/// # Panics
/// If a built-in pattern fails to compile (a programming error the tests catch).
pub(crate) fn all() -> Vec<Pattern> {
    specs()
        .into_iter()
        .map(|s| {
            // ASCII word boundaries: Unicode `\b` makes the regex engine leave its fast DFA
            // on any non-ASCII text (clinical notes have accents), costing ~10x. An ASCII `\b`
            // never holds beside a letter outside ASCII; a test below checks that no rule
            // puts one there (`WORD_START` starts such a word).
            let ascii = s.re.replace(r"\b", r"(?-u:\b)");
            #[allow(clippy::expect_used)]
            let re = Regex::new(&ascii).expect("built-in rule pattern compiles");
            #[allow(clippy::expect_used)]
            let listed = s.listed.map(|(item, items)| super::Listed {
                item: Regex::new(item).expect("built-in list pattern compiles"),
                items,
            });
            Pattern {
                name: s.name,
                re,
                group: s.group,
                label: s.label,
                score: s.score,
                context: s.context,
                relabel: s.relabel,
                check: s.check,
                full_check: s.full_check,
                listed,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::WORD_START;
    use regex_syntax::hir::{Class, Hir, HirKind, Look};

    /// The characters a match of `h` can start with (`first`) or end with, and whether it
    /// can be empty.
    fn edge(h: &Hir, first: bool) -> (Vec<(char, char)>, bool) {
        match h.kind() {
            HirKind::Empty | HirKind::Look(_) => (Vec::new(), true),
            HirKind::Literal(lit) => {
                let text = String::from_utf8_lossy(&lit.0);
                let c = if first {
                    text.chars().next()
                } else {
                    text.chars().last()
                };
                (c.map(|c| vec![(c, c)]).unwrap_or_default(), c.is_none())
            }
            HirKind::Class(Class::Unicode(cls)) => (
                cls.ranges().iter().map(|r| (r.start(), r.end())).collect(),
                false,
            ),
            HirKind::Class(Class::Bytes(cls)) => (
                cls.ranges()
                    .iter()
                    .map(|r| (char::from(r.start()), char::from(r.end())))
                    .collect(),
                false,
            ),
            HirKind::Repetition(rep) => {
                let (set, empty) = edge(&rep.sub, first);
                (set, empty || rep.min == 0)
            }
            HirKind::Capture(cap) => edge(&cap.sub, first),
            HirKind::Concat(parts) if first => edge_of_run(parts.iter(), true),
            HirKind::Concat(parts) => edge_of_run(parts.iter().rev(), false),
            HirKind::Alternation(alts) => {
                let mut all = Vec::new();
                let mut any_empty = false;
                for alt in alts {
                    let (set, empty) = edge(alt, first);
                    all.extend(set);
                    any_empty |= empty;
                }
                (all, any_empty)
            }
        }
    }

    /// A letter or mark outside ASCII, which a Unicode `\b` counts as part of a word. `K` (Kelvin)
    /// and `ſ` come in only as case folds of ASCII `k` and `s` under `(?i)`. Digits are left
    /// out: the view rules read has other scripts' digits as ASCII
    /// ([`crate::detect::normalize`]).
    fn wide_word_char(ranges: &[(char, char)]) -> Option<char> {
        ranges.iter().find_map(|&(a, b)| {
            (u32::from(a.max('\u{80}'))..=u32::from(b))
                .filter_map(char::from_u32)
                .find(|&c| {
                    !matches!(c, '\u{212A}' | '\u{17F}')
                        && (c.is_alphabetic()
                            || c == '_'
                            || unicode_normalization::char::is_combining_mark(c))
                })
        })
    }

    /// What can stand on one side of `parts[at]`: the edge characters of the parts after it
    /// (`after`) or before it, up to the first that cannot be empty, and whether all of
    /// them can be empty (the neighbour then lies outside this concatenation).
    fn beside(parts: &[Hir], at: usize, after: bool) -> (Vec<(char, char)>, bool) {
        if after {
            edge_of_run(parts[at + 1..].iter(), true)
        } else {
            edge_of_run(parts[..at].iter().rev(), false)
        }
    }

    /// The edge ([`edge`]) of parts matched one after another, walked from the edge in:
    /// each part's characters until one cannot be empty, and whether all can.
    fn edge_of_run<'h>(
        parts: impl Iterator<Item = &'h Hir>,
        first: bool,
    ) -> (Vec<(char, char)>, bool) {
        let mut set = Vec::new();
        for part in parts {
            let (s, empty) = edge(part, first);
            set.extend(s);
            if !empty {
                return (set, false);
            }
        }
        (set, true)
    }

    /// True when every character in `ranges` is an ASCII letter, `_`, a digit (rules read
    /// every script's digits as ASCII) or one of the case folds [`wide_word_char`] ignores.
    fn ascii_word_only(ranges: &[(char, char)]) -> bool {
        ranges.iter().all(|&(a, b)| {
            (u32::from(a)..=u32::from(b))
                .filter_map(char::from_u32)
                .all(|c| {
                    c.is_ascii_alphanumeric()
                        || c.is_numeric()
                        || matches!(c, '_' | '\u{212A}' | '\u{17F}')
                })
        })
    }

    /// The letters outside ASCII that can stand next to a `\b` of `h` where the character
    /// on its other side need not be an ASCII word character: there an ASCII `\b` never
    /// holds (beside an ASCII letter or digit it always does, which is what `2001г.` wants).
    fn wide_boundaries(h: &Hir, found: &mut Vec<char>) {
        match h.kind() {
            HirKind::Concat(parts) => {
                for (i, part) in parts.iter().enumerate() {
                    if !matches!(part.kind(), HirKind::Look(Look::WordUnicode)) {
                        continue;
                    }
                    for after in [true, false] {
                        let (near, _) = beside(parts, i, after);
                        let (far, open) = beside(parts, i, !after);
                        if open || !ascii_word_only(&far) {
                            found.extend(wide_word_char(&near));
                        }
                    }
                }
                parts.iter().for_each(|p| wide_boundaries(p, found));
            }
            HirKind::Alternation(alts) => alts.iter().for_each(|p| wide_boundaries(p, found)),
            HirKind::Repetition(rep) => wide_boundaries(&rep.sub, found),
            HirKind::Capture(cap) => wide_boundaries(&cap.sub, found),
            _ => {}
        }
    }

    fn flagged(re: &str) -> Vec<char> {
        let mut found = Vec::new();
        wide_boundaries(&regex_syntax::parse(re).expect("rule parses"), &mut found);
        found
    }

    /// The check finds the `\b`s that silently fail (the street rules' old start, a month
    /// starting with `é`) and leaves those that hold.
    #[test]
    fn the_boundary_check_tells_failing_boundaries_from_holding_ones() {
        for re in [
            r"\b(\p{Lu}\p{Ll}+gade[ \t]+\d{1,4})\b",
            r"(?i)\b\d{1,2}\.?[ \t]+(?:mai|été)\b",
            r"(?i)\b(?:état|name)[ \t]*:",
            r"x[ \t]*\b(?:ö|o)",
        ] {
            assert!(!flagged(re).is_empty(), "{re}");
        }
        for re in [
            r"\b\d{4}\b(?:[ \t]?г\.)?",
            r"(?i)\b(?:ssn)[^\n\d]{0,12}?\b(?:ending)\s*(\d{4})\b",
            r"(?i)\bstraße\b",
            &format!(r"{WORD_START}(\p{{Lu}}\p{{Ll}}+gade)\b"),
        ] {
            assert_eq!(flagged(re), Vec::<char>::new(), "{re}");
        }
    }

    /// [`super::all`] compiles every `\b` as an ASCII word boundary, which never holds next
    /// to a letter, mark or digit outside ASCII (`Ålgade`, `février`'s `é` at a word's
    /// edge): a rule with such a `\b` silently fails to match there. This checks every rule,
    /// new ones too; [`super::WORD_START`] is the way to start a word that may begin outside
    /// ASCII.
    #[test]
    fn no_rule_puts_an_ascii_word_boundary_next_to_a_letter_outside_ascii() {
        let mut bad = Vec::new();
        for s in super::specs() {
            if let Some(c) = flagged(&s.re).first() {
                bad.push(format!("{} ({c:?})", s.name));
            }
        }
        assert!(
            bad.is_empty(),
            "rules with \\b next to a letter outside ASCII: {bad:?}"
        );
    }
}
