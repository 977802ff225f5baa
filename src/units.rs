//! Sizes as DBAs write them (`256M`, `2G`, `3.9G`, `1048576`), counts and rates as innops prints them.

use crate::error::bad_input;

const MIB: u64 = 1 << 20;

/// Parse a size: bytes, or a number with a K/M/G/T suffix (powers of 1024, as the server reads them). A
/// decimal number (`3.9G`, `1.5M`) is accepted too and rounded **up** to a whole MiB when its suffix is M or
/// larger (every redo-size granule the servers have, 4 KiB for MariaDB's `innodb_log_file_size` and 1 MiB for
/// MySQL's `innodb_redo_log_capacity`, divides 1 MiB), else up to a whole byte.
pub fn parse_size(s: &str) -> anyhow::Result<u64> {
    let t = s.trim();
    // `256MB`, `256MiB` (pt-online-schema-change's and the manuals' spelling) mean `256M`.
    let t = ["iB", "ib", "IB", "B", "b"]
        .iter()
        .find_map(|u| {
            t.strip_suffix(u)
                .filter(|r| r.chars().last().is_some_and(|c| "KMGTkmgt".contains(c)))
        })
        .unwrap_or(t);
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M') => (&t[..t.len() - 1], MIB),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        Some('T') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    let num = num.trim();
    let not_a_size = || {
        bad_input(format!(
            "'{s}' is not a size: write bytes or a number with K, M, G or T (for example 256M, 256MB, 2G or 3.9G)"
        ))
    };
    let too_large = || bad_input(format!("'{s}' is too large a size: write a smaller number"));
    if let Some((whole, frac)) = num.split_once('.') {
        // Exact decimal arithmetic: digits only, no sign, no exponent.
        let digits = |d: &str| d.chars().all(|c| c.is_ascii_digit());
        if frac.is_empty() || !digits(whole) || !digits(frac) || mult == 1 {
            return Err(not_a_size());
        }
        let whole: u64 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| too_large())?
        };
        let frac = frac.trim_end_matches('0');
        if frac.len() > 9 {
            return Err(not_a_size());
        }
        let scale = 10u64.pow(frac.len() as u32);
        let f: u64 = if frac.is_empty() {
            0
        } else {
            frac.parse().map_err(|_| not_a_size())?
        };
        let bytes = whole
            .checked_mul(mult)
            .and_then(|w| {
                let part = (u128::from(f) * u128::from(mult)).div_ceil(u128::from(scale));
                w.checked_add(u64::try_from(part).ok()?)
            })
            .ok_or_else(too_large)?;
        let granule = if mult >= MIB { MIB } else { 1 };
        return bytes
            .div_ceil(granule)
            .checked_mul(granule)
            .ok_or_else(too_large);
    }
    let n: u64 = num.parse().map_err(|_| not_a_size())?;
    n.checked_mul(mult).ok_or_else(too_large)
}

/// A duration in milliseconds as `--chunk-time` takes it: `500` and `500ms` are milliseconds; `0.5`, `0.5s` and
/// `2s` are seconds, as pt-online-schema-change's `--chunk-time` reads them. A bare 1–9 is refused with both
/// spellings named: it is a pt-osc habit (seconds) more likely than that many milliseconds.
pub fn parse_millis(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let bad = || {
        format!(
            "'{s}' is not a duration: write milliseconds (500 or 500ms) or seconds (0.5s or 0.5)"
        )
    };
    let secs = |n: &str| -> Result<u64, String> {
        let v: f64 = n.parse().map_err(|_| bad())?;
        if !v.is_finite() || !(0.0..=86_400.0).contains(&v) {
            return Err(bad());
        }
        Ok((v * 1000.0).round() as u64)
    };
    if let Some(ms) = t.strip_suffix("ms") {
        return ms.trim().parse::<u64>().map_err(|_| bad());
    }
    if let Some(n) = t.strip_suffix('s') {
        return secs(n.trim());
    }
    if t.contains('.') {
        return secs(&t);
    }
    let n: u64 = t.parse().map_err(|_| bad())?;
    if (1..10).contains(&n) {
        return Err(format!(
            "--chunk-time {n} is milliseconds in innops (pt-online-schema-change's --chunk-time is seconds): write {n}s for {n} second(s), or milliseconds from 10"
        ));
    }
    Ok(n)
}

/// `268435456` → `256M`, `1610612736` → `1.5G`; exact where it can be. For reading: a command line takes
/// [`size_arg`], which always parses back to the same number.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1 << 40, "T"),
        (1 << 30, "G"),
        (1 << 20, "M"),
        (1 << 10, "K"),
    ];
    for (u, name) in UNITS {
        if bytes >= u {
            if bytes.is_multiple_of(u) {
                return format!("{}{name}", bytes / u);
            }
            return format!("{:.1}{name}", bytes as f64 / u as f64);
        }
    }
    format!("{bytes}B")
}

