//! The query path: a query's terms and their related terms (thesaurus
//! neighbours, affix matches) scored against the postings; the query's
//! embedding against the documents'; the two fused, the no-match rule, and
//! exact name or id hits ranked first.
//!
//! The constants below were set on the development half of
//! `tests/data/talon-corpus.json` only (and checked against the peer
//! corpus); the test half is reported, never tuned on.

use super::{EXACT_BOOST, Hit, MIN_AFFIX, SearchIndex, exact_key, idf};
use crate::tokenize::terms;

/// Lexical only: the best document must cover at least this idf-weighted
/// share of the query, or the result is empty (nothing in the catalog is
/// about it). With embeddings, this share alone still makes a result.
const MIN_BEST_COVERAGE: f32 = 0.5;
/// Lexically, other documents must cover at least this share to count.
const MIN_COVERAGE: f32 = 0.25;
/// How lexical and semantic scores are fused. [`Ranking::default`] holds
/// the calibrated constants; other values exist for calibration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ranking {
    /// The result is empty when no document's evidence reaches this:
    /// evidence is `coverage_weight · coverage + (1 − coverage_weight) ·
    /// cosine` (a long sentence lowers lexical coverage, not the cosine of
    /// the tool it is about; a word shared by accident raises coverage, not
    /// the cosine).
    pub no_match_evidence: f32,
    /// The weight of lexical coverage in the evidence.
    pub coverage_weight: f32,
    /// A document with no lexical coverage is listed only from this cosine
    /// up.
    pub min_cosine: f32,
    /// The weight of lexical coverage (counted from 0.25) in a hit's
    /// score; the rest is its cosine.
    pub lexical_share: f32,
}

impl Default for Ranking {
    fn default() -> Self {
        Self {
            no_match_evidence: 0.33,
            coverage_weight: 0.3,
            min_cosine: 0.30,
            lexical_share: 0.6,
        }
    }
}
/// Weight of a related term (a thesaurus neighbour, or a vocabulary word
/// that contains the query word) relative to the word itself.
const RELATED: f32 = 0.5;
/// Weight of a vocabulary word that merely contains the query word: low
/// enough that such matches alone never pass [`MIN_BEST_COVERAGE`].
const AFFIX: f32 = 0.3;
/// Share of a word the catalog does not know in the query's total: enough
/// that a query of unknown words finds nothing, not so much that a few
/// words of context hide the words that matter.
const UNKNOWN_WEIGHT: f32 = 0.25;
/// Queries are cut to this many bytes and distinct terms.
const MAX_QUERY_BYTES: usize = 1024;
const MAX_QUERY_TERMS: usize = 32;
/// At most this many vocabulary words are taken per affix match.
const MAX_AFFIX_MATCHES: usize = 16;

