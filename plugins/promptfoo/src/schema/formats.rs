//! ajv-formats 3.0.1's full formats: which formats exist, what each
//! applies to, their checks, and the `format` keyword.

use std::sync::OnceLock;

use serde_json::json;

use super::rules::Group;
use super::validate::At;
use super::values::{as_num, regex_plain};
use super::{Check, Validator};
use crate::js;

impl<'s> Validator<'s> {
    /// `format`: the string formats on strings, the number formats on
    /// numbers.
    pub(super) fn kw_format(&self, at: At<'_, 's>) -> Check {
        let At {
            kw, sch, g, data, ..
        } = at;
        let Some(f) = sch.as_str() else { return Ok(()) };
        let Some(kind) = format_kind(f) else {
            return Ok(());
        };
        let rule_type = if g == Group::Number {
            "number"
        } else {
            "string"
        };
        let ok = match kind {
            FormatKind::Any => true,
            FormatKind::String if rule_type == "string" => {
                check_string_format(f, data.as_str().unwrap_or_default())
            }
            FormatKind::Number if rule_type == "number" => {
                check_number_format(f, as_num(data).unwrap_or(f64::NAN))
            }
            _ => true,
        };
        if ok {
            Ok(())
        } else {
            Err(self.err(
                at,
                kw,
                json!({ "format": f }),
                format!("must match format \"{f}\""),
            ))
        }
    }
}

pub(super) enum FormatKind {
    String,
    Number,
    Any,
}

/// ajv-formats' full formats, and what each applies to.
pub(super) fn format_kind(f: &str) -> Option<FormatKind> {
    Some(match f {
        "date"
        | "time"
        | "date-time"
        | "iso-time"
        | "iso-date-time"
        | "duration"
        | "uri"
        | "uri-reference"
        | "uri-template"
        | "url"
        | "email"
        | "hostname"
        | "ipv4"
        | "ipv6"
        | "regex"
        | "uuid"
        | "json-pointer"
        | "json-pointer-uri-fragment"
        | "relative-json-pointer"
        | "byte" => FormatKind::String,
        "int32" | "int64" | "float" | "double" => FormatKind::Number,
        "password" | "binary" => FormatKind::Any,
        _ => return None,
    })
}

fn cached(
    slot: &'static OnceLock<regress::Regex>,
    pattern: &str,
    flags: &str,
) -> &'static regress::Regex {
    slot.get_or_init(|| regress::Regex::with_flags(pattern, flags).expect("ajv-formats pattern"))
}

macro_rules! format_regex {
    ($pattern:expr, $flags:expr) => {{
        static SLOT: OnceLock<regress::Regex> = OnceLock::new();
        cached(&SLOT, $pattern, $flags)
    }};
}

