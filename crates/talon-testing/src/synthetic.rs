//! Deterministic synthetic tools: plausible tools of other domains, from a
//! seeded generator (xorshift64*), to pad judged corpora to a catalog size
//! and to benchmark search. The same seed gives the same tools everywhere.

use talon_protocol::{ToolDefinition, ToolSource};

const PROVIDERS: &[&str] = &[
    "acme",
    "zenith",
    "orbit",
    "pixel",
    "lumen",
    "quartz",
    "harbor",
    "nimbus",
    "cobalt",
    "vertex",
    "summit",
    "atlas",
    "ember",
    "falcon",
    "juniper",
    "meridian",
    "onyx",
    "prairie",
    "redwood",
    "sierra",
    "tundra",
    "willow",
    "yonder",
    "kestrel",
    "bramble",
    "citadel",
    "drift",
    "evergreen",
    "fathom",
    "glacier",
];
const VERBS: &[&str] = &[
    "list",
    "get",
    "create",
    "update",
    "delete",
    "archive",
    "sync",
    "export",
    "import",
    "approve",
    "assign",
    "schedule",
    "publish",
    "cancel",
    "restore",
    "validate",
    "merge",
    "tag",
    "track",
    "reconcile",
];
const NOUNS: &[&str] = &[
    "invoice",
    "shipment",
    "warehouse",
    "vendor",
    "playlist",
    "podcast",
    "coupon",
    "subscription",
    "ledger",
    "timesheet",
    "payroll",
    "asset",
    "fleet",
    "vehicle",
    "parcel",
    "inventory",
    "supplier",
    "quote",
    "contract",
    "voucher",
    "lease",
    "tenant",
    "booking",
    "reservation",
    "menu",
    "order",
    "course",
    "student",
    "grade",
    "enrollment",
    "policy",
    "claim",
    "patient",
    "appointment",
    "prescription",
    "sensor",
    "device",
    "firmware",
    "route",
    "stop",
    "driver",
    "campaign",
    "audience",
    "segment",
    "survey",
];
const DOMAINS: &[&str] = &[
    "accounting",
    "logistics",
    "retail",
    "education",
    "healthcare",
    "insurance",
    "hospitality",
    "fleet management",
    "procurement",
    "marketing",
    "property management",
    "manufacturing",
];

/// `count` plugin tools named `<provider>__<verb>_<noun>_<n>`, each with a
/// one-sentence description and three parameters.
pub fn distractor_tools(count: usize, seed: u64) -> Vec<ToolDefinition> {
    let mut state = seed | 1;
    let mut next = |n: usize| -> usize {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64) as usize
    };
    (0..count)
        .map(|i| {
            let provider = PROVIDERS[next(PROVIDERS.len())];
            let verb = VERBS[next(VERBS.len())];
            let noun = NOUNS[next(NOUNS.len())];
            let other = NOUNS[next(NOUNS.len())];
            let domain = DOMAINS[next(DOMAINS.len())];
            ToolDefinition {
                name: format!("{provider}__{verb}_{noun}_{i}"),
                label: None,
                description: format!("{verb} a {noun} record in the {provider} {domain} system, linked to its {other}."),
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {
                        format!("{noun}_id"): {"type": "string", "description": format!("Identifier of the {noun}")},
                        format!("{other}_ref"): {"type": "string", "description": format!("Related {other}")},
                        "note": {"type": "string", "description": "Free-form note"}
                    }
                }),
                source: ToolSource::Plugin,
                owner: provider.to_owned(),
                catalog_mode: Default::default(),
                execution_mode: Default::default(),
                requires_approval: false,
                effect: Default::default(),
                replay_safe: false,
            }
        })
        .collect()
}

/// The tools of a judged search corpus (`{"tools": [{name, description,
/// parameters}], ...}`, as in `crates/talon-search/tests/data/`), as plugin
/// tools owned by their name's prefix before `__` (else `core`).
pub fn corpus_tools(corpus: &serde_json::Value) -> Vec<ToolDefinition> {
    corpus["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|t| {
            let name = t["name"].as_str()?.to_owned();
            let owner = name.split_once("__").map_or("core", |(o, _)| o).to_owned();
            Some(ToolDefinition {
                name,
                label: None,
                description: t["description"].as_str().unwrap_or("").to_owned(),
                parameters: t["parameters"].clone(),
                source: ToolSource::Plugin,
                owner,
                catalog_mode: Default::default(),
                execution_mode: Default::default(),
                requires_approval: false,
                effect: Default::default(),
                replay_safe: false,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_per_seed() {
        assert_eq!(distractor_tools(20, 7), distractor_tools(20, 7));
        assert_ne!(distractor_tools(20, 7), distractor_tools(20, 8));
        assert_eq!(distractor_tools(3, 7).len(), 3);
    }
}
