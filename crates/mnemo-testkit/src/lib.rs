//! mnemo-testkit (dev-only): the store contract suite, written once over `&dyn Store` and run by
//! every backend through `store_contract_tests!`, plus a deterministic scripted embedder and
//! record builders, a scripted chat model and a stub OpenAI-compatible HTTP endpoint.
//!
//! With the `engines` feature, `engines` opens stores for the suites above the store on the
//! backend the run names, and starts the test run's PostgreSQL.
//!
//! A backend provides a `Harness` (fresh store, reopen after close); the macro expands to one
//! `#[test]` per contract case so failures name the broken promise.

mod chat;
pub mod contract;
mod contract_blocks;
mod contract_index;
mod contract_job_log;
mod contract_jobs;
mod contract_log;
mod contract_notes;
mod contract_relation_each;
mod contract_relation_fixtures;
mod contract_relation_lifecycle;
mod contract_relations;
mod contract_relations_symmetric;
mod contract_search;
mod contract_segment_time;
mod contract_sessions;
mod contract_tier_fixtures;
mod contract_tier_lifecycle;
mod contract_tiers;
mod contract_timeline;
mod contract_transfer;
mod contract_visibility;
mod contract_writes;
mod embedder;
#[cfg(feature = "engines")]
pub mod engines;
mod fixtures;
pub mod stub_http;

pub use chat::ScriptedChat;
pub use embedder::{HashEmbedder, SlowEmbedder};
pub use fixtures::*;

use mnemo_core::Store;
use std::sync::Arc;

/// How the contract suite gets stores from a backend.
pub trait Harness: Sync {
    /// A new, empty store bound to `HashEmbedder::DIM`-dimensional vectors.
    fn fresh(&self) -> Arc<dyn Store>;
    /// Closes `store` (the caller holds the only reference) and opens the same data again.
    fn reopen(&self, store: Arc<dyn Store>) -> Arc<dyn Store>;
}

/// Expands to one test per contract case for a backend's `Harness` expression.
#[macro_export]
macro_rules! store_contract_tests {
    ($harness:expr) => {
        $crate::store_contract_tests!(@cases $harness;
            round_trip, scope_isolation_on_every_read_path, metadata_fidelity,
            identity_keys_never_set_scope, expiry_on_every_path, pagination_is_complete_under_concurrent_inserts,
            idempotent_retry, reopen_after_close, concurrent_writers, filters, hybrid_search_uses_both_sides,
            update_delete_and_history, delete_all_and_reset, export_import_round_trip, messages_are_an_ordered_log,
            dimension_mismatch_is_refused, supersession_retires_and_links, entities_merge_and_find_candidates, a_write_links_repeated_names_to_one_entity_per_scope,
            common_entities_score_the_pooled_keys, exact_scores_stay_in_the_query_scope,
            duplicates_are_found_by_hash_in_the_exact_scope, rebind_replaces_every_vector_and_keeps_the_rest,
            numbered_pages_are_located_by_count_and_cursor, erase_removes_every_copy_of_the_text,
            batch_updates_and_deletes_are_all_or_nothing, visibility_follows_the_one_rule_on_every_path,
            filters_at_every_bound_run, filters_past_a_bound_are_invalid_input, cursors_are_bound_to_their_scope_and_survive_reopen,
            links_are_created_listed_both_ways_and_removed, links_are_isolated_by_scope,
            bad_links_are_invalid_input_and_write_nothing, links_survive_reopen_and_round_trip_through_export,
            evolution_rewrites_fields_index_and_history_together, linked_memories_obey_scope_expiry_and_supersession,
            touch_counts_reads_in_the_scope,
            filters_wildcard_and_icontains,
            pages_enter_the_window_in_order, pages_move_into_segments_in_one_transaction,
            segment_rewrites_check_their_version, planned_writes_take_their_tiers_from_the_plan, visits_warm_segments_of_the_scope_only,
            eviction_keeps_messages_and_lineage, tiers_are_isolated_by_scope,
            tiers_survive_reopen_and_reset, analysed_marks_are_part_of_the_batch,
            erase_scrubs_pages_and_summaries, rebind_reembeds_pages_and_segments,
            export_is_lossless_through_import,
            import_refuses_foreign_sources_and_texts_no_add_takes,
            the_log_is_shown_as_its_memories_are, extraction_context_follows_the_log_rule,
            a_session_or_a_scope_is_erased_in_one_call, erased_memories_take_no_new_links,
            sessions_are_listed_with_their_sizes, session_messages_page_in_log_order,
            session_memories_are_its_active_sources, add_events_name_the_requester_or_the_speaker,
            jobs_are_enqueued_once_and_listed_by_scope, a_jobs_messages_are_logged_with_it,
            a_refused_enqueue_logs_nothing, an_erased_turn_is_not_written_back,
            an_erase_empties_the_jobs_that_carry_its_text,
            claims_lease_each_job_to_one_worker_and_take_back_dead_ones,
            a_renewed_lease_keeps_the_job_with_its_worker,
            retries_wait_for_their_time_and_failures_keep_their_error,
            concurrent_claims_never_share_a_job, queue_stats_count_and_jobs_survive_reopen, reset_clears_the_queue,
            open_jobs_are_counted_per_tenant,
            dense_scores_are_exact_cosines, a_failed_planned_write_leaves_the_index_as_it_was,
            event_time_is_stored_with_the_memory_and_shown_by_reads,
            the_timeline_orders_ranges_and_pages_events_of_the_scope,
            event_candidates_keep_range_scope_and_pooled_keys,
            the_event_time_filter_keeps_overlapping_memories,
            event_time_survives_export_and_import, erase_removes_the_event_time_and_its_phrase,
            relations_are_written_with_their_memory, a_functional_predicate_closes_the_old_edge_and_as_of_reads_the_past,
            deleted_memories_hide_their_edges_and_erasure_removes_them, relations_are_isolated_by_scope,
            walks_are_bounded_and_check_their_depth, relations_round_trip_through_export,
            relations_of_each_reads_each_name_in_its_own_scope,
            a_symmetric_edge_is_one_edge_both_ways, a_symmetric_functional_edge_closes_for_either_end,
            blocks_are_created_edited_and_deleted_with_versioned_history, concurrent_block_editors_lose_no_update,
            refused_block_edits_write_nothing, shared_blocks_are_seen_by_their_agents_only,
            block_listing_pages_and_the_owner_maximum_holds, blocks_move_through_export_and_go_with_their_scope,
            blocks_survive_reopen,
            a_segments_event_time_is_stored_rewritten_and_exported,
            erasing_a_segments_messages_takes_their_event_time);
    };
    (@cases $harness:expr; $($case:ident),+ $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::contract::$case(&$harness);
            }
        )+
    };
}

