//! linerate-runtime
