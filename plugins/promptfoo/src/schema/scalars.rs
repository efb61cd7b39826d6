//! The number group (`maximum`, `minimum`, their exclusive forms,
//! `multipleOf`) and the string group (`maxLength`, `minLength`,
//! `pattern`); `format` is in `formats`.

use serde_json::json;

use super::validate::At;
use super::values::{as_num, js_parse_int, regex_u};
use super::{Check, Validator};
use crate::js;

impl<'s> Validator<'s> {
    /// The number group's keywords.
    pub(super) fn number_keyword(&self, at: At<'_, 's>) -> Check {
        match at.kw {
            "maximum" | "minimum" | "exclusiveMaximum" | "exclusiveMinimum" => self.kw_limit(at),
            "multipleOf" => self.kw_multiple_of(at),
            _ => Ok(()),
        }
    }

    /// The string group's keywords.
    pub(super) fn string_keyword(&self, at: At<'_, 's>) -> Check {
        match at.kw {
            "maxLength" | "minLength" => self.kw_length(at),
            "pattern" => self.kw_pattern(at),
            _ => Ok(()),
        }
    }

    /// `maximum`, `minimum`, `exclusiveMaximum`, `exclusiveMinimum`.
    fn kw_limit(&self, at: At<'_, 's>) -> Check {
        let At { kw, sch, data, .. } = at;
        let (Some(x), Some(limit)) = (as_num(data), as_num(sch)) else {
            return Ok(());
        };
        let (ok_str, ok) = match kw {
            "maximum" => ("<=", x <= limit),
            "minimum" => (">=", x >= limit),
            "exclusiveMaximum" => ("<", x < limit),
            _ => (">", x > limit),
        };
        if ok {
            Ok(())
        } else {
            Err(self.err(
                at,
                kw,
                json!({ "comparison": ok_str, "limit": sch }),
                format!("must be {ok_str} {}", js::number(limit)),
            ))
        }
    }

    /// `multipleOf`, through JavaScript's `parseInt`.
    fn kw_multiple_of(&self, at: At<'_, 's>) -> Check {
        let At { kw, sch, data, .. } = at;
        let (Some(x), Some(d)) = (as_num(data), as_num(sch)) else {
            return Ok(());
        };
        let res = x / d;
        let invalid = d == 0.0 || js_parse_int(res) != Some(res);
        if invalid {
            Err(self.err(
                at,
                kw,
                json!({ "multipleOf": sch }),
                format!("must be multiple of {}", js::number(d)),
            ))
        } else {
            Ok(())
        }
    }

    /// `maxLength`, `minLength`, in code points.
    fn kw_length(&self, at: At<'_, 's>) -> Check {
        let At { kw, sch, data, .. } = at;
        let (Some(s), Some(limit)) = (data.as_str(), as_num(sch)) else {
            return Ok(());
        };
        let len = s.chars().count() as f64;
        let (bad, comp_word) = if kw == "maxLength" {
            (len > limit, "more")
        } else {
            (len < limit, "fewer")
        };
        if bad {
            Err(self.err(
                at,
                kw,
                json!({ "limit": sch }),
                format!(
                    "must NOT have {comp_word} than {} characters",
                    js::number(limit)
                ),
            ))
        } else {
            Ok(())
        }
    }

    /// `pattern`, with the `u` flag.
    fn kw_pattern(&self, at: At<'_, 's>) -> Check {
        let At { kw, sch, data, .. } = at;
        let (Some(s), Some(p)) = (data.as_str(), sch.as_str()) else {
            return Ok(());
        };
        let matched = regex_u(p).is_ok_and(|re| re.find(s).is_some());
        if matched {
            Ok(())
        } else {
            Err(self.err(
                at,
                kw,
                json!({ "pattern": p }),
                format!("must match pattern \"{p}\""),
            ))
        }
    }
}
