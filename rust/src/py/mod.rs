//! PyO3 bindings (feature "python").
