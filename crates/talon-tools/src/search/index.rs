//! The inverted index and the query path.

use rustc_hash::FxHashMap as HashMap;

use super::tokenize::{for_each_term, for_each_word, stem, terms};

/// BM25 saturation.
const K1: f32 = 1.2;
/// The best document must cover at least this idf-weighted share of the
/// query, or the result is empty (nothing in the catalog is about it).
const MIN_BEST_COVERAGE: f32 = 0.5;
/// Other documents must cover at least this share to be listed.
const MIN_COVERAGE: f32 = 0.25;
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
/// Shortest word expanded to vocabulary words that contain it.
const MIN_AFFIX: usize = 4;
/// Score given to exact name or id hits, above any BM25F score.
const EXACT_BOOST: f32 = 1000.0;
/// How deep parameter schemas are read.
const MAX_SCHEMA_DEPTH: usize = 4;

/// A field of a document, with its weight and length-normalisation `b`.
#[derive(Clone, Copy)]
struct Field {
    weight: f32,
    b: f32,
}

const NAME: usize = 0;
const ID: usize = 1;
const LABEL: usize = 2;
const DESCRIPTION: usize = 3;
const PARAM_NAMES: usize = 4;
const PARAM_DESCRIPTIONS: usize = 5;
const FIELDS: [Field; 6] = [
    Field {
        weight: 3.0,
        b: 0.3,
    },
    Field {
        weight: 1.5,
        b: 0.3,
    },
    Field {
        weight: 2.0,
        b: 0.5,
    },
    Field {
        weight: 1.0,
        b: 0.75,
    },
    Field {
        weight: 1.2,
        b: 0.5,
    },
    Field {
        weight: 0.6,
        b: 0.75,
    },
];

/// What the index needs to know about one tool.
#[derive(Debug, Clone, Copy)]
pub struct Document<'a> {
    /// Catalog id, `<source>:<owner>:<tool-name>`.
    pub id: &'a str,
    /// Tool name.
    pub name: &'a str,
    /// Optional label.
    pub label: Option<&'a str>,
    /// Description.
    pub description: &'a str,
    /// JSON Schema of the parameters.
    pub parameters: &'a serde_json::Value,
}

/// One ranked result: the document's position in the input and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Index of the document as given to [`SearchIndex::build`].
    pub doc: usize,
    /// Relevance (exact hits score above [`EXACT_BOOST`]).
    pub score: f32,
}

/// An immutable BM25F index over one catalog.
#[derive(Debug, Clone, Default)]
pub struct SearchIndex {
    vocabulary: HashMap<String, u32>,
    /// Per term: (document, saturated field-weighted term frequency).
    postings: Vec<Vec<(u32, f32)>>,
    idf: Vec<f32>,
    /// Exact keys (a name's or id's words joined by spaces) to documents.
    exact: HashMap<String, Vec<u32>>,
    /// A word (stemmed) to its thesaurus neighbours in the vocabulary.
    thesaurus: HashMap<String, Vec<u32>>,
    /// The vocabulary sorted, and sorted by reversed spelling: prefix and
    /// suffix look-ups by binary search.
    by_prefix: Vec<(String, u32)>,
    by_suffix: Vec<(String, u32)>,
    documents: usize,
}

