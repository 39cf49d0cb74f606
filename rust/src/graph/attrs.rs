//! Comparing two traces' records of one op attribute by attribute (each record names its
//! attributes, autograd/record.rs): they must agree on every one, or the graph would replay
//! the first trace's value for every batch.

use crate::autograd::Op;

/// The first attribute on which two records of the same op differ: (name, value a, value b).
pub fn first_changed(a: &Op, b: &Op) -> Option<(&'static str, String, String)> {
    a.attributes()
        .into_iter()
        .zip(b.attributes())
        .find(|((_, x), (_, y))| x != y)
        .map(|((name, x), (_, y))| (name, x.to_string(), y.to_string()))
}
