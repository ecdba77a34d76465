//! Contact points: phone and fax numbers, bare web addresses and usernames.
//!
//! The rule table in `detect::rules` finds phone numbers in the common shapes, e-mail
//! addresses and URLs that start with a scheme or `www.`. What it lacks is read here from
//! context: phone shapes its table does not take (international groupings such as
//! `+61 3 1445 8868`, a number in parentheses), any number after `Tel:` or `Fax:` (the
//! word decides phone or fax), a host name without a scheme, and the value after
//! `username`, `login id` or a messaging service's name (`Skype: jane.doe.nurse`,
//! `twitter @janedoe_88`).

use regex::Regex;

use super::super::{re, ByteSpan, STRONG};
use super::cues::{trim_punct, Cue};
use crate::detect::Label;

/// A login name after its field name.
pub(super) const USERNAME: &[Cue] = &[
    Cue::new(
        r"(?i)\b(?:username|user[ \t]*name|user[ \t]*id|userid|login[ \t]*id|handle)[ \t]*[:=#]?[ \t]*([A-Za-z0-9][A-Za-z0-9._-]{2,31})\b",
        Label::Username,
        STRONG,
    ),
    // A messaging service's name only with a colon or an `@` after it: `facebook post`
    // and `signal intensity` are no accounts.
    Cue::new(
        r"(?i)\b(?:skype|twitter|instagram|facebook|tiktok|snapchat|telegram|whatsapp|signal)(?:[ \t]*:[ \t]*@?|[ \t]+@)([A-Za-z0-9][A-Za-z0-9._-]{2,31})\b",
        Label::Username,
        STRONG,
    ),
];

/// An international number: `+`, a country code and digit groups.
pub(super) const INTL_PHONE: &[Cue] = &[Cue::new(
    r"\+\d{1,3}[ \t]?(?:\(0\)[ \t]?)?\d{1,5}(?:[ \t-]\d{2,5}){1,4}\b",
    Label::Phone,
    STRONG,
)
.whole()];

/// A ten-digit number in parentheses, with an optional extension.
pub(super) const PAREN_PHONE: &[Cue] = &[Cue::new(
    r"\((\d{3}[ .-]?\d{3}[ .-]?\d{4}(?:[ \t]*(?:x|ext\.?)[ \t]*\d{1,6})?)\)",
    Label::Phone,
    STRONG,
)];

/// `2024-03-01`, `03-01-2024`, `1-3-24`: dashed digit groups a date rule reads, not a phone
/// number (`call scheduled for 2024-03-01`).
fn looks_like_a_date(number: &str) -> bool {
    let groups: Vec<&str> = number.trim().split('-').collect();
    let lens: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    groups
        .iter()
        .all(|g| !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit()))
        && matches!(
            lens.as_slice(),
            [4, 1..=2, 1..=2] | [1..=2, 1..=2, 2] | [1..=2, 1..=2, 4]
        )
}

/// A number of 7 to 16 digits next to a phone word: a fax when the word is `fax` or
/// `facsimile`, a phone otherwise; not a date.
fn push_number(text: &str, m: regex::Match<'_>, word: &str, out: &mut Vec<ByteSpan>) {
    let digits = m.as_str().chars().filter(char::is_ascii_digit).count();
    if !(7..=16).contains(&digits) || looks_like_a_date(m.as_str()) {
        return;
    }
    let label = if word.to_ascii_lowercase().starts_with("fa") {
        Label::Fax
    } else {
        Label::Phone
    };
    let (s, e) = trim_punct(text, m.start(), m.end());
    out.push(ByteSpan::new(s, e, label, STRONG));
}

/// The compiled phone-word and bare-URL heuristics.
#[derive(Debug)]
pub(super) struct Contact {
    /// A phone word (group 1) and the number after it (group 2).
    phone: Regex,
    /// A number (group 1) and the phone word after it (group 2): `726 458 356 office`,
    /// `78 867 18 43-Fax`, `555 0100 (cell)`.
    phone_before_word: Regex,
    bare_url: Regex,
}