impl SearchIndex {
    /// Indexes `docs`; hits refer to positions in this slice.
    pub fn build(docs: &[Document<'_>]) -> Self {
        let n = docs.len();
        let Tokenized {
            mut vocabulary,
            fields,
            keys,
        } = tokenize_all(docs);
        // For large catalogs the exact-key map builds on another thread
        // while the postings build here.
        let (exact, (postings, idf)) = if n >= PARALLEL_FROM {
            std::thread::scope(|scope| {
                let exact = scope.spawn(|| exact_map(keys));
                let postings = Self::postings(n, &fields, &vocabulary);
                (
                    exact
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                    postings,
                )
            })
        } else {
            (exact_map(keys), Self::postings(n, &fields, &vocabulary))
        };
        vocabulary.shrink_to_fit();
        let thesaurus = thesaurus_terms(&vocabulary);
        let mut by_prefix: Vec<(String, u32)> = vocabulary
            .iter()
            .filter(|(w, _)| w.is_ascii() && w.len() > MIN_AFFIX)
            .map(|(w, &t)| (w.clone(), t))
            .collect();
        by_prefix.sort_unstable();
        let mut by_suffix: Vec<(String, u32)> = by_prefix
            .iter()
            .map(|(w, t)| (w.chars().rev().collect(), *t))
            .collect();
        by_suffix.sort_unstable();
        Self {
            vocabulary,
            postings,
            idf,
            exact,
            thesaurus,
            by_prefix,
            by_suffix,
            documents: n,
        }
    }

    /// Per term, the saturated field-weighted frequency in each document
    /// (in document order), and the term's idf.
    fn postings(
        n: usize,
        fields: &[DocTerms],
        vocabulary: &HashMap<String, u32>,
    ) -> (Vec<Vec<(u32, f32)>>, Vec<f32>) {
        let mut average = [0f32; 6];
        for doc in fields {
            for (f, a) in average.iter_mut().enumerate() {
                *a += doc.field(f).len() as f32;
            }
        }
        for a in &mut average {
            *a = (*a / n.max(1) as f32).max(1.0);
        }
        let mut postings: Vec<Vec<(u32, f32)>> = vec![Vec::new(); vocabulary.len()];
        let mut weighted: Vec<(u32, f32)> = Vec::new();
        for (d, doc) in fields.iter().enumerate() {
            weighted.clear();
            for (f, field) in FIELDS.iter().enumerate() {
                let terms = doc.field(f);
                let norm = 1.0 - field.b + field.b * terms.len() as f32 / average[f];
                weighted.extend(terms.iter().map(|&t| (t, field.weight / norm)));
            }
            weighted.sort_unstable_by_key(|&(t, _)| t);
            let mut i = 0;
            while i < weighted.len() {
                let t = weighted[i].0;
                let mut tf = 0.0;
                while i < weighted.len() && weighted[i].0 == t {
                    tf += weighted[i].1;
                    i += 1;
                }
                // Documents are visited in order, so postings stay sorted.
                postings[t as usize].push((d as u32, tf / (K1 + tf)));
            }
        }
        let idf = postings.iter().map(|p| idf(n, p.len())).collect();
        (postings, idf)
    }

    /// Number of indexed documents.
    pub fn len(&self) -> usize {
        self.documents
    }

    /// `true` when nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.documents == 0
    }

    /// The best `limit` documents for `query`, best first; exact name or id
    /// hits first, then BM25F scores of documents that cover at least half
    /// of the query's (idf-weighted) terms. Ties keep catalog order.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        if limit == 0 || self.documents == 0 {
            return Vec::new();
        }
        let mut end = query.len().min(MAX_QUERY_BYTES);
        while !query.is_char_boundary(end) {
            end -= 1;
        }
        let mut query_terms = terms(&query[..end]);
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
        let coverage = |covered: f32| {
            if total_idf > 0.0 {
                covered / total_idf
            } else {
                0.0
            }
        };
        let best = touched
            .iter()
            .map(|&d| coverage(scores[d as usize].1))
            .fold(0.0f32, f32::max);
        let mut hits: Vec<Hit> = if best >= MIN_BEST_COVERAGE {
            touched
                .iter()
                .filter(|&&d| coverage(scores[d as usize].1) >= MIN_COVERAGE)
                .map(|&d| Hit {
                    doc: d as usize,
                    score: scores[d as usize].0,
                })
                .collect()
        } else {
            Vec::new()
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
}