impl SearchIndex {
    /// The best `limit` documents for `query`, best first; exact name or id
    /// hits first, then the fused lexical and semantic scores (or, with no
    /// embedder, the BM25F scores of documents that cover at least half of
    /// the query's idf-weighted terms). Ties keep catalog order.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        if limit == 0 || self.documents == 0 {
            return Vec::new();
        }
        let mut end = query.len().min(MAX_QUERY_BYTES);
        while !query.is_char_boundary(end) {
            end -= 1;
        }
        let query = &query[..end];
        let lexical = self.lexical_scores(query);
        let cosines = self.semantic.get().and_then(|s| s.cosines(query));
        let mut hits = match cosines {
            Some(cosines) => fused(&lexical, &cosines, &self.ranking),
            None => lexical.gated(),
        };
        if let Some(docs) = self.exact.get(&exact_key(query)) {
            for &d in docs {
                match hits.iter_mut().find(|h| h.doc == d as usize) {
                    Some(hit) => hit.score += EXACT_BOOST,
                    None => hits.push(Hit {
                        doc: d as usize,
                        score: EXACT_BOOST,
                    }),
                }
            }
        }
        hits.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
        hits.truncate(limit);
        hits
    }

    /// Replaces how lexical and semantic scores are fused (for
    /// calibration; the default is the calibrated one).
    pub fn set_ranking(&mut self, ranking: Ranking) {
        self.ranking = ranking;
    }

    /// BM25F scores and idf-weighted coverage of every document the query
    /// touches.
    fn lexical_scores(&self, query: &str) -> Lexical {
        let mut query_terms = terms(query);
        query_terms.sort_unstable();
        query_terms.dedup();
        query_terms.truncate(MAX_QUERY_TERMS);
        let unknown_idf = idf(self.documents, 0);
        let mut total_idf = 0.0f32;
        // Per document: score and covered idf; per query term: the best
        // contribution of any of its variants.
        let mut scores = vec![(0.0f32, 0.0f32); self.documents];
        let mut best = vec![(0.0f32, 0.0f32); self.documents];
        let mut touched: Vec<u32> = Vec::new();
        let mut term_touched: Vec<u32> = Vec::new();
        for term in &query_terms {
            let own = self.vocabulary.get(term).copied();
            // What this word weighs in the query, and the most any of its
            // variants may score per unit of term frequency: a rare synonym
            // never outweighs the word itself.
            let (term_weight, idf_cap) = match own {
                Some(t) => (self.idf[t as usize], self.idf[t as usize]),
                None => (UNKNOWN_WEIGHT * unknown_idf, unknown_idf),
            };
            total_idf += term_weight;
            for (t, weight) in own.map(|t| (t, 1.0)).into_iter().chain(self.related(term)) {
                let t_idf = self.idf[t as usize].min(idf_cap);
                for &(d, tf) in &self.postings[t as usize] {
                    let slot = &mut best[d as usize];
                    if slot.1 == 0.0 {
                        term_touched.push(d);
                    }
                    slot.0 = slot.0.max(weight * t_idf * tf);
                    slot.1 = slot.1.max(weight * term_weight);
                }
            }
            for d in term_touched.drain(..) {
                let (score, covered) = std::mem::take(&mut best[d as usize]);
                let entry = &mut scores[d as usize];
                if entry.1 == 0.0 {
                    touched.push(d);
                }
                entry.0 += score;
                entry.1 += covered;
            }
        }
        if total_idf > 0.0 {
            for &d in &touched {
                scores[d as usize].1 /= total_idf;
            }
        }
        Lexical { scores, touched }
    }

    /// Terms related to a query word: thesaurus neighbours, and vocabulary
    /// words that start or end with it (for words of [`MIN_AFFIX`] letters
    /// or more), such as `mail` in `email` and `gmail`.
    fn related<'a>(&'a self, word: &'a str) -> impl Iterator<Item = (u32, f32)> + 'a {
        let thesaurus = self
            .thesaurus
            .get(word)
            .into_iter()
            .flatten()
            .map(|&t| (t, RELATED));
        let affixes = (word.is_ascii() && word.len() >= MIN_AFFIX).then(|| {
            let reversed: String = word.chars().rev().collect();
            let prefixed = affix_range(&self.by_prefix, word);
            let suffixed = affix_range(&self.by_suffix, &reversed);
            prefixed
                .chain(suffixed)
                .filter(move |(w, _)| w.len() > word.len())
                .map(|(_, t)| (*t, AFFIX))
                .collect::<Vec<(u32, f32)>>()
        });
        thesaurus.chain(affixes.into_iter().flatten())
    }
}

/// Per document (score, coverage), and the documents with any.
struct Lexical {
    scores: Vec<(f32, f32)>,
    touched: Vec<u32>,
}

impl Lexical {
    fn best_coverage(&self) -> f32 {
        self.touched
            .iter()
            .map(|&d| self.scores[d as usize].1)
            .fold(0.0, f32::max)
    }

    /// Lexical ranking alone: BM25F scores of documents covering
    /// [`MIN_COVERAGE`], if the best covers [`MIN_BEST_COVERAGE`].
    fn gated(&self) -> Vec<Hit> {
        if self.best_coverage() < MIN_BEST_COVERAGE {
            return Vec::new();
        }
        self.touched
            .iter()
            .filter(|&&d| self.scores[d as usize].1 >= MIN_COVERAGE)
            .map(|&d| Hit {
                doc: d as usize,
                score: self.scores[d as usize].0,
            })
            .collect()
    }
}

/// Lexical and semantic evidence fused: each document's idf-weighted
/// coverage of the query (counted from [`MIN_COVERAGE`] up) and its cosine
/// to the query. Coverage, not the BM25F score relative to the best one:
/// a relative score gives full marks to whichever tool shares a word or two
/// with a long sentence, however little of it that tool is about.
fn fused(lexical: &Lexical, cosines: &[f32], ranking: &Ranking) -> Vec<Hit> {
    let w = ranking.coverage_weight;
    let evidence = cosines
        .iter()
        .zip(&lexical.scores)
        .map(|(cosine, (_, coverage))| w * coverage + (1.0 - w) * cosine)
        .fold(f32::MIN, f32::max);
    if lexical.best_coverage() < MIN_BEST_COVERAGE && evidence < ranking.no_match_evidence {
        return Vec::new();
    }
    cosines
        .iter()
        .zip(&lexical.scores)
        .enumerate()
        .filter_map(|(d, (&cosine, &(_, coverage)))| {
            let lexical = if coverage >= MIN_COVERAGE {
                coverage.min(1.0)
            } else {
                0.0
            };
            (lexical > 0.0 || cosine >= ranking.min_cosine).then(|| Hit {
                doc: d,
                score: ranking.lexical_share * lexical
                    + (1.0 - ranking.lexical_share) * cosine.max(0.0),
            })
        })
        .collect()
}

