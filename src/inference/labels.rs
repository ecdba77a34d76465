//! Raw model labels → canonical [`Label`]s, and the BIO/BIOES tag of a raw label.
//!
//! Checkpoints name the same thing many ways (`GIVENNAME`, `FIRSTNAME`, `first_name`,
//! `GIVEN_NAME`); the table below folds them into the closed [`Label`] set so that
//! responses, masks and metrics never depend on a model's spelling. Matching ignores
//! case, `-`, `_` and spaces. An entity type we do not know becomes [`Label::Other`]:
//! it is still PHI the model found, and dropping it would leak it.

use crate::detect::Label;

/// The position tag of a raw label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    /// Outside any entity (`O`).
    Outside,
    /// First token of an entity (`B-`).
    Begin,
    /// Inside an entity (`I-`, or a label without a prefix).
    Inside,
    /// Last token of an entity (`E-`, `L-`).
    End,
    /// A one-token entity (`S-`, `U-`).
    Single,
}

/// Splits a raw label into its tag and entity type (`B-GIVEN_NAME` → (Begin, `GIVEN_NAME`)).
pub fn split_tag(raw: &str) -> (Tag, &str) {
    if raw.is_empty() || raw == "O" || raw == "o" {
        return (Tag::Outside, "");
    }
    let bytes = raw.as_bytes();
    if bytes.len() > 2 && (bytes[1] == b'-' || bytes[1] == b'_') {
        let rest = &raw[2..];
        match bytes[0].to_ascii_uppercase() {
            b'B' => return (Tag::Begin, rest),
            b'I' => return (Tag::Inside, rest),
            b'E' | b'L' => return (Tag::End, rest),
            b'S' | b'U' => return (Tag::Single, rest),
            _ => {}
        }
    }
    (Tag::Inside, raw)
}

