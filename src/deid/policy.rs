//! De-identification policies: named rule sets that decide the action per label.
//!
//! The names and aliases are OpenMed 3.1's, so a client can send the same
//! `policy` string to either service. What each policy does is ours, documented on
//! [`Policy::parse`]'s table below; the one that must be exact is `hipaa_safe_harbor`
//! (45 CFR 164.514(b)(2)): every identifier masked, every date element except the year
//! removed (`01/02/1980` → `1980`), ages over 89 aggregated into `90+`, ZIP codes masked
//! (`[zipcode]`; we do not keep the 3-digit prefix because that needs census data).
//!
//! # Why policies decide everything
//!
//! A policy is a compliance statement: if the request's `method` could override it, a
//! client could ask for `hipaa_safe_harbor` and still get full dates back. So with a
//! policy, the per-label table wins and `method` is not consulted.
//!
//! | policy | default action | per-label exceptions | mapping |
//! |---|---|---|---|
//! | `hipaa_safe_harbor` | mask | dates → year, age → 90+ (≤ 89 kept) | no |
//! | `hipaa_expert_review_assist` | mask | dates shifted, age → 90+ | no |
//! | `gdpr_pseudonymization`, `gdpr_art9_health` | replace | — | yes |
//! | `research_limited_dataset` | mask | dates, ages, city, state, ZIP kept (HIPAA limited data set) | no |
//! | `strict_no_leak` | mask | — (ages and dates masked too) | no |
//! | `clinical_minimal_redaction` | mask | dates and organisations kept, age → 90+ | no |
//! | `clinical_preserve` | replace | dates shifted, age → 90+ | no |
//! | `canada_pipeda`, `uk_ico_anonymisation`, `china_pipl` | replace | — | yes |
//! | other regional policies | mask | age → 90+ | no |

use crate::detect::Label;

use super::Action;

/// Errors of policy lookup. Messages list valid names but never echo the request.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    /// Returned when the name is neither a canonical policy name nor an alias.
    #[error("unknown policy; valid names: {valid}")]
    Unknown {
        /// Comma-separated canonical names and aliases.
        valid: String,
    },
}

/// A resolved policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    name: &'static str,
    default: Action,
    overrides: &'static [(Label, Action)],
    keep_mapping: bool,
}

const SAFE_HARBOR: &[(Label, Action)] = &[
    (Label::Date, Action::YearOnly),
    (Label::DateOfBirth, Action::YearOnly),
    (Label::Age, Action::AgeCap),
];
const EXPERT: &[(Label, Action)] = &[
    (Label::Date, Action::ShiftDates),
    (Label::DateOfBirth, Action::ShiftDates),
    (Label::Age, Action::AgeCap),
];
const LIMITED: &[(Label, Action)] = &[
    (Label::Date, Action::Keep),
    (Label::DateOfBirth, Action::Keep),
    (Label::Age, Action::Keep),
    (Label::City, Action::Keep),
    (Label::State, Action::Keep),
    (Label::Zipcode, Action::Keep),
];
const MINIMAL: &[(Label, Action)] = &[
    (Label::Date, Action::Keep),
    (Label::DateOfBirth, Action::Keep),
    (Label::Organization, Action::Keep),
    (Label::Age, Action::AgeCap),
];
const PRESERVE: &[(Label, Action)] = &[
    (Label::Date, Action::ShiftDates),
    (Label::DateOfBirth, Action::ShiftDates),
    (Label::Age, Action::AgeCap),
];
const AGE_ONLY: &[(Label, Action)] = &[(Label::Age, Action::AgeCap)];

const fn p(
    name: &'static str,
    default: Action,
    overrides: &'static [(Label, Action)],
    keep_mapping: bool,
) -> Policy {
    Policy {
        name,
        default,
        overrides,
        keep_mapping,
    }
}

