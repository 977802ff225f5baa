//! `--pages auto|never`: when the page pass runs, as a recovery's parameters keep it (plan.json), read back from
//! plans written before the choice had a name.

use serde::{Deserialize, Serialize};

/// When the page pass runs. `Auto` (the default) on every table the SQL reads left lost ranges in or could not
/// open, when there is a copy to read; `Never`: the SQL result alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pages {
    Auto,
    Never,
}

impl<'de> Deserialize<'de> for Pages {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Pages, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Any {
            Switch(bool),
            Named(String),
        }
        match Any::deserialize(d)? {
            Any::Switch(true) => Ok(Pages::Auto),
            Any::Switch(false) => Ok(Pages::Never),
            Any::Named(n) => Pages::named(&n).ok_or_else(|| {
                serde::de::Error::custom(format!("pages: {n} is not auto or never"))
            }),
        }
    }
}

impl Pages {
    pub fn named(s: &str) -> Option<Pages> {
        match s {
            "auto" => Some(Pages::Auto),
            "never" => Some(Pages::Never),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_from_before_the_choice_had_a_name_reads_as_it_ran() {
        let read = |j: &str| serde_json::from_str::<Pages>(j).ok();
        assert_eq!(read("true"), Some(Pages::Auto));
        assert_eq!(read("false"), Some(Pages::Never));
        assert_eq!(read("\"auto\""), Some(Pages::Auto));
        assert_eq!(read("\"never\""), Some(Pages::Never));
        assert_eq!(read("\"always\""), None);
        assert_eq!(serde_json::to_string(&Pages::Auto).unwrap(), "\"auto\"");
    }
}