const URI_REFERENCE: &str = r#"^(?:[a-z][a-z0-9+\-.]*:)?(?:\/?\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:(?:(?:(?:[0-9a-f]{1,4}:){6}|::(?:[0-9a-f]{1,4}:){5}|(?:[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){4}|(?:(?:[0-9a-f]{1,4}:){0,1}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){3}|(?:(?:[0-9a-f]{1,4}:){0,2}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){2}|(?:(?:[0-9a-f]{1,4}:){0,3}[0-9a-f]{1,4})?::[0-9a-f]{1,4}:|(?:(?:[0-9a-f]{1,4}:){0,4}[0-9a-f]{1,4})?::)(?:[0-9a-f]{1,4}:[0-9a-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?))|(?:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})?::[0-9a-f]{1,4}|(?:(?:[0-9a-f]{1,4}:){0,6}[0-9a-f]{1,4})?::)|[Vv][0-9a-f]+\.[a-z0-9\-._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?)|(?:[a-z0-9\-._~!$&'"()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[a-z0-9\-._~!$&'"()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[a-z0-9\-._~!$&'"()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'"()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[a-z0-9\-._~!$&'"()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'"()*+,;=:@]|%[0-9a-f]{2})*)*)?(?:\?(?:[a-z0-9\-._~!$&'"()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[a-z0-9\-._~!$&'"()*+,;=:@/?]|%[0-9a-f]{2})*)?$"#;
const URI: &str = r#"^(?:[a-z][a-z0-9+\-.]*:)(?:\/?\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:(?:(?:(?:[0-9a-f]{1,4}:){6}|::(?:[0-9a-f]{1,4}:){5}|(?:[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){4}|(?:(?:[0-9a-f]{1,4}:){0,1}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){3}|(?:(?:[0-9a-f]{1,4}:){0,2}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){2}|(?:(?:[0-9a-f]{1,4}:){0,3}[0-9a-f]{1,4})?::[0-9a-f]{1,4}:|(?:(?:[0-9a-f]{1,4}:){0,4}[0-9a-f]{1,4})?::)(?:[0-9a-f]{1,4}:[0-9a-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?))|(?:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})?::[0-9a-f]{1,4}|(?:(?:[0-9a-f]{1,4}:){0,6}[0-9a-f]{1,4})?::)|[Vv][0-9a-f]+\.[a-z0-9\-._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?)|(?:[a-z0-9\-._~!$&'()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)(?:\?(?:[a-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[a-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?$"#;
const URL: &str = r"^(?:https?|ftp):\/\/(?:\S+(?::\S*)?@)?(?:(?!(?:10|127)(?:\.\d{1,3}){3})(?!(?:169\.254|192\.168)(?:\.\d{1,3}){2})(?!172\.(?:1[6-9]|2\d|3[0-1])(?:\.\d{1,3}){2})(?:[1-9]\d?|1\d\d|2[01]\d|22[0-3])(?:\.(?:1?\d{1,2}|2[0-4]\d|25[0-5])){2}(?:\.(?:[1-9]\d?|1\d\d|2[0-4]\d|25[0-4]))|(?:(?:[a-z0-9\u{00a1}-\u{ffff}]+-)*[a-z0-9\u{00a1}-\u{ffff}]+)(?:\.(?:[a-z0-9\u{00a1}-\u{ffff}]+-)*[a-z0-9\u{00a1}-\u{ffff}]+)*(?:\.(?:[a-z\u{00a1}-\u{ffff}]{2,})))(?::\d{2,5})?(?:\/[^\s]*)?$";
const IPV6: &str = r"^((([0-9a-f]{1,4}:){7}([0-9a-f]{1,4}|:))|(([0-9a-f]{1,4}:){6}(:[0-9a-f]{1,4}|((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})|:))|(([0-9a-f]{1,4}:){5}(((:[0-9a-f]{1,4}){1,2})|:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})|:))|(([0-9a-f]{1,4}:){4}(((:[0-9a-f]{1,4}){1,3})|((:[0-9a-f]{1,4})?:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){3}(((:[0-9a-f]{1,4}){1,4})|((:[0-9a-f]{1,4}){0,2}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){2}(((:[0-9a-f]{1,4}){1,5})|((:[0-9a-f]{1,4}){0,3}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){1}(((:[0-9a-f]{1,4}){1,6})|((:[0-9a-f]{1,4}){0,4}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(:(((:[0-9a-f]{1,4}){1,7})|((:[0-9a-f]{1,4}){0,5}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:)))$";