/// Every canonical policy, in OpenMed's order.
const POLICIES: [Policy; 20] = [
    p("hipaa_safe_harbor", Action::Mask, SAFE_HARBOR, false),
    p("hipaa_expert_review_assist", Action::Mask, EXPERT, false),
    p("gdpr_pseudonymization", Action::Replace, &[], true),
    p("gdpr_art9_health", Action::Replace, &[], true),
    p("research_limited_dataset", Action::Mask, LIMITED, false),
    p("strict_no_leak", Action::Mask, &[], false),
    p("clinical_minimal_redaction", Action::Mask, MINIMAL, false),
    p("clinical_preserve", Action::Replace, PRESERVE, false),
    p("canada_pipeda", Action::Replace, &[], true),
    p("uk_ico_anonymisation", Action::Replace, &[], true),
    p("australia_privacy_act", Action::Mask, AGE_ONLY, false),
    p("china_pipl", Action::Replace, &[], true),
    p("india_dpdp_act", Action::Mask, AGE_ONLY, false),
    p("africa_malabo_baseline", Action::Mask, AGE_ONLY, false),
    p("za_popia", Action::Mask, AGE_ONLY, false),
    p("ng_ndpa", Action::Mask, AGE_ONLY, false),
    p("ke_dpa", Action::Mask, AGE_ONLY, false),
    p("india_health_id", Action::Mask, AGE_ONLY, false),
    p("eg_pdpl", Action::Mask, AGE_ONLY, false),
    p("ma_law_09_08", Action::Mask, AGE_ONLY, false),
];

/// OpenMed's aliases and the canonical names they stand for.
const ALIASES: [(&str, &str); 8] = [
    ("au_privacy", "australia_privacy_act"),
    ("gdpr", "gdpr_pseudonymization"),
    ("gdpr_health", "gdpr_art9_health"),
    ("kenya_dpa", "ke_dpa"),
    ("pipeda", "canada_pipeda"),
    ("uk_ico", "uk_ico_anonymisation"),
    ("india_health_ids", "india_health_id"),
    ("abha", "india_health_id"),
];

impl Policy {
    /// Resolves a canonical name or alias, case-insensitively, with `-` and spaces read
    /// as `_` (`HIPAA-Safe-Harbor` → `hipaa_safe_harbor`).
    ///
    /// # Errors
    /// [`PolicyError::Unknown`] listing every valid name.
    pub fn parse(name: &str) -> Result<Policy, PolicyError> {
        let key = name.trim().to_ascii_lowercase().replace(['-', ' '], "_");
        let canonical = ALIASES
            .iter()
            .find(|(alias, _)| *alias == key)
            .map_or(key.as_str(), |(_, c)| c);
        POLICIES
            .iter()
            .find(|p| p.name == canonical)
            .cloned()
            .ok_or_else(|| PolicyError::Unknown {
                valid: Policy::valid_names().join(", "),
            })
    }

    /// Canonical names followed by aliases.
    pub fn valid_names() -> Vec<&'static str> {
        let mut names: Vec<&'static str> = POLICIES.iter().map(|p| p.name).collect();
        names.extend(ALIASES.iter().map(|(a, _)| *a));
        names
    }

    /// The canonical name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// True when the policy returns the replacement → original mapping.
    pub fn keep_mapping(&self) -> bool {
        self.keep_mapping
    }

    /// The action for one label.
    pub fn action_for(&self, label: Label) -> Action {
        self.overrides
            .iter()
            .find(|(l, _)| *l == label)
            .map_or(self.default, |(_, a)| *a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_names_and_aliases_resolve() -> Result<(), PolicyError> {
        assert_eq!(Policy::valid_names().len(), 28);
        for n in Policy::valid_names() {
            Policy::parse(n)?;
        }
        assert_eq!(Policy::parse("GDPR")?.name(), "gdpr_pseudonymization");
        assert_eq!(Policy::parse("abha")?.name(), "india_health_id");
        assert_eq!(
            Policy::parse(" HIPAA-Safe-Harbor ")?.name(),
            "hipaa_safe_harbor"
        );
        Ok(())
    }

    #[test]
    fn unknown_lists_valid_names_without_echo() {
        let err = Policy::parse("secret_patient_name").err();
        let msg = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("hipaa_safe_harbor") && msg.contains("abha"));
        assert!(!msg.contains("secret_patient_name"));
    }

    #[test]
    fn mapping_policies_match_openmed() -> Result<(), PolicyError> {
        for n in [
            "gdpr_pseudonymization",
            "gdpr_art9_health",
            "canada_pipeda",
            "uk_ico_anonymisation",
            "china_pipl",
        ] {
            assert!(Policy::parse(n)?.keep_mapping(), "{n}");
        }
        assert!(!Policy::parse("hipaa_safe_harbor")?.keep_mapping());
        Ok(())
    }

    #[test]
    fn safe_harbor_actions() -> Result<(), PolicyError> {
        let p = Policy::parse("hipaa_safe_harbor")?;
        assert_eq!(p.action_for(Label::Date), Action::YearOnly);
        assert_eq!(p.action_for(Label::Age), Action::AgeCap);
        assert_eq!(p.action_for(Label::Zipcode), Action::Mask);
        assert_eq!(p.action_for(Label::FirstName), Action::Mask);
        Ok(())
    }
}
