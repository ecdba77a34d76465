//! `phiguard settings list|get|set`.

use super::Failure;
use crate::settings::{Home, Settings, TABLE};

pub(super) fn list() -> Result<(), Failure> {
    let s = Settings::load(&Home::from_env())?;
    println!("{:<36} {:<22} {:<8} VARIABLE", "KEY", "VALUE", "SOURCE");
    for d in TABLE {
        let value = if d.secret {
            "(secret)".to_string()
        } else {
            s.value(d.key).to_string()
        };
        let source = format!("{:?}", s.source(d.key)).to_lowercase();
        let var = match d.alias {
            Some(a) => format!("{} ({a})", d.env),
            None => d.env.to_string(),
        };
        println!("{:<36} {:<22} {:<8} {var}", d.key, value, source);
    }
    Ok(())
}

pub(super) fn get(key: &str) -> Result<(), Failure> {
    let s = Settings::load(&Home::from_env())?;
    let def = crate::settings::table::def(key)
        .ok_or_else(|| Failure::usage(format!("unknown setting {key}")))?;
    if def.secret {
        return Err(Failure::usage(format!(
            "{key} is a secret; use `phiguard token show`"
        )));
    }
    println!("{}", s.value(def.key));
    Ok(())
}

pub(super) fn set(key: &str, value: &str) -> Result<(), Failure> {
    let mut s = Settings::load(&Home::from_env())?;
    s.apply(&[(key.to_string(), value.to_string())])
        .map_err(|errs| {
            Failure::usage(
                errs.iter()
                    .map(|e| format!("{}: {}", e.field, e.message))
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })?;
    s.persist()?;
    println!("{key} = {}", s.value(key));
    Ok(())
}
