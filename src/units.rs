//! Sizes as DBAs write them (`256M`, `2G`, `1048576`) and as innops prints them.

use crate::error::bad_input;

/// Parse a size: bytes, or a number with a K/M/G/T suffix (powers of 1024, as the server reads them).
pub fn parse_size(s: &str) -> anyhow::Result<u64> {
    let t = s.trim();
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        Some('T') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    let n: u64 = num.trim().parse().map_err(|_| {
        bad_input(format!("'{s}' is not a size: write bytes or a number with K, M, G or T (for example 256M or 2G)"))
    })?;
    n.checked_mul(mult)
        .ok_or_else(|| bad_input(format!("'{s}' is too large a size: write a smaller number")))
}

/// `268435456` → `256M`, `1610612736` → `1.5G`; exact where it can be.
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
    fn sizes_format_exactly_where_they_can() {
        assert_eq!(format_size(268435456), "256M");
        assert_eq!(format_size(1610612736), "1.5G");
        assert_eq!(format_size(100), "100B");
    }
}
