//! The event time of what the add pipelines write. Every memory is read against its anchor —
//! the time its source message was said (`Message::created_at`: the add's `timestamp`, or the
//! time of the add) — so "last week" in a message of 8 May 2023 is the week of 1 May 2023,
//! whenever the add runs:
//!
//! - raw memories and notes: the tagger over the message's own text;
//! - inferred facts: what the chat model states for the fact (asked for by the extraction
//!   prompt), kept only when [`reconcile_model`] accepts it against what the rule tagger reads
//!   in the fact's text — or, when the fact's text states no time, in its only source message.

use crate::error::{Error, Result};
use crate::memory::{Message, MessageId, Timestamp};
use crate::time::{
    event_time_of, parse_model_event_time, reconcile_model, EventTime, TaggerOptions,
};

/// The earliest year an anchor may fall in: a conversation is not older than this, and a
/// mistyped year (`0023`) is caught rather than resolved into a date nobody meant.
pub const FIRST_ANCHOR_YEAR: i32 = 1900;

/// Checks an anchor given as input (an add's `timestamp`): not before [`FIRST_ANCHOR_YEAR`] and
/// at most one day after `now` (clocks disagree a little; a message is not said next week).
pub fn check_anchor(field: &str, t: Timestamp, now: Timestamp) -> Result<Timestamp> {
    use chrono::Datelike;
    let t = crate::limits::check_timestamp(field, t)?;
    if t.year() < FIRST_ANCHOR_YEAR {
        return Err(Error::invalid(
            field,
            format!("{t} is before the year {FIRST_ANCHOR_YEAR}"),
        ));
    }
    if t > now + chrono::Duration::days(1) {
        return Err(Error::invalid(
            field,
            format!("{t} is more than a day after now ({now})"),
        ));
    }
    Ok(t)
}

/// The event time a message's text states, read against the time it was said.
pub fn of_message(m: &Message, opts: &TaggerOptions) -> Option<EventTime> {
    event_time_of(&m.content, m.created_at, opts)
}

/// What an inferred fact's event time is read from.
pub struct FactTime<'a> {
    pub text: &'a str,
    /// The model's answer for the fact's event time, as given (`None`: it gave none).
    pub model: Option<&'a str>,
    pub sources: &'a [MessageId],
    /// The add's messages, where the sources are found.
    pub messages: &'a [Message],
    /// The anchor when the fact cites no message: the add's latest message time.
    pub fallback: Timestamp,
}

/// A fact's event time: the model's, when it parses and agrees with the text's; else the
/// text's (see the module docs). Never invented: `None` when neither states one.
pub fn of_fact(f: &FactTime<'_>, opts: &TaggerOptions) -> Option<EventTime> {
    let sources: Vec<&Message> = f
        .sources
        .iter()
        .filter_map(|id| f.messages.iter().find(|m| m.id == *id))
        .collect();
    let anchor = sources.first().map_or(f.fallback, |m| m.created_at);
    let text = event_time_of(f.text, anchor, opts).or_else(|| match sources.as_slice() {
        [only] => of_message(only, opts),
        _ => None,
    });
    let model = f
        .model
        .map(str::trim)
        .filter(|raw| !raw.is_empty())
        .and_then(|raw| parse_model_event_time(raw, anchor));
    reconcile_model(model, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Role;
    use crate::scope::Scope;

    fn at(raw: &str) -> Timestamp {
        raw.parse().unwrap()
    }

    #[test]
    fn anchors_fall_between_1900_and_a_day_ahead() {
        let now = at("2024-01-10T12:00:00Z");
        assert!(check_anchor("timestamp", at("1900-01-01T00:00:00Z"), now).is_ok());
        assert!(check_anchor("timestamp", at("2024-01-11T11:59:00Z"), now).is_ok());
        for bad in [at("1899-12-31T23:59:59Z"), at("2024-01-11T12:00:01Z")] {
            let e = check_anchor("timestamp", bad, now).unwrap_err();
            assert!(e.to_string().contains("timestamp"), "{e}");
        }
    }

    #[test]
    fn a_facts_time_is_read_against_its_source_message() {
        let s = Scope::user("u").unwrap();
        let said = Message::new(
            &s,
            Role::User,
            None,
            "I moved last May".into(),
            at("2023-06-02T10:00:00Z"),
        );
        let fact = |text, model| FactTime {
            text,
            model,
            sources: std::slice::from_ref(&said.id),
            messages: std::slice::from_ref(&said),
            fallback: at("2030-01-01T00:00:00Z"),
        };
        let opts = TaggerOptions::default();
        let from_message = of_fact(&fact("Ann moved to Lisbon", None), &opts).unwrap();
        assert_eq!(from_message.start, at("2023-05-01T00:00:00Z"));
        let agreeing = of_fact(
            &fact("Ann moved to Lisbon in May 2023", Some("2023-05")),
            &opts,
        )
        .unwrap();
        assert_eq!(agreeing.source, crate::time::EventTimeSource::Model);
        let unsupported = of_fact(&fact("Ann likes Lisbon", Some("2021")), &opts);
        let plain = Message::new(
            &s,
            Role::User,
            None,
            "I like Lisbon".into(),
            said.created_at,
        );
        let unsupported_plain = of_fact(
            &FactTime {
                text: "Ann likes Lisbon",
                model: Some("2021"),
                sources: std::slice::from_ref(&plain.id),
                messages: std::slice::from_ref(&plain),
                fallback: said.created_at,
            },
            &opts,
        );
        assert_eq!(
            unsupported_plain, None,
            "a model's date with no support is dropped"
        );
        // The source message's own "last May" is the text reading here, and the model's 2021
        // disagrees with it: the text's reading stands.
        assert_eq!(
            unsupported.map(|e| e.source),
            Some(crate::time::EventTimeSource::Text)
        );
    }
}
