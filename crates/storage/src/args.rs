//! Checks for the SQL functions' arguments, shared by every `evolu_*` function.
//!
//! better-sqlite3 (and our binding) binds every JS number as REAL, so a level, index or
//! bucket boundary arrives as `3.0`, not `3`; integral REALs are accepted, anything else
//! that is not an integer in range is refused. Bucket lists arrive as JSON text such as
//! `[3125,6250.0]`; a small parser for an array of numbers reads them.

use super::{ArgumentError, OwnerId, Strategy, Timestamp, MAX_LEVEL};

/// A numeric SQL argument as SQLite hands it over.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SqlNumber {
    Integer(i64),
    Real(f64),
}

impl SqlNumber {
    /// The value as an i64 if it is an integer (or an integral REAL inside the i64 range).
    fn to_integer(self) -> Option<i64> {
        match self {
            Self::Integer(v) => Some(v),
            Self::Real(v) => integral_f64(v),
        }
    }
}

/// `v` as an i64 if it is finite, integral and inside the i64 range (`-0.0` is 0).
fn integral_f64(v: f64) -> Option<i64> {
    /// 2^63, the first f64 above i64::MAX.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if v.is_finite() && v.fract() == 0.0 && (-LIMIT..LIMIT).contains(&v) {
        // Integral and in range: the cast is exact.
        Some(v as i64)
    } else {
        None
    }
}

/// A 16-byte owner id (`OwnerIdBytes`).
pub fn owner_arg(bytes: &[u8]) -> Result<OwnerId, ArgumentError> {
    bytes.try_into().map_err(|_| ArgumentError::OwnerId)
}

/// A 16-byte timestamp (`TimestampBytes`). The reserved all-`0xFF` value is accepted here,
/// since it is a valid bound for reads; [`insert`](super::insert) refuses to store it.
pub fn timestamp_arg(bytes: &[u8]) -> Result<Timestamp, ArgumentError> {
    bytes.try_into().map_err(|_| ArgumentError::Timestamp)
}

/// A level in 1..=10 (`3` and `3.0` are accepted; `0`, `11` and `2.5` are not).
pub fn level_arg(value: SqlNumber) -> Result<u8, ArgumentError> {
    value
        .to_integer()
        .and_then(|v| u8::try_from(v).ok())
        .filter(|level| (1..=MAX_LEVEL).contains(level))
        .ok_or(ArgumentError::Level)
}

/// An index, rank or bucket boundary: a non-negative integer below 2^63 (`5` or `5.0`).
pub fn rank_arg(value: SqlNumber) -> Result<u64, ArgumentError> {
    value
        .to_integer()
        .and_then(|v| u64::try_from(v).ok())
        .ok_or(ArgumentError::Rank)
}

/// Evolu's `StorageInsertTimestampStrategy`, as text.
pub fn strategy_arg(text: &str) -> Result<Strategy, ArgumentError> {
    match text {
        "append" => Ok(Strategy::Append),
        "prepend" => Ok(Strategy::Prepend),
        "insert" => Ok(Strategy::Insert),
        _ => Err(ArgumentError::Strategy),
    }
}

/// Parses a JSON array of non-negative integers (`[3125, 6250.0, 9.375e3]`), as Evolu's
/// `JSON.stringify(buckets)` writes it. Order and range are checked by
/// [`fingerprint_ranges`](super::fingerprint_ranges), which knows the size.
pub fn parse_buckets(json: &str) -> Result<Vec<u64>, ArgumentError> {
    let mut parser = JsonNumbers {
        bytes: json.as_bytes(),
        at: 0,
    };
    parser.array().ok_or(ArgumentError::BucketsJson)
}