/// Groups of words that name the same thing in tool catalogs: CRUD verbs
/// and the objects tools most often handle. General vocabulary, not tuned
/// to any query set; related words count at [`RELATED`] weight.
const THESAURUS: &[&[&str]] = &[
    &["create", "make", "add", "new", "insert"],
    &["delete", "remove", "uninstall", "erase", "drop"],
    &["search", "find", "lookup", "look", "query", "seek"],
    &["get", "fetch", "read", "retrieve", "load", "download"],
    &["update", "edit", "modify", "change", "set"],
    &["list", "show", "enumerate", "browse"],
    &["send", "post", "deliver"],
    &["issue", "ticket", "bug", "task"],
    &["email", "mail", "inbox"],
    &["meeting", "event", "appointment"],
    &["document", "doc", "file", "article"],
    &["note", "memo", "memory"],
    &["enable", "activate"],
    &["disable", "deactivate"],
    &["web", "http", "url", "website", "internet"],
    &["folder", "directory"],
    &["image", "picture", "photo"],
    &["spreadsheet", "sheet"],
    &["user", "member", "person", "people"],
];

/// Exact keys (name and id of each document) to documents.
fn exact_map(keys: Vec<[String; 2]>) -> HashMap<String, Vec<u32>> {
    let mut exact: HashMap<String, Vec<u32>> = HashMap::default();
    exact.reserve(keys.len() * 2);
    for (i, pair) in keys.into_iter().enumerate() {
        for key in pair.into_iter().filter(|k| !k.is_empty()) {
            let list = exact.entry(key).or_default();
            if list.last() != Some(&(i as u32)) {
                list.push(i as u32);
            }
        }
    }
    exact
}

/// Documents turned into term ids per field, with the vocabulary and the
/// exact-match keys (name, id) of each document.
struct Tokenized {
    vocabulary: HashMap<String, u32>,
    fields: Vec<DocTerms>,
    keys: Vec<[String; 2]>,
}

/// One document's term ids, field after field; `ends[f]` is where field
/// `f` ends.
struct DocTerms {
    terms: Vec<u32>,
    ends: [u32; 6],
}

impl DocTerms {
    fn field(&self, f: usize) -> &[u32] {
        let start = if f == 0 { 0 } else { self.ends[f - 1] as usize };
        &self.terms[start..self.ends[f] as usize]
    }
}

/// Catalogs at least this large are tokenized on two threads.
const PARALLEL_FROM: usize = 2048;

