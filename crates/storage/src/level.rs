//! Drawing a node's level by Evolu's rule (`randomSkiplistLevel`, Storage.ts;
//! docs/evolu-storage.md §3.2).
//!
//! Start at 1; while a uniform draw in [0, 1) is ≤ 0.25 and the level is below 10, add 1.
//! So P(level ≥ k) = 0.25^(k−1), capped at 10. The draw happens before the cap check, as
//! in Evolu, so a forced sequence of draws gives the same levels here as there.

use super::MAX_LEVEL;

/// `skiplistProbability`: the chance of going up one more level.
pub const LEVEL_PROBABILITY: f64 = 0.25;

/// Draws a level from a fallible uniform source (values in [0, 1)).
pub fn draw_level_with<E>(mut uniform: impl FnMut() -> Result<f64, E>) -> Result<u8, E> {
    let mut level = 1;
    while uniform()? <= LEVEL_PROBABILITY && level < MAX_LEVEL {
        level += 1;
    }
    Ok(level)
}

/// Draws a level from an infallible uniform source (tests, seeded generators).
pub fn draw_level(mut uniform: impl FnMut() -> f64) -> u8 {
    match draw_level_with(|| Ok::<f64, std::convert::Infallible>(uniform())) {
        Ok(level) => level,
        Err(never) => match never {},
    }
}

/// A uniform f64 in [0, 1) with 53 random bits from the operating system, like
/// `Math.random()`.
pub fn random_unit() -> Result<f64, getrandom::Error> {
    /// 2^-53: one step between consecutive f64 values in [0.5, 1).
    const STEP: f64 = 1.0 / (1u64 << 53) as f64;
    Ok((getrandom::u64()? >> 11) as f64 * STEP)
}

/// A level for a new timestamp, drawn from the operating system's RNG (production).
pub fn random_level() -> Result<u8, getrandom::Error> {
    draw_level_with(random_unit)
}

#[cfg(test)]
mod test {
    use super::*;

    fn forced(values: &[f64]) -> impl FnMut() -> f64 + '_ {
        let mut it = values.iter();
        move || *it.next().expect("the test supplies enough draws")
    }

    #[test]
    fn forced_draws_give_evolus_levels() {
        // Storage.test.ts, query-plan test: [0.9, 0.9, 0.9, 0.9, 0.1, 0.9] → 1, 1, 1, 1, 2.
        let values = [0.9, 0.9, 0.9, 0.9, 0.1, 0.9];
        let mut next = forced(&values);
        let levels: Vec<u8> = (0..5).map(|_| draw_level(&mut next)).collect();
        assert_eq!(levels, [1, 1, 1, 1, 2]);
        // The comparison is `<=`: exactly 0.25 goes up.
        assert_eq!(draw_level(forced(&[0.25, 0.2500001])), 2);
        assert_eq!(draw_level(forced(&[0.0, 0.0, 0.5])), 3);
    }

    #[test]
    fn level_is_capped_at_ten_after_the_draw() {
        // Ten draws: nine raise the level to 10, the tenth is consumed and then capped.
        let zeros = [0.0; 10];
        let mut it = zeros.iter();
        let level = draw_level(|| *it.next().expect("ten draws"));
        assert_eq!(level, MAX_LEVEL);
        assert_eq!(it.len(), 0, "Evolu draws before checking the cap");
    }

    #[test]
    fn fallible_source_errors_propagate() {
        let mut calls = 0;
        let result = draw_level_with(|| {
            calls += 1;
            if calls == 1 {
                Ok(0.1)
            } else {
                Err("no entropy")
            }
        });
        assert_eq!(result, Err("no entropy"));
    }

    #[test]
    fn os_random_levels_follow_the_distribution() {
        let mut counts = [0u32; MAX_LEVEL as usize + 1];
        for _ in 0..20_000 {
            let level = random_level().expect("the OS RNG works in tests");
            assert!((1..=MAX_LEVEL).contains(&level));
            counts[usize::from(level)] += 1;
        }
        // 75% level 1, 18.75% level 2; the bounds are > 10 standard deviations wide.
        assert!((14_000..16_000).contains(&counts[1]), "{counts:?}");
        assert!((3_200..4_300).contains(&counts[2]), "{counts:?}");
        let unit = random_unit().expect("the OS RNG works in tests");
        assert!((0.0..1.0).contains(&unit));
    }
}