/// A cursor over JSON text that reads only `[ number, ... ]`.
struct JsonNumbers<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl JsonNumbers<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.at += 1;
        }
        found
    }

    /// `ws [ ws ] ws` or `ws [ number (, number)* ] ws`, and nothing after it.
    fn array(&mut self) -> Option<Vec<u64>> {
        self.skip_whitespace();
        if !self.eat(b'[') {
            return None;
        }
        let mut values = Vec::new();
        self.skip_whitespace();
        if !self.eat(b']') {
            loop {
                self.skip_whitespace();
                values.push(self.number()?);
                self.skip_whitespace();
                if self.eat(b']') {
                    break;
                }
                if !self.eat(b',') {
                    return None;
                }
            }
        }
        self.skip_whitespace();
        (self.at == self.bytes.len()).then_some(values)
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        self.at - start
    }

    /// One JSON number (RFC 8259 grammar) whose exact decimal value is a non-negative
    /// integer below 2^63. The value is computed from the digits, never through a float:
    /// `1.0000000000000001` and `1e-400` are not integers and are refused (a float parse
    /// would round them to 1 and 0), while `3125.0`, `9.375e3` and `-0` are accepted.
    fn number(&mut self) -> Option<u64> {
        let negative = self.eat(b'-');
        let int_start = self.at;
        let int_digits = self.digits();
        // No leading zeros: "0" alone or a non-zero first digit.
        if int_digits == 0 || (int_digits > 1 && self.bytes[int_start] == b'0') {
            return None;
        }
        let int_part = &self.bytes[int_start..self.at];
        let mut frac_part: &[u8] = &[];
        if self.eat(b'.') {
            let frac_start = self.at;
            if self.digits() == 0 {
                return None;
            }
            frac_part = &self.bytes[frac_start..self.at];
        }
        let mut exponent: i64 = 0;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            let exp_negative = if self.eat(b'+') {
                false
            } else {
                self.eat(b'-')
            };
            let exp_start = self.at;
            if self.digits() == 0 {
                return None;
            }
            // Saturating: any exponent beyond ±10^17 decides the result the same way.
            for &d in &self.bytes[exp_start..self.at] {
                exponent = exponent
                    .saturating_mul(10)
                    .saturating_add(i64::from(d - b'0'));
            }
            if exp_negative {
                exponent = -exponent;
            }
        }
        exact_integer(int_part, frac_part, exponent, negative)
    }
}