/// Tokenizes every document; large catalogs in two halves at once, whose
/// vocabularies are then merged (term ids of the second half remapped).
fn tokenize_all(docs: &[Document<'_>]) -> Tokenized {
    let parallel = docs.len() >= PARALLEL_FROM
        && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    if !parallel {
        return tokenize(docs);
    }
    let (left, right) = docs.split_at(docs.len() / 2);
    let (mut first, second) = std::thread::scope(|scope| {
        let handle = scope.spawn(|| tokenize(right));
        let first = tokenize(left);
        // A panic in the worker resurfaces here, as it would single-threaded.
        let second = handle
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (first, second)
    });
    let mut remap = vec![0u32; second.vocabulary.len()];
    for (word, local) in second.vocabulary {
        let next = first.vocabulary.len() as u32;
        remap[local as usize] = *first.vocabulary.entry(word).or_insert(next);
    }
    for mut doc in second.fields {
        for t in &mut doc.terms {
            *t = remap[*t as usize];
        }
        first.fields.push(doc);
    }
    first.keys.extend(second.keys);
    first
}

fn tokenize(docs: &[Document<'_>]) -> Tokenized {
    let mut vocabulary: HashMap<String, u32> = HashMap::default();
    let mut fields: Vec<DocTerms> = Vec::with_capacity(docs.len());
    let mut keys = Vec::with_capacity(docs.len());
    let mut param_names: Vec<u32> = Vec::new();
    let mut param_descriptions: Vec<u32> = Vec::new();
    for doc in docs {
        let mut intern = |text: &str, out: &mut Vec<u32>| {
            for_each_term(text, |t| {
                let id = match vocabulary.get(t) {
                    Some(&id) => id,
                    None => {
                        let id = vocabulary.len() as u32;
                        vocabulary.insert(t.to_owned(), id);
                        id
                    }
                };
                out.push(id);
            });
        };
        param_names.clear();
        param_descriptions.clear();
        schema_text(doc.parameters, 0, &mut |is_name, text| {
            intern(
                text,
                if is_name {
                    &mut param_names
                } else {
                    &mut param_descriptions
                },
            );
        });
        let id_tail = doc.id.rsplit_once(':').map_or(doc.id, |(head, _)| head);
        let mut terms = Vec::with_capacity(32 + param_names.len() + param_descriptions.len());
        let mut ends = [0u32; 6];
        intern(doc.name, &mut terms);
        ends[NAME] = terms.len() as u32;
        intern(id_tail, &mut terms);
        ends[ID] = terms.len() as u32;
        intern(doc.label.unwrap_or_default(), &mut terms);
        ends[LABEL] = terms.len() as u32;
        intern(doc.description, &mut terms);
        ends[DESCRIPTION] = terms.len() as u32;
        terms.extend_from_slice(&param_names);
        ends[PARAM_NAMES] = terms.len() as u32;
        terms.extend_from_slice(&param_descriptions);
        ends[PARAM_DESCRIPTIONS] = terms.len() as u32;
        fields.push(DocTerms { terms, ends });
        keys.push([exact_key(doc.name), exact_key(doc.id)]);
    }
    Tokenized {
        vocabulary,
        fields,
        keys,
    }
}

/// The stemmed thesaurus neighbours of each word, as vocabulary terms.
fn thesaurus_terms(vocabulary: &HashMap<String, u32>) -> HashMap<String, Vec<u32>> {
    let mut related: HashMap<String, Vec<u32>> = HashMap::default();
    for group in THESAURUS {
        let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
        for a in &stems {
            for b in stems.iter().filter(|b| *b != a) {
                if let Some(&t) = vocabulary.get(b) {
                    let list = related.entry(a.clone()).or_default();
                    if !list.contains(&t) {
                        list.push(t);
                    }
                }
            }
        }
    }
    related
}

/// At most this many vocabulary words are taken per affix match.
const MAX_AFFIX_MATCHES: usize = 16;

impl SearchIndex {
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

fn idf(documents: usize, df: usize) -> f32 {
    let (n, df) = (documents as f32, df as f32);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// A name, id or query reduced to its words, so `extension.install`,
/// `extension__install` and `Extension Install` are the same key.
fn exact_key(text: &str) -> String {
    let mut key = String::with_capacity(text.len());
    for_each_word(text, |w| {
        if !key.is_empty() {
            key.push(' ');
        }
        key.push_str(w);
    });
    key
}

/// Calls `emit(true, name)` for each parameter name and `emit(false,
/// text)` for each parameter description, title and enum value of a JSON
/// Schema, nested to [`MAX_SCHEMA_DEPTH`].
fn schema_text(schema: &serde_json::Value, depth: usize, emit: &mut dyn FnMut(bool, &str)) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    let Some(object) = schema.as_object() else {
        return;
    };
    if depth > 0 {
        for key in ["description", "title"] {
            if let Some(text) = object.get(key).and_then(|v| v.as_str()) {
                emit(false, text);
            }
        }
    }
    if let Some(values) = object.get("enum").and_then(|v| v.as_array()) {
        for value in values.iter().filter_map(|v| v.as_str()) {
            emit(false, value);
        }
    }
    if let Some(properties) = object.get("properties").and_then(|v| v.as_object()) {
        for (name, property) in properties {
            emit(true, name);
            schema_text(property, depth + 1, emit);
        }
    }
    if let Some(items) = object.get("items") {
        schema_text(items, depth + 1, emit);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(variants) = object.get(key).and_then(|v| v.as_array()) {
            for variant in variants {
                schema_text(variant, depth + 1, emit);
            }
        }
    }
    if let Some(additional) = object.get("additionalProperties").filter(|v| v.is_object()) {
        emit(true, "additional properties");
        schema_text(additional, depth + 1, emit);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