/// Maps an entity type (without its tag) to a canonical label.
pub fn canonical_label(entity_type: &str) -> Label {
    let key: String = entity_type
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | ' '))
        .flat_map(char::to_uppercase)
        .collect();
    match key.as_str() {
        "PER" | "PERSON" | "NAME" | "FULLNAME" | "PATIENT" | "DOCTOR" | "NAMEPATIENT"
        | "NAMEDOCTOR" | "STAFF" | "HCW" => Label::Person,
        "GIVENNAME" | "FIRSTNAME" | "GIVENNAME1" | "GIVENNAME2" | "FORENAME" => Label::FirstName,
        "SURNAME" | "LASTNAME" | "FAMILYNAME" | "LASTNAME1" | "LASTNAME2" => Label::LastName,
        "MIDDLENAME" => Label::MiddleName,
        "DATE" | "DATETIME" => Label::Date,
        "DOB" | "DATEOFBIRTH" | "BIRTHDATE" | "BIRTHDAY" => Label::DateOfBirth,
        "TIME" => Label::Time,
        "AGE" => Label::Age,
        "PHONE" | "TELEPHONENUM" | "TELEPHONE" | "PHONENUMBER" | "PHONENUM" | "MOBILE" => {
            Label::Phone
        }
        "FAX" | "FAXNUMBER" => Label::Fax,
        "EMAIL" | "EMAILADDRESS" | "MAIL" => Label::Email,
        "URL" | "WEB" | "WEBSITE" => Label::Url,
        "IP" | "IPADDRESS" | "IPV4" | "IPV6" => Label::IpAddress,
        "SSN" | "SOCIALNUM" | "SOCIALSECURITYNUMBER" | "SOCIALSECURITY" => Label::Ssn,
        "MRN" | "MEDICALRECORD" | "MEDICALRECORDNUMBER" | "MEDICALRECORDNUM" => {
            Label::MedicalRecordNumber
        }
        "HEALTHPLAN" | "HEALTHPLANNUMBER" | "HEALTHPLANBENEFICIARYNUMBER" | "INSURANCENUMBER" => {
            Label::HealthPlanNumber
        }
        "ACCOUNT" | "ACCOUNTNUM" | "ACCOUNTNUMBER" | "BANKACCOUNT" | "ROUTINGNUMBER" | "IBAN"
        | "BIC" => Label::AccountNumber,
        "LICENSE" | "LICENSENUMBER" | "DRIVERLICENSENUM" | "DRIVERSLICENSE" | "DRIVERLICENSE"
        | "CERTIFICATE" => Label::LicenseNumber,
        "VEHICLE" | "VEHICLEID" | "VIN" | "LICENSEPLATE" => Label::VehicleId,
        "DEVICE" | "DEVICEID" | "BIOID" => Label::DeviceId,
        "ID" | "IDNUM" | "IDCARDNUM" | "IDNUMBER" | "PASSPORTNUM" | "PASSPORT" | "TAXNUM"
        | "TAXID" | "GOVERNMENTID" | "IDCARD" | "NATIONALID" => Label::IdNum,
        "CREDITCARD" | "CREDITCARDNUMBER" | "CREDITCARDNUM" | "CARDNUMBER" => Label::CreditCard,
        "ZIP" | "ZIPCODE" | "POSTCODE" | "POSTALCODE" => Label::Zipcode,
        "STREET" | "STREETADDRESS" | "STREETNAME" | "BUILDINGNUM" | "BUILDINGNUMBER"
        | "SECONDARYADDRESS" | "ADDRESS" => Label::StreetAddress,
        "CITY" | "TOWN" => Label::City,
        "STATE" | "PROVINCE" | "REGION" => Label::State,
        "COUNTRY" => Label::Country,
        "LOC" | "LOCATION" | "LOCATIONOTHER" | "GPE" | "HOSPITAL" | "FACILITY" => Label::Location,
        "ORG" | "ORGANIZATION" | "ORGANISATION" | "COMPANY" => Label::Organization,
        "USERNAME" | "USER" => Label::Username,
        "PASSWORD" => Label::Password,
        _ => Label::parse(entity_type).unwrap_or(Label::Other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! maps {
        ($($raw:literal => $label:ident),* $(,)?) => {
            #[test]
            fn maps_known_spellings() {
                $(assert_eq!(canonical_label($raw), Label::$label, "{}", $raw);)*
            }
        };
    }

    maps! {
        "GIVENNAME" => FirstName, "FIRSTNAME" => FirstName, "GIVEN_NAME" => FirstName,
        "first_name" => FirstName, "SURNAME" => LastName, "LASTNAME" => LastName,
        "last_name" => LastName, "CITY" => City, "ZIPCODE" => Zipcode, "ZIP_CODE" => Zipcode,
        "STREET" => StreetAddress, "BUILDINGNUM" => StreetAddress,
        "street_address" => StreetAddress, "TELEPHONENUM" => Phone,
        "phone_number" => Phone, "PHONE" => Phone, "EMAIL" => Email, "DATE" => Date,
        "DOB" => DateOfBirth, "date_of_birth" => DateOfBirth, "SSN" => Ssn,
        "SOCIALNUM" => Ssn, "IDCARDNUM" => IdNum, "DRIVERLICENSENUM" => LicenseNumber,
        "DRIVERS_LICENSE" => LicenseNumber, "PASSPORTNUM" => IdNum, "TAXNUM" => IdNum,
        "ACCOUNTNUM" => AccountNumber, "BANK_ACCOUNT" => AccountNumber,
        "ROUTING_NUMBER" => AccountNumber, "medical_record_number" => MedicalRecordNumber,
        "fax_number" => Fax, "credit_card" => CreditCard, "URL" => Url,
        "SECONDARY_ADDRESS" => StreetAddress, "STATE" => State, "PER" => Person,
        "ORG" => Organization, "LOC" => Location, "ip_address" => IpAddress,
        "something_new" => Other,
    }

    #[test]
    fn splits_bio_and_bioes_tags() {
        assert_eq!(split_tag("O"), (Tag::Outside, ""));
        assert_eq!(split_tag("B-GIVEN_NAME"), (Tag::Begin, "GIVEN_NAME"));
        assert_eq!(split_tag("I-CITY"), (Tag::Inside, "CITY"));
        assert_eq!(split_tag("E-CITY"), (Tag::End, "CITY"));
        assert_eq!(split_tag("L-CITY"), (Tag::End, "CITY"));
        assert_eq!(split_tag("S-DATE"), (Tag::Single, "DATE"));
        assert_eq!(split_tag("U-DATE"), (Tag::Single, "DATE"));
        assert_eq!(split_tag("first_name"), (Tag::Inside, "first_name"));
        assert_eq!(split_tag("b-ssn"), (Tag::Begin, "ssn"));
    }
}
