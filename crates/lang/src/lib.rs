//! linerate-lang
