//! Measures the stack SWC's TypeScript strip needs per level of nesting,
//! for every shape the nesting estimate bounds: for each shape, the
//! deepest cell the estimate accepts (`typescript::MAX_NESTING`) is
//! stripped in child processes with ever smaller thread stacks (a stack
//! overflow aborts only the child) to find the least stack that holds it.
//! Prints bytes per nesting level and per estimate unit, and checks that
//! `typescript::STRIP_STACK_BYTES` is at least four times the largest.
//!
//! Release: `cargo bench -p talon-codemode --bench strip_stack`
//! Debug:   `cargo test -p talon-codemode --bench strip_stack`
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark binary"
)]

use std::process::{Command, Stdio};

use talon_codemode::typescript::{
    MAX_NESTING, STRIP_STACK_BYTES, nesting_estimate, strip_with_stack,
};

type Shape = (&'static str, fn(usize) -> String);

fn rep(s: &str, n: usize) -> String {
    s.repeat(n)
}

const SHAPES: &[Shape] = &[
    ("parens", |n| {
        format!("return {}1{}", rep("(", n), rep(")", n))
    }),
    ("brackets", |n| {
        format!("return {}{}", rep("[", n), rep("]", n))
    }),
    ("objects", |n| {
        format!("return {}1{}", rep("{a:", n), rep("}", n))
    }),
    ("blocks", |n| format!("{}{}", rep("{", n), rep("}", n))),
    ("plus chain", |n| format!("return 1{}", rep("+1", n))),
    ("and chain", |n| format!("return a{}", rep("&&a", n))),
    ("nullish chain", |n| format!("return a{}", rep("??a", n))),
    ("power chain", |n| format!("return 2{}", rep("**2", n))),
    ("not chain", |n| format!("return {}x", rep("!", n))),
    ("minus chain", |n| format!("return {}x", rep("- ", n))),
    ("typeof chain", |n| format!("return {}x", rep("typeof ", n))),
    ("await chain", |n| format!("return {}x", rep("await ", n))),
    ("new chain", |n| format!("return {}X", rep("new ", n))),
    ("member chain", |n| format!("return a{}", rep(".b", n))),
    ("optional chain", |n| format!("return a{}", rep("?.b", n))),
    ("index chain", |n| format!("return a{}", rep("[0]", n))),
    ("call chain", |n| format!("return f{}", rep("()", n))),
    ("non-null chain", |n| format!("return a{}", rep("!", n))),
    ("ternary chain", |n| format!("return a{}", rep("?a:a", n))),
    ("assignment chain", |n| format!("a{}", rep("=a", n))),
    ("arrow chain", |n| format!("return {}x", rep("x=>", n))),
    ("paren arrows", |n| {
        format!("return {}1{}", rep("(()=>", n), rep(")", n))
    }),
    ("functions", |n| {
        format!("return {}{}", rep("(function(){return ", n), rep("})", n))
    }),
    ("templates", |n| {
        format!("return {}{}", rep("`${", n), rep("}`", n))
    }),
    ("spread", |n| {
        format!("return {}a{}", rep("[...", n), rep("]", n))
    }),
    ("as chain", |n| format!("return x{}", rep(" as A", n))),
    ("type args", |n| {
        format!("let x: {}B{} = 1", rep("A<", n), rep(">", n))
    }),
    ("generic call", |n| {
        format!("return f<{}B{}>()", rep("A<", n), rep(">", n))
    }),
    ("union chain", |n| format!("let x: A{} = 1", rep("|A", n))),
    ("keyof chain", |n| {
        format!("let x: {}A = 1", rep("keyof ", n))
    }),
    ("array types", |n| format!("let x: A{} = 1", rep("[]", n))),
    ("tuple types", |n| {
        format!("let x: {}A{} = 1", rep("[", n), rep("]", n))
    }),
    ("object types", |n| {
        format!("let x: {}A{} = 1", rep("{a:", n), rep("}", n))
    }),
    ("function types", |n| {
        format!("let x: {}A = 1", rep("()=>", n))
    }),
    ("conditional types", |n| {
        format!("type T = {}D", rep("A extends B ? C : ", n))
    }),
    ("if nest", |n| format!("{}x", rep("if(a)", n))),
    ("if lines", |n| format!("{}x", rep("if (a)\n", n))),
    ("else-if chain", |n| format!("{}x", rep("if(a)x;else ", n))),
    ("while nest", |n| format!("{}x", rep("while(a)", n))),
    ("labels", |n| format!("{}x", rep("a:", n))),
];

/// The largest `n` whose cell the estimate accepts.
fn deepest_accepted(shape: fn(usize) -> String) -> usize {
    let ok = |n: usize| nesting_estimate(&shape(n), MAX_NESTING) <= MAX_NESTING;
    let (mut lo, mut hi) = (0usize, 1usize);
    while ok(hi) {
        lo = hi;
        hi *= 2;
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if ok(mid) { lo = mid } else { hi = mid }
    }
    lo
}

/// Whether a child strips shape `index` at depth `n` with `stack` bytes.
fn holds(index: usize, n: usize, stack: usize) -> bool {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "probe",
            &index.to_string(),
            &n.to_string(),
            &stack.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// The least stack (to 4 KiB) that holds shape `index` at depth `n`.
fn least_stack(index: usize, n: usize) -> usize {
    let (mut lo, mut hi) = (16usize << 10, 16usize << 10);
    while !holds(index, n, hi) {
        lo = hi;
        hi *= 2;
        assert!(hi <= 1 << 30, "{} needs more than 1 GiB", SHAPES[index].0);
    }
    while hi - lo > 4096 {
        let mid = (lo + hi) / 2;
        if holds(index, n, mid) {
            hi = mid
        } else {
            lo = mid
        }
    }
    hi
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("probe") {
        let index: usize = args[2].parse().unwrap();
        let n: usize = args[3].parse().unwrap();
        let stack: usize = args[4].parse().unwrap();
        // Success or a syntax error: either way the child did not overflow.
        let _ = strip_with_stack(&(SHAPES[index].1)(n), stack);
        return;
    }
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!("strip stack ({profile}), MAX_NESTING = {MAX_NESTING}");
    let base = least_stack(0, 0);
    println!("baseline (empty cell): {} KiB", base >> 10);
    println!(
        "{:<18} {:>6} {:>8} {:>10} {:>11} {:>10}",
        "shape", "levels", "estimate", "stack KiB", "B/level", "B/estimate"
    );
    let mut worst = (0usize, "");
    for (index, (name, shape)) in SHAPES.iter().enumerate() {
        let n = deepest_accepted(*shape);
        let estimate = nesting_estimate(&shape(n), usize::MAX);
        let stack = least_stack(index, n);
        let above = stack.saturating_sub(base);
        println!(
            "{name:<18} {n:>6} {estimate:>8} {:>10} {:>11} {:>10}",
            stack >> 10,
            above / n.max(1),
            above / estimate.max(1)
        );
        if stack > worst.0 {
            worst = (stack, name);
        }
    }
    println!(
        "largest: {} KiB ({}); STRIP_STACK_BYTES = {} KiB = {:.1}x",
        worst.0 >> 10,
        worst.1,
        STRIP_STACK_BYTES >> 10,
        STRIP_STACK_BYTES as f64 / worst.0 as f64
    );
    assert!(
        STRIP_STACK_BYTES >= 4 * worst.0,
        "STRIP_STACK_BYTES is under four times the deepest accepted cell's need"
    );
}