#[cfg(test)]
mod tests {
    //! The case list above is kept by hand; these checks make a case that is written but not
    //! listed (so never run on any backend) a failing test, and a backend that stops running the
    //! suite one too.

    use std::collections::BTreeSet;
    use std::path::Path;

    fn source(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Every `pub fn name(… &dyn Harness …)` in this crate's sources: the written cases.
    fn written_cases() -> BTreeSet<String> {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut cases = BTreeSet::new();
        for entry in std::fs::read_dir(&src).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "rs") {
                for line in source(&path).lines() {
                    let Some(rest) = line.strip_prefix("pub fn ") else {
                        continue;
                    };
                    if let Some((name, args)) = rest.split_once('(') {
                        if args.contains("&dyn Harness") {
                            cases.insert(name.trim().to_string());
                        }
                    }
                }
            }
        }
        cases
    }

    /// The identifiers between `store_contract_tests!(@cases $harness;` and its closing `);`.
    fn listed_cases() -> BTreeSet<String> {
        let lib = source(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"));
        let start = lib
            .find("(@cases $harness;")
            .expect("the macro's case list")
            + 17;
        let end = start + lib[start..].find(");").expect("the end of the case list");
        lib[start..end]
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }

    #[test]
    fn every_written_contract_case_is_run_by_the_macro() {
        let written = written_cases();
        let listed = listed_cases();
        // The readers must see the suite (a broken parse would make the check vacuous).
        assert!(written.contains("round_trip") && listed.contains("round_trip"));
        assert!(written.len() >= 50, "only {} cases found", written.len());
        let unlisted: Vec<_> = written.difference(&listed).collect();
        assert!(
            unlisted.is_empty(),
            "contract cases written but never run (add them to store_contract_tests!): {unlisted:?}"
        );
        let unwritten: Vec<_> = listed.difference(&written).collect();
        assert!(unwritten.is_empty(), "listed but not found: {unwritten:?}");
    }

    #[test]
    fn every_store_crate_runs_the_suite() {
        let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut stores = 0;
        for entry in std::fs::read_dir(&crates).unwrap() {
            let dir = entry.unwrap().path();
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            if !name.starts_with("mnemo-store-") {
                continue;
            }
            stores += 1;
            let mut runs = false;
            let mut stack = vec![dir.join("tests")];
            while let Some(d) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(&d) else {
                    continue;
                };
                for e in entries {
                    let p = e.unwrap().path();
                    if p.is_dir() {
                        stack.push(p);
                    } else if source(&p).contains("store_contract_tests!(") {
                        runs = true;
                    }
                }
            }
            assert!(
                runs,
                "{name} does not run store_contract_tests! in its tests"
            );
        }
        assert!(stores >= 2, "found {stores} store crates");
    }
}