/// A size for a command line: the largest suffix that states it exactly (`4032M`, not `3.9G`), so
/// [`parse_size`] gives back the same number of bytes.
pub fn size_arg(bytes: u64) -> String {
    for (u, name) in [
        (1u64 << 40, "T"),
        (1 << 30, "G"),
        (1 << 20, "M"),
        (1 << 10, "K"),
    ] {
        if bytes >= u && bytes.is_multiple_of(u) {
            return format!("{}{name}", bytes / u);
        }
    }
    bytes.to_string()
}

/// `1234567` → `1,234,567`.
pub fn format_count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `141167.9228` rows per second → `141,168 rows/s`; below 10 one decimal (`2.5 rows/s`).
pub fn format_rate(per_sec: f64, unit: &str) -> String {
    if !per_sec.is_finite() || per_sec <= 0.0 {
        return format!("0 {unit}/s");
    }
    if per_sec < 10.0 {
        return format!("{per_sec:.1} {unit}/s");
    }
    format!("{} {unit}/s", format_count(per_sec.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_and_without_suffixes() {
        assert_eq!(parse_size("256M").unwrap(), 268435456);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size(" 1K ").unwrap(), 1024);
        assert_eq!(
            crate::error::exit_code_of(&parse_size("lots").unwrap_err()),
            2
        );
        assert!(parse_size("-1M").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn sizes_take_the_peers_spellings() {
        assert_eq!(parse_size("256MB").unwrap(), 268435456);
        assert_eq!(parse_size("256MiB").unwrap(), 268435456);
        assert_eq!(parse_size("1gb").unwrap(), 1 << 30);
        assert_eq!(parse_size("1.5GB").unwrap(), 1536 * MIB);
        // A B alone is not a unit innops knows: bytes are written bare.
        assert!(parse_size("256B").is_err());
        assert!(parse_size("MB").is_err());
    }

    #[test]
    fn durations_read_milliseconds_and_pt_osc_seconds() {
        assert_eq!(parse_millis("500"), Ok(500));
        assert_eq!(parse_millis("500ms"), Ok(500));
        assert_eq!(parse_millis("0.5"), Ok(500));
        assert_eq!(parse_millis("0.5s"), Ok(500));
        assert_eq!(parse_millis("2s"), Ok(2000));
        assert_eq!(parse_millis(" 1.25S "), Ok(1250));
        let e = parse_millis("1").unwrap_err();
        assert!(e.contains("write 1s for 1 second(s)"), "{e}");
        for bad in ["", "fast", "-1s", "1e9s", "0.5ms", "nan"] {
            assert!(parse_millis(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn decimal_sizes_round_up_to_a_whole_mib() {
        // 3.9 × 1024 MiB = 3993.6 MiB → 3994 MiB.
        assert_eq!(parse_size("3.9G").unwrap(), 3994 * MIB);
        assert_eq!(parse_size("1.5G").unwrap(), 1536 * MIB);
        assert_eq!(parse_size("0.5M").unwrap(), MIB);
        assert_eq!(parse_size(".25G").unwrap(), 256 * MIB);
        assert_eq!(parse_size("2.0G").unwrap(), 2 << 30);
        assert_eq!(parse_size("1.5K").unwrap(), 1536);
        assert_eq!(parse_size("1.0001K").unwrap(), 1025);
        for bad in [
            "1.5",
            "1.G",
            ".G",
            "1.-5G",
            "1e3M",
            "1..2G",
            "1.2.3G",
            "1.0000000001G",
        ] {
            let err = parse_size(bad);
            assert!(err.is_err(), "{bad} parsed");
            assert_eq!(crate::error::exit_code_of(&err.unwrap_err()), 2);
        }
        assert!(parse_size("99999999999.5T").is_err());
    }

    #[test]
    fn sizes_format_exactly_where_they_can() {
        assert_eq!(format_size(268435456), "256M");
        assert_eq!(format_size(1610612736), "1.5G");
        assert_eq!(format_size(100), "100B");
    }

    #[test]
    fn command_line_sizes_parse_back_to_the_same_bytes() {
        assert_eq!(size_arg(4032 * MIB), "4032M");
        assert_eq!(size_arg(2 << 30), "2G");
        assert_eq!(size_arg(1536), "1536");
        assert_eq!(size_arg(4096), "4K");
        for b in [4032 * MIB, 96 * MIB, 1 << 30, 5000, 4096, 3994 * MIB] {
            assert_eq!(parse_size(&size_arg(b)).unwrap(), b);
        }
    }

    #[test]
    fn counts_and_rates_read_like_numbers() {
        assert_eq!(format_count(0), "0");
        assert_eq!(format_count(999), "999");
        assert_eq!(format_count(1000), "1,000");
        assert_eq!(format_count(1234567), "1,234,567");
        assert_eq!(format_rate(141167.9228, "rows"), "141,168 rows/s");
        assert_eq!(format_rate(2.54, "rows"), "2.5 rows/s");
        assert_eq!(format_rate(0.0, "rows"), "0 rows/s");
        assert_eq!(format_rate(f64::NAN, "rows"), "0 rows/s");
    }
}
