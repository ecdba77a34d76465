//! The one Lua script that makes an admission decision atomically inside Redis, and the
//! shape of its reply.
//!
//! Redis runs a script without interleaving other commands, so "trim, count, add" is one
//! step for every replica at once. The script reads the clock with `TIME` on the Redis
//! server: every replica's decision uses the same clock, so skew between replica hosts
//! cannot widen or narrow the window. Members are `<seconds>.<micros>:<random id>:<token
//! id>`: the random id keeps two admissions in the same microsecond from collapsing into
//! one member (which would silently admit one call too many), and nothing in the key or
//! its members comes from request text.

use std::time::Duration;

use redis::Script;

/// `KEYS[1]`: the sorted set. `ARGV[1]`: window in microseconds, `ARGV[2]`: the limit,
/// `ARGV[3]`: the member suffix (random id and token id).
/// Reply: `{1, 0}` when admitted, `{0, wait_us}` when the window is full. With a limit of
/// 0 the script is a dry run (it only trims expired members): the probe uses that to test
/// the whole path, `TIME` and the key's type included, without taking an admission.
const ADMIT_LUA: &str = r"
if redis.replicate_commands then pcall(redis.replicate_commands) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now, t[1] .. '.' .. t[2] .. ':' .. ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000) + 1000)
  return {1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if oldest[2] == nil then return {0, window} end
local wait = tonumber(oldest[2]) + window - now
if wait < 1 then wait = 1 end
return {0, wait}
";

/// The admission script (its SHA is computed once; `EVALSHA` falls back to loading it).
pub(crate) fn admit_script() -> Script {
    Script::new(ADMIT_LUA)
}

/// What the script decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// The call is admitted and recorded.
    Admitted,
    /// The window is full; the oldest member leaves after this long.
    Full(Duration),
}

/// Turns the raw `{admitted, wait_us}` reply into a [`Decision`].
pub(crate) fn decide(reply: (i64, i64)) -> Decision {
    match reply {
        (1, _) => Decision::Admitted,
        (_, wait_us) => {
            let us = u64::try_from(wait_us).unwrap_or(1).max(1);
            Decision::Full(Duration::from_micros(us))
        }
    }
}

/// The member suffix: a random id and the token id, reduced to a short, safe alphabet.
/// The token id is the id of a token, never its secret.
pub(crate) fn member_suffix(token_id: &str) -> String {
    const MAX_TOKEN_ID: usize = 64;
    let id: String = token_id
        .chars()
        .take(MAX_TOKEN_ID)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{}:{}", uuid::Uuid::new_v4().simple(), id)
}

/// The window in microseconds, as the script expects it.
pub(crate) fn window_micros(window: Duration) -> u64 {
    u64::try_from(window.as_micros()).unwrap_or(u64::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn decide_maps_replies() {
        assert_eq!(decide((1, 0)), Decision::Admitted);
        assert_eq!(
            decide((0, 250_000)),
            Decision::Full(Duration::from_millis(250))
        );
        assert_eq!(decide((0, 0)), Decision::Full(Duration::from_micros(1)));
        assert_eq!(decide((0, -5)), Decision::Full(Duration::from_micros(1)));
    }

    #[test]
    fn suffixes_are_unique() {
        let a = member_suffix("tok1");
        let b = member_suffix("tok1");
        assert_ne!(a, b);
        assert!(a.ends_with(":tok1"));
    }

    #[test]
    fn script_reads_redis_time_and_never_records_rejections() {
        assert!(ADMIT_LUA.contains("redis.call('TIME')"));
        // The only write besides trimming is inside the admitted branch.
        let zadd = ADMIT_LUA.find("ZADD").unwrap_or(usize::MAX);
        let branch = ADMIT_LUA.find("< limit then").unwrap_or(0);
        let end = ADMIT_LUA.find("return {1, 0}").unwrap_or(0);
        assert!(branch < zadd && zadd < end);
    }

    proptest! {
        #[test]
        fn suffix_alphabet_is_safe(token in ".{0,200}") {
            let s = member_suffix(&token);
            prop_assert!(s.len() <= 32 + 1 + 64);
            prop_assert!(s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':')));
        }
    }
}