/// The value of the decimal `int_part.frac_part × 10^exponent` (ASCII digits) if it is an
/// integer in 0..2^63 (`-0` is 0).
fn exact_integer(int_part: &[u8], frac_part: &[u8], exponent: i64, negative: bool) -> Option<u64> {
    // All significant digits, and the power of ten of the last one.
    let digits: Vec<u8> = int_part.iter().chain(frac_part).map(|d| d - b'0').collect();
    let frac_len = i64::try_from(frac_part.len()).ok()?;
    let mut scale = exponent.saturating_sub(frac_len);
    let mut significant = digits.as_slice();
    // Drop leading zeros, then move trailing zeros into the scale.
    while let [0, rest @ ..] = significant {
        significant = rest;
    }
    while let [rest @ .., 0] = significant {
        significant = rest;
        scale = scale.saturating_add(1);
    }
    if significant.is_empty() {
        return Some(0); // zero, whatever its sign or exponent
    }
    if negative || scale < 0 {
        return None; // negative, or a fraction remains
    }
    let mut value: u64 = 0;
    for &d in significant {
        value = value.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    for _ in 0..scale {
        value = value.checked_mul(10)?;
        if value > i64::MAX.unsigned_abs() {
            return None;
        }
    }
    (value <= i64::MAX.unsigned_abs()).then_some(value)
}

#[cfg(test)]
mod test {
    use super::super::INFINITE_TIMESTAMP;
    use super::*;

    #[test]
    fn owner_and_timestamp_must_be_16_bytes() {
        assert_eq!(owner_arg(&[7; 16]), Ok([7; 16]));
        assert_eq!(owner_arg(&[7; 15]), Err(ArgumentError::OwnerId));
        assert_eq!(owner_arg(&[7; 17]), Err(ArgumentError::OwnerId));
        assert_eq!(owner_arg(&[]), Err(ArgumentError::OwnerId));
        assert_eq!(timestamp_arg(&[1; 16]), Ok([1; 16]));
        assert_eq!(timestamp_arg(&[1; 12]), Err(ArgumentError::Timestamp));
        assert_eq!(timestamp_arg(&[1; 32]), Err(ArgumentError::Timestamp));
        assert_eq!(timestamp_arg(&INFINITE_TIMESTAMP), Ok(INFINITE_TIMESTAMP));
    }

    #[test]
    fn levels_accept_integral_reals_from_javascript() {
        for level in 1..=10u8 {
            assert_eq!(level_arg(SqlNumber::Integer(level.into())), Ok(level));
            assert_eq!(level_arg(SqlNumber::Real(level.into())), Ok(level));
        }
        for bad in [0, 11, -1, 256, 257, i64::MIN, i64::MAX] {
            assert_eq!(
                level_arg(SqlNumber::Integer(bad)),
                Err(ArgumentError::Level)
            );
        }
        for bad in [
            0.0,
            11.0,
            2.5,
            1.0000001,
            -1.0,
            f64::NAN,
            f64::INFINITY,
            1e300,
        ] {
            assert_eq!(level_arg(SqlNumber::Real(bad)), Err(ArgumentError::Level));
        }
    }

    #[test]
    fn ranks_are_non_negative_integers() {
        assert_eq!(rank_arg(SqlNumber::Integer(0)), Ok(0));
        assert_eq!(rank_arg(SqlNumber::Real(-0.0)), Ok(0));
        assert_eq!(rank_arg(SqlNumber::Real(3125.0)), Ok(3125));
        assert_eq!(
            rank_arg(SqlNumber::Integer(i64::MAX)),
            Ok(i64::MAX.unsigned_abs())
        );
        assert_eq!(
            rank_arg(SqlNumber::Real(9_007_199_254_740_992.0)),
            Ok(1 << 53)
        );
        for bad in [-1, i64::MIN] {
            assert_eq!(rank_arg(SqlNumber::Integer(bad)), Err(ArgumentError::Rank));
        }
        for bad in [
            -1.0,
            0.5,
            9_223_372_036_854_775_808.0,
            f64::NAN,
            f64::NEG_INFINITY,
        ] {
            assert_eq!(rank_arg(SqlNumber::Real(bad)), Err(ArgumentError::Rank));
        }
    }

    #[test]
    fn strategies_are_evolus_names() {
        assert_eq!(strategy_arg("append"), Ok(Strategy::Append));
        assert_eq!(strategy_arg("prepend"), Ok(Strategy::Prepend));
        assert_eq!(strategy_arg("insert"), Ok(Strategy::Insert));
        for bad in ["", "Append", "append ", "other"] {
            assert_eq!(strategy_arg(bad), Err(ArgumentError::Strategy));
        }
    }

    #[test]
    fn buckets_parse_integers_and_integral_reals() {
        let balanced = (1..=16).map(|i| i * 3125).collect::<Vec<u64>>();
        let json = format!(
            "[{}]",
            balanced
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        );
        assert_eq!(parse_buckets(&json), Ok(balanced));
        assert_eq!(parse_buckets("[]"), Ok(vec![]));
        assert_eq!(parse_buckets(" [ ] "), Ok(vec![]));
        assert_eq!(parse_buckets("[0]"), Ok(vec![0]));
        assert_eq!(
            parse_buckets("\n[ 3125.0 ,\t6250, 9.375e3, 1E1, 2e+0, 500e-2, -0 ]\r\n"),
            Ok(vec![3125, 6250, 9375, 10, 2, 5, 0])
        );
        assert_eq!(
            parse_buckets("[9223372036854775807]"),
            Ok(vec![i64::MAX.unsigned_abs()])
        );
        // Exact decimal values, beyond what an f64 holds.
        assert_eq!(
            parse_buckets("[9007199254740993, 92233720368547758.07e2, 12345678901234567890e-1]"),
            Ok(vec![
                9_007_199_254_740_993,
                i64::MAX.unsigned_abs(),
                1_234_567_890_123_456_789
            ])
        );
        assert_eq!(
            parse_buckets("[0e-400, 0.000e99999999999999999999, -0.0, 100e-2, 0.5e1]"),
            Ok(vec![0, 0, 0, 1, 5])
        );
    }

    #[test]
    fn buckets_refuse_anything_but_an_array_of_non_negative_integers() {
        for bad in [
            "",
            "3125",
            "[",
            "]",
            "[,]",
            "[1,]",
            "[,1]",
            "[1 2]",
            "[1],",
            "[1] x",
            "[[1]]",
            "[\"1\"]",
            "[null]",
            "[true]",
            "[-1]",
            "[1.5]",
            "[3125.5]",
            "[01]",
            "[1.]",
            "[.5]",
            "[1e]",
            "[+1]",
            "[NaN]",
            "[Infinity]",
            "[1e400]",
            "[9223372036854775808]",
            "[99999999999999999999]",
            // Not integers, although a float parse rounds them to one.
            "[1.0000000000000001]",
            "[1e-400]",
            "[9007199254740993.5]",
            "[9223372036854775807.5]",
            "[4, 8.000000000000000000001]",
            "[-1e-400]",
            "[1e99999999999999999999]",
            "[-0.5]",
            "{\"a\":1}",
        ] {
            assert_eq!(
                parse_buckets(bad),
                Err(ArgumentError::BucketsJson),
                "{bad:?}"
            );
        }
    }
}
