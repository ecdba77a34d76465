//! Typed handles to settings. Every row of the table gets one constant in [`crate::settings::keys`]
//! (`key::LIMITS_MAX_TEXT_LENGTH`), generated with the row by the `settings!` macro in
//! `table.rs`, so a misspelt key does not compile, and each handle's type is checked against
//! its row's kind when the crate compiles, so an integer cannot be read as a list.
//! [`Settings::get`](super::Settings::get) reads one.
//!
//! Strings remain only where keys arrive as data: `PUT /admin/settings`, `settings.toml`,
//! the environment and the listing, all of which go through the table.

use std::marker::PhantomData;

use super::table::{Def, TABLE};
use super::value::Kind;
use super::Settings;

/// The handle of one setting, typed by what reading it gives (see [`Read`]).
pub struct Key<T> {
    index: usize,
    _read: PhantomData<fn() -> T>,
}

impl<T> Clone for Key<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Key<T> {}

impl<T> std::fmt::Debug for Key<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The dotted key.
impl<T> std::fmt::Display for Key<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl<T> Key<T> {
    /// The handle of row `index` of the table (the macro's counting).
    pub(super) const fn at(index: usize) -> Self {
        Key {
            index,
            _read: PhantomData,
        }
    }

    /// The row.
    pub fn def(self) -> &'static Def {
        &TABLE[self.index]
    }

    /// The dotted key (`limits.max_text_length`).
    pub fn name(self) -> &'static str {
        self.def().key
    }

    /// The environment variable (`PHIGUARD_MAX_TEXT_LENGTH`).
    pub fn env(self) -> &'static str {
        self.def().env
    }
}

/// What reading a setting of one kind gives.
pub trait Read {
    /// The value, borrowed from the settings where it is text or a list.
    type Out<'a>;
    /// Reads `key` from `s`.
    fn read<'a>(s: &'a Settings, key: &'static str) -> Self::Out<'a>;
}

macro_rules! reader {
    ($(#[$doc:meta])* $name:ident => $out:ty, $read:ident, $($kind:pat_param)|+) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub enum $name {}

        impl $name {
            /// Whether a row of this kind reads as this type (checked at compile time).
            pub const fn accepts(kind: &Kind) -> bool {
                matches!(kind, $($kind)|+)
            }
        }

        impl Read for $name {
            type Out<'a> = $out;
            fn read<'a>(s: &'a Settings, key: &'static str) -> Self::Out<'a> {
                s.$read(key)
            }
        }
    };
}

reader!(
    /// An integer (`Kind::Int`).
    Int => i64, i64, Kind::Int { .. }
);
reader!(
    /// An integer or unset (`Kind::OptInt`).
    OptInt => Option<i64>, opt_i64, Kind::OptInt { .. }
);
reader!(
    /// A number (`Kind::Float`).
    Float => f64, f64, Kind::Float { .. }
);
reader!(
    /// A number or unset (`Kind::OptFloat`, and a keep-alive duration in seconds).
    OptFloat => Option<f64>, opt_f64, Kind::OptFloat { .. } | Kind::KeepAlive
);
reader!(
    /// A boolean (`Kind::Bool`).
    Flag => bool, bool, Kind::Bool
);
reader!(
    /// Text or one word of a closed set (`Kind::Str`, `Kind::Enum`).
    Text => &'a str, str, Kind::Str | Kind::Key | Kind::Enum(_)
);
reader!(
    /// A list (`Kind::List`, `Kind::Hosts`, `Kind::Origins`).
    Items => &'a [String], list, Kind::List | Kind::Hosts | Kind::Origins
);

/// Declares the table: each row is `NAME: Reader = row`, and becomes one entry of
/// [`TABLE`](super::table::TABLE) and one constant `key::NAME` whose reader is checked
/// against the row's kind at compile time.
macro_rules! settings {
    ($($name:ident : $ty:ident = $def:expr),* $(,)?) => {
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        enum Row {
            $($name),*
        }

        const ROWS: &[Def] = &[$($def),*];

        /// Every setting phiguard reads. Order is the display order.
        pub static TABLE: &[Def] = ROWS;

        /// One typed handle per setting, named after its key (`limits.max_text_length` is
        /// `LIMITS_MAX_TEXT_LENGTH`).
        pub mod keys {
            use super::super::key::*;
            $(
                #[doc = concat!("The `", stringify!($name), "` setting.")]
                pub const $name: Key<$ty> = Key::at(super::Row::$name as usize);
            )*
        }

        /// The constants' names, in table order (a test checks each against its key).
        #[cfg(test)]
        pub(super) const NAMES: &[&str] = &[$(stringify!($name)),*];

        $(
            const _: () = assert!(
                $crate::settings::key::$ty::accepts(&ROWS[Row::$name as usize].kind),
                concat!(stringify!($name), " is declared with a reader that does not fit its kind"),
            );
        )*
    };
}
pub(super) use settings;

#[cfg(test)]
mod tests {
    use super::super::table::{NAMES, TABLE};
    use super::super::{keys, Settings};

    #[test]
    fn every_constant_is_named_after_its_key() {
        assert_eq!(NAMES.len(), TABLE.len());
        for (name, def) in NAMES.iter().zip(TABLE) {
            assert_eq!(*name, def.key.to_ascii_uppercase().replace('.', "_"));
        }
    }

    #[test]
    fn typed_reads_give_the_defaults() {
        let s = Settings::defaults();
        assert_eq!(s.get(keys::SERVER_PORT), 8080);
        assert_eq!(s.get(keys::SERVER_HOST), "127.0.0.1");
        assert!(!s.get(keys::SERVER_UI));
        assert_eq!(s.get(keys::MODELS_MAX_RESIDENT), None);
        assert_eq!(s.get(keys::SERVER_BODY_TIMEOUT_SECONDS), 30.0);
        assert_eq!(s.get(keys::MODELS_KEEP_ALIVE), None);
        assert_eq!(
            s.get(keys::SECURITY_TRUSTED_HOSTS),
            ["localhost", "127.0.0.1", "[::1]"]
        );
        assert_eq!(
            keys::LIMITS_MAX_TEXT_LENGTH.env(),
            "PHIGUARD_MAX_TEXT_LENGTH"
        );
        assert_eq!(
            keys::LIMITS_MAX_TEXT_LENGTH.to_string(),
            "limits.max_text_length"
        );
    }
}
