//! The tagger's table: phrase + anchor → interval and granularity, or nothing. Anchors:
//! `A` Monday 8 May 2023, `B` Saturday 15 July 2023, `C` Friday 20 October 2023, `D` Tuesday
//! 3 January 2023 (all at 13:56 UTC, like a LoCoMo session).

use super::*;
use chrono::{NaiveDate, TimeZone, Utc};

const A: &str = "2023-05-08";
const B: &str = "2023-07-15";
const C: &str = "2023-10-20";
const D: &str = "2023-01-03";

type Expect = Option<(&'static str, &'static str, &'static str)>;

fn day(s: &str) -> Timestamp {
    let d = NaiveDate::parse_from_str(s, "%Y-%m-%d").expect("test date");
    Utc.from_utc_datetime(&d.and_hms_opt(0, 0, 0).expect("midnight"))
}

fn anchor(s: &str) -> Timestamp {
    day(s) + chrono::TimeDelta::minutes(13 * 60 + 56)
}

fn check(label: &str, got: Option<(Timestamp, Timestamp, Granularity)>, want: Expect) {
    let want = want.map(|(s, e, g)| (day(s), day(e), Granularity::parse(g).expect("granularity")));
    assert_eq!(got, want, "{label}");
}

/// Text → the event time of the whole text (`event_time_of`).
#[rustfmt::skip]
const TEXT: &[(&str, &str, Expect)] = &[
    (A, "I went to a support group yesterday.", Some(("2023-05-07", "2023-05-08", "day"))),
    (A, "Today I finished the painting.", Some(("2023-05-08", "2023-05-09", "day"))),
    (A, "Tomorrow we fly to Rome.", Some(("2023-05-09", "2023-05-10", "day"))),
    (A, "We adopted Biscuit two weeks ago.", Some(("2023-04-24", "2023-05-01", "week"))),
    (A, "I started 3 days ago.", Some(("2023-05-05", "2023-05-06", "day"))),
    (A, "I quit my job last week.", Some(("2023-05-01", "2023-05-08", "week"))),
    (A, "Next week I start the new job.", Some(("2023-05-15", "2023-05-22", "week"))),
    (A, "We moved last month.", Some(("2023-04-01", "2023-05-01", "month"))),
    (A, "We're thinking about going camping next month.", Some(("2023-06-01", "2023-07-01", "month"))),
    (A, "This book I read last year is great.", Some(("2022-01-01", "2023-01-01", "year"))),
    (A, "I'll retire next year.", Some(("2024-01-01", "2025-01-01", "year"))),
    (A, "This year has been hard.", Some(("2023-01-01", "2024-01-01", "year"))),
    (A, "I applied to agencies this week.", Some(("2023-05-08", "2023-05-15", "week"))),
    (A, "I lost my job this month.", Some(("2023-05-01", "2023-06-01", "month"))),
    (A, "I saw her a few days ago.", Some(("2023-05-03", "2023-05-07", "day"))),
    (A, "It broke a couple of days ago.", Some(("2023-05-05", "2023-05-07", "day"))),
    (A, "We met several weeks ago.", Some(("2023-03-20", "2023-04-24", "week"))),
    (A, "I called him a week ago.", Some(("2023-05-01", "2023-05-08", "week"))),
    (A, "She left a month ago.", Some(("2023-04-01", "2023-05-01", "month"))),
    (A, "A year ago I lived in Oslo.", Some(("2022-01-01", "2023-01-01", "year"))),
    (A, "A friend made it for my 18th birthday ten years ago.", Some(("2013-01-01", "2014-01-01", "year"))),
    (A, "We met a decade ago.", Some(("2013-01-01", "2014-01-01", "year"))),
    (A, "It arrived a fortnight ago.", Some(("2023-04-24", "2023-05-01", "week"))),
    (A, "We went hiking over the weekend.", Some(("2023-05-06", "2023-05-08", "week"))),
    (A, "Last weekend I joined a mentorship program.", Some(("2023-05-06", "2023-05-08", "week"))),
    (A, "This weekend we will go hiking.", Some(("2023-05-13", "2023-05-15", "week"))),
    (A, "Next weekend is the festival.", Some(("2023-05-20", "2023-05-22", "week"))),
    (A, "We went camping two weekends ago.", Some(("2023-04-29", "2023-05-01", "week"))),
    (A, "Last Friday I went to a council meeting.", Some(("2023-05-05", "2023-05-06", "day"))),
    (A, "On Friday I went to the museum.", Some(("2023-05-05", "2023-05-06", "day"))),
    (A, "I will see her on Friday.", Some(("2023-05-12", "2023-05-13", "day"))),
    (A, "The party is next Friday.", Some(("2023-05-12", "2023-05-13", "day"))),
    (A, "The party is this Friday.", Some(("2023-05-12", "2023-05-13", "day"))),
    (A, "I joined a new group last Tues.", Some(("2023-05-02", "2023-05-03", "day"))),
    (A, "Friday night was fun.", Some(("2023-05-05", "2023-05-06", "day"))),
    (A, "Last night was amazing!", Some(("2023-05-07", "2023-05-08", "day"))),
    (A, "This morning I ran 5 km.", Some(("2023-05-08", "2023-05-09", "day"))),
    (A, "Tonight we're cooking pasta.", Some(("2023-05-08", "2023-05-09", "day"))),
    (A, "The day before yesterday it rained.", Some(("2023-05-06", "2023-05-07", "day"))),
    (A, "The day after tomorrow is my exam.", Some(("2023-05-10", "2023-05-11", "day"))),
    (A, "I moved in May.", Some(("2023-05-01", "2023-06-01", "month"))),
    (A, "I moved to Lisbon in June.", Some(("2022-06-01", "2022-07-01", "month"))),
    (A, "We are going to Lisbon in June.", Some(("2023-06-01", "2023-07-01", "month"))),
    (A, "I moved to Lisbon last May.", Some(("2022-05-01", "2022-06-01", "month"))),
    (A, "We marry next May.", Some(("2024-05-01", "2024-06-01", "month"))),
    (A, "I got my degree in 2021.", Some(("2021-01-01", "2022-01-01", "year"))),
    (A, "I have painted since 2019.", Some(("2019-01-01", "2023-05-09", "year"))),
    (A, "We went to Spain last summer.", Some(("2022-06-01", "2022-09-01", "season"))),
    (A, "This summer we rent a cabin.", Some(("2023-06-01", "2023-09-01", "season"))),
    (A, "Next winter I learn to ski.", Some(("2023-12-01", "2024-03-01", "season"))),
    (A, "The garden bloomed in the spring.", Some(("2023-03-01", "2023-06-01", "season"))),
    (A, "John went camping in the summer of 2022.", Some(("2022-06-01", "2022-09-01", "season"))),
    (A, "We met on 8 May 2023.", Some(("2023-05-08", "2023-05-09", "day"))),
    (A, "Her birthday is May 8th.", Some(("2023-05-08", "2023-05-09", "day"))),
    (A, "It opened May 8, 2023, downtown.", Some(("2023-05-08", "2023-05-09", "day"))),
    (A, "Logged on 2023-05-08 at noon.", Some(("2023-05-08", "2023-05-09", "day"))),
    (A, "Signed 05/08/2023 by both.", Some(("2023-05-08", "2023-05-09", "day"))),
    (A, "Shipped 5/8/23.", Some(("2023-05-08", "2023-05-09", "day"))),
    (A, "We met on the 2nd of May.", Some(("2023-05-02", "2023-05-03", "day"))),
    (A, "We met on the second of May.", Some(("2023-05-02", "2023-05-03", "day"))),
    (A, "The recital was May second.", Some(("2023-05-02", "2023-05-03", "day"))),
    (A, "We married in May 2022.", Some(("2022-05-01", "2022-06-01", "month"))),
    (A, "We married in May of 2022.", Some(("2022-05-01", "2022-06-01", "month"))),
    (A, "The lease ran from 3 March 2021.", Some(("2021-03-03", "2021-03-04", "day"))),
    (A, "May I ask you something?", None),
    (A, "March on, soldiers!", None),
    (A, "We paid 2023 dollars for it.", None),
    (A, "About 2000 people came.", None),
    (A, "In 2000 people voted.", None),
    (A, "The meeting is at 1:56 pm.", None),
    (A, "Call me at 555-123-4567.", None),
    (A, "Give me a second.", None),
    (A, "The second week of May was rainy.", Some(("2023-05-08", "2023-05-15", "week"))),
    (A, "I've been thinking about it recently.", None),
    (A, "I saw him the other day.", None),
    (A, "That was a while ago.", None),
    (A, "I may go.", None),
    (A, "This may be true.", None),
    (A, "I sat on the sofa in the sun.", None),
    (A, "We go to Sunday school.", None),
    (A, "On Fridays we swim.", None),
    (A, "It cost $2023.", None),
    (A, "Growth was 12% in 2022 terms.", None),
    (A, "We march in protest.", None),
    (A, "I was born in 1990.", Some(("1990-01-01", "1991-01-01", "year"))),
    (A, "I was there the week before last.", Some(("2023-04-24", "2023-05-01", "week"))),
    (A, "We argued the week before.", Some(("2023-05-01", "2023-05-08", "week"))),
    (A, "We argued the week before the wedding.", None),
    (A, "We argued the week before I moved.", None),
    (A, "It was two days before we left.", None),
    (A, "I will leave in two weeks.", Some(("2023-05-22", "2023-05-29", "week"))),
    (A, "I finished it in two weeks.", None),
    (A, "The results come three days from now.", Some(("2023-05-11", "2023-05-12", "day"))),
    (A, "He was part of our family for 10 years.", Some(("2013-01-01", "2023-05-09", "year"))),
    (A, "I'll be in France for 2 years.", None),
    (A, "We stayed for two weeks.", None),
    (A, "I'm throwing a party two weekends later - it'll be fun!", Some(("2023-05-20", "2023-05-22", "week"))),
    (A, "Seven years now, and I love it.", Some(("2016-01-01", "2023-05-09", "year"))),
    (A, "It happened in early May.", Some(("2023-05-01", "2023-06-01", "month"))),
    (A, "I wrapped it up by the end of April.", Some(("2023-04-01", "2023-05-01", "month"))),
    (A, "He ran a 5K the first weekend of August 2023.", Some(("2023-08-05", "2023-08-07", "week"))),
    (A, "We moved the last weekend of April.", Some(("2023-04-29", "2023-05-01", "week"))),
    (A, "They met the week of 23 August 2023.", Some(("2023-08-21", "2023-08-28", "week"))),
    (A, "It was the Friday before 15 July 2023.", Some(("2023-07-14", "2023-07-15", "day"))),
    (A, "The visa came the day after 8 May.", Some(("2023-05-09", "2023-05-10", "day"))),
    (A, "In 2022 I started painting, and yesterday I sold one.", Some(("2023-05-07", "2023-05-08", "day"))),
    (A, "From 2018 to 2020 I lived in Oslo.", Some(("2018-01-01", "2019-01-01", "year"))),
    (A, "Since last week I feel better.", Some(("2023-05-01", "2023-05-09", "week"))),
    (A, "A lot's happened since we last chatted.", None),
    (A, "Earlier this week I saw Tom.", Some(("2023-05-08", "2023-05-15", "week"))),
    (A, "I've been busy in the past week.", Some(("2023-05-02", "2023-05-09", "week"))),
    (A, "We met on Dec. 24 at the party.", Some(("2022-12-24", "2022-12-25", "day"))),
    (A, "I turned 30 in December.", Some(("2022-12-01", "2023-01-01", "month"))),
    (B, "Last Friday I went to a council meeting for adoption.", Some(("2023-07-14", "2023-07-15", "day"))),
    (B, "Last Fri I finally took my kids to a pottery workshop.", Some(("2023-07-14", "2023-07-15", "day"))),
    (B, "We relaxed over the weekend.", Some(("2023-07-08", "2023-07-10", "week"))),
    (B, "On Saturday we baked.", Some(("2023-07-08", "2023-07-09", "day"))),
    (B, "This weekend is busy.", Some(("2023-07-15", "2023-07-17", "week"))),
    (B, "I painted a lot in July.", Some(("2023-07-01", "2023-08-01", "month"))),
    (B, "I went to Rome in August.", Some(("2022-08-01", "2022-09-01", "month"))),
    (B, "We will travel in August.", Some(("2023-08-01", "2023-09-01", "month"))),
    (B, "Last summer we swam daily.", Some(("2022-06-01", "2022-09-01", "season"))),
    (B, "We swam daily in the summer.", Some(("2023-06-01", "2023-09-01", "season"))),
    (B, "Yesterday I bought figurines.", Some(("2023-07-14", "2023-07-15", "day"))),
    (B, "I'm going to a conference this month.", Some(("2023-07-01", "2023-08-01", "month"))),
    (B, "We went camping two weekends ago.", Some(("2023-07-01", "2023-07-03", "week"))),
    (C, "That roadtrip this past weekend was insane!", Some(("2023-10-14", "2023-10-16", "week"))),
    (C, "Last month I got hurt.", Some(("2023-09-01", "2023-10-01", "month"))),
    (C, "Last summer we went to Maine.", Some(("2023-06-01", "2023-09-01", "season"))),
    (C, "Next summer we go to Maine.", Some(("2024-06-01", "2024-09-01", "season"))),
    (C, "This winter will be cold.", Some(("2023-12-01", "2024-03-01", "season"))),
    (C, "Last winter was cold.", Some(("2022-12-01", "2023-03-01", "season"))),
    (C, "The leaves turned in the fall.", Some(("2023-09-01", "2023-12-01", "season"))),
    (C, "I passed the interview last Friday!", Some(("2023-10-13", "2023-10-14", "day"))),
    (C, "I'll call you on Friday.", Some(("2023-10-27", "2023-10-28", "day"))),
    (C, "My son crashed two days ago.", Some(("2023-10-18", "2023-10-19", "day"))),
    (C, "I read it in autumn 2021.", Some(("2021-09-01", "2021-12-01", "season"))),
    (D, "I joined a service group last week.", Some(("2022-12-26", "2023-01-02", "week"))),
    (D, "We went to the beach last month.", Some(("2022-12-01", "2023-01-01", "month"))),
    (D, "Last year was rough.", Some(("2022-01-01", "2023-01-01", "year"))),
    (D, "I took beach pictures in December.", Some(("2022-12-01", "2023-01-01", "month"))),
    (D, "We celebrated on 31 December.", Some(("2022-12-31", "2023-01-01", "day"))),
    (D, "We'll meet on 10 January.", Some(("2023-01-10", "2023-01-11", "day"))),
    (D, "I'm going to visit in February.", Some(("2023-02-01", "2023-03-01", "month"))),
    (D, "The launch is next month.", Some(("2023-02-01", "2023-03-01", "month"))),
    (D, "Yesterday I donated my car.", Some(("2023-01-02", "2023-01-03", "day"))),
    (D, "Last Saturday we partied.", Some(("2022-12-31", "2023-01-01", "day"))),
    (D, "We skied in winter.", Some(("2022-12-01", "2023-03-01", "season"))),
    (D, "The fair was on Sept 3.", Some(("2022-09-03", "2022-09-04", "day"))),
    (D, "I arrived on 3 Jan 2023.", Some(("2023-01-03", "2023-01-04", "day"))),
    (D, "The 5th of January will be my first day.", Some(("2023-01-05", "2023-01-06", "day"))),
];

#[test]
fn text_table() {
    for (a, text, want) in TEXT {
        let got = event_time_of(text, anchor(a), &TaggerOptions::default());
        if let Some(e) = &got {
            assert_eq!(e.source, EventTimeSource::Text, "{text}");
            assert!(text.contains(&e.phrase), "{text}: phrase {:?}", e.phrase);
        }
        check(
            &format!(
                "{a} {text:?} (phrase {:?})",
                got.as_ref().map(|e| &e.phrase)
            ),
            got.map(|e| (e.start, e.end, e.granularity)),
            *want,
        );
    }
}

/// Gold answers (LoCoMo's forms) → interval; `None` anchor means read without one.
#[rustfmt::skip]
const ANSWERS: &[(Option<&str>, &str, Expect)] = &[
    (None, "2022", Some(("2022-01-01", "2023-01-01", "year"))),
    (None, "7 May 2023", Some(("2023-05-07", "2023-05-08", "day"))),
    (None, "The week before 9 June 2023", Some(("2023-06-02", "2023-06-09", "week"))),
    (None, "June 2023", Some(("2023-06-01", "2023-07-01", "month"))),
    (None, "The sunday before 25 May 2023", Some(("2023-05-21", "2023-05-22", "day"))),
    (None, "The weekend before 17 July 2023", Some(("2023-07-15", "2023-07-17", "week"))),
    (None, "two weekends before 17 July 2023", Some(("2023-07-08", "2023-07-10", "week"))),
    (Some("2023-09-13"), "Since 2016", Some(("2016-01-01", "2023-09-14", "year"))),
    (None, "Since 2016", None),
    (None, "January, 2023", Some(("2023-01-01", "2023-02-01", "month"))),
    (None, "19 January, 2023", Some(("2023-01-19", "2023-01-20", "day"))),
    (Some("2023-02-08"), "A few years ago", Some(("2018-01-01", "2022-01-01", "year"))),
    (Some("2023-06-27"), "10 years ago", Some(("2013-01-01", "2014-01-01", "year"))),
    (None, "10 years ago", None),
    (None, "April.2023", Some(("2023-04-01", "2023-05-01", "month"))),
    (None, "The sunday before 3` July 2023", Some(("2023-07-02", "2023-07-03", "day"))),
    (None, "Around August 2022", Some(("2022-08-01", "2022-09-01", "month"))),
    (None, "The summer of 2022", Some(("2022-06-01", "2022-09-01", "season"))),
    (None, "In 2013", Some(("2013-01-01", "2014-01-01", "year"))),
    (None, "first weekend of August 2023", Some(("2023-08-05", "2023-08-07", "week"))),
    (None, "the week before 21Janury, 2022", Some(("2022-01-14", "2022-01-21", "week"))),
    (None, "The Friday before 23January, 2022", Some(("2022-01-21", "2022-01-22", "day"))),
    (None, "23 March, 2022.", Some(("2022-03-23", "2022-03-24", "day"))),
    (None, "The weekend after 3June, 2022.", Some(("2022-06-04", "2022-06-06", "week"))),
    (None, "The weekend of 24June, 2022.", Some(("2022-06-25", "2022-06-27", "week"))),
    (None, "Two weeks before 11 August 2023", Some(("2023-07-24", "2023-07-31", "week"))),
    (None, "The week of 23 August 2023", Some(("2023-08-21", "2023-08-28", "week"))),
    (None, "February 24, 2023", Some(("2023-02-24", "2023-02-25", "day"))),
    (None, " 23 July, 2023", Some(("2023-07-23", "2023-07-24", "day"))),
    (Some("2023-05-08"), "last year", Some(("2022-01-01", "2023-01-01", "year"))),
    (None, "last year", None),
    (Some("2023-08-14"), "13 August", Some(("2023-08-13", "2023-08-14", "day"))),
    (None, "13 August", None),
    (None, "4 years", None),
    (None, "two weeks", None),
    (None, "her mother", None),
    (None, "Valorant", None),
    (None, "finished her screenplay and printed it", None),
    (None, "Whispering Falls waterfall", None),
    (None, "May", None),
    (None, "2022 and 2023", None),
];

#[test]
fn answer_table() {
    for (a, text, want) in ANSWERS {
        check(text, parse_answer(text, a.map(anchor)), *want);
    }
}

type QueryExpect = Option<(TemporalRelation, &'static str, &'static str, &'static str)>;

/// Queries, reference Monday 8 May 2023: relation, phrase, interval.
#[rustfmt::skip]
const QUERIES: &[(&str, QueryExpect)] = &[
    ("what did I do last week?", Some((TemporalRelation::During, "last week", "2023-05-01", "2023-05-08"))),
    ("what happened in May 2023?", Some((TemporalRelation::During, "May 2023", "2023-05-01", "2023-06-01"))),
    ("what happened in may?", Some((TemporalRelation::During, "may", "2023-05-01", "2023-06-01"))),
    ("what did we talk about before 2020", Some((TemporalRelation::Before, "before 2020", "1900-01-01", "2020-01-01"))),
    ("hobbies since 2019", Some((TemporalRelation::After, "since 2019", "2019-01-01", "2200-01-01"))),
    ("trips after May 2022", Some((TemporalRelation::After, "after May 2022", "2022-06-01", "2200-01-01"))),
    ("jobs prior to June 2022", Some((TemporalRelation::Before, "prior to June 2022", "1900-01-01", "2022-06-01"))),
    ("where did I go yesterday", Some((TemporalRelation::During, "yesterday", "2023-05-07", "2023-05-08"))),
    ("what are my plans for next month?", Some((TemporalRelation::During, "next month", "2023-06-01", "2023-07-01"))),
    ("what did I do on friday", Some((TemporalRelation::During, "friday", "2023-05-05", "2023-05-06"))),
    ("what happened 2 years ago", Some((TemporalRelation::During, "2 years ago", "2021-01-01", "2022-01-01"))),
    ("what did I do in the summer", Some((TemporalRelation::During, "the summer", "2022-06-01", "2022-09-01"))),
    ("what did I eat the day before yesterday", Some((TemporalRelation::During, "the day before yesterday", "2023-05-06", "2023-05-07"))),
    ("events on 2023-04-30", Some((TemporalRelation::During, "2023-04-30", "2023-04-30", "2023-05-01"))),
    ("what do I like?", None),
    ("May I ask what my favourite food is?", None),
    ("When did Caroline go to the LGBTQ support group?", None),
    ("How many weeks passed between adopting Coco and Shadow?", None),
    ("my 2023 goals", None),
    ("how long ago was Caroline's 18th birthday?", None),
    ("what is the second book I read", None),
];

#[test]
fn query_table() {
    let reference = anchor(A);
    for (q, want) in QUERIES {
        let got = resolve_query(q, reference, &TaggerOptions::default());
        let want = want.map(|(relation, phrase, s, e)| TemporalQuery {
            phrase: phrase.to_string(),
            start: day(s),
            end: day(e),
            granularity: got.as_ref().map_or(Granularity::Day, |g| g.granularity),
            relation,
        });
        assert_eq!(got, want, "{q}");
    }
}

#[test]
fn query_granularity_is_the_phrase_s() {
    let q = resolve_query("before 2020", anchor(A), &TaggerOptions::default()).expect("query");
    assert_eq!(q.granularity, Granularity::Year);
    let q = resolve_query("in May 2023", anchor(A), &TaggerOptions::default()).expect("query");
    assert_eq!(q.granularity, Granularity::Month);
}

#[test]
fn numeric_dates_follow_the_configured_order() {
    let day_first = TaggerOptions {
        date_order: DateOrder::DayFirst,
    };
    let e = event_time_of("Signed 05/08/2023.", anchor(A), &day_first).expect("date");
    assert_eq!((e.start, e.end), (day("2023-08-05"), day("2023-08-06")));
    assert!(event_time_of("Signed 13/25/2023.", anchor(A), &day_first).is_none());
    assert!(event_time_of("Signed 13/05/2023.", anchor(A), &TaggerOptions::default()).is_none());
}

#[test]
fn tag_gives_one_per_sentence_in_order_with_phrases() {
    let text = "I went hiking yesterday, and last week too. Next month we fly to Peru!\n\
                Nothing here. On 2 June 2023 we land";
    let tags = tag(text, anchor(A), &TaggerOptions::default());
    let phrases: Vec<&str> = tags.iter().map(|e| e.phrase.as_str()).collect();
    assert_eq!(phrases, ["yesterday", "Next month", "2 June 2023"]);
    assert_eq!(tags[0].granularity, Granularity::Day);
    assert_eq!(tags[2].start, day("2023-06-02"));
    assert!(tags.iter().all(|e| e.source == EventTimeSource::Text));
}

fn model(raw: &str) -> Option<(Timestamp, Timestamp, Granularity)> {
    parse_model_event_time(raw, anchor(A)).map(|e| {
        assert_eq!(e.source, EventTimeSource::Model);
        (e.start, e.end, e.granularity)
    })
}

#[test]
fn model_answers_parse_in_their_usual_forms() {
    check(
        "day",
        model("2023-05-07"),
        Some(("2023-05-07", "2023-05-08", "day")),
    );
    check(
        "month",
        model("2023-05"),
        Some(("2023-05-01", "2023-06-01", "month")),
    );
    check(
        "year",
        model(" \"2022\" "),
        Some(("2022-01-01", "2023-01-01", "year")),
    );
    check(
        "week",
        model("2023-05-01/2023-05-07"),
        Some(("2023-05-01", "2023-05-08", "week")),
    );
    check(
        "to",
        model("2023-05-01 to 2023-05-31"),
        Some(("2023-05-01", "2023-06-01", "month")),
    );
    check(
        "midnight",
        model("2023-05-07T00:00:00Z"),
        Some(("2023-05-07", "2023-05-08", "day")),
    );
    check(
        "phrase",
        model("last week"),
        Some(("2023-05-01", "2023-05-08", "week")),
    );
    let instant = model("2023-05-07T15:30:00Z").expect("instant");
    assert_eq!(instant.2, Granularity::Instant);
    assert_eq!((instant.1 - instant.0).num_minutes(), 1);
    for unusable in [
        "",
        "null",
        "unknown",
        "none",
        "sometime",
        "2023-05-09/2023-05-01",
    ] {
        assert!(model(unusable).is_none(), "{unusable:?}");
    }
}

fn text_time(s: &str, e: &str, g: Granularity) -> EventTime {
    EventTime {
        start: day(s),
        end: day(e),
        granularity: g,
        phrase: "yesterday".into(),
        source: EventTimeSource::Text,
    }
}

#[test]
fn the_model_s_time_is_kept_only_when_it_agrees_with_the_text() {
    let text = text_time("2023-05-07", "2023-05-08", Granularity::Day);
    let same = parse_model_event_time("2023-05-07", anchor(A));
    assert_eq!(reconcile_model(same.clone(), Some(text.clone())), same);
    let coarser = parse_model_event_time("2023-05", anchor(A));
    assert_eq!(
        reconcile_model(coarser, Some(text.clone())),
        Some(text.clone())
    );
    let elsewhere = parse_model_event_time("2023-04-02", anchor(A));
    assert_eq!(
        reconcile_model(elsewhere, Some(text.clone())),
        Some(text.clone())
    );
    assert_eq!(reconcile_model(None, Some(text.clone())), Some(text));
    let unsupported = parse_model_event_time("2023-05-07", anchor(A));
    assert_eq!(reconcile_model(unsupported, None), None);
}

/// A 65,000-character text of CSV rows full of dates, digits and month names, and one line of
/// prose: at most one event time per sentence (line), and work linear in the length (the time
/// for ten times the text stays far below the hundredfold a quadratic walk would take).
#[test]
fn long_digit_heavy_text_is_linear_and_one_per_sentence() {
    let row = "2023-05-08,May,8,2023,March,1:56 pm,555-123-4567,in 2021,05/08/2023,Friday,\n";
    let build = |chars: usize| {
        let mut s = String::from("We moved last May and it rained since 2019 on Friday night.\n");
        while s.len() < chars {
            s.push_str(row);
        }
        s
    };
    let (small, large) = (build(6_500), build(65_000));
    assert!(large.len() >= 65_000);
    let lines = large.lines().count();
    let tags = tag(&large, anchor(A), &TaggerOptions::default());
    assert!(tags.len() <= lines, "{} tags for {lines} lines", tags.len());
    assert_eq!(
        tags[0].phrase, "Friday night",
        "the prose line keeps its most specific"
    );
    // The rows on one unbroken line are one sentence after the prose one: two at most.
    let one_line = large.replace('\n', " ");
    assert_eq!(
        tag(&one_line, anchor(A), &TaggerOptions::default()).len(),
        2
    );

    let median = |text: &str| {
        let mut runs: Vec<std::time::Duration> = (0..5)
            .map(|_| {
                let t = std::time::Instant::now();
                std::hint::black_box(tag(text, anchor(A), &TaggerOptions::default()));
                t.elapsed()
            })
            .collect();
        runs.sort();
        runs[2]
    };
    let ratio = median(&large).as_secs_f64() / median(&small).as_secs_f64().max(1e-9);
    assert!(ratio < 40.0, "10x the text took {ratio:.1}x the time");
}

#[test]
fn anchors_at_the_ends_of_the_calendar_give_none_not_a_panic() {
    let opts = TaggerOptions::default();
    for a in [Timestamp::MIN_UTC, Timestamp::MAX_UTC] {
        for text in TEXT.iter().map(|c| c.1) {
            let _ = tag(text, a, &opts);
        }
        for (q, _) in QUERIES {
            let _ = resolve_query(q, a, &opts);
        }
        for (_, ans, _) in ANSWERS {
            let _ = parse_answer(ans, Some(a));
        }
    }
    assert!(event_time_of("yesterday", Timestamp::MIN_UTC, &opts).is_none());
    assert!(event_time_of("tomorrow", Timestamp::MAX_UTC, &opts).is_none());
}