fn is_leap_year(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn check_date(s: &str) -> bool {
    let re = format_regex!(r"^(\d\d\d\d)-(\d\d)-(\d\d)$", "");
    let Some(m) = re.find(s) else { return false };
    let part = |i: usize| -> i64 {
        m.group(i)
            .and_then(|r| s[r].parse::<i64>().ok())
            .unwrap_or(0)
    };
    let (year, month, day) = (part(1), part(2), part(3));
    const DAYS: [i64; 13] = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    (1..=12).contains(&month)
        && day >= 1
        && day
            <= if month == 2 && is_leap_year(year) {
                29
            } else {
                DAYS[month as usize]
            }
}

fn check_time(s: &str, strict_tz: bool) -> bool {
    let re = format_regex!(
        r"^(\d\d):(\d\d):(\d\d(?:\.\d+)?)(z|([+-])(\d\d)(?::?(\d\d))?)?$",
        "i"
    );
    let Some(m) = re.find(s) else { return false };
    let text = |i: usize| m.group(i).map(|r| &s[r]);
    let num = |i: usize| text(i).and_then(|t| t.parse::<f64>().ok()).unwrap_or(0.0);
    let (hr, min, sec) = (num(1), num(2), num(3));
    let tz = text(4);
    let sign = if text(5) == Some("-") { -1.0 } else { 1.0 };
    let (tz_h, tz_m) = (num(6), num(7));
    if tz_h > 23.0 || tz_m > 59.0 || (strict_tz && tz.is_none_or(str::is_empty)) {
        return false;
    }
    if hr <= 23.0 && min <= 59.0 && sec < 60.0 {
        return true;
    }
    let utc_min = min - tz_m * sign;
    let utc_hr = hr - tz_h * sign - if utc_min < 0.0 { 1.0 } else { 0.0 };
    (utc_hr == 23.0 || utc_hr == -1.0) && (utc_min == 59.0 || utc_min == -1.0) && sec < 61.0
}

fn check_date_time(s: &str, strict_tz: bool) -> bool {
    // `str.split(/t|\s/i)` must give two parts.
    let parts: Vec<&str> = s
        .split(|c: char| c == 't' || c == 'T' || js::is_js_space(c))
        .collect();
    parts.len() == 2 && check_date(parts[0]) && check_time(parts[1], strict_tz)
}

/// A string format of ajv-formats' full set.
fn check_string_format(f: &str, s: &str) -> bool {
    match f {
        "date" => check_date(s),
        "time" => check_time(s, true),
        "iso-time" => check_time(s, false),
        "date-time" => check_date_time(s, true),
        "iso-date-time" => check_date_time(s, false),
        "duration" => format_regex!(
            r"^P(?!$)((\d+Y)?(\d+M)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+S)?)?|(\d+W)?)$",
            ""
        )
        .find(s)
        .is_some(),
        "uri" => {
            (s.contains('/') || s.contains(':')) && format_regex!(URI, "i").find(s).is_some()
        }
        "uri-reference" => format_regex!(URI_REFERENCE, "i").find(s).is_some(),
        "uri-template" => format_regex!(
            r#"^(?:(?:[^\x00-\x20"'<>%\\^`{|}]|%[0-9a-f]{2})|\{[+#./;?&=,!@|]?(?:[a-z0-9_]|%[0-9a-f]{2})+(?::[1-9][0-9]{0,3}|\*)?(?:,(?:[a-z0-9_]|%[0-9a-f]{2})+(?::[1-9][0-9]{0,3}|\*)?)*\})*$"#,
            "i"
        )
        .find(s)
        .is_some(),
        "url" => format_regex!(URL, "iu").find(s).is_some(),
        "email" => format_regex!(
            r"^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$",
            "i"
        )
        .find(s)
        .is_some(),
        "hostname" => format_regex!(
            r"^(?=.{1,253}\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\.?$",
            "i"
        )
        .find(s)
        .is_some(),
        "ipv4" => format_regex!(
            r"^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$",
            ""
        )
        .find(s)
        .is_some(),
        "ipv6" => format_regex!(IPV6, "i").find(s).is_some(),
        "regex" => {
            let z_anchor = format_regex!(r"[^\\]\\Z", "");
            z_anchor.find(s).is_none() && regex_plain(s).is_ok()
        }
        "uuid" => format_regex!(
            r"^(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$",
            "i"
        )
        .find(s)
        .is_some(),
        "json-pointer" => format_regex!(r"^(?:\/(?:[^~/]|~0|~1)*)*$", "").find(s).is_some(),
        "json-pointer-uri-fragment" => format_regex!(
            r"^#(?:\/(?:[a-z0-9_\-.!$&'()*+,;:=@]|%[0-9a-f]{2}|~0|~1)*)*$",
            "i"
        )
        .find(s)
        .is_some(),
        "relative-json-pointer" => format_regex!(
            r"^(?:0|[1-9][0-9]*)(?:#|(?:\/(?:[^~/]|~0|~1)*)*)$",
            ""
        )
        .find(s)
        .is_some(),
        "byte" => format_regex!(
            r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$",
            "m"
        )
        .find(s)
        .is_some(),
        _ => true,
    }
}

/// A number format: `int32`, `int64` (`Number.isInteger`), `float` and
/// `double` (anything).
fn check_number_format(f: &str, x: f64) -> bool {
    let integer = x.is_finite() && x.fract() == 0.0;
    match f {
        "int32" => integer && (-2_147_483_648.0..=2_147_483_647.0).contains(&x),
        "int64" => integer,
        _ => true,
    }
}
