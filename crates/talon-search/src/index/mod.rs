//! The inverted index: documents, weighted fields, tokenizing (two threads
//! for large catalogs), postings, idf and the exact-key and thesaurus
//! maps. The query side lives in [`query`].

use rustc_hash::FxHashMap as HashMap;

use crate::semantic::{LazySemantic, Semantic};
use crate::tokenize::{for_each_term, for_each_word, stem};

mod query;

pub use query::{Ranking, Signals};

/// BM25 saturation.
const K1: f32 = 1.2;
/// Shortest word expanded to vocabulary words that contain it.
const MIN_AFFIX: usize = 4;
/// How deep parameter schemas are read.
const MAX_SCHEMA_DEPTH: usize = 4;
/// Score given to exact name or id hits, above any BM25F score.
const EXACT_BOOST: f32 = 1000.0;

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

/// An immutable index over one catalog: BM25F over its fields, fused with
/// the cosine of static sentence embeddings when an [`Embedder`] is there.
#[derive(Debug, Clone, Default)]
pub struct SearchIndex {
    semantic: LazySemantic,
    ranking: Ranking,
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
    /// Indexes `docs` for lexical ranking only; hits refer to positions in
    /// this slice.
    pub fn build(docs: &[Document<'_>]) -> Self {
        Self::build_with(docs, Semantic::Off)
    }

    /// Indexes `docs`, ranking semantically too as `semantic` says (the
    /// caller decides: a catalog gets [`Semantic::Shared`], a test the
    /// embedder it means to measure).
    pub fn build_with(docs: &[Document<'_>], semantic: Semantic) -> Self {
        Self {
            semantic: LazySemantic::new(semantic, docs),
            ..Self::lexical(docs)
        }
    }

    /// Whether the index ranks semantically too. With
    /// [`Semantic::Shared`], this loads the table and embeds the documents
    /// if no search has yet (a server calls it to be warm).
    pub fn is_semantic(&self) -> bool {
        self.semantic.get().is_some()
    }

    fn lexical(docs: &[Document<'_>]) -> Self {
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
            semantic: LazySemantic::default(),
            ranking: Ranking::default(),
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
}

/// Groups of words that name the same thing in tool catalogs: CRUD verbs
/// and the objects tools most often handle. General vocabulary, not tuned
/// to any query set; related words count at [`RELATED`](query::RELATED) weight.
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