/// What a query's no-match decision sees (for calibration).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Signals {
    /// The best document's cosine.
    pub best_cosine: f32,
    /// The best cosine minus the tenth best.
    pub margin: f32,
    /// The best cosine in standard deviations above the catalog's mean.
    pub z: f32,
    /// The best document's lexical coverage.
    pub best_coverage: f32,
}

impl SearchIndex {
    /// The signals the no-match rule weighs for `query`.
    pub fn signals(&self, query: &str) -> Signals {
        let lexical = self.lexical_scores(query);
        let mut signals = Signals {
            best_coverage: lexical.best_coverage(),
            ..Signals::default()
        };
        if let Some(mut c) = self.semantic.get().and_then(|s| s.cosines(query)) {
            let n = c.len().max(1) as f32;
            let mean = c.iter().sum::<f32>() / n;
            let sd = (c.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / n).sqrt();
            c.sort_unstable_by(|a, b| b.total_cmp(a));
            signals.best_cosine = c.first().copied().unwrap_or(0.0);
            signals.margin = signals.best_cosine - c.get(9).copied().unwrap_or(0.0);
            signals.z = if sd > 0.0 {
                (signals.best_cosine - mean) / sd
            } else {
                0.0
            };
        }
        signals
    }
}

fn affix_range<'a>(
    sorted: &'a [(String, u32)],
    start: &'a str,
) -> impl Iterator<Item = &'a (String, u32)> + 'a {
    let from = sorted.partition_point(|(w, _)| w.as_str() < start);
    sorted[from..]
        .iter()
        .take_while(move |(w, _)| w.starts_with(start))
        .take(MAX_AFFIX_MATCHES)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::index::Document;

    fn docs() -> Vec<(String, String, String, serde_json::Value)> {
        vec![
            (
                "github__create_issue".into(),
                "plugin:github:github__create_issue".into(),
                "Create a repository issue or bug report.".into(),
                json!({"type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}}}),
            ),
            (
                "slack__send_message".into(),
                "mcp:slack:slack__send_message".into(),
                "Send a message to a Slack channel.".into(),
                json!({"type": "object", "properties": {"channel_id": {"type": "string", "description": "Channel to post in"}}}),
            ),
            (
                "calendar__create_event".into(),
                "plugin:calendar:calendar__create_event".into(),
                "Create a calendar meeting.".into(),
                json!({"type": "object", "properties": {"attendees": {"type": "array", "items": {"type": "object",
               "properties": {"display_name": {"type": "string", "description": "Attendee display name"}}}}}}),
            ),
        ]
    }

    fn index(docs: &[(String, String, String, serde_json::Value)]) -> SearchIndex {
        let refs: Vec<Document<'_>> = docs
            .iter()
            .map(|(name, id, description, parameters)| Document {
                id,
                name,
                label: None,
                description,
                parameters,
            })
            .collect();
        SearchIndex::build(&refs)
    }

    #[test]
    fn ranks_by_fields_and_nested_parameters() {
        let docs = docs();
        let index = index(&docs);
        assert_eq!(index.search("send a slack message", 5)[0].doc, 1);
        assert_eq!(index.search("bug report", 5)[0].doc, 0);
        assert_eq!(index.search("attendee display name", 5)[0].doc, 2);
        assert_eq!(index.search("post to channel", 5)[0].doc, 1);
    }

    #[test]
    fn exact_names_and_ids_rank_first() {
        let docs = docs();
        let index = index(&docs);
        let hits = index.search("calendar.create_event", 5);
        assert_eq!(hits[0].doc, 2);
        assert!(hits[0].score >= EXACT_BOOST);
        assert_eq!(index.search("mcp:slack:slack__send_message", 1)[0].doc, 1);
    }

    #[test]
    fn unrelated_queries_find_nothing() {
        let docs = docs();
        let index = index(&docs);
        assert_eq!(index.search("quantum banana telescope", 5), vec![]);
        assert_eq!(index.search("", 5), vec![]);
        assert_eq!(index.search("the a of", 5), vec![]);
        assert_eq!(index.search("create", 0), vec![]);
        assert!(SearchIndex::build(&[]).search("anything", 5).is_empty());
    }
}