impl Contact {
    pub(super) fn new() -> Self {
        Contact {
            phone: re(
                r"(?i)\b(tel|telephone|phone|ph|mobile|mob|cell|fax|facsimile|contacted|contact|call|called|reached|reach|pager|bleep|text|ring)\b[.:]?(?:[ \t]+[a-z]{1,10}\.?){0,3}?[ \t]*(?:no\.?|number|#)?[ \t]*[:.]?[ \t]*(\+?\(?\d[\d ()-]{5,20}\d(?:[ \t]*(?:x|ext\.?)[ \t]*\d{1,6})?)",
            ),
            phone_before_word: re(
                r"(?i)(?:^|[^\w.,/-])(\+?\(?\d[\d ()-]{5,20}\d)[ \t]*(?:-|\(|,)?[ \t]*\b(office|fax|mobile|mob|cell|home|work|landline|direct|desk)\b",
            ),
            bare_url: re(
                r"(?i)(?:^|[^@\w.:/-])((?:[a-z0-9-]+\.)+(?:com|net|org|edu|gov|example|io|co|uk|ca|au|in|de|fr|health|info|us|nz|ie)(?:\.[a-z]{2})?(?:/[^\s<>)\]]*)?)",
            ),
        }
    }

    /// A number after a phone word (`Tel: …`) or before one (`… office`), as
    /// [`push_number`] takes it.
    pub(super) fn phones_after_word(&self, text: &str, out: &mut Vec<ByteSpan>) {
        for caps in self.phone.captures_iter(text) {
            let (Some(word), Some(m)) = (caps.get(1), caps.get(2)) else {
                continue;
            };
            push_number(text, m, word.as_str(), out);
        }
        for caps in self.phone_before_word.captures_iter(text) {
            let (Some(m), Some(word)) = (caps.get(1), caps.get(2)) else {
                continue;
            };
            push_number(text, m, word.as_str(), out);
        }
    }

    /// A host name with a known top-level domain and no scheme, not the domain of an
    /// e-mail address.
    pub(super) fn bare_urls(&self, text: &str, out: &mut Vec<ByteSpan>) {
        for caps in self.bare_url.captures_iter(text) {
            if let Some(m) = caps.get(1) {
                let (s, e) = trim_punct(text, m.start(), m.end());
                if s < e {
                    out.push(ByteSpan::new(s, e, Label::Url, STRONG));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::detect::context::tests::rows;
    use crate::detect::Label;

    rows! {
        username: "(username kwamem57).", "kwamem57" => Some(Label::Username);
        skype_handle: "Skype: jane.doe.nurse for follow-up", "jane.doe.nurse" => Some(Label::Username);
        twitter_handle: "posts on twitter @janedoe_88 daily", "janedoe_88" => Some(Label::Username);
        service_word_alone_is_no_account: "facebook post about signal intensity", "post" => None;
        bare_url: "Web: records.lakeshorehealth.net/login\n", "records.lakeshorehealth.net/login" => Some(Label::Url);
        email_domain_is_not_url: "mail a.b@inbox-mail.net now", "inbox-mail.net" => None;
        fax_after_word: "Tel: 020 7946 0896   Fax: 020 7946 0379\n", "020 7946 0379" => Some(Label::Fax);
        intl_phone: "contacted on +61 3 1445 8868 or", "+61 3 1445 8868" => Some(Label::Phone);
        local_phone_words_after_call: "Call her on 555-0100 today", "555-0100" => Some(Label::Phone);
        phone_after_named_person: "reach Dr Lee at 020 7946 0896.", "020 7946 0896" => Some(Label::Phone);
        phone_before_word: "Apt 3\n726 458 356 office\n", "726 458 356" => Some(Label::Phone);
        fax_before_word: "78 867 18 43-Office, 78 867 18 44-Fax", "78 867 18 44" => Some(Label::Fax);
        count_before_home_is_not_a_phone: "discharged 2 days ago home", "2 days" => None;
        call_back_in_weeks_is_not_a_phone: "call back in 2 weeks on 12/03", "2 weeks" => None;
        a_date_after_call_is_not_a_phone: "Call scheduled for 2024-03-01 with", "2024-03-01" => None;
    }
}
